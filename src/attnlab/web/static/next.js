// Text → next character: the chapter's opening five steps on a trained model (POST /api/next: the server's
// model in serve, static/forward.js in the browser on the static site), the temperature of §1.6.3 applied
// here, and a line of verse sampled one character at a time. The view lives in the link:
// ?run=…&text=…&tau=…&k=…&seed=…
"use strict";

(() => {
  const { el, fmt, json, lineChart, heat, inkOn } = UI;
  const $ = (id) => document.getElementById(id);
  const SPECIAL = new Set([0, 1]);   // <pad>, <unk>: never drawn
  const MAX_LINE = 32;               // characters a generated line may take
  let info = null, last = null, seq = 0, timer = null;

  // ------------------------------------------------------------------ the distribution
  function softmax(logits, tau) {
    let max = -Infinity;
    for (const z of logits) if (z / tau > max) max = z / tau;
    const e = logits.map((z) => Math.exp(z / tau - max));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  }
  const entropy = (p) => -p.reduce((a, x) => a + (x > 0 ? x * Math.log(x) : 0), 0) / Math.log(p.length);
  const order = (p) => p.map((x, i) => [x, i]).sort((a, b) => b[0] - a[0]).map(([, i]) => i);
  // CSSOM, not a style attribute: the server's Content-Security-Policy allows no inline styles
  const styled = (node, props) => { Object.assign(node.style, props); return node; };
  const charOf = (data, id) => (id === 1 ? "<unk>" : id === 0 ? "<pad>" : data.vocab[id] === "\n" ? "⏎" : data.vocab[id]);

  // mulberry32: a small seeded generator, so a seed and a link give the same draw
  function rng(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function draw(logits, tau, k, u) {
    const p = softmax(logits, tau);
    const top = order(p).filter((i) => !SPECIAL.has(i)).slice(0, k);
    const mass = top.reduce((a, i) => a + p[i], 0);
    let acc = 0;
    for (const i of top) { acc += p[i] / mass; if (u < acc) return i; }
    return top[top.length - 1];
  }

  const tau = () => Number($("tau").value);
  const topk = () => Number($("topk").value);
  const seed = () => Math.max(0, Math.floor(Number($("seed").value) || 0));

  // ------------------------------------------------------------------------- drawing
  function render(data) {
    last = data;
    const toks = data.tokens;
    // step 1: characters and ids; the unknown ones explained where they appear
    $("ids").replaceChildren(...toks.map((t) => el("span", { class: t.unk ? "unk" : null, "data-testid": "id-chip",
      title: t.unk ? `「${t.char}」→ <unk>` : null }, t.char === "\n" ? "⏎" : t.char, el("small", { text: String(t.id) }))));
    $("converted").textContent = data.converted_line || "";
    const unk = [...new Set(toks.filter((t) => t.unk).map((t) => t.char))];
    $("unk-explain").textContent = unk.length
      ? `「${unk.join("」「")}」不在这个模型的字表里：字表只收训练语料（唐诗）里最常见的 ${data.vocab.length - 2} 个字，其余的字都记为同一个 <unk>（id 1）。` +
        `模型知道这里有一个字，却不知道是哪个字。 ${unk.join(" ")} is not in this model's vocabulary: it keeps the ` +
        `${data.vocab.length - 2} most frequent characters of its training text (Tang poems), and every other character ` +
        "becomes the same <unk> (id 1): the model sees that a character is there, not which one."
      : `字表共 ${data.vocab.length} 项（含 <pad> 与 <unk>）。 The vocabulary has ${data.vocab.length} entries (with <pad> and <unk>).`;
    // step 2: embedding plus positions
    const T = toks.length, xs = toks.map((_, i) => i);
    const ticks = toks.map((t, i) => [i, t.char === "\n" ? "⏎" : t.char]).filter((_, i) => T <= 24 || i % Math.ceil(T / 24) === 0);
    $("shape-note").textContent = `X_0 = Embed(ids) + Pos(0, 1, …, ${T - 1})：长度 ${T} 的整数数组 → 形状 (${T}, ${data.d_model}) 的矩阵。` +
      `下图是每个位置三个向量的长度。 A length-${T} array of ids → a (${T}, ${data.d_model}) matrix; the chart shows each position's three vector lengths.`;
    const e = data.embedding;
    $("emb-chart").replaceChildren();
    lineChart($("emb-chart"), { title: "向量长度 ‖·‖ vector length", xLabel: "位置 position", xTicks: ticks, testid: "chart-embedding",
      series: [{ name: "‖Embed(id)‖", x: xs, y: e.token_norm, color: "#2456a6" },
        ...(e.position_norm ? [{ name: "‖Pos(i)‖", x: xs, y: e.position_norm, color: "#8a8f99", dash: "5 3" }] : []),
        { name: "‖X_0‖", x: xs, y: e.sum_norm, color: "#1d2330" }] });
    // step 3: the residual stream through the blocks
    const stages = [["嵌入 embedding X_0", null, e.sum_norm]];
    data.blocks.forEach((b, i) => {
      stages.push([`层 ${i} + 注意力 attention`, b.attn_norm, b.after_attn]);
      stages.push([`层 ${i} + MLP`, b.mlp_norm, b.after_mlp]);
    });
    const colors = ["#1d2330", "#2456a6", "#7f9fd3", "#c8372d", "#e08a83", "#2f8f5b", "#8fc7a5", "#8a5cc2", "#c9861a"];
    $("block-chart").replaceChildren();
    lineChart($("block-chart"), { title: "残差流的大小 ‖X‖ residual stream size", xLabel: "位置 position", xTicks: ticks, logY: true,
      testid: "chart-residual", series: stages.map(([name, , y], k) => ({ name, x: xs, y, color: colors[k % colors.length] })) });
    $("stages").replaceChildren(el("thead", {}, el("tr", {}, ...["步骤 step", "加上的 ‖added‖", "之后的 ‖X‖ after"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...stages.map(([name, added, after], k) => el("tr", { "data-testid": `stage-${k}` }, el("th", { text: `${name}（最后一个位置 last position）` }),
        el("td", { class: "num", text: added ? fmt(added[T - 1]) : "—" }), el("td", { class: "num", text: fmt(after[T - 1]) })))));
    $("last-attn").replaceChildren(...data.blocks.map((b, li) => el("div", {}, el("h2", { text: `层 ${li}：最后一个字「${toks[T - 1].char}」的注意力 · layer ${li}: the last position's attention` }),
      el("table", { class: "mat" }, el("thead", {}, el("tr", {}, el("th"), ...toks.map((t) => el("th", { text: t.unk ? "?" : t.char === "\n" ? "⏎" : t.char })))),
        el("tbody", {}, ...b.attention.map((row, h) => el("tr", {}, el("th", { text: `头 ${h}` }),
          ...row.map((w) => styled(el("td", { class: "num", text: fmt(w, 2, true) }), { background: heat(w), color: inkOn(w) })))))))));
    // step 4 onwards depend on the temperature and k
    const f = data.final_norm;
    $("head-note").textContent = `最后的 LN 把最后一个位置的向量从 ‖X‖ = ${fmt(data.blocks.length ? data.blocks[data.blocks.length - 1].after_mlp[T - 1] : e.sum_norm[T - 1])} ` +
      `归一到 ‖LN(X)‖ = ${fmt(f[T - 1])}；输出投影（与词嵌入共享）${data.d_model} → ${data.vocab.length}，得到 logits z；softmax 把 z 变成下一个字的概率。 ` +
      `The final LN takes the last position's vector to ‖LN(X)‖ = ${fmt(f[T - 1])}; the output projection (tied to the embedding) ` +
      `maps ${data.d_model} → ${data.vocab.length} logits z; softmax turns z into the next character's probabilities.`;
    probabilities();
  }

  function probabilities() {
    if (!last) return;
    const data = last, t = tau(), k = topk();
    $("tau-value").textContent = `T = ${t.toFixed(2)}`;
    const p = softmax(data.logits, t), ranked = order(p).slice(0, k), pmax = p[ranked[0]];
    $("top").replaceChildren(el("thead", {}, el("tr", {}, ...["名次 rank", "字 char", "id", "logit z", `p (T = ${t.toFixed(2)})`, ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...ranked.map((i, r) => el("tr", { "data-testid": `top-${r}` }, el("th", { text: String(r + 1) }),
        el("td", { class: "num", text: charOf(data, i) }), el("td", { class: "num", text: String(i) }),
        el("td", { class: "num", text: fmt(data.logits[i]) }), el("td", { class: "num", "data-testid": `top-p-${r}`, text: fmt(p[i]) }),
        el("td", { class: "bar" }, styled(el("span"), { width: `${Math.round(100 * p[i] / pmax)}px` }))))));
    $("faces").replaceChildren(el("thead", {}, el("tr", {}, ...["T", "最可能的字 top-1", "最大权重 max p", "归一化熵 entropy"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...[0.5, 1, 2].map((x) => {
        const q = softmax(data.logits, x), i = order(q)[0];
        return el("tr", { "data-testid": `face-${x}` }, el("th", { text: x.toFixed(1) }), el("td", { class: "num", text: charOf(data, i) }),
          el("td", { class: "num", text: fmt(q[i]) }), el("td", { class: "num", text: fmt(entropy(q)) }));
      })));
    $("sampled").textContent = charOf(data, draw(data.logits, t, k, rng(seed())()));
    remember();
  }

  // ------------------------------------------------------------------------- requests
  async function run() {
    const mine = ++seq;
    const r = await json("/api/next", { text: $("text-input").value, run: $("run-select").value || undefined });
    if (mine !== seq) return;
    if (!r.ok) { $("msg").textContent = r.detail; return; }
    $("msg").textContent = "";
    render(r.data);
  }

  // A line of verse: draw, append, compute again, until 。？！ ends it, a line break after it, or MAX_LINE
  // characters. A line break drawn first (the text ended a line) starts the next line.
  async function generate() {
    if (!last) return;
    const button = $("generate"), random = rng(seed()), prompt = $("text-input").value;
    button.disabled = true;
    let got = "";
    const show = () => $("verse").replaceChildren(prompt, el("span", { class: "gen", text: got }));
    try {
      for (let n = 0; n < MAX_LINE; n++) {
        const text = [...(prompt + got)].slice(-last.block_size).join("");
        const r = await json("/api/next", { text, run: last.run });
        if (!r.ok) { $("msg").textContent = r.detail; break; }
        const c = r.data.vocab[draw(r.data.logits, tau(), topk(), random())];
        if (c === "\n" && got.trim()) break;
        got += c;
        show();
        if (c === "。" || c === "？" || c === "！") break;
      }
    } finally {
      button.disabled = false;
    }
    show();
    $("verse").dataset.generated = got;
  }

  function remember() {
    const url = new URL(window.location.href), q = url.searchParams;
    q.set("text", $("text-input").value);
    if (info && $("run-select").value && $("run-select").value !== info.default) q.set("run", $("run-select").value); else q.delete("run");
    q.set("tau", String(tau())); q.set("k", String(topk())); q.set("seed", String(seed()));
    history.replaceState(null, "", url);
  }

  document.addEventListener("DOMContentLoaded", async () => {
    const q = new URL(window.location.href).searchParams;
    if (q.has("text")) $("text-input").value = q.get("text");
    if (q.has("tau")) $("tau").value = q.get("tau");
    if (q.has("k") && [...$("topk").options].some((o) => o.value === q.get("k"))) $("topk").value = q.get("k");
    if (q.has("seed")) $("seed").value = q.get("seed");
    const r = await json("/api/info");
    if (!r.ok || !r.data.checkpoint) { $("msg").textContent = r.ok ? r.data.hint : r.detail; return; }
    info = r.data;
    const names = window.attnlab && window.attnlab.static ? await window.attnlab.runs() : info.runs;
    $("run-select").replaceChildren(...names.map((n) => el("option", { value: n, text: n })));
    $("run-select").value = names.includes(q.get("run")) ? q.get("run") : info.run;
    $("where").textContent = window.attnlab && window.attnlab.static
      ? "这些数字由你的浏览器算出（static/forward.js，float64），与服务器上的同一模型一致。 Computed in your browser (float64), equal to the server's model."
      : "这些数字由服务器上加载的模型算出（PyTorch，float64）。 Computed by the server's model (PyTorch, float64).";
    $("run-select").addEventListener("change", run);
    $("text-input").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 300); });
    $("tau").addEventListener("input", probabilities);
    $("topk").addEventListener("change", probabilities);
    $("seed").addEventListener("input", probabilities);
    $("sample").addEventListener("click", () => { $("seed").value = String(seed() + 1); probabilities(); });
    $("generate").addEventListener("click", generate);
    await run();
  });
})();

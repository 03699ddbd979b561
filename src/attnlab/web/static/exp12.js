// Experiment 1-2: attention maps of a trained model (the case's small scaled run by default,
// or any run with a checkpoint in the run roots, chosen from the list). The choice belongs to
// this page: it is sent with every request, so other readers of the same server keep theirs.
"use strict";

(() => {
  const { el, fmt, json } = UI;
  const $ = (id) => document.getElementById(id);
  let info = null, timer = null, seq = 0, last = null;

  function setEnabled(on) {
    $("text-input").disabled = !on;
    $("run-attention").disabled = !on;
  }

  function showNoCheckpoint(hint) {
    $("ckpt-info").replaceChildren(el("div", { "data-testid": "no-checkpoint" },
      el("strong", { text: "没有加载模型 · No checkpoint loaded." }), el("br"),
      "运行目录里没有可用的模型（随包附带的案例模型也没能加载）。训练一个（几分钟：attnlab case --quick，或 attnlab train --out runs/mine），或启动时指定：", el("br"),
      el("code", { text: "attnlab serve --checkpoint runs/<名字>/ckpt.pt" }), el("br"),
      el("span", { class: "en", text: "No model could be loaded (not even the case models that ship with attnlab): train one (a few minutes: attnlab case --quick, or attnlab train --out runs/mine), or start the server with attnlab serve --checkpoint runs/<name>/ckpt.pt" }),
      hint ? el("div", { class: "note", text: hint }) : null));
    setEnabled(false);
  }

  function showInfo(data) {
    info = data;
    const sel = $("run-select");
    // grouped by where they come from (runs/, mine/runs, quick/case/runs, the shipped models), then by
    // their first folder (case/, lr/, …); the user's own runs first
    const labels = data.groups || {};
    const order = Object.keys(labels);
    const groups = new Map();
    for (const n of data.runs || []) {
      const cut = n.indexOf(":");
      const src = cut > 0 && n.slice(0, cut) in labels ? n.slice(0, cut) : "";
      const rel = src ? n.slice(cut + 1) : n;
      const g = JSON.stringify([src, rel.includes("/") ? rel.split("/")[0] : ""]);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(el("option", { value: n, text: rel }));
    }
    const rank = ([k]) => { const [src, top] = JSON.parse(k); return [Math.max(0, order.indexOf(src)), top]; };
    const label = (k) => {
      const [src, top] = JSON.parse(k);
      const where = src ? labels[src] : (labels[""] || "你的运行 / your runs");
      return top ? `${where} · ${top}/` : where;
    };
    sel.replaceChildren(...[...groups].sort((a, b) => {
      const [ra, ta] = rank(a), [rb, tb] = rank(b);
      return ra - rb || (ta === "" ? -1 : tb === "" ? 1 : ta.localeCompare(tb));
    }).map(([g, opts]) => el("optgroup", { label: label(g) }, ...opts)));
    sel.value = data.run;
    sel.disabled = (data.runs || []).length < 2;
    $("ckpt-info").replaceChildren(el("span", { "data-testid": "run-name" },
      `运行 run：${data.run}` + (data.step !== null && data.step !== undefined ? ` · 第 ${data.step} 步 step` : "")),
      ` · ${data.n_layer} 层 layers × ${data.n_head} 头 heads · d_model ${data.d_model} · block_size ${data.block_size} · 字表 vocab ${data.vocab_size}`,
      data.cut_line ? el("div", { class: "note", "data-testid": "runs-cut", text: data.cut_line }) : "");
    $("text-input").setAttribute("maxlength", String(Math.min(2048, data.block_size * 4)));
    setEnabled(true);
    lengthNote();
  }

  async function chooseRun() {
    const name = $("run-select").value;
    $("run-message").textContent = "";
    $("run-select").disabled = true;
    const r = await json("/api/model", { run: name });  // describes the run; nobody else's page changes
    if (!r.ok) {
      $("run-message").textContent = r.detail;
      $("run-select").disabled = false;
      if (info) $("run-select").value = info.run;
      return;
    }
    showInfo(r.data);
    remember(name);
    run();
  }

  // The page's own choice survives a reload (?run=…) and is sent with every request.
  function remember(name) {
    const url = new URL(window.location.href);
    if (info && name === info.default) url.searchParams.delete("run"); else url.searchParams.set("run", name);
    url.searchParams.set("text", $("text-input").value);   // the text too: a link reproduces the maps
    window.history.replaceState(null, "", url);
  }

  function lengthNote() {
    if (!info) return;
    const n = [...$("text-input").value].length;
    $("len-note").textContent = `${n} / ${info.block_size} 字 · characters`;
  }

  async function run() {
    if (!info) return;
    const mine = ++seq;
    const text = $("text-input").value;
    remember(info.run);
    const r = await json("/api/attention", { text, run: info.run });
    if (mine !== seq) return;   // a newer request is on its way
    if (!r.ok) {
      $("attn-message").textContent = r.detail;
      return;
    }
    $("attn-message").textContent = "";
    render(r.data);
  }

  const chip = (t) => (t.unk ? "<unk>" : t.text === "\n" ? "⏎" : t.text);

  function render(data) {
    last = data;
    const toks = data.tokens;
    $("converted-note").replaceChildren(...(data.converted ? [
      el("strong", { text: "已转换为繁体 / converted to traditional" }), "：",
      el("span", { "data-testid": "converted-text", text: data.converted_text })] : []));
    // an unknown character is explained where it appears, under the tokens (the default probe's 函 is one)
    $("unk-line").textContent = data.unknown_line ? `${data.unknown_line}。 ` +
      `字表只收训练语料（唐诗）里最常见的 ${info.vocab_size - 2} 个字，其余的字都记为同一个 <unk>：模型知道这里有一个字，却不知道是哪个；` +
      `它在图的坐标轴上是红色的「?」。 The vocabulary keeps the ${info.vocab_size - 2} most frequent characters of the training ` +
      "text (Tang poems); every other character is the same <unk>: the model sees that a character is there, not which one " +
      "(a red \"?\" on the maps' axes)." : "";
    $("tokens").replaceChildren(
      el("span", { class: "note", text: `${toks.length} 个 token` + (data.n_unk ? `，其中 ${data.n_unk} 个不在字表里（<unk>） · ${data.n_unk} out of vocabulary` : "") }),
      el("br"),
      ...toks.map((t) => el("span", {
        class: t.unk ? "unk" : t.typed !== t.char ? "conv" : null,
        title: t.unk ? `「${t.char}」→ <unk>` : t.typed !== t.char ? `${t.typed} → ${t.char}` : null,
        text: chip(t) })));

    const table = $("metrics-table");
    table.replaceChildren(el("thead", {}, el("tr", {},
      ...["层·头 layer·head", "平均熵 entropy", "对角 diag", "前一位 prev", "平均距离 distance"].map((h) => el("th", { text: h })))));
    const body = el("tbody");
    data.layers.forEach((L) => L.heads.forEach((H, h) => {
      const m = H.metrics;
      body.append(el("tr", { "data-testid": `metrics-L${L.layer}H${h}` }, el("th", { text: `层 ${L.layer} · 头 ${h}` }),
        ...[m.entropy, m.diag, m.prev, m.distance].map((x) => el("td", { class: "num", text: fmt(x) }))));
    }));
    table.append(body);

    const maps = $("maps");
    maps.replaceChildren();
    data.layers.forEach((L) => {
      const row = el("div", { class: "maps" });
      L.heads.forEach((H, h) => {
        const canvas = el("canvas", { "data-testid": `map-L${L.layer}H${h}`, role: "img", class: "zoomable",
          tabindex: "0", title: "点击放大 · click to enlarge",
          "aria-label": `layer ${L.layer} head ${h} attention map (click to enlarge)` });
        const readout = el("span", { class: "note mono", text: " " });
        const geom = Maps.draw(canvas, H.weights, toks);
        canvas.addEventListener("mousemove", (e) => {
          const rect = canvas.getBoundingClientRect();
          const j = Math.floor((e.clientX - rect.left - geom.margin) / geom.cell);
          const i = Math.floor((e.clientY - rect.top - geom.margin) / geom.cell);
          if (i >= 0 && j >= 0 && i < toks.length && j < toks.length) {
            readout.textContent = `${toks[i].text} ← ${toks[j].text}: ${fmt(H.weights[i][j])}`;
          }
        });
        const open = () => enlarge(L.layer, h);
        canvas.addEventListener("click", open);
        canvas.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
        const name = () => `exp1-2 ${data.run} step${data.step ?? ""} L${L.layer}H${h}`;
        row.append(el("figure", {}, canvas, el("figcaption", {}, `层 ${L.layer} · 头 ${h} `, readout),
          Export.buttons(canvas, name, {
            svg: () => Maps.svg(H.weights, toks, { title: mapTitle(data, L.layer, h), large: true }),
            png: () => Export.pngOfSVG(Maps.svg(H.weights, toks, { title: mapTitle(data, L.layer, h), large: true }), 2),
          })));
      });
      maps.append(el("div", { class: "card" }, el("h2", { text: `层 ${L.layer} · layer ${L.layer}` }), row));
    });
  }

  const mapTitle = (data, layer, head) =>
    `${data.run} · step ${data.step ?? "?"} · 层 layer ${layer} · 头 head ${head}`;

  // The large view: the same map as an SVG with big cells and labels, its title and colour scale.
  function enlarge(layer, head) {
    const data = last, toks = data.tokens, H = data.layers[layer].heads[head];
    const title = mapTitle(data, layer, head);
    const pic = Maps.svg(H.weights, toks, { title, large: true });
    pic.setAttribute("data-testid", "map-large");
    pic.setAttribute("class", "map-large");
    const { cell, margin, top, T } = pic.geometry;
    const readout = $("map-dialog-readout");
    readout.textContent = "";
    pic.addEventListener("mousemove", (e) => {
      const rect = pic.getBoundingClientRect();
      const j = Math.floor((e.clientX - rect.left - margin) / cell);
      const i = Math.floor((e.clientY - rect.top - top - margin) / cell);
      if (i >= 0 && j >= 0 && i < T && j < T) readout.textContent = `${toks[i].text} ← ${toks[j].text}: ${fmt(H.weights[i][j])}`;
    });
    $("map-dialog-title").textContent = title;
    const name = `exp1-2 ${data.run} step${data.step ?? ""} L${layer}H${head}`;
    $("map-dialog-body").replaceChildren(pic, Export.buttons(pic, name, { png: () => Export.pngOfSVG(pic, 2) }));
    $("map-dialog").showModal();
  }

  document.addEventListener("DOMContentLoaded", async () => {
    // Canvas text needs the packaged font before the first draw.
    try { await document.fonts.load(`13px "AttnlabCJK"`, "层头"); } catch (e) { /* fall back to system fonts */ }
    $("map-dialog-close").addEventListener("click", () => $("map-dialog").close());
    $("map-dialog").addEventListener("click", (e) => { if (e.target === $("map-dialog")) $("map-dialog").close(); });
    setEnabled(false);
    let r = await json("/api/info");
    if (!r.ok) { $("ckpt-info").textContent = r.detail; return; }
    if (!r.data.checkpoint) { showNoCheckpoint(r.data.hint); return; }
    const asked = new URL(window.location.href).searchParams.get("run");
    const typed = new URL(window.location.href).searchParams.get("text");
    if (typed !== null) $("text-input").value = typed;
    if (asked && asked !== r.data.run && (r.data.runs || []).includes(asked)) {
      const chosen = await json("/api/model", { run: asked });
      if (chosen.ok) r = chosen; else $("run-message").textContent = chosen.detail;
    }
    showInfo(r.data);
    $("run-select").addEventListener("change", chooseRun);
    $("run-attention").addEventListener("click", run);
    $("text-input").addEventListener("input", () => {
      lengthNote();
      clearTimeout(timer);
      timer = setTimeout(run, 350);
    });
    run();
  });
})();

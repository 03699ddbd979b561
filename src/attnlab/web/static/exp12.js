// Experiment 1-2: attention maps of the checkpoint the server was started with.
"use strict";

(() => {
  const { el, fmt, json } = UI;
  const $ = (id) => document.getElementById(id);
  let info = null, timer = null, seq = 0;

  function showNoCheckpoint(hint) {
    $("ckpt-info").replaceChildren(el("div", { "data-testid": "no-checkpoint" },
      el("strong", { text: "没有加载模型 · No checkpoint loaded." }), el("br"),
      "启动服务器时指定一个训练好的模型：", el("br"),
      el("code", { text: "attnlab serve --checkpoint runs/<名字>/ckpt.pt" }), el("br"),
      el("span", { class: "en", text: "Start the server with a trained checkpoint, e.g. attnlab serve --checkpoint runs/<name>/ckpt.pt" })));
    $("text-input").disabled = true;
    $("run-attention").disabled = true;
    if (hint) $("attn-message").textContent = "";
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
    const r = await json("/api/attention", { text });
    if (mine !== seq) return;   // a newer request is on its way
    if (!r.ok) {
      $("attn-message").textContent = r.detail;
      return;
    }
    $("attn-message").textContent = "";
    render(r.data);
  }

  function render(data) {
    const toks = data.tokens;
    $("tokens").replaceChildren(
      el("span", { class: "note", text: `${toks.length} 个 token` + (data.n_unk ? `，其中 ${data.n_unk} 个不在字表里（<unk>） · ${data.n_unk} out of vocabulary` : "") }),
      el("br"),
      ...toks.map((t) => el("span", { class: t.unk ? "unk" : null, title: t.unk ? `「${t.char}」→ <unk>` : null,
        text: t.unk ? "<unk>" : t.text === "\n" ? "⏎" : t.text })));

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
        const canvas = el("canvas", { "data-testid": `map-L${L.layer}H${h}`, role: "img",
          "aria-label": `layer ${L.layer} head ${h} attention map` });
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
        const name = `exp1-2 L${L.layer}H${h}`;
        row.append(el("figure", {}, canvas, el("figcaption", {}, `层 ${L.layer} · 头 ${h} `, readout),
          Export.buttons(canvas, name, { svg: () => Maps.svg(H.weights, toks, name) })));
      });
      maps.append(el("div", { class: "card" }, el("h2", { text: `层 ${L.layer} · layer ${L.layer}` }), row));
    });
  }

  document.addEventListener("DOMContentLoaded", async () => {
    // Canvas text needs the packaged font before the first draw.
    try { await document.fonts.load(`13px "AttnlabCJK"`, "层头"); } catch (e) { /* fall back to system fonts */ }
    const r = await json("/api/info");
    if (!r.ok) { $("ckpt-info").textContent = r.detail; return; }
    if (!r.data.checkpoint) { showNoCheckpoint(r.data.hint); return; }
    info = r.data;
    $("ckpt-info").replaceChildren(
      `模型 checkpoint：${info.checkpoint} · ${info.n_layer} 层 layers × ${info.n_head} 头 heads · block_size ${info.block_size} · 字表 vocab ${info.vocab_size}`);
    $("text-input").setAttribute("maxlength", String(Math.min(2048, info.block_size * 4)));
    $("run-attention").addEventListener("click", run);
    $("text-input").addEventListener("input", () => {
      lengthNote();
      clearTimeout(timer);
      timer = setTimeout(run, 350);
    });
    lengthNote();
    run();
  });
})();

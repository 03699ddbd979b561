// Runs page: curves of the case study JSON and of runs/<name>/metrics.jsonl.
"use strict";

(() => {
  const { el, fmt, json, lineChart } = UI;
  const $ = (id) => document.getElementById(id);
  const CASE = "__case__";
  const PAIRS = [
    ["small_unscaled", "小 d32 不缩放", "#e08a83", "5 3"],
    ["small_scaled", "小 d32 缩放", "#7f9fd3", "5 3"],
    ["big_unscaled", "大 d256 不缩放", "#c8372d", ""],
    ["big_scaled", "大 d256 缩放", "#2456a6", ""],
  ];
  const LAYER_COLORS = ["#2456a6", "#c8372d", "#2f8f5b", "#8a5cc2", "#c9861a", "#4a4a4a"];
  let current = null;

  function setLayers(count) {
    const sel = $("layer"), keep = sel.value;
    sel.replaceChildren(el("option", { value: "all", text: "全部 all" }),
      ...Array.from({ length: count }, (_, i) => el("option", { value: String(i), text: `层 ${i}` })));
    if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
  }

  function drawCase(pairs) {
    const charts = $("charts");
    charts.replaceChildren();
    const present = PAIRS.filter(([k]) => pairs[k] && pairs[k].trace);
    const nLayers = Math.max(0, ...present.map(([k]) => (pairs[k].trace.layers || []).length));
    setLayers(nLayers);
    const layerSel = $("layer").value === "all" ? 0 : Number($("layer").value);
    $("runs-summary").replaceChildren(...present.map(([k, name]) => {
      const p = pairs[k];
      return el("div", { text: `${name}: loss ${fmt(p.loss_start, 2)} → ${fmt(p.loss_end, 2)}，val ${fmt(p.val_loss_end, 2)}` });
    }));
    const series = (field) => present.map(([k, name, color, dash]) => {
      const t = pairs[k].trace;
      const y = field === "loss" ? t.loss : ((t.layers || [])[layerSel] || {})[field] || [];
      return { name, x: t.step, y, color, dash };
    });
    const L = `（层 ${layerSel} · layer ${layerSel}）`;
    lineChart(charts, { title: "loss", series: series("loss"), testid: "chart-loss" });
    lineChart(charts, { title: `权重熵 weight entropy ${L}`, series: series("weight_entropy"), testid: "chart-entropy" });
    lineChart(charts, { title: `||J||_F 雅可比范数 ${L}`, series: series("jacobian_fro"), logY: true, testid: "chart-jacobian" });
    lineChart(charts, { title: `logit 标准差 logit std ${L}`, series: series("logit_std"), logY: true, testid: "chart-logit-std" });
  }

  function drawRun(m) {
    const charts = $("charts");
    charts.replaceChildren();
    setLayers(m.layers.length);
    const pick = $("layer").value;
    const layers = m.layers.map((c, i) => [c, i]).filter(([, i]) => pick === "all" || String(i) === pick);
    $("runs-summary").textContent = `${m.name}: ${m.rows} 行 rows` +
      (m.skipped_lines ? `，跳过 ${m.skipped_lines} 行无法解析 · skipped ${m.skipped_lines} unreadable lines` : "") +
      (m.loss.length ? `；loss ${fmt(m.loss[0], 2)} → ${fmt(m.loss[m.loss.length - 1], 2)}` : "");
    lineChart(charts, {
      title: "loss", testid: "chart-loss",
      series: [{ name: "train", x: m.step, y: m.loss, color: "#2456a6" },
        { name: "val", x: m.val_step, y: m.val_loss, color: "#c8372d", dots: true }],
    });
    const per = (field) => layers.map(([c, i]) => ({ name: `层 ${i}`, x: m.step, y: c[field], color: LAYER_COLORS[i % LAYER_COLORS.length] }));
    lineChart(charts, { title: "权重熵 weight entropy", series: per("weight_entropy"), testid: "chart-entropy" });
    lineChart(charts, { title: "||J||_F 雅可比范数 Jacobian norm", series: per("jacobian_fro"), logY: true, testid: "chart-jacobian" });
    lineChart(charts, { title: "logit 标准差 logit std", series: per("logit_std"), logY: true, testid: "chart-logit-std" });
    if (m.sinks) drawSinks(charts, m.sinks, layers.map(([, i]) => i));
  }

  // Each head's share of attention on the first position, from the run's snapshots (the timeline's metric).
  function drawSinks(charts, sk, shown) {
    const series = [];
    sk.share[0].forEach((heads, li) => {
      if (!shown.includes(li)) return;
      heads.forEach((_, h) => series.push({ name: `层${li}·头${h}`, x: sk.steps, y: sk.share.map((st) => st[li][h]),
        color: LAYER_COLORS[li % LAYER_COLORS.length], dash: ["", "5 3", "2 2", "8 3 2 3"][h % 4] }));
    });
    const ends = [sk.steps[0], sk.steps[sk.steps.length - 1]];
    if (sk.baseline !== null) series.push({ name: "均匀 uniform", x: ends, y: [sk.baseline, sk.baseline], color: "#8a8f99", dash: "2 3" });
    series.push({ name: `${sk.threshold} 线 threshold`, x: ends, y: [sk.threshold, sk.threshold], color: "#1d2330", dash: "1 3" });
    const fig = el("figure", { class: "sink-chart", "data-testid": "runs-sinks" });
    charts.append(fig);
    lineChart(fig, { title: "第一个位置的注意力比例 attention sink", series, testid: "chart-sinks" });
    fig.append(el("figcaption", { class: "note", text: `每个头给第一个位置的注意力（探针快照，查询 i ≥ 1 的平均）；高于 ${sk.threshold}（Gu et al. 2024）算 sink，` +
      `均匀注意力为 ${fmt(sk.baseline)}。 Each head's share of attention on the first position (probe snapshots, mean over ` +
      `queries i ≥ 1); above ${sk.threshold} (Gu et al. 2024) is a sink, uniform attention gives ${fmt(sk.baseline)}.` }));
  }

  async function load() {
    const src = $("source").value;
    $("runs-msg").textContent = "";
    if (!src) { $("charts").replaceChildren(); return; }
    const r = src === CASE ? await json("/api/case") : await json(`/api/runs/${encodeURIComponent(src)}`);
    if ($("source").value !== src) return;   // another source was chosen while this one loaded: it wins
    if (!r.ok) { $("runs-msg").textContent = r.detail; $("charts").replaceChildren(); $("runs-summary").textContent = ""; current = null; return; }
    current = { src, data: r.data };
    redraw();
  }

  function redraw() {
    if (!current) return;
    if (current.src === CASE) drawCase(current.data.pairs); else drawRun(current.data);
  }

  // The live table: every run (also one level down, like runs/case/*), its state and a timeline link.
  // While the run shown in the charts is training, its curves are re-read at each poll.
  const STATE_TEXT = { running: "训练中 running", finished: "已完成 finished", stopped: "已停止 stopped", damaged: "损坏 damaged" };
  let lastSteps = {};
  async function poll() {
    const r = await json("/api/live");
    if (r.ok) {
      const rows = r.data.runs.map((x) => el("tr", { "data-testid": `live-row-${x.name}` },
        el("td", { text: x.name }),
        el("td", {}, el("span", { class: `live-state ${x.state}`, "data-testid": `live-state-${x.name}`, title: x.problem, text: STATE_TEXT[x.state] || x.state })),
        el("td", { class: "mono", "data-testid": `live-steps-${x.name}`, text: `${x.steps} / ${x.max_steps ?? "?"}` }),
        el("td", {}, el("a", { href: `/timeline?run=${encodeURIComponent(x.name)}`, "data-testid": `live-link-${x.name}`,
          text: x.snapshots ? "时间线 timeline" : "时间线 timeline（无快照 no snapshots）" }))));
      $("live-runs").replaceChildren(el("thead", {}, el("tr", {},
        ...["训练 run", "状态 state", "步 steps", ""].map((h) => el("th", { text: h })))), el("tbody", {}, ...rows));
      const shown = current && current.src !== CASE ? r.data.runs.find((x) => x.name === current.src) : null;
      if (shown && lastSteps[shown.name] !== undefined && lastSteps[shown.name] !== shown.steps) await load();
      lastSteps = Object.fromEntries(r.data.runs.map((x) => [x.name, x.steps]));
    }
    setTimeout(poll, 2000);
  }

  document.addEventListener("DOMContentLoaded", async () => {
    poll();
    const r = await json("/api/runs");
    const names = r.ok ? r.data.runs : [];
    $("source").replaceChildren(el("option", { value: CASE, text: "本章案例 case study (data/ch1_case.json)" }),
      ...names.map((nm) => el("option", { value: nm, text: `runs/${nm}` })));
    if (!r.ok) $("runs-msg").textContent = r.detail;
    $("source").addEventListener("change", () => { $("layer").value = "all"; load(); });
    $("layer").addEventListener("change", redraw);
    await load();
    // No case data yet but some runs: show the first run rather than an empty page
    // (unless the reader already chose a source while the case was loading: their choice wins).
    if (!current && names.length && $("source").value === CASE) {
      const why = $("runs-msg").textContent;
      $("source").value = names[0];
      await load();
      $("runs-msg").textContent = why;
    }
  });
})();

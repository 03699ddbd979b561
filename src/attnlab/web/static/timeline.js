// Timeline page: snapshots of a run's attention on its probe, with a slider, beside a twin run.
"use strict";

(() => {
  const { el, fmt, json, lineChart, cursor } = UI;
  const $ = (id) => document.getElementById(id);
  // The run in reds, its twin in blues (the case's colours: unscaled red, scaled blue); layers by shade.
  const PALETTE = [["#c8372d", "#e08a83", "#8c1d16", "#f0b8b3"], ["#2456a6", "#7f9fd3", "#123a73", "#b5c8ea"]];
  const SINK_COLORS = ["#2456a6", "#c8372d", "#2f8f5b", "#8a5cc2", "#c9861a", "#4a4a4a", "#1f9ab0", "#b8487e"];
  const COLS = [["entropy", "熵 entropy"], ["jacobian_fro", "‖J‖_F Jacobian"], ["logit_std", "logit std"],
    ["diag", "对角 diag"], ["prev", "前一位 prev"], ["distance", "距离 distance"]];
  const state = { main: null, twin: null, index: 0, timer: null, charts: [], poll: null, runs: [] };

  const apiPath = (name) => "/api/timeline/" + name.split("/").map(encodeURIComponent).join("/");
  const tokensOf = (snap) => snap.tokens.map((t) => ({ text: t, unk: t === "<unk>" }));

  async function fetchRun(name) {
    if (!name) return null;
    const r = await json(apiPath(name));
    return r.ok ? r.data : { name, error: r.detail };
  }

  // The twin shows its last snapshot at or before the main run's step.
  function twinIndex(snap, step) {
    let k = -1;
    snap.steps.forEach((s, i) => { if (s <= step) k = i; });
    return Math.max(0, k);
  }

  function panel(which) {
    const run = state[which], box = $(which === "main" ? "panel-main" : "panel-twin");
    const prefix = which === "main" ? "" : "twin-";
    box.replaceChildren();
    if (!run) {
      const none = twinOf($("run").value) ? "没有选择对照。 No twin selected."
        : "没有同形状（层数、头数、d_model、block_size、种子）而缩放方式相反的运行，所以没有对照。 " +
          "No run has this one's shape (layers, heads, d_model, block_size, seed) with the other scaling: no twin.";
      box.append(el("p", { class: "note", "data-testid": which === "twin" ? "no-twin" : null, text: which === "twin" ? none : "" }));
      return;
    }
    box.append(el("h2", { text: run.name }));
    if (run.error || run.snapshot_error) {
      box.append(el("div", { class: "msg", "data-testid": `${prefix}snapshot-msg`, text: run.error || run.snapshot_error }));
      return;
    }
    const snap = run.snapshots;
    const toks = tokensOf(snap);
    box.append(el("p", { class: "note", text: `探针 probe：${snap.probe}（${toks.length} 字 tokens）· ${snap.steps.length} 个快照 snapshots` }));
    run.canvases = [];
    const maps = el("div", { class: "maps" });
    snap.patterns[0].forEach((heads, li) => heads.forEach((_, h) => {
      const canvas = el("canvas", { "data-testid": `${prefix}map-L${li}H${h}`, role: "img",
        "aria-label": `${run.name} layer ${li} head ${h} attention map` });
      const title = () => `${run.name} L${li}H${h} step ${snap.steps[run.shown]}`;
      // exported at the enlarged size, with a title (run, step, layer, head) and a colour scale
      const heading = () => `${run.name} · step ${snap.steps[run.shown]} · 层 layer ${li} · 头 head ${h}`;
      const picture = () => Maps.svg(snap.patterns[run.shown][li][h], toks, { title: heading(), large: true });
      const fig = el("figure", {}, canvas, el("figcaption", { text: `层 ${li} · 头 ${h}` }),
        Export.buttons(canvas, title, { svg: picture, png: () => Export.pngOfSVG(picture(), 2) }));
      maps.append(fig);
      run.canvases.push([canvas, li, h]);
    }));
    box.append(maps);
    run.table = el("table", { class: "mat", "data-testid": `${prefix}metrics-table` });
    box.append(el("h2", { text: "头部指标 head metrics" }), run.table);
  }

  function showRun(which, idx) {
    const run = state[which];
    if (!run || !run.snapshots || !run.canvases) return;
    const snap = run.snapshots;
    run.shown = idx;
    const toks = tokensOf(snap);
    for (const [canvas, li, h] of run.canvases) Maps.draw(canvas, snap.patterns[idx][li][h], toks);
    const prefix = which === "main" ? "" : "twin-";
    const body = el("tbody");
    snap.metrics[idx].forEach((heads, li) => heads.forEach((vals, h) => {
      const cell = (k) => { const j = snap.metric_names.indexOf(k); return j < 0 ? null : vals[j]; };
      body.append(el("tr", { "data-testid": `${prefix}metrics-L${li}H${h}` }, el("th", { text: `层 ${li} · 头 ${h}` }),
        ...COLS.map(([k]) => el("td", { class: "num", text: fmt(cell(k)) }))));
    }));
    run.table.replaceChildren(el("thead", {}, el("tr", {}, el("th", { text: `步 step ${snap.steps[idx]}` }),
      ...COLS.map(([, h]) => el("th", { text: h })))), body);
  }

  function show() {
    const main = state.main;
    if (!main || !main.snapshots) { $("step").textContent = "—"; return; }
    const snap = main.snapshots;
    state.index = Math.max(0, Math.min(snap.steps.length - 1, state.index));
    $("slider").value = String(state.index);
    const step = snap.steps[state.index];
    $("step").textContent = `步 step ${step} / ${main.max_steps ?? snap.steps[snap.steps.length - 1]}`;
    $("step").dataset.step = String(step);
    showRun("main", state.index);
    if (state.twin && state.twin.snapshots) showRun("twin", twinIndex(state.twin.snapshots, step));
    state.charts.forEach((svg, i) => cursor(svg, step, `cursor-${i}`));
    if (!state.timer) remember();
  }

  function charts() {
    const box = $("charts");
    box.replaceChildren();
    const runs = [state.main, state.twin].filter((r) => r && r.metrics);
    if (!runs.length) { state.charts = []; return; }
    const dash = (k) => (k === 0 ? "" : "5 3");
    const loss = [];
    runs.forEach((r, k) => {
      loss.push({ name: `${r.name} train`, x: r.metrics.step, y: r.metrics.loss, color: PALETTE[k][0], dash: dash(k) });
      loss.push({ name: `${r.name} val`, x: r.metrics.val_step, y: r.metrics.val_loss, color: PALETTE[k][2], dots: true, noLegend: true });
    });
    const per = (field) => runs.flatMap((r, k) => r.metrics.layers.map((c, i) => ({
      name: `${r.name} 层 ${i}`, x: r.metrics.step, y: c[field], color: PALETTE[k][i % PALETTE[k].length], dash: dash(k) })));
    state.charts = [
      lineChart(box, { title: "loss（点 = val）", series: loss, testid: "timeline-chart-loss" }),
      lineChart(box, { title: "权重熵 weight entropy", series: per("weight_entropy"), testid: "timeline-chart-entropy" }),
      lineChart(box, { title: "‖J‖_F 雅可比范数 Jacobian norm", series: per("jacobian_fro"), logY: true, testid: "timeline-chart-jacobian" }),
    ];
    sinkChart(box, runs);
  }

  // Attention sinks: each head's share of attention on the first position at every snapshot
  // (/api/timeline's snapshots.sinks), the run solid and its twin dashed, beside the uniform baseline.
  function sinkChart(box, runs) {
    const withSinks = runs.filter((r) => r.snapshots && r.snapshots.sinks);
    if (!withSinks.length) return;
    const { baseline, threshold } = withSinks[0].snapshots.sinks;
    const series = [];
    withSinks.forEach((r) => {
      const k = r === state.main ? 0 : 1, snap = r.snapshots, share = snap.sinks.share;
      share[0].forEach((heads, li) => heads.forEach((_, h) => series.push({
        name: `${k ? "对照 twin " : ""}层${li}·头${h}`, x: snap.steps, y: share.map((st) => st[li][h]),
        color: SINK_COLORS[(li * heads.length + h) % SINK_COLORS.length], dash: k ? "5 3" : "" })));
    });
    const xs = withSinks.flatMap((r) => r.snapshots.steps), ends = [Math.min(...xs), Math.max(...xs)];
    if (baseline !== null) series.push({ name: "均匀 uniform", x: ends, y: [baseline, baseline], color: "#8a8f99", dash: "2 3" });
    series.push({ name: `${threshold} 线 threshold`, x: ends, y: [threshold, threshold], color: "#1d2330", dash: "1 3" });
    const fig = el("figure", { class: "sink-chart", "data-testid": "timeline-sinks" });
    box.append(fig);
    state.charts.push(lineChart(fig, { title: "第一个位置的注意力比例 attention sink", series, testid: "timeline-chart-sinks" }));
    fig.append(el("figcaption", { class: "note", text: `每个头给第一个位置的注意力（查询 i ≥ 1 的平均）；高于 ${threshold}（Gu et al. 2024）算 sink，` +
      `均匀注意力为 ${fmt(baseline)}。 Each head's share of attention on the first position (mean over queries i ≥ 1); ` +
      `above ${threshold} (Gu et al. 2024) is a sink, uniform attention gives ${fmt(baseline)}.` }));
  }

  function setSlider() {
    const n = state.main && state.main.snapshots ? state.main.snapshots.steps.length : 1;
    $("slider").max = String(n - 1);
  }

  async function load(keepIndex = false) {
    const [main, twin] = await Promise.all([fetchRun($("run").value), fetchRun($("twin").value)]);
    const atEnd = state.main && state.main.snapshots && state.index === state.main.snapshots.steps.length - 1;
    state.main = main; state.twin = twin;
    $("msg").textContent = main && main.error ? main.error : "";
    panel("main"); panel("twin");
    setSlider();
    if (!keepIndex) state.index = 0;
    else if (atEnd && main && main.snapshots) state.index = main.snapshots.steps.length - 1;   // follow a live run
    charts();
    show();
    frames();
    remember();
    clearTimeout(state.poll);
    if ([main, twin].some((r) => r && r.state === "running")) state.poll = setTimeout(() => load(true), 5000);
  }

  // The view in the link: run, twin (empty = none chosen) and step, so a link reproduces it.
  function remember() {
    const url = new URL(window.location.href);
    url.searchParams.set("run", $("run").value);
    url.searchParams.set("twin", $("twin").value);
    const snap = state.main && state.main.snapshots;
    if (snap && state.index > 0) url.searchParams.set("step", String(snap.steps[state.index])); else url.searchParams.delete("step");
    history.replaceState(null, "", url);
  }

  function step(delta) {
    if (!state.main || !state.main.snapshots) return;
    state.index += delta;
    show();
  }

  function play(on = state.timer === null) {
    clearInterval(state.timer);
    state.timer = null;
    $("play").replaceChildren(on ? "暂停 " : "播放 ", el("span", { class: "en", text: on ? "Pause" : "Play" }));
    $("play").dataset.playing = on ? "true" : "false";
    if (!on) remember();
    if (!on || !state.main || !state.main.snapshots) return;
    if (state.index >= state.main.snapshots.steps.length - 1) state.index = -1;
    state.timer = setInterval(() => {
      if (state.index >= state.main.snapshots.steps.length - 1) { play(false); return; }
      step(1);
    }, 300);
  }

  // The run from the link (?run=), else the case's big unscaled model; its twin from the link (?twin=, empty =
  // none), else the one /api/live names: the run of the same shape and seed with the other scaling, from the configs.
  function defaults(runs, params) {
    const names = runs.map((r) => r.name);
    const withSnap = runs.filter((r) => r.snapshots).map((r) => r.name);
    let main = params.get("run");
    let twin = params.get("twin");
    if (!names.includes(main)) {
      main = ["case/big_unscaled", "big_unscaled", "mine:case/big_unscaled", "shipped:case/big_unscaled",
        "quick:case/big_unscaled"].find((n) => withSnap.includes(n))
        || withSnap.find((n) => /(^|\/)big_unscaled_s\d+$/.test(n)) || withSnap[0] || names[0] || "";
      twin = null;
    }
    if (twin === null) twin = twinOf(main);
    return [main, names.includes(twin) ? twin : ""];
  }

  const twinOf = (name) => ((state.runs || []).find((r) => r.name === name) || {}).twin || "";

  // The first and last frames of the run in numbers, so the words above never promise another picture.
  function frames() {
    const box = $("first-frame"), snap = state.main && state.main.snapshots;
    if (!snap || !snap.metric_names) { box.textContent = ""; return; }
    const j = snap.metric_names.indexOf("entropy"), last = snap.steps.length - 1;
    const ent = (i) => snap.metrics[i].map((heads) => heads.map((v) => fmt(v[j])).join("/")).join("，");
    box.textContent = `${state.main.name}：第一帧（第 ${snap.steps[0]} 步）各层熵 ${ent(0)}；最后一帧（第 ${snap.steps[last]} 步）${ent(last)}` +
      `（1 = 均匀，0 = one-hot）。 First frame (step ${snap.steps[0]}): entropy per layer ${ent(0)}; ` +
      `last frame (step ${snap.steps[last]}): ${ent(last)} (1 = uniform, 0 = one-hot).`;
  }

  document.addEventListener("DOMContentLoaded", async () => {
    try { await document.fonts.load(`13px "AttnlabCJK"`, "层头"); } catch (e) { /* system fonts */ }
    const r = await json("/api/live");
    const runs = r.ok ? r.data.runs : [];
    state.runs = runs;
    if (!r.ok) $("msg").textContent = r.detail;
    if (!runs.length && r.ok) $("msg").textContent = "runs/ 下还没有训练。先运行 attnlab train。 No runs under the runs directory yet: run attnlab train first.";
    const label = (x) => `${x.name}${x.snapshots ? "" : "（无快照 no snapshots）"}${x.state === "running" ? " · 训练中 running" : ""}`;
    $("run").replaceChildren(...runs.map((x) => el("option", { value: x.name, text: label(x) })));
    $("twin").replaceChildren(el("option", { value: "", text: "— 无 none —" }),
      ...runs.map((x) => el("option", { value: x.name, text: label(x) })));
    const params = new URL(window.location.href).searchParams;
    const [main, twin] = defaults(runs, params);
    $("run").value = main; $("twin").value = twin;
    $("run").addEventListener("change", () => { $("twin").value = twinOf($("run").value); load(); });
    $("twin").addEventListener("change", () => load(true));
    $("slider").addEventListener("input", () => { state.index = Number($("slider").value); show(); });
    $("play").addEventListener("click", () => play());
    document.addEventListener("keydown", (e) => {
      const t = e.target;
      if (t instanceof HTMLSelectElement || (t instanceof HTMLInputElement && t.type !== "range")) return;
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        e.preventDefault();               // the slider itself would move too
        step(e.key === "ArrowRight" ? 1 : -1);
      } else if (e.key === " ") {
        e.preventDefault();               // not a page scroll, not a second click on a focused button
        play();
      }
    });
    if (main) {
      await load();
      const at = Number(params.get("step"));   // the step of a shared link
      const snap = state.main && state.main.snapshots;
      if (params.get("run") === main && snap && params.has("step")) {
        state.index = Math.max(0, snap.steps.findLastIndex((x) => x <= at));
        show();
      }
    }
  });
})();

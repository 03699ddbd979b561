// Runs page: any runs side by side on shared axes — the reader's, the shipped case models, runs trained in
// the browser and downloaded, the case JSON's four traces — with their final numbers in one table.
// The view lives in the link: ?run=<name>&run=<name>&metric=loss&metric=entropy&layer=0.
"use strict";

(() => {
  const { el, fmt, json, lineChart } = UI;
  const $ = (id) => document.getElementById(id);
  const CASE = "case.json:";   // the case JSON's traces are named case.json:<variant>
  const CASE_PAIRS = {
    small_unscaled: ["小 d32 不缩放", "#e08a83", "5 3"],
    small_scaled: ["小 d32 缩放", "#7f9fd3", "5 3"],
    big_unscaled: ["大 d256 不缩放", "#c8372d", ""],
    big_scaled: ["大 d256 缩放", "#2456a6", ""],
  };
  const COLORS = ["#2456a6", "#c8372d", "#2f8f5b", "#8a5cc2", "#c9861a", "#1f9ab0", "#b8487e", "#4a4a4a"];
  const LAYER_DASH = ["", "5 3", "2 2", "8 3 2 3", "1 3", "10 4"];
  // [key, chart title, per layer?, log scale?]; the notation of the pages' text: ‖J‖_F, √d_k
  const METRICS = [
    ["loss", "训练 loss · train loss", false, false],
    ["val_loss", "验证 loss · val loss", false, false],
    ["weight_entropy", "权重熵 weight entropy", true, false],
    ["jacobian_fro", "‖J‖_F 雅可比范数 Jacobian norm", true, true],
    ["logit_std", "logit 标准差 logit std", true, true],
  ];
  const DEFAULT_METRICS = ["loss", "val_loss", "weight_entropy", "jacobian_fro", "logit_std"];
  const STATE_TEXT = { running: "训练中 running", finished: "已完成 finished", stopped: "已停止 stopped", damaged: "损坏 damaged" };
  const isStatic = () => Boolean(window.attnlab && window.attnlab.static);

  const state = { live: [], chosen: [], data: new Map(), caseData: null, metrics: DEFAULT_METRICS.slice(), steps: {} };

  // ------------------------------------------------------------------ data of one source
  function fromCase(variant) {
    const p = state.caseData && state.caseData[variant];
    if (!p || !p.trace) return null;
    const t = p.trace;
    return { name: CASE + variant, step: t.step, loss: t.loss, val_step: [], val_loss: [], layers: t.layers || [],
      rows: t.step.length, skipped_lines: 0, final: { loss: p.loss_end, val_loss: p.val_loss_end } };
  }

  async function fetchRun(name) {
    if (name.startsWith(CASE)) return fromCase(name.slice(CASE.length)) || { name, error: "案例文件里没有这一组。 Not in the case file." };
    const r = await json("/api/runs/" + name.split("/").map(encodeURIComponent).join("/"));
    return r.ok ? r.data : { name, error: r.detail };
  }

  const liveRow = (name) => state.live.find((x) => x.name === name) || null;

  // The house's colours: unscaled runs in reds, scaled in blues (shades in the order chosen), others apart.
  const SHADES = { none: ["#c8372d", "#e08a83", "#8c1d16", "#f0b8b3"], "1/sqrt(d)": ["#2456a6", "#7f9fd3", "#123a73", "#b5c8ea"] };
  function styleOf(name, k) {
    if (name.startsWith(CASE)) {
      const [, color, dash] = CASE_PAIRS[name.slice(CASE.length)] || ["", COLORS[k % COLORS.length], ""];
      return { color, dash, label: `案例 case ${name.slice(CASE.length)}` };
    }
    const scaling = (liveRow(name) || {}).scaling, shades = SHADES[scaling];
    if (!shades) return { color: COLORS[2 + (k % (COLORS.length - 2))], dash: "", label: name };
    const nth = state.chosen.slice(0, k).filter((n) => !n.startsWith(CASE) && (liveRow(n) || {}).scaling === scaling).length;
    return { color: shades[nth % shades.length], dash: "", label: name };
  }

  // ------------------------------------------------------------------------ drawing
  function draw() {
    const charts = $("charts");
    charts.replaceChildren();
    const runs = state.chosen.map((n) => state.data.get(n)).filter((d) => d && !d.error);
    const problems = state.chosen.map((n) => state.data.get(n)).filter((d) => d && d.error);
    $("runs-msg").textContent = problems.map((d) => `${d.name}: ${d.error}`).join("；");
    const nLayers = Math.max(0, ...runs.map((d) => d.layers.length));
    setLayers(nLayers);
    const pick = $("layer").value;
    const shown = (i) => pick === "all" || String(i) === pick;
    const manyRuns = runs.length > 1;
    $("runs-summary").replaceChildren(...runs.map((d) => el("div", { text: `${d.name}: ${d.rows} 行 rows` +
      (d.skipped_lines ? `，跳过 ${d.skipped_lines} 行无法解析 · skipped ${d.skipped_lines} unreadable lines` : "") +
      (d.loss.length ? `；loss ${fmt(d.loss[0], 2)} → ${fmt(d.loss[d.loss.length - 1], 2)}` : "") })));
    for (const [key, title, perLayer, logY] of METRICS) {
      if (!state.metrics.includes(key)) continue;
      const series = [];
      runs.forEach((d) => {
        const k = state.chosen.indexOf(d.name), st = styleOf(d.name, k);
        if (key === "loss") series.push({ name: st.label, x: d.step, y: d.loss, color: st.color, dash: st.dash });
        else if (key === "val_loss") series.push({ name: st.label, x: d.val_step, y: d.val_loss, color: st.color, dash: st.dash });
        else {
          d.layers.forEach((c, i) => {
            if (!shown(i)) return;
            series.push({ name: manyRuns || pick === "all" ? `${st.label} 层 ${i}` : st.label, x: d.step, y: c[key] || [],
              color: st.color, dash: st.dash || (pick === "all" ? LAYER_DASH[i % LAYER_DASH.length] : "") });
          });
        }
      });
      const L = perLayer && pick !== "all" ? `（层 ${pick} · layer ${pick}）` : perLayer ? "（虚线区分层 · dash = layer）" : "";
      lineChart(charts, { title: `${title} ${L}`, series, logY, testid: `chart-${{ loss: "loss", val_loss: "val-loss",
        weight_entropy: "entropy", jacobian_fro: "jacobian", logit_std: "logit-std" }[key]}` });
    }
    if (runs.length === 1 && runs[0].sinks) drawSinks(charts, runs[0].sinks, [...Array(nLayers).keys()].filter(shown));
    table(runs);
  }

  function setLayers(count) {
    const sel = $("layer"), keep = sel.value || state.layer || "all";
    sel.replaceChildren(el("option", { value: "all", text: "全部 all" }),
      ...Array.from({ length: count }, (_, i) => el("option", { value: String(i), text: `层 ${i}` })));
    sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "all";
  }

  // The last value of a curve (the thinned curves always keep the last row).
  const last = (ys) => { for (let i = (ys || []).length - 1; i >= 0; i--) if (ys[i] !== null && ys[i] !== undefined) return ys[i]; return null; };

  function table(runs) {
    const nLayers = Math.max(0, ...runs.map((d) => d.layers.length));
    const perLayer = (d, key) => d.layers.map((c) => fmt(last(c[key]))).join(" / ") || "—";
    const head = ["运行 run", "缩放 scaling", "形状 shape（层×头, d_model, block）", "种子 seed", "最后一步 last step",
      "loss", "val loss", `熵 entropy（层 0${nLayers > 1 ? `…${nLayers - 1}` : ""}）`, "‖J‖_F", "logit std"];
    const body = runs.map((d) => {
      const row = liveRow(d.name) || {}, sh = row.shape;
      const rule = d.name.startsWith(CASE) ? (d.name.includes("unscaled") ? "none" : "1/sqrt(d)") : row.scaling;
      const scaling = { "1/sqrt(d)": "1/√d_k", none: "不缩放 none", "1/d": "1/d_k" }[rule];
      return el("tr", { "data-testid": `final-${d.name}` },
        el("th", { text: d.name }),
        el("td", { text: scaling || "—" }),
        el("td", { class: "mono", text: sh ? `${sh[0]}×${sh[1]}, ${sh[2]}, ${sh[3]}` : "—" }),
        el("td", { class: "mono", text: row.seed ?? "—" }),
        el("td", { class: "num", "data-testid": `final-step-${d.name}`, text: d.step.length ? String(d.step[d.step.length - 1]) : "—" }),
        el("td", { class: "num", "data-testid": `final-loss-${d.name}`, text: fmt(d.final ? d.final.loss : last(d.loss)) }),
        el("td", { class: "num", text: fmt(d.final ? d.final.val_loss : last(d.val_loss)) }),
        el("td", { class: "num", text: perLayer(d, "weight_entropy") }),
        el("td", { class: "num", text: perLayer(d, "jacobian_fro") }),
        el("td", { class: "num", text: perLayer(d, "logit_std") }));
    });
    $("runs-table").replaceChildren(el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))), el("tbody", {}, ...body));
  }

  // Each head's share of attention on the first position, from the run's snapshots (the timeline's metric).
  function drawSinks(charts, sk, shown) {
    const series = [];
    sk.share[0].forEach((heads, li) => {
      if (!shown.includes(li)) return;
      heads.forEach((_, h) => series.push({ name: `层${li}·头${h}`, x: sk.steps, y: sk.share.map((st) => st[li][h]),
        color: COLORS[li % COLORS.length], dash: ["", "5 3", "2 2", "8 3 2 3"][h % 4] }));
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

  // ------------------------------------------------------------------- choosing
  async function load(names) {
    await Promise.all(names.map(async (n) => { state.data.set(n, await fetchRun(n)); }));
  }

  async function choose() {
    state.chosen = [...document.querySelectorAll("#picker input[type=checkbox]:checked")].map((c) => c.value);
    state.metrics = [...document.querySelectorAll("#metric-picker input:checked")].map((c) => c.value);
    const chosen = state.chosen.slice();
    await load(chosen.filter((n) => !state.data.has(n)));
    if (String(chosen) !== String(state.chosen)) return;   // a later choice is on its way: it draws
    remember();
    draw();
  }

  function remember() {
    const url = new URL(window.location.href);
    url.searchParams.delete("run");
    state.chosen.forEach((n) => url.searchParams.append("run", n));
    url.searchParams.delete("metric");
    if (String(state.metrics) !== String(DEFAULT_METRICS)) state.metrics.forEach((m) => url.searchParams.append("metric", m));
    if ($("layer").value && $("layer").value !== "all") url.searchParams.set("layer", $("layer").value); else url.searchParams.delete("layer");
    history.replaceState(null, "", url);
  }

  function picker(groups) {
    const box = $("picker");
    box.replaceChildren(...groups.filter(([, names]) => names.length).map(([label, names]) => el("fieldset", {},
      el("legend", { text: label }),
      ...names.map(([name, text]) => el("label", { class: "pick" },
        el("input", { type: "checkbox", value: name, "data-testid": `pick-${name}`, checked: state.chosen.includes(name), onchange: choose }),
        ` ${text}`)))));
  }

  // ------------------------------------------------------------------------ live table
  async function poll() {
    const r = await json("/api/live");
    if (r.ok) {
      state.live = r.data.runs;
      const rows = r.data.runs.map((x) => el("tr", { "data-testid": `live-row-${x.name}` },
        el("td", { text: x.name }),
        el("td", {}, el("span", { class: `live-state ${x.state}`, "data-testid": `live-state-${x.name}`, title: x.problem, text: STATE_TEXT[x.state] || x.state })),
        el("td", { class: "mono", "data-testid": `live-steps-${x.name}`, text: `${x.steps} / ${x.max_steps ?? "?"}` }),
        el("td", {}, el("a", { href: `/timeline?run=${encodeURIComponent(x.name)}`, "data-testid": `live-link-${x.name}`,
          text: x.snapshots ? "时间线 timeline" : "时间线 timeline（无快照 no snapshots）" }))));
      const cut = r.data.cut_line ? [el("caption", { class: "msg", "data-testid": "live-cut", text: r.data.cut_line })] : [];
      $("live-runs").replaceChildren(...cut, el("thead", {}, el("tr", {},
        ...["训练 run", "状态 state", "步 steps", ""].map((h) => el("th", { text: h })))), el("tbody", {}, ...rows));
      // a chosen run that wrote more steps is read again
      const grown = state.chosen.filter((n) => { const x = liveRow(n); return x && state.steps[n] !== undefined && state.steps[n] !== x.steps; });
      state.steps = Object.fromEntries(r.data.runs.map((x) => [x.name, x.steps]));
      if (grown.length) { await load(grown); draw(); }
    }
    if (!isStatic()) setTimeout(poll, 2000);   // a static copy is a snapshot: nothing to refresh
    return r;
  }

  document.addEventListener("DOMContentLoaded", async () => {
    if (isStatic()) {
      $("refresh-note").textContent = "（静态版：生成网站时的快照 · the static edition: a snapshot taken when the site was built）";
      $("static-note").textContent = "这个静态网站只带有生成时放进去的运行；你自己的运行和在浏览器里训练后下载的，放进 runs/ 后用 attnlab serve 打开。 " +
        "This static site holds only the runs it was built with; put your own runs and browser downloads in runs/ and open them with attnlab serve.";
      $("static-note").hidden = false;
    } else {   // said by the script that refreshes, so a static copy never shows it
      $("refresh-note").textContent = "（每 2 秒刷新 · refreshed every 2 s）";
    }
    const [live, cs] = await Promise.all([poll(), json("/api/case")]);
    if (!live.ok) $("runs-msg").textContent = live.detail;
    state.caseData = cs.ok ? cs.data.pairs : null;
    const caseNames = Object.keys(CASE_PAIRS).filter((k) => state.caseData && state.caseData[k] && state.caseData[k].trace);
    const names = state.live.map((x) => x.name);
    const params = new URL(window.location.href).searchParams;
    const all = [...caseNames.map((k) => CASE + k), ...names];
    const asked = params.getAll("run").filter((n) => all.includes(n));
    state.chosen = asked.length ? asked : caseNames.length ? caseNames.map((k) => CASE + k) : names.slice(0, 1);
    const metrics = params.getAll("metric").filter((m) => METRICS.some(([k]) => k === m));
    if (metrics.length) state.metrics = metrics;
    state.layer = params.get("layer") || "all";
    // the runs grouped by where they come from (the run roots' labels), the case JSON's traces first
    const labels = (await json("/api/info")).data?.groups || {};
    const bySource = new Map();
    for (const n of names) {
      const cut = n.indexOf(":"), src = cut > 0 && n.slice(0, cut) in labels ? n.slice(0, cut) : "";
      if (!bySource.has(src)) bySource.set(src, []);
      bySource.get(src).push([n, src ? n.slice(cut + 1) : n]);
    }
    picker([
      ["本章案例 case study (data/ch1_case.json)", caseNames.map((k) => [CASE + k, `${CASE_PAIRS[k][0]} ${k}`])],
      // a static site lists the case models it ships, not runs of the reader's
      ...[...bySource].map(([src, list]) => [isStatic() && !src ? "随网站附带的案例模型 / the case models this site ships"
        : labels[src] || (src ? src : "你的运行 / your runs"), list]),
    ]);
    $("metric-picker").replaceChildren(...METRICS.map(([k, title]) => el("label", { class: "pick" },
      el("input", { type: "checkbox", value: k, "data-testid": `metric-${k}`, checked: state.metrics.includes(k), onchange: choose }),
      ` ${title}`)));
    $("layer").addEventListener("change", () => { remember(); draw(); });
    if (!cs.ok && !names.length) $("runs-msg").textContent = cs.detail;
    await load(state.chosen);
    draw();
    remember();
  });
})();

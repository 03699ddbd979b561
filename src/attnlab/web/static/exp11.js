// Experiment 1-1 (§1.7): synthetic q, k; unscaled vs scaled, d_k = 2 .. 1024.
"use strict";

(() => {
  const { fmt, lineChart } = UI;
  const $ = (id) => document.getElementById(id);
  const DKS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
  const RED = "#c8372d", BLUE = "#2456a6";

  function readInt(id, lo, hi) {
    const v = Number($(id).value);
    return Number.isInteger(v) && v >= lo && v <= hi ? v : null;
  }

  let sweepKey = "", sweep = [];

  function update() {
    const dk = 2 ** Number($("dk-slider").value);
    $("dk-value").textContent = String(dk);
    const n = readInt("n-keys", 2, 256), rows = readInt("n-rows", 1, 512), seed = readInt("seed", 0, 999999);
    const bad = [];
    if (n === null) bad.push("n 须为 2–256 的整数 · keys must be an integer in 2–256");
    if (rows === null) bad.push("行数须为 1–512 的整数 · rows must be an integer in 1–512");
    if (seed === null) bad.push("种子须为 0–999999 的整数 · seed must be an integer in 0–999999");
    $("e11-msg").textContent = bad.join("；");
    if (bad.length) return;

    const key = `${n}/${rows}/${seed}`;
    if (key !== sweepKey) {   // the whole d_k sweep only changes with n, rows or seed
      sweep = DKS.map((d) => Attn.experiment11({ dk: d, n, rows, seed }));
      sweepKey = key;
    }
    const r = sweep[DKS.indexOf(dk)];
    $("u-std").textContent = fmt(r.unscaled.logitStd); $("s-std").textContent = fmt(r.scaled.logitStd);
    $("u-ent").textContent = fmt(r.unscaled.entropy); $("s-ent").textContent = fmt(r.scaled.entropy);
    $("u-jac").textContent = fmt(r.unscaled.jacobian); $("s-jac").textContent = fmt(r.scaled.jacobian);

    const x = DKS.map(Math.log2);
    const mark = { x: [Math.log2(dk)], dots: true, noLegend: true };
    const charts = $("e11-charts");
    charts.replaceChildren();
    const draw = (title, field, logY, testid) => {
      const u = sweep.map((s) => s.unscaled[field]), s = sweep.map((t) => t.scaled[field]);
      const i = DKS.indexOf(dk);
      lineChart(charts, {
        title, logY, xLabel: "d_k（对数轴 log scale）", width: 370, height: 250, testid,
        xTicks: [1, 3, 5, 7, 9].map((e) => [e, String(2 ** e)]),
        series: [
          { name: "不缩放 unscaled", x, y: u, color: RED },
          { name: "除以 √d_k scaled", x, y: s, color: BLUE },
          { ...mark, y: [u[i]], color: RED },
          { ...mark, y: [s[i]], color: BLUE },
        ],
      });
    };
    draw("logit 标准差 logit std", "logitStd", true, "chart-std");
    draw("归一化熵 entropy", "entropy", false, "chart-ent");
    draw("‖J‖_F 雅可比范数 Jacobian norm", "jacobian", true, "chart-jac");
  }

  // The view in the link (?dk=64&n=…&rows=…&seed=…), read on load.
  const LINK = { "n-keys": "n", "n-rows": "rows", seed: "seed" };
  function remember() {
    const url = new URL(window.location.href);
    url.searchParams.set("dk", String(2 ** Number($("dk-slider").value)));
    for (const [id, key] of Object.entries(LINK)) url.searchParams.set(key, $(id).value);
    history.replaceState(null, "", url);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const q = new URL(window.location.href).searchParams;
    const dk = DKS.indexOf(Number(q.get("dk")));
    if (dk >= 0) $("dk-slider").value = String(dk + 1);
    for (const [id, key] of Object.entries(LINK)) if (q.has(key)) $(id).value = q.get(key);
    for (const id of ["dk-slider", "n-keys", "n-rows", "seed"]) $(id).addEventListener("input", () => { update(); remember(); });
    update();
  });
})();

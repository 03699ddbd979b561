// Helpers shared by the pages: DOM building, number formatting, colours,
// JSON requests to this server, and a small SVG line chart.
"use strict";

const UI = (() => {
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  // `fixed`: always `digits` decimals, as the book prints its hand-computed tables;
  // otherwise very small or large magnitudes switch to exponent notation.
  function fmt(x, digits = 3, fixed = false) {
    if (x === null || x === undefined || Number.isNaN(x)) return "—";
    if (x === -Infinity) return "−∞";
    if (x === Infinity) return "∞";
    const a = Math.abs(x);
    if (!fixed && a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2).replace(/-/g, "−");
    const s = x.toFixed(digits);
    return (Number(s) === 0 ? s.replace("-", "") : s).replace("-", "−");
  }

  // White -> deep blue, for weights in [0, 1].
  function heat(w) {
    const t = Math.max(0, Math.min(1, w));
    const r = Math.round(255 - t * (255 - 28));
    const g = Math.round(255 - t * (255 - 72));
    const b = Math.round(255 - t * (255 - 150));
    return `rgb(${r},${g},${b})`;
  }
  const inkOn = (w) => (w > 0.55 ? "#ffffff" : "#1d2330");

  async function json(url, body) {
    const opts = body === undefined ? {} : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    };
    let res;
    try {
      res = await fetch(url, opts);
    } catch (e) {
      return { ok: false, status: 0, detail: "连不上服务器。 Cannot reach the server." };
    }
    let data = null;
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) return { ok: false, status: res.status, detail: (data && data.detail) || `HTTP ${res.status}` };
    return { ok: true, status: res.status, data };
  }

  // Line chart in SVG. series: [{name, x: [], y: [], color, dash, dots}], nulls are gaps.
  function lineChart(container, { title, series, logY = false, xLabel = "step", width = 540, height = 260, testid }) {
    const NS = "http://www.w3.org/2000/svg";
    const s = (tag, attrs = {}, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const pad = { l: 58, r: 12, t: 26, b: 34 };
    const W = width - pad.l - pad.r, H = height - pad.t - pad.b;
    const tr = (v) => (logY ? (v > 0 ? Math.log10(v) : null) : v);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const se of series) {
      se.x.forEach((x, i) => {
        const y = se.y[i] === null || se.y[i] === undefined ? null : tr(se.y[i]);
        if (y === null || !Number.isFinite(y) || !Number.isFinite(x)) return;
        x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      });
    }
    const svg = s("svg", { width, height, class: "chart", viewBox: `0 0 ${width} ${height}` });
    if (testid) svg.setAttribute("data-testid", testid);
    svg.append(s("text", { x: pad.l, y: 17, "font-size": 13, fill: "#1d2330" }, title));
    if (!Number.isFinite(x0)) {
      svg.append(s("text", { x: pad.l + 10, y: pad.t + H / 2, "font-size": 12, fill: "#5d6675" }, "无数据 no data"));
      container.append(svg);
      return svg;
    }
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
    if (!logY) { const m = (y1 - y0) * 0.05; y0 -= m; y1 += m; }
    const X = (x) => pad.l + ((x - x0) / (x1 - x0)) * W;
    const Y = (y) => pad.t + H - ((y - y0) / (y1 - y0)) * H;
    svg.append(s("rect", { x: pad.l, y: pad.t, width: W, height: H, fill: "none", stroke: "#d6dae1" }));
    // y ticks: decades on a log axis, 5 even ticks otherwise
    const ticks = [];
    if (logY) { for (let e = Math.ceil(y0); e <= Math.floor(y1); e++) ticks.push(e); if (ticks.length < 2) ticks.push(y0, y1); }
    else for (let i = 0; i <= 4; i++) ticks.push(y0 + ((y1 - y0) * i) / 4);
    for (const t of ticks) {
      svg.append(s("line", { x1: pad.l, x2: pad.l + W, y1: Y(t), y2: Y(t), stroke: "#eef0f3" }));
      const label = logY ? fmt(Math.pow(10, t), 2) : fmt(t, Math.abs(y1 - y0) < 2 ? 2 : 1);
      svg.append(s("text", { x: pad.l - 5, y: Y(t) + 4, "font-size": 11, "text-anchor": "end", fill: "#5d6675" }, label));
    }
    for (let i = 0; i <= 4; i++) {
      const t = x0 + ((x1 - x0) * i) / 4;
      svg.append(s("text", { x: X(t), y: pad.t + H + 15, "font-size": 11, "text-anchor": "middle", fill: "#5d6675" },
        Math.abs(x1 - x0) > 20 ? String(Math.round(t)) : fmt(t, 1)));
    }
    svg.append(s("text", { x: pad.l + W / 2, y: height - 4, "font-size": 11, "text-anchor": "middle", fill: "#5d6675" }, xLabel));
    let k = 0;
    series.forEach((se) => {
      let d = "", pen = false;
      se.x.forEach((x, i) => {
        const y = se.y[i] === null || se.y[i] === undefined ? null : tr(se.y[i]);
        if (y === null || !Number.isFinite(y)) { pen = false; return; }
        d += `${pen ? "L" : "M"}${X(x).toFixed(1)},${Y(y).toFixed(1)}`;
        pen = true;
        if (se.dots) svg.append(s("circle", { cx: X(x), cy: Y(y), r: 2.5, fill: se.color }));
      });
      if (!se.dots) svg.append(s("path", { d, fill: "none", stroke: se.color, "stroke-width": 1.6, "stroke-dasharray": se.dash || "" }));
      if (se.noLegend) return;
      const ly = pad.t + 12 + k++ * 14;
      svg.append(s("line", { x1: pad.l + W - 150, x2: pad.l + W - 132, y1: ly - 4, y2: ly - 4, stroke: se.color, "stroke-width": 2, "stroke-dasharray": se.dash || "" }));
      svg.append(s("text", { x: pad.l + W - 128, y: ly, "font-size": 11, fill: "#1d2330", class: "legend" }, se.name));
    });
    container.append(svg);
    return svg;
  }

  return { el, fmt, heat, inkOn, json, lineChart };
})();

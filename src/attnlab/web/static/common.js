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

  // About `count` round tick values (1, 2, 5 x 10^k steps) covering [a, b].
  function niceTicks(a, b, count = 5) {
    const raw = (b - a) / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((st) => st >= raw) || raw;
    const out = [];
    for (let t = Math.ceil(a / step) * step; t <= b + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
    return out;
  }

  // Line chart in SVG. series: [{name, x: [], y: [], color, dash, dots, noLegend}], nulls are gaps.
  // xTicks: optional [[value, label], ...] instead of automatic ticks.
  function lineChart(container, { title, series, logY = false, xLabel = "step", xTicks = null,
                                  width = 540, height = 270, testid }) {
    const NS = "http://www.w3.org/2000/svg";
    const s = (tag, attrs = {}, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const svg = s("svg", { width, height, class: "chart", viewBox: `0 0 ${width} ${height}` });
    if (testid) svg.setAttribute("data-testid", testid);
    svg.append(s("text", { x: 10, y: 17, "font-size": 13, fill: "#1d2330" }, title));
    // legend: one row (wrapping) under the title, so it never covers the curves
    let lx = 10, ly = 33;
    for (const se of series) {
      if (se.noLegend) continue;
      const w = 26 + [...se.name].reduce((a, c) => a + (c.charCodeAt(0) > 0x2e80 ? 12 : 6.5), 0);
      if (lx + w > width - 6) { lx = 10; ly += 15; }
      svg.append(s("line", { x1: lx, x2: lx + 18, y1: ly - 4, y2: ly - 4, stroke: se.color, "stroke-width": 2, "stroke-dasharray": se.dash || "" }));
      svg.append(s("text", { x: lx + 22, y: ly, "font-size": 11, fill: "#1d2330", class: "legend" }, se.name));
      lx += w + 10;
    }
    const pad = { l: 58, r: 14, t: ly + 10, b: 34 };
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
    if (!Number.isFinite(x0)) {
      svg.append(s("text", { x: pad.l + 10, y: pad.t + H / 2, "font-size": 12, fill: "#5d6675" }, "无数据 no data"));
      container.append(svg);
      exportable(svg, testid || title);
      return svg;
    }
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
    const m = (y1 - y0) * 0.05; y0 -= m; y1 += m;
    const X = (x) => pad.l + ((x - x0) / (x1 - x0)) * W;
    const Y = (y) => pad.t + H - ((y - y0) / (y1 - y0)) * H;
    svg.append(s("rect", { x: pad.l, y: pad.t, width: W, height: H, fill: "none", stroke: "#d6dae1" }));
    let yt = niceTicks(y0, y1, 4), digits = 2;
    if (logY) {   // 1, 2, 5 x 10^k inside the range; only the decades when there are many
      const all = [];
      for (let e = Math.floor(y0); e <= Math.ceil(y1); e++) {
        for (const mm of [1, 2, 5]) {
          const t = e + Math.log10(mm);
          if (t >= y0 && t <= y1) all.push([t, mm]);
        }
      }
      yt = (all.length > 6 ? all.filter(([, mm]) => mm === 1) : all).map(([t]) => t);
      // fewer than two of those (a range under a factor of ~2.5): round values on a linear
      // scale, finer until there are at least two, so a chart never has a single y tick
      for (const count of [3, 5, 8, 12]) {
        if (yt.length >= 2) break;
        yt = niceTicks(Math.pow(10, y0), Math.pow(10, y1), count).filter((v) => v > 0).map(Math.log10);
        digits = 3;
      }
    }
    for (const t of yt) {
      svg.append(s("line", { x1: pad.l, x2: pad.l + W, y1: Y(t), y2: Y(t), stroke: "#eef0f3" }));
      const v = logY ? Math.pow(10, t) : t;
      svg.append(s("text", { x: pad.l - 5, y: Y(t) + 4, "font-size": 11, "text-anchor": "end", fill: "#5d6675" },
        String(Number(v.toPrecision(logY ? digits : 6)))));
    }
    const xt = xTicks || niceTicks(x0, x1, 5).map((t) => [t, String(t)]);
    for (const [t, label] of xt) {
      svg.append(s("text", { x: X(t), y: pad.t + H + 15, "font-size": 11, "text-anchor": "middle", fill: "#5d6675" }, label));
    }
    svg.append(s("text", { x: pad.l + W / 2, y: height - 4, "font-size": 11, "text-anchor": "middle", fill: "#5d6675" }, xLabel));
    for (const se of series) {
      let d = "", pen = false;
      se.x.forEach((x, i) => {
        const y = se.y[i] === null || se.y[i] === undefined ? null : tr(se.y[i]);
        if (y === null || !Number.isFinite(y)) { pen = false; return; }
        d += `${pen ? "L" : "M"}${X(x).toFixed(1)},${Y(y).toFixed(1)}`;
        pen = true;
        if (se.dots) svg.append(s("circle", { cx: X(x), cy: Y(y), r: 3, fill: se.color }));
      });
      if (!se.dots) svg.append(s("path", { d, fill: "none", stroke: se.color, "stroke-width": 1.6, "stroke-dasharray": se.dash || "" }));
    }
    svg.xScale = { x0, x1, left: pad.l, width: W, top: pad.t, height: H };   // for cursor()
    container.append(svg);
    exportable(svg, testid || title);
    return svg;
  }

  // PNG/SVG buttons under a chart on pages that load export.js.
  function exportable(svg, name) {
    if (typeof Export !== "undefined") Export.wrap(svg, name);
  }

  // A vertical line at x on a lineChart (moved, not redrawn, when called again).
  function cursor(svg, x, testid) {
    const sc = svg && svg.xScale;
    if (!sc) return;
    let line = svg.querySelector("line.cursor");
    if (!line) {
      line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      line.setAttribute("class", "cursor");
      line.setAttribute("stroke", "#1d2330");
      line.setAttribute("stroke-width", "1");
      line.setAttribute("stroke-dasharray", "3 2");
      if (testid) line.setAttribute("data-testid", testid);
      svg.append(line);
    }
    const cx = sc.left + ((Math.min(sc.x1, Math.max(sc.x0, x)) - sc.x0) / (sc.x1 - sc.x0)) * sc.width;
    line.setAttribute("x1", cx.toFixed(1)); line.setAttribute("x2", cx.toFixed(1));
    line.setAttribute("y1", sc.top); line.setAttribute("y2", sc.top + sc.height);
    line.setAttribute("data-x", String(x));
  }

  return { el, fmt, heat, inkOn, json, lineChart, cursor };
})();

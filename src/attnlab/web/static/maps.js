// Attention maps: one drawing for the screen (canvas) and the same picture as SVG for export
// and for the enlarged view. Row i, column j = how much query position i takes from key
// position j; white 0 -> deep blue 1. A red "?" on an axis is a character outside the
// vocabulary (<unk>).
"use strict";

const Maps = (() => {
  const FONT = '"AttnlabCJK", "AttnlabCJKExtB", "Noto Sans CJK TC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif';
  const label = (t) => (t.unk ? "?" : t.text === "\n" ? "⏎" : t.text);
  // a thumbnail whose characters would be smaller than minLabel px drops them (the enlarged view has them)
  const SMALL = { fit: 230, minCell: 8, maxCell: 26, maxFont: 13, minLabel: 10 };
  // the enlarged view and the exported files: readable from the back of a classroom; a long
  // text keeps 18 px cells (16 px characters) and the view scrolls
  const LARGE = { fit: 640, minCell: 18, maxCell: 56, maxFont: 24, minLabel: 0 };

  // Cell size, axis margin and label size of a T x T map drawn within about `fit` pixels.
  function geometry(T, opts = SMALL) {
    const o = { ...SMALL, ...opts };
    const cell = Math.max(o.minCell, Math.min(o.maxCell, Math.floor(o.fit / T)));
    const font = Math.max(8, Math.min(o.maxFont, cell - 2));
    const labels = font >= o.minLabel;
    const margin = labels ? Math.max(22, Math.ceil(font * 1.6)) : 4;
    return { cell, margin, font, labels, size: margin + cell * T };
  }

  function draw(canvas, weights, tokens, opts = SMALL) {
    const T = weights.length;
    const { cell, margin, font, labels, size } = geometry(T, opts);
    const ratio = window.devicePixelRatio || 1;
    if (canvas.width !== size * ratio) { canvas.width = size * ratio; canvas.height = size * ratio; }
    canvas.style.width = `${size}px`; canvas.style.height = `${size}px`;
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.fillStyle = "#ffffff"; g.fillRect(0, 0, size, size);
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = weights[i][j];
        g.fillStyle = w === null ? "#f1f2f4" : UI.heat(w);
        g.fillRect(margin + j * cell, margin + i * cell, cell, cell);
      }
    }
    g.strokeStyle = "#d6dae1"; g.strokeRect(margin + 0.5, margin + 0.5, cell * T - 1, cell * T - 1);
    g.font = `${font}px ${FONT}`;
    g.textAlign = "center"; g.textBaseline = "middle";
    if (labels) tokens.forEach((t, i) => {
      g.fillStyle = t.unk ? "#b3261e" : "#1d2330";
      g.fillText(label(t), margin + i * cell + cell / 2, margin / 2);        // keys along the top
      g.fillText(label(t), margin / 2, margin + i * cell + cell / 2);        // queries down the side
    });
    return { cell, margin };
  }

  // The same map as an SVG element (text as <text>; Export outlines it on download), with a
  // title line (run, step, layer, head) and a colour scale. opts: a title string, or
  // {title, large} (large: the enlarged geometry).
  function svg(weights, tokens, opts = {}) {
    if (typeof opts === "string") opts = { title: opts };
    const NS = "http://www.w3.org/2000/svg";
    const T = weights.length;
    const { cell, margin, font, labels, size } = geometry(T, opts.large ? LARGE : SMALL);
    const titleSize = opts.large ? 18 : 12;
    const top = opts.title ? Math.round(titleSize * 1.6) : 0;
    const scaleW = Math.max(10, Math.round(font * 0.8)), scaleGap = Math.round(font * 0.8);
    const width = size + scaleGap + scaleW + Math.round(font * 2.6);
    const height = size + top + 4;
    const s = (tag, attrs = {}, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const root = s("svg", { width, height, viewBox: `0 0 ${width} ${height}` });
    root.append(s("rect", { x: 0, y: 0, width, height, fill: "#ffffff" }));
    if (opts.title) root.append(s("text", { x: 2, y: Math.round(titleSize * 1.1), "font-size": titleSize, fill: "#1d2330", "data-role": "title" }, opts.title));
    const g = s("g", { transform: `translate(0,${top})` });
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = weights[i][j];
        g.append(s("rect", { x: margin + j * cell, y: margin + i * cell, width: cell, height: cell,
          fill: w === null ? "#f1f2f4" : UI.heat(w) }));
      }
    }
    g.append(s("rect", { x: margin + 0.5, y: margin + 0.5, width: cell * T - 1, height: cell * T - 1, fill: "none", stroke: "#d6dae1" }));
    if (labels) tokens.forEach((t, i) => {
      const fill = t.unk ? "#b3261e" : "#1d2330";
      const base = font * 0.36;     // "middle" baseline of the canvas, as a shift of the alphabetic one
      g.append(s("text", { x: margin + i * cell + cell / 2, y: margin / 2 + base, "font-size": font, "text-anchor": "middle", fill, "data-role": "axis" }, label(t)));
      g.append(s("text", { x: margin / 2, y: margin + i * cell + cell / 2 + base, "font-size": font, "text-anchor": "middle", fill, "data-role": "axis" }, label(t)));
    });
    // colour scale: 0 at the bottom, 1 at the top, beside the map
    const sx = size + scaleGap, sy = margin, sh = cell * T, steps = 32;
    const scale = s("g", { "data-role": "colour-scale" });
    for (let k = 0; k < steps; k++) {
      scale.append(s("rect", { x: sx, y: sy + (sh * k) / steps, width: scaleW, height: sh / steps + 0.5, fill: UI.heat(1 - (k + 0.5) / steps) }));
    }
    scale.append(s("rect", { x: sx + 0.5, y: sy + 0.5, width: scaleW - 1, height: sh - 1, fill: "none", stroke: "#d6dae1" }));
    const tick = Math.max(9, Math.round(font * 0.75));
    for (const [v, y] of [[1, sy + tick * 0.7], [0.5, sy + sh / 2 + tick * 0.36], [0, sy + sh]]) {
      scale.append(s("text", { x: sx + scaleW + 3, y, "font-size": tick, fill: "#5d6675" }, String(v)));
    }
    g.append(scale);
    root.append(g);
    root.geometry = { cell, margin, top, T };
    return root;
  }

  return { draw, svg, geometry, label, LARGE };
})();

// Attention maps: one drawing for the screen (canvas) and the same picture as SVG for export.
// Row i, column j = how much query position i takes from key position j; white 0 -> deep blue 1.
"use strict";

const Maps = (() => {
  const FONT = '"AttnlabCJK", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif';
  const label = (t) => (t.unk ? "?" : t.text === "\n" ? "⏎" : t.text);

  // tokens: [{text, unk}]; returns the geometry so callers can map mouse positions to cells.
  function geometry(T) {
    const cell = Math.max(8, Math.min(26, Math.floor(230 / T)));
    const margin = 22;
    return { cell, margin, size: margin + cell * T };
  }

  function draw(canvas, weights, tokens) {
    const T = weights.length;
    const { cell, margin, size } = geometry(T);
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
    g.font = `${Math.min(13, cell - 1)}px ${FONT}`;
    g.textAlign = "center"; g.textBaseline = "middle";
    tokens.forEach((t, i) => {
      g.fillStyle = t.unk ? "#b3261e" : "#1d2330";
      g.fillText(label(t), margin + i * cell + cell / 2, margin / 2);        // keys along the top
      g.fillText(label(t), margin / 2, margin + i * cell + cell / 2);        // queries down the side
    });
    return { cell, margin };
  }

  // The same map as an SVG element (text as <text>; Export outlines it on download).
  function svg(weights, tokens, title) {
    const NS = "http://www.w3.org/2000/svg";
    const T = weights.length;
    const { cell, margin, size } = geometry(T);
    const top = title ? 18 : 0;
    const s = (tag, attrs = {}, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const root = s("svg", { width: size, height: size + top, viewBox: `0 0 ${size} ${size + top}` });
    root.append(s("rect", { x: 0, y: 0, width: size, height: size + top, fill: "#ffffff" }));
    if (title) root.append(s("text", { x: 2, y: 13, "font-size": 12, fill: "#1d2330" }, title));
    const g = s("g", { transform: `translate(0,${top})` });
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = weights[i][j];
        g.append(s("rect", { x: margin + j * cell, y: margin + i * cell, width: cell, height: cell,
          fill: w === null ? "#f1f2f4" : UI.heat(w) }));
      }
    }
    g.append(s("rect", { x: margin + 0.5, y: margin + 0.5, width: cell * T - 1, height: cell * T - 1, fill: "none", stroke: "#d6dae1" }));
    const fs = Math.min(13, cell - 1);
    tokens.forEach((t, i) => {
      const fill = t.unk ? "#b3261e" : "#1d2330";
      const base = fs * 0.36;     // "middle" baseline of the canvas, as a shift of the alphabetic one
      g.append(s("text", { x: margin + i * cell + cell / 2, y: margin / 2 + base, "font-size": fs, "text-anchor": "middle", fill }, label(t)));
      g.append(s("text", { x: margin / 2, y: margin + i * cell + cell / 2 + base, "font-size": fs, "text-anchor": "middle", fill }, label(t)));
    });
    root.append(g);
    return root;
  }

  return { draw, svg, geometry };
})();

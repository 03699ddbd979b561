// PNG and SVG download buttons for figures. The SVG has its text outlined: every character
// becomes a <path> from the packaged CJK font (POST /api/glyphs), so the file shows its Chinese
// on a machine without that font. The PNG is what the screen shows, at the screen's pixel ratio.
"use strict";

const Export = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const font = { upem: 1000, glyphs: {}, missing: new Set() };

  async function ensureGlyphs(text) {
    const need = [...new Set(text)].filter((c) => !(c in font.glyphs) && !font.missing.has(c) && c.trim());
    if (!need.length) return;
    const r = await UI.json("/api/glyphs", { text: need.join("") });
    if (!r.ok) throw new Error(r.detail);
    font.upem = r.data.units_per_em;
    Object.assign(font.glyphs, r.data.glyphs);
    r.data.missing.forEach((c) => font.missing.add(c));
  }

  // Replace each <text> by a <g> of glyph paths (characters the font lacks stay as <text>).
  function outline(root) {
    for (const t of [...root.querySelectorAll("text")]) {
      const size = parseFloat(t.getAttribute("font-size") || "12");
      const k = size / font.upem;
      const chars = [...(t.textContent || "")];
      const adv = (c) => (font.glyphs[c] ? font.glyphs[c].adv * k : size * 0.55);
      const width = chars.reduce((a, c) => a + adv(c), 0);
      const anchor = t.getAttribute("text-anchor") || "start";
      let x = parseFloat(t.getAttribute("x") || "0") - (anchor === "middle" ? width / 2 : anchor === "end" ? width : 0);
      const y = parseFloat(t.getAttribute("y") || "0");
      const g = document.createElementNS(NS, "g");
      g.setAttribute("fill", t.getAttribute("fill") || "#1d2330");
      g.setAttribute("data-text", t.textContent || "");
      for (const c of chars) {
        const gl = font.glyphs[c];
        if (gl) {
          const p = document.createElementNS(NS, "path");
          p.setAttribute("d", gl.d);
          p.setAttribute("data-char", c);
          p.setAttribute("transform", `translate(${x.toFixed(2)},${y.toFixed(2)}) scale(${k.toPrecision(5)},${(-k).toPrecision(5)})`);
          g.append(p);
        } else if (c.trim()) {
          const f = document.createElementNS(NS, "text");
          f.setAttribute("x", x.toFixed(2)); f.setAttribute("y", y.toFixed(2));
          f.setAttribute("font-size", size); f.setAttribute("font-family", "sans-serif");
          f.textContent = c;
          g.append(f);
        }
        x += adv(c);
      }
      t.replaceWith(g);
    }
    return root;
  }

  // A standalone SVG document (string) of an SVG element, text outlined, white background.
  async function svgText(svgEl) {
    const root = svgEl.cloneNode(true);
    root.setAttribute("xmlns", NS);
    root.removeAttribute("data-testid");
    root.removeAttribute("class");
    const w = root.getAttribute("width"), h = root.getAttribute("height");
    const bg = document.createElementNS(NS, "rect");
    Object.entries({ x: 0, y: 0, width: w, height: h, fill: "#ffffff" }).forEach(([a, v]) => bg.setAttribute(a, v));
    root.insertBefore(bg, root.firstChild);
    await ensureGlyphs([...root.querySelectorAll("text")].map((t) => t.textContent).join(""));
    outline(root);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(root);
  }

  const dataURL = (mime, text) => `data:${mime};base64,` + btoa(String.fromCharCode(...new TextEncoder().encode(text)));

  function svgDataURL(text) {   // chunked: a large SVG would overflow String.fromCharCode's arguments
    const bytes = new TextEncoder().encode(text);
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return "data:image/svg+xml;base64," + btoa(bin);
  }

  // PNG of an SVG element: its outlined SVG drawn onto a canvas of its size x ratio
  // (default: the screen's pixel ratio).
  async function pngOfSVG(svgEl, ratio = window.devicePixelRatio || 1) {
    const text = await svgText(svgEl);
    const w = Number(svgEl.getAttribute("width")), h = Number(svgEl.getAttribute("height"));
    const img = new Image();
    await new Promise((ok, fail) => { img.onload = ok; img.onerror = () => fail(new Error("SVG did not render")); img.src = svgDataURL(text); });
    const c = document.createElement("canvas");
    c.width = Math.round(w * ratio); c.height = Math.round(h * ratio);
    const g = c.getContext("2d");
    g.fillStyle = "#ffffff"; g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0, c.width, c.height);
    return c.toDataURL("image/png");
  }

  // An HTML table (the playground's matrices) as an SVG picture of what the screen shows:
  // each cell's box, background, border and text (an input's value) at its on-screen place.
  function tableSVG(table, title) {
    const s = (tag, attrs, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const box = table.getBoundingClientRect();
    const top = title ? 20 : 0;
    const W = Math.ceil(box.width) + 2, H = Math.ceil(box.height) + 2 + top;
    const root = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` });
    root.append(s("rect", { x: 0, y: 0, width: W, height: H, fill: "#ffffff" }));
    if (title) root.append(s("text", { x: 2, y: 14, "font-size": 13, fill: "#1d2330" }, title));
    const clear = (c) => !c || c === "transparent" || /rgba\(.*,\s*0\)$/.test(c);
    for (const cell of table.querySelectorAll("th, td")) {
      const r = cell.getBoundingClientRect(), cs = getComputedStyle(cell);
      const x = r.left - box.left + 1, y = r.top - box.top + 1 + top;
      const input = cell.querySelector("input");
      const bg = input && !clear(getComputedStyle(input).backgroundColor) ? getComputedStyle(input).backgroundColor : cs.backgroundColor;
      if (!clear(bg)) root.append(s("rect", { x, y, width: r.width, height: r.height, fill: bg }));
      if (cs.borderTopStyle !== "none" && parseFloat(cs.borderTopWidth) > 0) {
        root.append(s("rect", { x, y, width: r.width, height: r.height, fill: "none", stroke: cs.borderTopColor }));
      }
      const text = input ? input.value : cell.textContent.trim();
      if (!text) continue;
      const fs = parseFloat((input ? getComputedStyle(input) : cs).fontSize);
      const right = (input ? getComputedStyle(input) : cs).textAlign === "right";
      root.append(s("text", { x: right ? x + r.width - 6 : x + r.width / 2, y: y + r.height / 2 + fs * 0.36,
        "font-size": fs, fill: (input ? getComputedStyle(input) : cs).color, "text-anchor": right ? "end" : "middle" }, text));
    }
    return root;
  }

  function save(name, href) {
    const a = document.createElement("a");
    a.href = href; a.download = name;
    document.body.append(a); a.click(); a.remove();
  }

  const slug = (s) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "figure";

  // Buttons under a figure. opts.svg(): an SVG element of the figure (default: the figure itself
  // when it is an <svg>); opts.png(): a PNG data URL (default: the canvas, or the SVG rasterised).
  function buttons(fig, name, opts = {}) {
    const svgOf = opts.svg || (() => fig);
    const pngOf = opts.png || (() => (fig instanceof HTMLCanvasElement ? fig.toDataURL("image/png") : pngOfSVG(svgOf())));
    const msg = UI.el("span", { class: "msg export-msg" });
    const run = async (kind) => {
      msg.textContent = "";
      try {
        const base = slug(typeof name === "function" ? name() : name);
        if (kind === "svg") save(`${base}.svg`, svgDataURL(await svgText(svgOf())));
        else save(`${base}.png`, await pngOf());
      } catch (e) {
        msg.textContent = `导出失败 export failed: ${e.message}`;
      }
    };
    return UI.el("div", { class: "export" },
      UI.el("button", { type: "button", "data-testid": "export-png", title: "下载 PNG · download PNG", onclick: () => run("png") }, "PNG"),
      UI.el("button", { type: "button", "data-testid": "export-svg", title: "下载 SVG · download SVG", onclick: () => run("svg") }, "SVG"),
      msg);
  }

  // Wrap a figure element in place: <div class="fig"> figure + buttons </div>.
  function wrap(fig, name, opts = {}) {
    const holder = UI.el("div", { class: "fig", "data-testid": opts.testid || null });
    fig.replaceWith(holder);
    holder.append(fig, buttons(fig, name, opts));
    return holder;
  }

  return { buttons, wrap, svgText, pngOfSVG, outline, ensureGlyphs, dataURL, tableSVG };
})();

// Soft lookup page (§1.5.3): editable Q, K, V; everything recomputed in the browser.
"use strict";

(() => {
  const { el, heat, inkOn } = UI;
  const fmt = (x) => UI.fmt(x, 3, true);
  const MAX_N = 16, MAX_D = 8;
  const BOOK_V = [[2, 0], [0, 2], [1, 1]];
  const PRESETS = {
    // §1.5.1 / §1.5.2: the worked example (q of every position, k, v).
    book: { Q: [[1, 0], [0, 1], [1, 0]], K: [[1, 0], [0, 1], [1, 1]], V: BOOK_V },
    // Each query matches its own key far better than any other: weights ~ identity,
    // the layer copies V (the extreme form of the chapter's "layer 0, head 0").
    self: { Q: [[4, 0], [-2, 3], [-2, -3]], K: [[4, 0], [-2, 3], [-2, -3]], V: BOOK_V },
    // Larger scores: one position takes almost all the weight. Double K's first row next.
    sharp: { Q: [[3, 0], [0, 3], [3, 0]], K: [[2, 0], [0, 2], [1, 1]], V: BOOK_V },
    // §1.5.3 ③: V's rows [1,0], [0,1], [1,1], Q's third row [1,0] (it already is), unscaled as in ①.
    edited: { Q: [[1, 0], [0, 1], [1, 0]], K: [[1, 0], [0, 1], [1, 1]], V: [[1, 0], [0, 1], [1, 1]] },
  };
  const NAMES = { q: "Q", k: "K", v: "V" };

  // Raw cell text is the state; parsing happens on every recompute.
  let n = 3, d = 2;
  const cells = { q: [], k: [], v: [] };

  const $ = (id) => document.getElementById(id);

  function setMatrices(p) {
    n = p.Q.length; d = p.Q[0].length;
    for (const m of ["q", "k", "v"]) cells[m] = p[m.toUpperCase()].map((r) => r.map(String));
    $("n-input").value = n; $("d-input").value = d;
    buildEditors();
    recompute();
  }

  function resize(newN, newD) {
    for (const m of ["q", "k", "v"]) {
      const old = cells[m];
      cells[m] = Array.from({ length: newN }, (_, i) =>
        Array.from({ length: newD }, (_, j) => (old[i] && old[i][j] !== undefined ? old[i][j] : "0")));
    }
    n = newN; d = newD;
    buildEditors();
    recompute();
  }

  function parseCell(text) {
    const t = String(text).trim().replace(/−/g, "-");
    if (t === "" || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return null;
    const x = Number(t);
    return Number.isFinite(x) ? x : null;
  }

  function buildEditors() {
    for (const m of ["q", "k", "v"]) {
      const head = el("tr", {}, el("th"), ...Array.from({ length: d }, (_, j) => el("th", { text: String(j) })));
      const rows = cells[m].map((row, i) =>
        el("tr", {}, el("th", { text: String(i) }), ...row.map((v, j) => el("td", {}, el("input", {
          type: "text", inputmode: "decimal", value: v, "data-testid": `${m}-${i}-${j}`,
          "aria-label": `${NAMES[m]}[${i},${j}]`, spellcheck: "false",
          oninput: (e) => { cells[m][i][j] = e.target.value; recompute(); },
        })))));
      $(`ed-${m}`).replaceChildren(el("table", { class: "mat" }, el("thead", {}, head), el("tbody", {}, ...rows)));
    }
  }

  function matrixTable(rowsData, cellFn, cols, prefix) {
    const head = el("tr", {}, el("th"), ...Array.from({ length: cols }, (_, j) => el("th", { text: String(j) })));
    const body = rowsData.map((_, i) => el("tr", {}, el("th", { text: String(i) }),
      ...Array.from({ length: cols }, (_, j) => {
        const td = el("td", { class: "num", "data-testid": `${prefix}-${i}-${j}` });
        cellFn(td, i, j);
        return td;
      })));
    return el("table", { class: "mat" }, el("thead", {}, head), el("tbody", {}, ...body));
  }

  function recompute() {
    const scale = $("toggle-scale").checked, causal = $("toggle-mask").checked;
    const parsed = {}, rowOk = {}, problems = [];
    for (const m of ["q", "k", "v"]) {
      parsed[m] = cells[m].map((row) => row.map(parseCell));
      rowOk[m] = parsed[m].map((row) => row.every((x) => x !== null));
      parsed[m].forEach((row, i) => row.forEach((x, j) => {
        const input = document.querySelector(`[data-testid="${m}-${i}-${j}"]`);
        if (input) { input.classList.toggle("bad", x === null); input.setAttribute("aria-invalid", x === null ? "true" : "false"); }
        if (x === null) problems.push(`${NAMES[m]}[${i},${j}]：「${cells[m][i][j]}」不是数字 · not a number`);
      }));
    }
    $("cell-msg").textContent = problems.length
      ? problems.slice(0, 4).join("；") + (problems.length > 4 ? ` …（共 ${problems.length} 处）` : "") +
        " —— 受影响的行显示为 —，其余照常计算。 Affected rows show —; the rest is still computed."
      : "";
    const zero = (M) => M.map((row) => row.map((x) => (x === null ? 0 : x)));
    const r = Attn.attention(zero(parsed.q), zero(parsed.k), zero(parsed.v),
      { scale, causal, qOk: rowOk.q, kOk: rowOk.k, vOk: rowOk.v });

    $("sqrt-dk").textContent = `(√${d} = ${fmt(Math.sqrt(d))})`;
    $("score-formula").replaceChildren("QK", el("sup", { text: "T" }), scale ? ` / √${d}` : "");
    $("out-scores").replaceChildren(matrixTable(r.scores, (td, i, j) => {
      const s = r.scores[i];
      if (!r.visible[i][j]) { td.textContent = "−∞"; td.classList.add("masked"); }
      else if (!s) { td.textContent = "—"; td.classList.add("na"); }
      else td.textContent = fmt(s[j]);
    }, n, "s"));
    $("out-weights").replaceChildren(matrixTable(r.weights, (td, i, j) => {
      const w = r.weights[i];
      if (!w) { td.textContent = "—"; td.classList.add("na"); return; }
      td.textContent = fmt(w[j]);
      if (!r.visible[i][j]) td.classList.add("masked");
      else { td.style.background = heat(w[j]); td.style.color = inkOn(w[j]); }
    }, n, "w"));
    $("out-output").replaceChildren(matrixTable(r.out, (td, i, j) => {
      const o = r.out[i];
      if (!o) { td.textContent = "—"; td.classList.add("na"); } else td.textContent = fmt(o[j]);
    }, d, "out"));
    $("out-entropy").replaceChildren(matrixTable(r.entropy, (td, i) => {
      td.setAttribute("data-testid", `ent-${i}`);
      const h = r.entropy[i];
      td.textContent = h === null ? "—" : fmt(h);
      if (h === null) td.classList.add("na");
    }, 1, "ent"));
  }

  function onShape() {
    const nv = Number($("n-input").value), dv = Number($("d-input").value);
    const okN = Number.isInteger(nv) && nv >= 1 && nv <= MAX_N;
    const okD = Number.isInteger(dv) && dv >= 1 && dv <= MAX_D;
    $("shape-msg").textContent = (okN ? "" : `n 须为 1–${MAX_N} 的整数 · n must be an integer in 1–${MAX_N}。`) +
      (okD ? "" : `d 须为 1–${MAX_D} 的整数 · d must be an integer in 1–${MAX_D}。`);
    if (okN && okD && (nv !== n || dv !== d)) resize(nv, dv);
  }

  // §1.5.3 ③'s slip: both outputs computed here by the page's own attention, never typed.
  function slipNote() {
    const third = (p) => Attn.attention(p.Q, p.K, p.V, { scale: false, causal: true }).out[2];
    const show = (v) => `[${v.map(fmt).join(", ")}]`;
    const edited = show(third(PRESETS.edited)), original = show(third(PRESETS.book));
    $("slip-153").querySelectorAll("[data-testid^=slip-edited]").forEach((b) => { b.textContent = edited; });
    $("slip-153").querySelectorAll("[data-testid^=slip-original]").forEach((b) => { b.textContent = original; });
  }

  // The view in the link: ?q=1,0;0,1;1,0&k=…&v=…&scale=1&mask=1 (the cells as typed), read on load.
  function remember() {
    const url = new URL(window.location.href);
    for (const m of ["q", "k", "v"]) url.searchParams.set(m, cells[m].map((r) => r.join(",")).join(";"));
    url.searchParams.set("scale", $("toggle-scale").checked ? "1" : "0");
    url.searchParams.set("mask", $("toggle-mask").checked ? "1" : "0");
    history.replaceState(null, "", url);
  }

  function fromLink() {
    const q = new URL(window.location.href).searchParams;
    if (q.has("scale")) $("toggle-scale").checked = q.get("scale") === "1";
    if (q.has("mask")) $("toggle-mask").checked = q.get("mask") === "1";
    const m = Object.fromEntries(["q", "k", "v"].map((k) => [k.toUpperCase(), (q.get(k) || "").split(";").map((r) => r.split(","))]));
    const rows = m.Q.length, cols = m.Q[0].length;
    const fits = rows >= 1 && rows <= MAX_N && cols >= 1 && cols <= MAX_D &&
      ["Q", "K", "V"].every((k) => m[k].length === rows && m[k].every((r) => r.length === cols));
    return fits && q.has("q") ? m : null;
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.addEventListener("input", remember);
    document.addEventListener("change", remember);
    document.addEventListener("click", (e) => { if (e.target.closest("button")) remember(); });
    $("preset-book").addEventListener("click", () => setMatrices(PRESETS.book));
    $("preset-self").addEventListener("click", () => setMatrices(PRESETS.self));
    $("preset-sharp").addEventListener("click", () => setMatrices(PRESETS.sharp));
    $("preset-edited").addEventListener("click", () => {
      $("toggle-scale").checked = false;
      setMatrices(PRESETS.edited);
    });
    $("toggle-scale").addEventListener("change", recompute);
    $("toggle-mask").addEventListener("change", recompute);
    $("n-input").addEventListener("input", onShape);
    $("d-input").addEventListener("input", onShape);
    // PNG/SVG buttons under each matrix (the tables are rebuilt on edits; the buttons stay)
    for (const [id, name] of [["ed-q", "Q"], ["ed-k", "K"], ["ed-v", "V"], ["out-scores", "scores 打分"],
      ["out-weights", "weights 权重"], ["out-output", "output 输出"], ["out-entropy", "entropy 熵"]]) {
      $(id).after(Export.buttons(null, `lookup ${name.split(" ")[0]}`,
        { svg: () => Export.tableSVG($(id).querySelector("table"), name) }));
    }
    setMatrices(fromLink() || PRESETS.book);
    slipNote();
  });
})();

// Workbook page: every item of workbook_data.js (generated from src/attnlab/workbook/workbook.json), the
// self-test questions that compute (Q3, Q7, Q8, Q9, Q10) and the chapter's answers, opened after an attempt.
"use strict";

(() => {
  const { el } = UI;
  const $ = (id) => document.getElementById(id);
  const fmt = (x, d = 3) => UI.fmt(x, d);
  const params = new URLSearchParams(location.search);
  const attempted = new Set();
  const KIND = { exercise: "练习", question: "自测", checkpoint: "停下来想一想" };

  // σ ≠ 1 for Q7: from the URL (?sigma=2) or picked at load
  const SIGMAS = [0.5, 0.7, 1.5, 2, 3];
  const urlSigma = Number(params.get("sigma"));
  const sigma = SIGMAS.includes(urlSigma) ? urlSigma : SIGMAS[Math.floor(Math.random() * SIGMAS.length)];
  const Z8 = [1.2, -0.3, 0.5, 2.0]; // Q8's logits
  const ROW8 = 1;

  function verdict(node, ok, text) {
    node.replaceChildren(el("span", { class: ok ? "ok" : "bad", text: (ok ? "✓ " : "× ") + text }));
    node.dataset.ok = ok ? "true" : "false";
  }

  function markAttempt(id) {
    attempted.add(id);
    const b = document.querySelector(`[data-testid="open-${id}"]`);
    if (b) b.disabled = false;
  }

  function whereNode(w) {
    // a page of the server ("/lookup"), or of the static site once its links are made relative
    if (w.startsWith("/") || /^[\w-]+\.html([?#]|$)/.test(w)) return el("a", { href: w, text: w });
    return el("code", { text: w });
  }

  // ---------------------------------------------------------------- the computing questions
  const WIDGETS = {
    q3(box) {
      const input = el("input", { type: "text", "data-testid": "q3-dk", size: "6", "aria-label": "d_k" });
      const out = el("div", { class: "msg", "data-testid": "q3-result" });
      const go = () => {
        const dk = Number(input.value);
        markAttempt("q3");
        if (dk !== 512 / 8) return verdict(out, false, "d_k 是每个头的维度：d_model / n_head / d_k is per head: d_model / n_head");
        const right = WB.simulateScaling(64, 64), over = WB.simulateScaling(64, 512);
        verdict(out, true, `d_k = 64。模拟（400 个查询 × 24 个键）：除以 √64 时 logits 标准差 ${fmt(right.std)}、` +
          `归一化熵 ${fmt(right.entropy)}；除以 √512 时 ${fmt(over.std)}、熵 ${fmt(over.entropy)}——缩放过度 √8 倍，` +
          `分布更接近均匀 / simulated: ÷√64 gives std ${fmt(right.std)}, ÷√512 gives ${fmt(over.std)} and an entropy closer to 1`);
      };
      box.append(el("label", {}, "d_k = ", input), el("button", { type: "button", "data-testid": "q3-check", onclick: go, text: "检查 / check" }), out);
    },
    q7(box) {
      const input = el("input", { type: "text", "data-testid": "q7-formula", size: "18", placeholder: "例如 d*s^2", "aria-label": "Var(q^T k)" });
      const out = el("div", { class: "msg", "data-testid": "q7-result" });
      const go = () => {
        markAttempt("q7");
        const sim = WB.simulateDotVar(sigma, 64);
        let r;
        try { r = WB.checkVarFormula(input.value, sigma, 64, sim); } catch (e) { return verdict(out, false, e.message); }
        const line = `你的公式在 d = 64、σ = ${sigma} 时是 ${fmt(r.got)}；模拟（20000 组）${fmt(sim.variance)} ± ${fmt(sim.se)}（标准误）` +
          ` / yours ${fmt(r.got)}, simulated ${fmt(sim.variance)} ± ${fmt(sim.se)}`;
        if (!r.ok) return verdict(out, false, `${line}：相差 ${fmt(Math.abs(r.z), 1)} 个标准误 / ${fmt(Math.abs(r.z), 1)} standard errors off`);
        verdict(out, true, `${line}。除以 √d_k 之后标准差是 ${fmt(sim.scaledStd)}（σ² = ${fmt(sigma * sigma)}），不是 1：` +
          `σ ≠ 1 时 √d_k ${sigma < 1 ? "缩放过度" : "缩放不足"} / after ÷√d_k the std is σ², not 1`);
      };
      box.append(el("p", { "data-testid": "q7-sigma", text: `这一次 σ = ${sigma}（d = 64）。用 d 和 s（或 σ）写出 Var(q^T k)。 / This time σ = ${sigma}.` }),
        el("label", {}, "Var(q^T k) = ", input), el("button", { type: "button", "data-testid": "q7-check", onclick: go, text: "检查 / check" }), out);
    },
    q8(box) {
      const p = WB.softmax(Z8);
      const inputs = p.map((_, j) => el("input", { type: "text", size: "8", "data-testid": `q8-j${j}`, "aria-label": `J[${ROW8},${j}]` }));
      const out = el("div", { class: "msg", "data-testid": "q8-result" });
      const go = () => {
        markAttempt("q8");
        const want = WB.jacobianRow(p, ROW8);
        const got = inputs.map((i) => Number(String(i.value).replace("−", "-")));
        const off = got.map((g, j) => (Number.isFinite(g) && Math.abs(g - want[j]) <= 1e-3 ? null : j)).filter((j) => j !== null);
        const sum = got.reduce((a, b) => a + (Number.isFinite(b) ? b : NaN), 0);
        if (off.length) return verdict(out, false, `第 ${off.join("、")} 项不对：J_ij = p_i(δ_ij − p_j) / entries ${off.join(", ")} are off`);
        verdict(out, true, `这一行的和是 ${sum.toExponential(1)}（精确值 0）：p_i(1 − Σ_j p_j) = 0，` +
          `softmax 对整体平移不变 / the row sums to zero: the softmax ignores a shift of all logits`);
      };
      box.append(el("p", { text: `z = [${Z8.join(", ")}]，p = softmax(z) = [${p.map((x) => x.toFixed(4)).join(", ")}]。` +
        `写出雅可比的第 ${ROW8} 行（从 0 数）/ write row ${ROW8} of the Jacobian:` }),
      el("div", {}, ...inputs.map((i, j) => el("label", {}, ` J[${ROW8},${j}] `, i))),
      el("button", { type: "button", "data-testid": "q8-check", onclick: go, text: "检查 / check" }), out);
    },
    q9(box) {
      const input = el("input", { type: "text", size: "28", "data-testid": "q9-arith", placeholder: "例如 2048^2*16*24*2/1e9", "aria-label": "GB" });
      const out = el("div", { class: "msg", "data-testid": "q9-result" });
      const go = () => {
        markAttempt("q9");
        let got;
        try { got = Number(WB.compile(input.value, [])({})); } catch (e) { return verdict(out, false, e.message); }
        const want = WB.matrixBytes(2048, 16, 24, 2) / 1e9;
        const ok = Math.abs(got - want) <= 0.01 * want;
        verdict(out, ok, ok
          ? `${fmt(got)} GB（十进制 GB）：式 1.45 给 ${fmt(want)} GB；fp32 翻倍，n = 8192 时乘 16 / eq. 1.45 gives ${fmt(want)} GB`
          : `你的算式得 ${fmt(got)}，不是 GB 数；式 1.45：n² × 头数 × 层数 × 字节数，再除以 10^9 / yours gives ${fmt(got)}; eq. 1.45 is n² × heads × layers × bytes / 10^9`);
      };
      box.append(el("label", {}, "你的算式（GB）/ your arithmetic (GB) = ", input),
        el("button", { type: "button", "data-testid": "q9-check", onclick: go, text: "检查 / check" }), out);
    },
    q10(box) {
      const N = 12, W = 4;
      const input = el("input", { type: "text", size: "28", "data-testid": "q10-cond", placeholder: "用 i、j、w 写，例如 j <= i", "aria-label": "mask" });
      const grid = el("div", { "data-testid": "q10-grid" });
      const out = el("div", { class: "msg", "data-testid": "q10-result" });
      const claims = [
        ["compute", "计算量从 O(n²d) 降到 O(nwd) / compute", true],
        ["memory", "不再需要完整的 n × n 矩阵（实现得当时）/ the n × n matrix", true],
        ["longrange", "长程依赖（位置 i 仍能看到 i − w 之前）/ long-range dependence", false],
        ["kernel", "实现复杂度 / implementation effort", false],
      ];
      const boxes = claims.map(([k, text]) => el("label", {}, el("input", { type: "checkbox", "data-testid": `q10-${k}` }), ` ${text} `));
      const go = () => {
        markAttempt("q10");
        let mine;
        try { mine = WB.maskFrom(input.value, N, W); } catch (e) { return verdict(out, false, e.message); }
        const ref = WB.slidingWindowMask(N, W);
        let wrong = 0;
        const rows = mine.map((row, i) => el("tr", {}, ...row.map((m, j) => {
          const bad = m !== ref[i][j];
          wrong += bad;
          return el("td", { class: bad ? "wb-bad" : m ? "wb-on" : "wb-off", text: bad ? "×" : m ? "■" : "·" });
        })));
        grid.replaceChildren(el("table", { class: "mat wb-mask" }, el("tbody", {}, ...rows)));
        const saved = claims.every(([, , yes], k) => boxes[k].querySelector("input").checked === yes);
        const bookCode = JSON.stringify(mine) === JSON.stringify(WB.maskFrom("j <= i && i - j <= w", N, W));
        if (wrong) {
          return verdict(out, false, `${wrong} 个格子和 sliding_window_mask(${N}, ${W}) 不同（×）` +
            (bookCode ? "：这是 §1.24 代码的写法 (i − j) <= w，每行看 w + 1 个；书中的文字说 i − w < j ≤ i（w 个）" : "") +
            ` / ${wrong} cells differ from sliding_window_mask`);
        }
        const saving = (8192 * 8192) / (8192 * 256);
        verdict(out, saved, `掩码与 sliding_window_mask(${N}, ${W}) 相同。` + (saved
          ? `n = 8192、w = 256 时打分的格子少 ${saving} 倍；省下的是计算与显存，没省下的是能力（长程依赖）与实现难度 / ${saving}× fewer scores`
          : "掩码对了；再想想省下了什么、没省下什么（勾选的不对）/ the mask is right; the ticks are not"));
      };
      box.append(el("p", { text: `n = ${N}、w = ${W}：写出“位置 i 能看 j”的条件。/ the condition for “i sees j”.` }),
        el("label", {}, "条件 / condition: ", input), el("div", {}, ...boxes),
        el("button", { type: "button", "data-testid": "q10-check", onclick: go, text: "检查 / check" }), grid, out);
    },
  };

  // ------------------------------------------------------------------------ one item
  function itemCard(it) {
    const card = el("section", { class: "card wb-item", id: it.id, "data-testid": `item-${it.id}` });
    card.append(el("h2", {}, `${it.id} · ${KIND[it.kind]} ${it.number} `, el("span", { class: "note", text: it.section })));
    card.append(el("blockquote", { class: "wb-quote", text: it.quote }));
    card.append(el("p", {}, el("b", { text: "要做什么 / what to do：" }), it.do));
    if (it.where.length) card.append(el("p", {}, el("b", { text: "在哪里 / where：" }), ...it.where.flatMap((w) => [whereNode(w), " "])));
    const links = (it.check.links || []).flatMap((l) => [el("a", { href: l.href, text: l.text }), " "]);
    card.append(el("p", { class: "note" }, el("b", { text: `怎么检查 / how checked（${WORKBOOK.checks[it.check.kind]}）：` }), it.check.how, " ", ...links));
    for (const n of it.notes || []) card.append(el("p", { class: "wb-slip", "data-testid": `slip-${it.id}` }, el("b", { text: "书中的疏漏 / the chapter slipped: " }), n));
    if (WIDGETS[it.id]) {
      const box = el("div", { class: "wb-widget", "data-testid": `widget-${it.id}` });
      WIDGETS[it.id](box);
      card.append(box);
    }
    if (it.answer) {
      const ans = el("div", { class: "wb-answer", hidden: true, "data-testid": `answer-${it.id}` },
        el("h3", { text: `书中的解答 / the chapter's answer（${it.answer.section}）` }), el("blockquote", { class: "wb-quote", text: it.answer.text }));
      const open = el("button", { type: "button", "data-testid": `open-${it.id}`, disabled: true, text: "打开书中的解答 / open the chapter's answer",
        onclick: () => { ans.hidden = false; } });
      if (!WIDGETS[it.id]) {
        const mine = el("textarea", { rows: "3", cols: "60", "data-testid": `attempt-${it.id}`, placeholder: "先写下你的回答 / write your answer first",
          "aria-label": "your answer" });
        mine.addEventListener("input", () => { if (mine.value.trim().length >= 4) markAttempt(it.id); });
        card.append(mine);
      }
      card.append(el("div", {}, open), ans);
    }
    return card;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const items = WORKBOOK.items;
    $("wb-toc").append(...items.flatMap((it) => [el("a", { href: `#${it.id}`, text: it.id }), " "]));
    $("wb-items").replaceChildren(...items.map(itemCard));
    if (location.hash) { const t = document.getElementById(location.hash.slice(1)); if (t) t.scrollIntoView(); }
    window.attnlab = { ...(window.attnlab || {}), workbook: { WB, sigma, attempted: () => [...attempted], items: items.map((it) => it.id) } };
  });
})();

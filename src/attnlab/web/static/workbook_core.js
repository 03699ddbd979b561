// The workbook page's computations, pure and DOM-free: the page uses them, and tests run them under
// Node against the Python they mirror (attention/memory.py, attention/masks.py).
"use strict";

const WB = (() => {
  // ---- eq. 1.45, as attnlab.attention.memory.attention_matrix_bytes
  function matrixBytes(n, nHead, nLayer, bytesPer = 2) {
    for (const [name, v] of [["n", n], ["n_head", nHead], ["n_layer", nLayer], ["bytes_per", bytesPer]]) {
      if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
    }
    return n * n * nHead * nLayer * bytesPer; // exact below 2^53 (n up to ~10^6 at these sizes)
  }

  // ---- as attnlab.attention.masks.sliding_window_mask_np: query i sees keys i-w+1 .. i (w keys at most)
  function slidingWindowMask(n, w) {
    if (!Number.isInteger(n) || n < 1) throw new Error(`n must be a positive integer, got ${n}`);
    if (!Number.isInteger(w) || w < 1) throw new Error(`window w must be a positive integer, got ${w}`);
    return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => i - j >= 0 && i - j < w));
  }

  // ---- a small expression language for a student's formula or mask condition (no eval)
  const OPS = [
    ["||", 1], ["or", 1], ["&&", 2], ["and", 2],
    ["==", 3], ["!=", 3], ["<=", 4], [">=", 4], ["<", 4], [">", 4],
    ["+", 5], ["-", 5], ["*", 6], ["/", 6], ["%", 6], ["**", 8], ["^", 8],
  ];
  const FUNCS = { sqrt: Math.sqrt, abs: Math.abs, exp: Math.exp, log: Math.log };

  function tokenize(src) {
    const s = String(src).replace(/σ/g, "s").replace(/×|·/g, "*").replace(/−/g, "-").replace(/≤/g, "<=")
      .replace(/≥/g, ">=").replace(/√/g, "sqrt");
    const out = [];
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (/\s/.test(c)) { i++; continue; }
      const num = /^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(s.slice(i));
      if (num) { out.push({ t: "num", v: Number(num[0]) }); i += num[0].length; continue; }
      const id = /^[A-Za-z_]\w*/.exec(s.slice(i));
      if (id) {
        const w = id[0];
        out.push(w === "and" || w === "or" ? { t: "op", v: w } : w === "not" ? { t: "not" } : { t: "id", v: w });
        i += w.length; continue;
      }
      const op = ["**", "&&", "||", "<=", ">=", "==", "!="].find((o) => s.startsWith(o, i)) || "+-*/%^<>!(),".includes(c) && c;
      if (!op) throw new Error(`不认识的字符 / unexpected character “${c}”`);
      out.push(op === "(" || op === ")" || op === "," ? { t: op } : op === "!" ? { t: "not" } : { t: "op", v: op });
      i += op.length;
    }
    return out;
  }

  // precedence climbing; returns a function of an environment
  function compile(src, names) {
    const toks = tokenize(src);
    let k = 0;
    const peek = () => toks[k];
    const prec = (tok) => (tok && tok.t === "op" ? (OPS.find(([o]) => o === tok.v) || [0, 0])[1] : 0);
    function primary() {
      const tok = toks[k++];
      if (!tok) throw new Error("式子不完整 / the expression ends too early");
      if (tok.t === "num") return () => tok.v;
      if (tok.t === "(") { const e = expr(0); if (!toks[k] || toks[k++].t !== ")") throw new Error("缺右括号 / missing )"); return e; }
      if (tok.t === "op" && tok.v === "-") { const e = unaryOperand(); return (env) => -e(env); }
      if (tok.t === "op" && tok.v === "+") return unaryOperand();
      if (tok.t === "not") { const e = unaryOperand(); return (env) => !e(env); }
      if (tok.t === "id") {
        if (FUNCS[tok.v] && peek() && peek().t === "(") {
          k++; const a = expr(0); if (!toks[k] || toks[k++].t !== ")") throw new Error("缺右括号 / missing )");
          const f = FUNCS[tok.v]; return (env) => f(a(env));
        }
        if (!names.includes(tok.v)) throw new Error(`未知的名字 / unknown name “${tok.v}” (use ${names.join(", ")})`);
        return (env) => env[tok.v];
      }
      throw new Error(`这里不该有 / unexpected “${tok.v || tok.t}”`);
    }
    function unaryOperand() { return expr(7); } // binds tighter than * and /, looser than ^
    function expr(minPrec) {
      let left = primary();
      for (;;) {
        const tok = peek(), p = prec(tok);
        if (!p || p < minPrec) break;
        k++;
        const right = tok.v === "**" || tok.v === "^" ? expr(p) : expr(p + 1); // ^ is right-associative
        const l = left, r = right, o = tok.v;
        left = {
          "+": (e) => l(e) + r(e), "-": (e) => l(e) - r(e), "*": (e) => l(e) * r(e), "/": (e) => l(e) / r(e),
          "%": (e) => l(e) % r(e), "**": (e) => l(e) ** r(e), "^": (e) => l(e) ** r(e),
          "<": (e) => l(e) < r(e), "<=": (e) => l(e) <= r(e), ">": (e) => l(e) > r(e), ">=": (e) => l(e) >= r(e),
          "==": (e) => l(e) === r(e), "!=": (e) => l(e) !== r(e),
          "&&": (e) => l(e) && r(e), and: (e) => l(e) && r(e), "||": (e) => l(e) || r(e), or: (e) => l(e) || r(e),
        }[o];
      }
      return left;
    }
    const f = expr(0);
    if (k < toks.length) throw new Error(`多出来的 / unexpected “${toks[k].v || toks[k].t}”`);
    return f;
  }

  // ---- seeded normals (mulberry32 + Box–Muller), so a page's numbers are reproducible
  function rng(seed) {
    let a = seed >>> 0;
    const u = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    return { u, normal: () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u()) };
  }

  // ---- Q7: Var(q^T k) by simulation, with the standard error of the variance estimate
  function simulateDotVar(sigma, d, N = 20000, seed = 7) {
    const r = rng(seed), xs = new Float64Array(N);
    for (let s = 0; s < N; s++) {
      let dot = 0;
      for (let i = 0; i < d; i++) dot += sigma * r.normal() * sigma * r.normal();
      xs[s] = dot;
    }
    let m = 0; for (const x of xs) m += x; m /= N;
    let v = 0, m4 = 0; for (const x of xs) { const c = (x - m) ** 2; v += c; m4 += c * c; }
    v /= N - 1; m4 /= N;
    return { variance: v, se: Math.sqrt(Math.max(m4 - v * v, 0) / N), scaledStd: Math.sqrt(v / d) };
  }

  function checkVarFormula(src, sigma, d, sim) {
    const f = compile(src, ["d", "s", "sigma"]);
    const got = Number(f({ d, s: sigma, sigma }));
    const ok = Number.isFinite(got) && Math.abs(got - sim.variance) <= 4 * sim.se;
    return { ok, got, z: (got - sim.variance) / sim.se };
  }

  // ---- Q3: logits of unit-variance q, k divided by √d_k or √512: their std and the softmax entropy over T keys
  function simulateScaling(dk, divisor, T = 24, N = 400, seed = 3) {
    const r = rng(seed);
    let sum = 0, sq = 0, ent = 0, cnt = 0;
    for (let s = 0; s < N; s++) {
      const q = Array.from({ length: dk }, r.normal);
      const z = Array.from({ length: T }, () => {
        let dot = 0; for (let i = 0; i < dk; i++) dot += q[i] * r.normal();
        return dot / Math.sqrt(divisor);
      });
      for (const x of z) { sum += x; sq += x * x; cnt++; }
      const p = softmax(z);
      ent += -p.reduce((a, x) => a + (x > 0 ? x * Math.log(x) : 0), 0) / Math.log(T);
    }
    const mean = sum / cnt;
    return { std: Math.sqrt(sq / cnt - mean * mean), entropy: ent / N };
  }

  function softmax(z) {
    const m = Math.max(...z), e = z.map((x) => Math.exp(x - m)), s = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / s);
  }

  // ---- Q8: row i of the softmax Jacobian, J_ij = p_i (δ_ij − p_j)
  function jacobianRow(p, i) {
    return p.map((pj, j) => p[i] * ((i === j ? 1 : 0) - pj));
  }

  // ---- Q10: the student's condition on (i, j, w) as an n × n mask
  function maskFrom(src, n, w) {
    const f = compile(src, ["i", "j", "w", "n"]);
    return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => Boolean(f({ i, j, w, n }))));
  }

  return { matrixBytes, slidingWindowMask, compile, rng, simulateDotVar, checkVarFormula, simulateScaling, softmax, jacobianRow, maskFrom };
})();

if (typeof module !== "undefined") module.exports = WB;

// Attention math for the browser pages: pure functions, no DOM.
// Conventions follow chapter 1: scores S = Q K^T (optionally / sqrt(d_k)),
// causal mask = position i sees j <= i, normalized entropy = H / log(n_valid) (§1.19.3),
// ||J||_F of the softmax Jacobian J = diag(p) - p p^T (§1.7.3).
"use strict";

const Attn = (() => {
  function dot(a, b) {
    let s = 0;
    for (let i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }

  // Softmax of z over the entries where visible[j] is true; masked entries get exactly 0.
  // Subtracting the max keeps exp() finite for large scores (§1.11.3).
  function softmax(z, visible) {
    let m = -Infinity;
    for (let j = 0; j < z.length; j++) if (visible[j] && z[j] > m) m = z[j];
    const p = z.map((x, j) => (visible[j] ? Math.exp(x - m) : 0));
    const s = p.reduce((a, b) => a + b, 0);
    return p.map((x) => x / s);
  }

  // Normalized entropy in [0, 1]; undefined (null) when only one position is visible.
  function entropy(p, nValid) {
    if (nValid <= 1) return null;
    let h = 0;
    for (const x of p) if (x > 0) h -= x * Math.log(x);
    return h / Math.log(nValid);
  }

  // ||J||_F, where ||J||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2 (no n x n matrix needed).
  // Summed that way the terms cancel catastrophically near saturation (p_max -> 1),
  // exactly where experiment 1-1 needs the number, so the dominant entry's
  // "1 - p_max" and "sum_{j != max} p_j^2" are built from the other entries instead.
  function jacobianFro(p) {
    let m = 0;
    for (let j = 1; j < p.length; j++) if (p[j] > p[m]) m = j;
    const pm = p[m];
    let rest1 = 0, rest2 = 0;
    for (let j = 0; j < p.length; j++) if (j !== m) { rest1 += p[j]; rest2 += p[j] * p[j]; }
    const s2 = rest2 + pm * pm;
    let diag = (pm * rest1) ** 2, off = pm * pm * rest2;
    for (let j = 0; j < p.length; j++) {
      if (j === m) continue;
      const o2 = p[j] * p[j];
      diag += o2 * (1 - p[j]) ** 2;
      off += o2 * (s2 - o2);
    }
    return Math.sqrt(diag + off);
  }

  // One attention forward pass, row by row. rowOk[i] === false marks rows whose
  // inputs are invalid: their scores, weights and outputs come back as null.
  function attention(Q, K, V, { scale = true, causal = true, qOk, kOk, vOk } = {}) {
    const n = Q.length, d = Q[0].length;
    const c = scale ? 1 / Math.sqrt(d) : 1;
    const ok = (arr, i) => !arr || arr[i];
    const res = { scores: [], weights: [], out: [], entropy: [], visible: [], rowOk: [] };
    for (let i = 0; i < n; i++) {
      const visible = Q.map((_, j) => !causal || j <= i);
      let good = ok(qOk, i);
      for (let j = 0; j < n; j++) if (visible[j] && !ok(kOk, j)) good = false;
      let goodOut = good;
      for (let j = 0; j < n; j++) if (visible[j] && !ok(vOk, j)) goodOut = false;
      res.visible.push(visible);
      res.rowOk.push(good && goodOut);
      if (!good) {
        res.scores.push(null); res.weights.push(null); res.out.push(null); res.entropy.push(null);
        continue;
      }
      const s = K.map((k, j) => (visible[j] ? dot(Q[i], k) * c : -Infinity));
      const p = softmax(s, visible);
      res.scores.push(s);
      res.weights.push(p);
      res.entropy.push(entropy(p.filter((_, j) => visible[j]), visible.filter(Boolean).length));
      if (!goodOut) { res.out.push(null); continue; }
      const o = new Array(V[0].length).fill(0);
      for (let j = 0; j < n; j++) if (p[j] > 0) for (let t = 0; t < o.length; t++) o[t] += p[j] * V[j][t];
      res.out.push(o);
    }
    return res;
  }

  // Small seeded PRNG (mulberry32) and Box-Muller normals: reproducible across browsers.
  function mulberry32(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function normals(rng, count) {
    const out = new Float64Array(count);
    for (let i = 0; i < count; i += 2) {
      const u = 1 - rng(), v = rng();
      const r = Math.sqrt(-2 * Math.log(u));
      out[i] = r * Math.cos(2 * Math.PI * v);
      if (i + 1 < count) out[i + 1] = r * Math.sin(2 * Math.PI * v);
    }
    return out;
  }

  // Experiment 1-1: `rows` queries against `n` keys, every component ~ N(0, 1).
  // Returns, for unscaled and scaled logits, the logit std (over all logits),
  // the mean normalized entropy and the mean ||J||_F over the rows.
  function experiment11({ dk, n = 16, rows = 64, seed = 0 }) {
    const rng = mulberry32((seed * 1000003 + dk) >>> 0);
    const q = normals(rng, rows * dk), k = normals(rng, n * dk);
    const stats = {};
    for (const [name, c] of [["unscaled", 1], ["scaled", 1 / Math.sqrt(dk)]]) {
      let sum = 0, sum2 = 0, ent = 0, jac = 0;
      const visible = new Array(n).fill(true);
      for (let r = 0; r < rows; r++) {
        const z = new Array(n);
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let t = 0; t < dk; t++) s += q[r * dk + t] * k[j * dk + t];
          z[j] = s * c;
          sum += z[j]; sum2 += z[j] * z[j];
        }
        const p = softmax(z, visible);
        ent += entropy(p, n);
        jac += jacobianFro(p);
      }
      const m = rows * n, mean = sum / m;
      stats[name] = {
        logitStd: Math.sqrt(Math.max(0, sum2 / m - mean * mean)),
        entropy: ent / rows,
        jacobian: jac / rows,
      };
    }
    return stats;
  }

  return { dot, softmax, entropy, jacobianFro, attention, mulberry32, normals, experiment11 };
})();

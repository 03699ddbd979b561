// The chapter's tiny GPT, forward only, in plain JavaScript for the static site's /next page (the server
// computes the same with PyTorch: attnlab.web.nextchar). Every number is a float64 computed from the
// checkpoint's float32 weights, as the server's float64 copy of the model does, so the two agree to
// float64 rounding. It knows the chapter's model only: learned positions, Pre-LN blocks with LayerNorm
// (eps 1e-5), multi-head causal attention scaled by 1/√d_k, none or 1/d_k, an MLP with the exact GELU,
// the final LayerNorm and a head tied to the token embedding (or its own).
"use strict";

const Forward = (() => {
  const EPS = 1e-5;   // torch.nn.LayerNorm's default

  // fdlibm's erf (the same approximation scripts/export_onnx.py writes into the ONNX graphs)
  const ERX = 8.45062911510467529297e-01;
  const PP = [1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
    -5.77027029648944159157e-03, -2.37630166566501626084e-05];
  const QQ = [1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
    1.32494738004321644526e-04, -3.96022827877536812320e-06];
  const PA = [-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
    3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02, -2.16637559486879084300e-03];
  const QA = [1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
    1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02];
  const RA = [-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e01,
    -6.23753324503260060396e01, -1.62396669462573470355e02, -1.84605092906711035994e02,
    -8.12874355063065934246e01, -9.81432934416914548592e00];
  const SA = [1.0, 1.96512716674392571292e01, 1.37657754143519042600e02, 4.34565877475229228821e02,
    6.45387271733267880336e02, 4.29008140027567833386e02, 1.08635005541779435134e02,
    6.57024977031928170135e00, -6.04244152148580987438e-02];
  const RB = [-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e01,
    -1.60636384855821916062e02, -6.37566443368389627722e02, -1.02509513161107724954e03, -4.83519191608651397019e02];
  const SB = [1.0, 3.03380607434824582924e01, 3.25792512996573918826e02, 1.53672958608443695994e03,
    3.19985821950859553908e03, 2.55305040643316442583e03, 4.74528541206955367215e02, -2.24409524465858183362e01];
  const poly = (s, c) => { let acc = 0; for (let i = c.length - 1; i >= 0; i--) acc = acc * s + c[i]; return acc; };

  function erf(x) {
    const a = Math.abs(x);
    if (a < 0.84375) { const z = x * x; return x + x * (poly(z, PP) / poly(z, QQ)); }
    let r;
    if (a < 1.25) r = ERX + poly(a - 1, PA) / poly(a - 1, QA);
    else if (a < 6) {
      const s = 1 / (x * x);
      const ratio = a < 1 / 0.35 ? poly(s, RA) / poly(s, SA) : poly(s, RB) / poly(s, SB);
      r = 1 - Math.exp(-x * x - 0.5625 + ratio) / a;
    } else r = 1;
    return x < 0 ? -r : r;
  }
  const gelu = (x) => x * 0.5 * (1 + erf(x * 0.7071067811865476));

  // x: T rows of length n (Float64Array each); W (out, in) row-major float32; b (out) or null
  function linear(x, W, b, out) {
    const n = x[0].length;
    return x.map((row) => {
      const y = new Float64Array(out);
      for (let o = 0; o < out; o++) {
        let acc = 0;
        const base = o * n;
        for (let i = 0; i < n; i++) acc += W[base + i] * row[i];
        y[o] = b ? acc + b[o] : acc;
      }
      return y;
    });
  }

  function layerNorm(x, w, b) {
    return x.map((row) => {
      const n = row.length;
      let mean = 0;
      for (let i = 0; i < n; i++) mean += row[i];
      mean /= n;
      let v = 0;
      for (let i = 0; i < n; i++) v += (row[i] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / n + EPS);
      const y = new Float64Array(n);
      for (let i = 0; i < n; i++) y[i] = (row[i] - mean) * inv * w[i] + b[i];
      return y;
    });
  }

  const add = (a, b) => a.map((row, t) => row.map((v, i) => v + b[t][i]));
  const norms = (x) => x.map((row) => Math.sqrt(row.reduce((s, v) => s + v * v, 0)));

  // One attention layer: returns [output (T, C), the last query's weights per head (nh, T)].
  function attention(x, p, cfg) {
    const T = x.length, C = cfg.d_model, nh = cfg.n_head, hs = cfg.d_head;
    const scale = { "1/sqrt(d)": 1 / Math.sqrt(hs), none: 1, "1/d": 1 / hs }[cfg.scale_rule];
    const qkv = linear(x, p.qkv, null, 3 * C);
    const y = Array.from({ length: T }, () => new Float64Array(C));
    const lastRows = [];
    for (let h = 0; h < nh; h++) {
      const qo = h * hs, ko = C + h * hs, vo = 2 * C + h * hs;
      for (let i = 0; i < T; i++) {
        const s = new Float64Array(i + 1);
        let max = -Infinity;
        for (let j = 0; j <= i; j++) {
          let acc = 0;
          for (let d = 0; d < hs; d++) acc += qkv[i][qo + d] * qkv[j][ko + d];
          s[j] = acc * scale;
          if (s[j] > max) max = s[j];
        }
        let sum = 0;
        for (let j = 0; j <= i; j++) { s[j] = Math.exp(s[j] - max); sum += s[j]; }
        for (let j = 0; j <= i; j++) s[j] /= sum;
        for (let d = 0; d < hs; d++) {
          let acc = 0;
          for (let j = 0; j <= i; j++) acc += s[j] * qkv[j][vo + d];
          y[i][qo + d] = acc;
        }
        if (i === T - 1) lastRows.push(Array.from(s));
      }
    }
    return [linear(y, p.proj, null, C), lastRows];
  }

  // A model from the site's index of tensors ({key, file, shape, offset, length}) and the files' bytes.
  function load(config, index, files) {
    const t = {};
    for (const e of index) {
      const bytes = files[e.file];
      if (!bytes || e.offset + e.length > bytes.byteLength) throw new Error(`${e.file} is shorter than the index says (${e.key})`);
      t[e.key] = new Float32Array(bytes.buffer, bytes.byteOffset + e.offset, e.length / 4);
    }
    const need = (k) => { if (!t[k]) throw new Error(`no tensor ${k}`); return t[k]; };
    const blocks = Array.from({ length: config.n_layer }, (_, i) => {
      const b = (k) => need(`blocks.${i}.${k}`);
      return { ln1: [b("ln1.weight"), b("ln1.bias")], qkv: b("attn.qkv.weight"), proj: b("attn.proj.weight"),
        ln2: [b("ln2.weight"), b("ln2.bias")], fc: [b("mlp.0.weight"), b("mlp.0.bias")], out: [b("mlp.2.weight"), b("mlp.2.bias")] };
    });
    const head = config.tie_weights ? need("tok_emb.weight") : need("head.weight");
    return { config, tok: need("tok_emb.weight"), pos: need("pos_emb.weight"), blocks,
      lnf: [need("ln_f.weight"), need("ln_f.bias")], head, vocab: head.length / config.d_model };
  }

  // The payload of attnlab.web.nextchar.next_payload: norms per position, the last query's attention
  // per head in every block, the final norm's output size and the next character's logits.
  function forward(m, ids) {
    const C = m.config.d_model, T = ids.length;
    const row = (table, r) => Float64Array.from(table.subarray(r * C, (r + 1) * C));
    const tok = ids.map((id) => row(m.tok, id));
    const pos = ids.map((_, i) => row(m.pos, i));
    let x = add(tok, pos);
    const embedding = { token_norm: norms(tok), position_norm: norms(pos), sum_norm: norms(x) };
    const blocks = m.blocks.map((p) => {
      const [a, attention_rows] = attention(layerNorm(x, ...p.ln1), p, m.config);
      x = add(x, a);
      const afterAttn = norms(x);
      const hidden = linear(layerNorm(x, ...p.ln2), p.fc[0], p.fc[1], m.config.d_ff).map((r) => r.map(gelu));
      const mlp = linear(hidden, p.out[0], p.out[1], C);
      x = add(x, mlp);
      return { attn_norm: norms(a), after_attn: afterAttn, mlp_norm: norms(mlp), after_mlp: norms(x), attention: attention_rows };
    });
    const h = layerNorm(x, ...m.lnf);
    const logits = Array.from(linear([h[T - 1]], m.head, null, m.vocab)[0]);
    return { embedding, blocks, final_norm: norms(h), logits };
  }

  return { load, forward, erf };
})();
window.Forward = Forward;   // site.js loads this file on demand and finds it here

// The train page's Web Worker: the chapter's tiny GPT (attnlab.model.TinyGPT with the book's
// settings: learned positions, Pre-LN, tied head, GELU MLP) trained as attnlab.train.train does:
// AdamW (0.9, 0.95, eps 1e-8, weight decay on matrices only), warmup + cosine to 10 %, gradient
// clipping at cfg.grad_clip, the per-layer diagnostics of attnlab.diagnostics.pattern_summary at
// every step, validation loss every eval_every steps and at the last.
//
// TensorFlow.js (vendored: tfjs-core + tfjs-backend-wasm) does the arithmetic; the backward pass
// is written out by hand instead of taken from autodiff: the wasm backend's matMul with a
// transposed operand (the form autodiff's gradients use) is many times slower than a plain
// matMul after an explicit transpose, the embedding's gradient is a scatter-add done here in
// float64 rather than a one-hot matmul, and a Linear's weight is kept transposed, (in, out), so
// the forward pass multiplies without transposing.
//
// Initial weights and every batch come from attnlab itself (attnlab.web.trainexport), so a run
// here is the PyTorch run step for step as far as float32 allows.
//
// Messages in:  {type: "load", base, threads}            load the runtime
//               {type: "start", runs: [{id, init, corpus}], steps, snapshots: [steps], probe: [ids]}
//               {type: "pause"} {type: "resume"} {type: "stop"}
// Messages out: {type: "ready", backend, threads, simd} {type: "record", id, record, ms}
//               {type: "snapshot", id, step, maps} {type: "done", id?, reason} {type: "error", message}
"use strict";

const ENTROPY_TINY = 1e-12;   // attnlab.diagnostics._TINY
const SPLIT = 1.999;          // attnlab.diagnostics._SPLIT
const SQ_MIN = 1.1e-19, CU_MIN = 2.3e-13;
const LN_EPS = 1e-5;          // torch.nn.LayerNorm
const BETA1 = 0.9, BETA2 = 0.95, ADAM_EPS = 1e-8;

// what the initial weights and the batches depend on: the rest of the config (scaling, lr, schedule,
// clipping, weight decay) may differ from the bundle's
const INIT_KEYS = ["n_layer", "n_head", "d_model", "d_ff", "block_size", "vocab_size", "init_std", "seed",
  "batch_size", "val_fraction", "eval_batches"];

let tf = null;

// ----------------------------------------------------------------------------- bundles
function unpack(buf) {
  const bytes = new Uint8Array(buf);
  if (String.fromCharCode(...bytes.subarray(0, 4)) !== "ATLT") throw new Error("not an attnlab train bundle");
  const n = new DataView(buf).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const body = 8 + n;
  const types = { float32: Float32Array, int32: Int32Array, uint16: Uint16Array };
  const arrays = {};
  for (const e of header.arrays) {
    const count = e.shape.reduce((a, b) => a * b, 1);
    arrays[e.name] = { shape: e.shape, data: new types[e.dtype](buf, body + e.offset, count) };
  }
  return { header, arrays };
}

// ------------------------------------------------------------------------- schedule
function lrAt(step, cfg) {   // attnlab.train.lr_at
  if (step < cfg.warmup) return cfg.lr * (step + 1) / cfg.warmup;
  const span = Math.max(1, cfg.max_steps - cfg.warmup);
  const progress = Math.min(1.0, (step - cfg.warmup) / span);
  return cfg.lr * (0.1 + 0.9 * 0.5 * (1.0 + Math.cos(Math.PI * progress)));
}

function scaleOf(cfg) {
  const rule = cfg.attn_scale || (cfg.scaled ? "1/sqrt(d)" : "none");
  const hs = cfg.d_model / cfg.n_head;
  return { "1/sqrt(d)": 1 / Math.sqrt(hs), none: 1, "1/d": 1 / hs }[rule];
}

// ------------------------------------------------------------------- diagnostics (JS)
// attnlab.diagnostics.pattern_summary on host arrays, accumulated in float64.
function patternSummary(s, p, q, k, BH, T) {
  let ent = 0, jac = 0, rows = 0;
  for (let bh = 0; bh < BH; bh++) {
    for (let i = 1; i < T; i++) {
      const o = (bh * T + i) * T;
      let h = 0, pm = 0;
      for (let j = 0; j <= i; j++) {
        const x = p[o + j];
        if (x > ENTROPY_TINY) h -= x * Math.log(x);
        if (x > pm) pm = x;
      }
      ent += h / Math.log(i + 1);
      // ||diag(p) - p p^T||_F with the dominant entry split off (jacobian_frobenius)
      const dom = Math.floor(pm * SPLIT) >= 1 ? pm : 0;
      let r1 = 0, r2 = 0, r3 = 0, skipped = false;
      for (let j = 0; j <= i; j++) {
        let x = p[o + j];
        if (dom > 0 && !skipped && x === pm) { skipped = true; continue; }
        r1 += x;
        const x2 = x > SQ_MIN ? x * x : 0;
        r2 += x2;
        r3 += x > CU_MIN ? x2 * x : 0;
      }
      const pm2 = dom * dom;
      jac += Math.sqrt(Math.max(0, (1 + pm2 + r2) * r2 - 2 * r3 + pm2 * (r1 * r1 + r2)));
      rows++;
    }
  }
  // logits over the causal entries (j <= i), two passes
  let n = 0, sum = 0, absmax = 0;
  for (let bh = 0; bh < BH; bh++) for (let i = 0; i < T; i++) {
    const o = (bh * T + i) * T;
    for (let j = 0; j <= i; j++) { const x = s[o + j]; sum += x; n++; if (Math.abs(x) > absmax) absmax = Math.abs(x); }
  }
  const mean = sum / n;
  let dev = 0;
  for (let bh = 0; bh < BH; bh++) for (let i = 0; i < T; i++) {
    const o = (bh * T + i) * T;
    for (let j = 0; j <= i; j++) { const d = s[o + j] - mean; dev += d * d; }
  }
  return {
    weight_entropy: ent / rows,
    jacobian_fro: jac / rows,
    logit_std: Math.sqrt(dev / (n - 1)),
    logit_absmax: absmax,
    q_std: std(q),
    k_std: std(k),
  };
}

function std(a) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m += a[i];
  m /= a.length;
  let d = 0;
  for (let i = 0; i < a.length; i++) { const x = a[i] - m; d += x * x; }
  return Math.sqrt(d / (a.length - 1));
}

// ---------------------------------------------------------------------------- the model
const LINEARS = ["attn.qkv", "attn.proj", "mlp.0", "mlp.2"];   // kept transposed: (in, out)

class Trainer {
  constructor(initBuf, corpus, cfg) {
    const { header, arrays } = unpack(initBuf);
    this.header = header;
    cfg = this.cfg = cfg || header.config;
    for (const key of INIT_KEYS) {
      if (cfg[key] !== header.config[key]) {
        throw new Error(`the initial weights are for ${key}=${header.config[key]}, not ${cfg[key]}`);
      }
    }
    if (cfg.max_steps > arrays.batch_starts.shape[0] && !(cfg.max_steps <= header.config.max_steps)) {
      throw new Error(`the batches cover ${arrays.batch_starts.shape[0]} steps, not max_steps=${cfg.max_steps}`);
    }
    this.C = cfg.d_model; this.H = cfg.n_head; this.hs = cfg.d_model / cfg.n_head;
    this.L = cfg.n_layer; this.V = cfg.vocab_size; this.T = cfg.block_size; this.B = cfg.batch_size;
    this.scale = scaleOf(cfg);
    this.ids = corpus.ids;
    this.starts = arrays.batch_starts;
    this.valStarts = arrays.val_starts;
    this.params = {};   // name -> {w, m, v, decay}
    for (const e of header.arrays) {
      if (e.name === "batch_starts" || e.name === "val_starts") continue;
      let w = tf.tensor(arrays[e.name].data, e.shape, "float32");
      if (LINEARS.some((l) => e.name.endsWith(`${l}.weight`))) {
        const t = tf.transpose(w); w.dispose(); w = t;
      }
      this.params[e.name] = { w, m: tf.zerosLike(w), v: tf.zerosLike(w), decay: e.shape.length >= 2 };
    }
    const mask = new Float32Array(this.T * this.T);
    for (let i = 0; i < this.T; i++) for (let j = i + 1; j < this.T; j++) mask[i * this.T + j] = -Infinity;
    this.maskFull = tf.tensor(mask, [this.T, this.T]);
    this.t = 0;           // optimizer steps taken
    this.step = 0;        // next step to train
  }

  w(name) { return this.params[name].w; }

  dispose() {
    for (const p of Object.values(this.params)) { p.w.dispose(); p.m.dispose(); p.v.dispose(); }
    this.maskFull.dispose();
  }

  batch(starts, row, offset) {
    const { B, T } = this;
    const x = new Int32Array(B * T), y = new Int32Array(B * T);
    for (let b = 0; b < B; b++) {
      const s = offset + starts.data[row * B + b];
      for (let t = 0; t < T; t++) { x[b * T + t] = this.ids[s + t]; y[b * T + t] = this.ids[s + t + 1]; }
    }
    return { x, y };
  }

  // LayerNorm over the last axis of (N, C): output and what backward needs
  ln(x, g, b) {
    const xc = tf.sub(x, tf.mean(x, 1, true));
    const rstd = tf.rsqrt(tf.add(tf.mean(tf.square(xc), 1, true), LN_EPS));
    const xhat = tf.mul(xc, rstd);
    return { out: tf.add(tf.mul(xhat, g), b), xhat, rstd };
  }

  lnBack(dy, c, g) {
    const dxhat = tf.mul(dy, g);
    const dg = tf.sum(tf.mul(dy, c.xhat), 0);
    const db = tf.sum(dy, 0);
    const inner = tf.sub(tf.sub(dxhat, tf.mean(dxhat, 1, true)), tf.mul(c.xhat, tf.mean(tf.mul(dxhat, c.xhat), 1, true)));
    return { dx: tf.mul(inner, c.rstd), dg, db };
  }

  // forward over a (B, T) batch of ids; keeps what backward needs; diag: host copies for the summary
  forward(x, B, T, keep, diag) {
    const { C, H, hs, L } = this;
    const N = B * T;
    const mask = T === this.T ? this.maskFull : tf.slice(this.maskFull, [0, 0], [T, T]);
    const idx = tf.tensor1d(x, "int32");
    const tok = tf.reshape(tf.gather(this.w("tok_emb.weight"), idx), [B, T, C]);
    let h = tf.reshape(tf.add(tok, tf.slice(this.w("pos_emb.weight"), [0, 0], [T, C])), [N, C]);
    const layers = [];
    const stats = [];
    for (let l = 0; l < L; l++) {
      const P = `blocks.${l}.`;
      const c1 = this.ln(h, this.w(P + "ln1.weight"), this.w(P + "ln1.bias"));
      const qkv = tf.matMul(c1.out, this.w(P + "attn.qkv.weight"));   // (N, 3C)
      const heads = (i, perm) => tf.transpose(tf.reshape(tf.slice(qkv, [0, i * C], [N, C]), [B, T, H, hs]), perm);
      const q = heads(0, [0, 2, 1, 3]), kT = heads(1, [0, 2, 3, 1]), v = heads(2, [0, 2, 1, 3]);   // kT (B, H, hs, T)
      const s = tf.mul(tf.matMul(q, kT), this.scale);                   // (B, H, T, T)
      const p = tf.softmax(tf.add(s, mask));
      const y = tf.reshape(tf.transpose(tf.matMul(p, v), [0, 2, 1, 3]), [N, C]);
      const x1 = tf.add(h, tf.matMul(y, this.w(P + "attn.proj.weight")));
      const c2 = this.ln(x1, this.w(P + "ln2.weight"), this.w(P + "ln2.bias"));
      const u = tf.add(tf.matMul(c2.out, this.w(P + "mlp.0.weight")), this.w(P + "mlp.0.bias"));   // (N, F)
      const erf = tf.erf(tf.mul(u, Math.SQRT1_2));
      const g = tf.mul(tf.mul(u, tf.add(erf, 1)), 0.5);                // exact GELU
      h = tf.add(x1, tf.add(tf.matMul(g, this.w(P + "mlp.2.weight")), this.w(P + "mlp.2.bias")));
      if (keep) layers.push({ c1, q, kT, v, p, y, c2, u, erf, g });
      if (diag) {
        const k = tf.transpose(kT, [0, 1, 3, 2]);
        stats.push(patternSummary(s.dataSync(), p.dataSync(), q.dataSync(), k.dataSync(), B * H, T));
        if (diag === "maps") stats[stats.length - 1].maps = p.dataSync();
      }
    }
    const cf = this.ln(h, this.w("ln_f.weight"), this.w("ln_f.bias"));
    const logits = tf.matMul(cf.out, tf.transpose(this.w("tok_emb.weight")));   // (N, V)
    return { logits, layers, cf, stats };
  }

  lossOf(logits, y) {
    // tf.oneHot(..., "float32") gives integer bit patterns on wasm: one-hot as int32, then cast
    const onehot = tf.cast(tf.oneHot(tf.tensor1d(y, "int32"), this.V), "float32");
    const loss = tf.mean(tf.sub(tf.logSumExp(logits, 1), tf.sum(tf.mul(logits, onehot), 1)));
    return { loss, onehot };
  }

  evaluate() {
    let total = 0;
    const nVal = this.valStarts.shape[0];
    for (let i = 0; i < nVal; i++) {
      const { x, y } = this.batch(this.valStarts, i, this.header.val_start);
      total += tf.tidy(() => this.lossOf(this.forward(x, this.B, this.T, false, false).logits, y).loss.dataSync()[0]);
    }
    return total / nVal;
  }

  // attention maps of the probe (ids), per layer (H, T, T) Float32Arrays, as the current weights give them
  probe(ids) {
    return tf.tidy(() => {
      const out = this.forward(Int32Array.from(ids), 1, ids.length, false, "maps");
      return out.stats.map((s) => s.maps);
    });
  }

  trainStep() {
    const cfg = this.cfg, s = this.step;
    const { B, T, C, H, hs, L } = this;
    const N = B * T;
    const lr = lrAt(s, cfg);
    const { x, y } = this.batch(this.starts, s, 0);
    const record = { step: s, loss: NaN, lr, grad_norm: NaN };
    const kept = tf.tidy(() => {
      const fw = this.forward(x, B, T, true, cfg.record_every > 0 && s % cfg.record_every === 0);
      const { loss, onehot } = this.lossOf(fw.logits, y);
      record.loss = loss.dataSync()[0];
      if (fw.stats.length) record.layers = fw.stats;
      if (!Number.isFinite(record.loss)) return null;
      // ---- backward
      const grads = {};
      const T4 = [0, 1, 3, 2];
      const tr = (t, perm) => tf.transpose(t, perm);
      const wte = this.w("tok_emb.weight");
      const dlogits = tf.div(tf.sub(tf.softmax(fw.logits), onehot), N);
      const dhf = tf.matMul(dlogits, wte);
      const headGrad = tr(tf.matMul(tr(fw.cf.out), dlogits));         // (V, C)
      const bf = this.lnBack(dhf, fw.cf, this.w("ln_f.weight"));
      grads["ln_f.weight"] = bf.dg; grads["ln_f.bias"] = bf.db;
      let dx = bf.dx;
      for (let l = L - 1; l >= 0; l--) {
        const P = `blocks.${l}.`, c = fw.layers[l];
        // x2 = x1 + mlp(ln2(x1))
        grads[P + "mlp.2.bias"] = tf.sum(dx, 0);
        grads[P + "mlp.2.weight"] = tf.matMul(tr(c.g), dx);
        const dg = tf.matMul(dx, tr(this.w(P + "mlp.2.weight")));
        const pdf = tf.mul(tf.exp(tf.mul(tf.square(c.u), -0.5)), 1 / Math.sqrt(2 * Math.PI));
        const du = tf.mul(dg, tf.add(tf.mul(tf.add(c.erf, 1), 0.5), tf.mul(c.u, pdf)));
        grads[P + "mlp.0.bias"] = tf.sum(du, 0);
        grads[P + "mlp.0.weight"] = tf.matMul(tr(c.c2.out), du);
        const b2 = this.lnBack(tf.matMul(du, tr(this.w(P + "mlp.0.weight"))), c.c2, this.w(P + "ln2.weight"));
        grads[P + "ln2.weight"] = b2.dg; grads[P + "ln2.bias"] = b2.db;
        const dx1 = tf.add(dx, b2.dx);
        // x1 = x + proj(attention(ln1(x)))
        grads[P + "attn.proj.weight"] = tf.matMul(tr(c.y), dx1);
        const dyH = tr(tf.reshape(tf.matMul(dx1, tr(this.w(P + "attn.proj.weight"))), [B, T, H, hs]), [0, 2, 1, 3]);
        const dp = tf.matMul(dyH, tr(c.v, T4));                          // (B, H, T, T)
        const dv = tf.matMul(tr(c.p, T4), dyH);                          // (B, H, T, hs)
        const ds = tf.mul(tf.mul(c.p, tf.sub(dp, tf.sum(tf.mul(dp, c.p), -1, true))), this.scale);
        const dq = tf.matMul(ds, tr(c.kT, T4));
        const dk = tf.matMul(tr(ds, T4), c.q);
        const back = (t) => tf.reshape(tr(t, [0, 2, 1, 3]), [N, C]);
        const dqkv = tf.concat([back(dq), back(dk), back(dv)], 1);       // (N, 3C)
        grads[P + "attn.qkv.weight"] = tf.matMul(tr(c.c1.out), dqkv);
        const b1 = this.lnBack(tf.matMul(dqkv, tr(this.w(P + "attn.qkv.weight"))), c.c1, this.w(P + "ln1.weight"));
        grads[P + "ln1.weight"] = b1.dg; grads[P + "ln1.bias"] = b1.db;
        dx = tf.add(dx1, b1.dx);
      }
      // embeddings: positions sum over the batch; tokens a scatter-add by id (float64 on the host)
      let dpos = tf.sum(tf.reshape(dx, [B, T, C]), 0);
      if (T < this.T) dpos = tf.pad(dpos, [[0, this.T - T], [0, 0]]);
      grads["pos_emb.weight"] = dpos;
      const rows = dx.dataSync();
      const acc = new Float64Array(this.V * C);
      for (let n = 0; n < N; n++) {
        const o = x[n] * C, r = n * C;
        for (let j = 0; j < C; j++) acc[o + j] += rows[r + j];
      }
      grads["tok_emb.weight"] = tf.add(headGrad, tf.tensor(Float32Array.from(acc), [this.V, C]));
      // ---- clip (torch.nn.utils.clip_grad_norm_) and AdamW (torch.optim.AdamW, single tensor)
      const names = Object.keys(this.params);
      let sq = 0;
      for (const name of names) sq += tf.sum(tf.square(grads[name])).dataSync()[0];
      const total = Math.fround(Math.sqrt(sq));
      record.grad_norm = total;
      const clip = cfg.grad_clip > 0 ? Math.min(1, cfg.grad_clip / (total + 1e-6)) : 1;
      const t = this.t + 1;
      const bc1 = 1 - BETA1 ** t, bc2 = Math.sqrt(1 - BETA2 ** t);
      const out = {};
      for (const name of names) {
        const P = this.params[name];
        const g = clip === 1 ? grads[name] : tf.mul(grads[name], clip);
        const w0 = P.decay && cfg.weight_decay ? tf.mul(P.w, 1 - lr * cfg.weight_decay) : P.w;
        const m = tf.add(P.m, tf.mul(tf.sub(g, P.m), 1 - BETA1));
        const v = tf.add(tf.mul(P.v, BETA2), tf.mul(tf.square(g), 1 - BETA2));
        const w = tf.sub(w0, tf.mul(tf.div(m, tf.add(tf.div(tf.sqrt(v), bc2), ADAM_EPS)), lr / bc1));
        out[name] = { w, m, v };
      }
      return out;
    });
    if (kept) {
      for (const [name, nv] of Object.entries(kept)) {
        const P = this.params[name];
        P.w.dispose(); P.m.dispose(); P.v.dispose();
        Object.assign(P, nv);
      }
      this.t += 1;
    }
    const last = s === cfg.max_steps - 1;
    if (kept && ((cfg.eval_every && (s + 1) % cfg.eval_every === 0) || last)) record.val_loss = this.evaluate();
    this.step += 1;
    return record;
  }
}

// ---------------------------------------------------------------------------- the loop
const run = { trainers: [], paused: false, stopped: false, resume: null };

async function load(base, threads) {
  importScripts(base + "tfjs/tf-core.min.js", base + "tfjs/tf-backend-wasm.min.js");
  tf = self.tf;
  tf.wasm.setWasmPaths(base + "tfjs/");
  if (threads) tf.wasm.setThreadsCount(threads);
  const ok = await tf.setBackend("wasm");
  if (!ok) throw new Error("the WebAssembly backend could not start");
  await tf.ready();
  const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
  const threaded = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
  return { backend: tf.getBackend(), threads: tf.wasm.getThreadsCount(), simd, threaded, isolated: self.crossOriginIsolated };
}

const tick = () => new Promise((ok) => setTimeout(ok, 0));

async function start(msg) {
  for (const t of run.trainers) t.trainer.dispose();
  const corpus = { ids: unpack(msg.corpus).arrays.ids.data };
  run.trainers = msg.runs.map((r) => ({ id: r.id, trainer: new Trainer(r.init, corpus, r.cfg), done: false }));
  run.paused = false; run.stopped = false;
  const snaps = new Set(msg.snapshots || []);
  const steps = msg.steps;
  const probe = msg.probe && msg.probe.length ? msg.probe : null;
  for (let s = 0; s < steps; s++) {
    for (const r of run.trainers) {
      if (r.done) continue;
      if (probe && snaps.has(s)) postMessage({ type: "snapshot", id: r.id, step: s, maps: r.trainer.probe(probe) });
      const t0 = performance.now();
      const record = r.trainer.trainStep();
      postMessage({ type: "record", id: r.id, record, ms: performance.now() - t0 });
      if (!Number.isFinite(record.loss)) { r.done = true; postMessage({ type: "done", id: r.id, reason: "diverged" }); }
    }
    await tick();
    while (run.paused && !run.stopped) await new Promise((ok) => (run.resume = ok));
    if (run.stopped) break;
    if (run.trainers.every((r) => r.done)) break;
  }
  for (const r of run.trainers) {
    if (!r.done && probe && snaps.has(r.trainer.step)) {
      postMessage({ type: "snapshot", id: r.id, step: r.trainer.step, maps: r.trainer.probe(probe) });
    }
  }
  postMessage({ type: "done", reason: run.stopped ? "stopped" : "finished" });
}

self.onmessage = async (e) => {
  const msg = e.data;
  try {
    if (msg.type === "load") postMessage({ type: "ready", ...(await load(msg.base, msg.threads)) });
    else if (msg.type === "start") await start(msg);
    else if (msg.type === "pause") run.paused = true;
    else if (msg.type === "resume") { run.paused = false; if (run.resume) run.resume(); }
    else if (msg.type === "stop") { run.stopped = true; run.paused = false; if (run.resume) run.resume(); }
  } catch (err) {
    postMessage({ type: "error", message: String(err && err.message || err) });
  }
};

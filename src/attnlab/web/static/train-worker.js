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
// the forward pass multiplies without transposing. The parameters' gradients (X^T dY and sums
// over rows) are left to onnxruntime (GradJobs below): TensorFlow.js computes dX only.
//
// The attention itself, softmax(q k^T·scale + M) v and its backward, runs in onnxruntime-web
// (vendored for the playground already): the wasm backend of TensorFlow.js has no fast batched
// matMul (every (batch, head) product runs in a plain scalar loop, several times slower than
// onnxruntime's kernels on these shapes; scripts/profile_browser_train.py shows the share). The
// two small graphs are written below as ONNX bytes; no file is added to the site.
//
// Initial weights and every batch come from attnlab itself (attnlab.web.trainexport), so a run
// here is the PyTorch run step for step as far as float32 allows.
//
// Messages in:  {type: "load", base, threads, webgpu}    load the runtime (webgpu: also TensorFlow.js's WebGPU backend)
//               {type: "gate", runs, corpus, steps, perturb}   the WebGPU gate (gate() below); answers {type: "gate", ...}
//               {type: "start", runs: [{id, init, corpus}], steps, snapshots: [steps], probe: [ids]}
//               {type: "pause"} {type: "resume"} {type: "stop"}
// Messages out: {type: "ready", backend, threads, simd} {type: "record", id, record, ms}
//               {type: "snapshot", id, step, maps, metrics} {type: "done", id?, reason} {type: "error", message}
//               (maps: per layer (H, T, T); metrics: per layer (H, 6), the columns of attnlab.snapshots.METRICS)
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
  return { ...attentionSummary(s, p, BH, T), q_std: std(q), k_std: std(k) };
}

// the entropy, ‖J‖_F and logit spread of (BH, T, T) scores s and weights p
function attentionSummary(s, p, BH, T) {
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
  };
}

// the columns [from, from + count) of a row-major (rows, width) array, as one array
function columns(a, width, from, count) {
  const rows = a.length / width, out = new Float32Array(rows * count);
  for (let r = 0; r < rows; r++) out.set(a.subarray(r * width + from, r * width + from + count), r * count);
  return out;
}

// per head of a (1, H, T, T) probe pass: attnlab.snapshots.METRICS (entropy, jacobian_fro,
// logit_std, diag, prev, distance), the first three as pattern_summary, the rest as
// attnlab.diagnostics.head_metrics: means over the rows i >= 1
function headMetrics(s, p, H, T) {
  const out = new Float32Array(H * 6);
  for (let h = 0; h < H; h++) {
    const o = h * T * T;
    const sum = attentionSummary(s.subarray(o, o + T * T), p.subarray(o, o + T * T), 1, T);
    let diag = 0, prev = 0, dist = 0;
    for (let i = 1; i < T; i++) {
      diag += p[o + i * T + i];
      prev += p[o + i * T + i - 1];
      for (let j = 0; j <= i; j++) dist += (i - j) * p[o + i * T + j];
    }
    const n = T - 1;
    out.set([sum.weight_entropy, sum.jacobian_fro, sum.logit_std, diag / n, prev / n, dist / n], h * 6);
  }
  return out;
}

function std(a) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m += a[i];
  m /= a.length;
  let d = 0;
  for (let i = 0; i < a.length; i++) { const x = a[i] - m; d += x * x; }
  return Math.sqrt(d / (a.length - 1));
}


// A float32 tensor's data as a view of the wasm backend's memory (no copy), or a host array as it
// is. Taken just before onnxruntime copies it in: the view lapses when the backend allocates.
// On WebGPU (the gate below) a promise of the data read back from the GPU instead: its synchronous
// read (dataSync) gives zeros in a worker on SwiftShader. Callers await either.
function onHost(x) {
  if (x instanceof Float32Array) return x;
  const backend = tf.backend();
  return backend.typedArrayFromHeap ? backend.typedArrayFromHeap(x) : x.data();
}

// ------------------------------------------------------------------- attention (onnxruntime)
// A minimal ONNX writer: just the protobuf fields the two graphs below use.
const PB = {
  varint(n) { const out = []; while (n > 127) { out.push((n & 127) | 128); n = Math.floor(n / 128); } out.push(n); return out; },
  field(num, payload) {   // length-delimited field: payload is a byte array or a string
    const bytes = typeof payload === "string" ? [...new TextEncoder().encode(payload)] : payload;
    return [...PB.varint(num * 8 + 2), ...PB.varint(bytes.length), ...bytes];
  },
  int(num, n) { return [...PB.varint(num * 8), ...PB.varint(n)]; },
};
function onnxNode(op, inputs, outputs, attrs = {}) {
  const b = [];
  for (const i of inputs) b.push(...PB.field(1, i));
  for (const o of outputs) b.push(...PB.field(2, o));
  b.push(...PB.field(4, op));
  for (const [name, v] of Object.entries(attrs)) {   // non-negative ints and int lists only
    const a = [...PB.field(1, name)];
    if (Array.isArray(v)) { for (const x of v) a.push(...PB.int(8, x)); a.push(...PB.int(20, 7)); }
    else a.push(...PB.int(3, v), ...PB.int(20, 2));
    b.push(...PB.field(5, a));
  }
  return b;
}
function onnxInt64(name, values, dims) {   // an int64 initializer
  const raw = new DataView(new ArrayBuffer(8 * values.length));
  values.forEach((v, i) => raw.setBigInt64(8 * i, BigInt(v), true));
  const b = [];
  for (const d of dims) b.push(...PB.int(1, d));
  b.push(...PB.int(2, 7), ...PB.field(8, name), ...PB.field(9, [...new Uint8Array(raw.buffer)]));
  return b;
}
function onnxModel(nodes, inputs, outputs, inits) {
  const value = (name) => [...PB.field(1, name), ...PB.field(2, PB.field(1, PB.int(1, 1)))];   // float32, any shape
  const g = [];
  for (const n of nodes) g.push(...PB.field(1, n));
  g.push(...PB.field(2, "attention"));
  for (const t of inits) g.push(...PB.field(5, t));
  for (const i of inputs) g.push(...PB.field(11, value(i)));
  for (const o of outputs) g.push(...PB.field(12, value(o)));
  return new Uint8Array([...PB.int(1, 8), ...PB.field(7, g), ...PB.field(8, PB.int(2, 17))]);
}

// qkv (B, T, 3, H, hs): the fused projection's output as it lies in memory, split into heads
const HEADS = [
  onnxNode("Transpose", ["qkv"], ["t"], { perm: [2, 0, 3, 1, 4] }),   // (3, B, H, T, hs)
  onnxNode("Gather", ["t", "i0"], ["q"], { axis: 0 }),
  onnxNode("Gather", ["t", "i1"], ["k"], { axis: 0 }),
  onnxNode("Gather", ["t", "i2"], ["v"], { axis: 0 }),
];
const INDICES = [onnxInt64("i0", [0], []), onnxInt64("i1", [1], []), onnxInt64("i2", [2], [])];
// forward: s = q k^T·scale, p = softmax(s + M), y = p v as (B, T, H, hs)
const ATTN_FORWARD = onnxModel([
  ...HEADS,
  onnxNode("Transpose", ["k"], ["kT"], { perm: [0, 1, 3, 2] }),
  onnxNode("MatMul", ["q", "kT"], ["qk"]),
  onnxNode("Mul", ["qk", "scale"], ["s"]),
  onnxNode("Add", ["s", "mask"], ["sm"]),
  onnxNode("Softmax", ["sm"], ["p"]),
  onnxNode("MatMul", ["p", "v"], ["o"]),
  onnxNode("Transpose", ["o"], ["y"], { perm: [0, 2, 1, 3] }),
], ["qkv", "mask", "scale"], ["s", "p", "y"], INDICES);
// backward: from dy (B, T, H, hs) and the forward's p to dqkv (B, T, 3, H, hs)
const ATTN_BACKWARD = onnxModel([
  ...HEADS,
  onnxNode("Transpose", ["dy"], ["dyh"], { perm: [0, 2, 1, 3] }),
  onnxNode("Transpose", ["v"], ["vT"], { perm: [0, 1, 3, 2] }),
  onnxNode("Transpose", ["p"], ["pT"], { perm: [0, 1, 3, 2] }),
  onnxNode("MatMul", ["dyh", "vT"], ["dp"]),
  onnxNode("MatMul", ["pT", "dyh"], ["dv"]),
  onnxNode("Mul", ["dp", "p"], ["dpp"]),
  onnxNode("ReduceSum", ["dpp", "last"], ["r"], { keepdims: 1 }),
  onnxNode("Sub", ["dp", "r"], ["dpr"]),
  onnxNode("Mul", ["p", "dpr"], ["pd"]),
  onnxNode("Mul", ["pd", "scale"], ["ds"]),
  onnxNode("MatMul", ["ds", "k"], ["dq"]),
  onnxNode("Transpose", ["ds"], ["dsT"], { perm: [0, 1, 3, 2] }),
  onnxNode("MatMul", ["dsT", "q"], ["dk"]),
  onnxNode("Unsqueeze", ["dq", "zero"], ["dq1"]),
  onnxNode("Unsqueeze", ["dk", "zero"], ["dk1"]),
  onnxNode("Unsqueeze", ["dv", "zero"], ["dv1"]),
  onnxNode("Concat", ["dq1", "dk1", "dv1"], ["d3"], { axis: 0 }),   // (3, B, H, T, hs)
  onnxNode("Transpose", ["d3"], ["dqkv"], { perm: [1, 3, 0, 2, 4] }),
], ["qkv", "p", "dy", "scale"], ["dqkv"], [...INDICES, onnxInt64("last", [-1], [1]), onnxInt64("zero", [0], [1])]);

class Attention {
  static async create(threads) {
    ort.env.wasm.numThreads = threads;
    const opts = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    const a = new Attention();
    a.fwd = await ort.InferenceSession.create(ATTN_FORWARD, opts);
    a.bwd = await ort.InferenceSession.create(ATTN_BACKWARD, opts);
    a.masks = new Map();
    a.gradSessions = new Map();
    a.opts = opts;
    a.ms = 0;   // time spent in the two graphs, for scripts/profile_browser_train.py
    return a;
  }

  mask(T) {
    if (!this.masks.has(T)) {
      const m = new Float32Array(T * T);
      for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -Infinity;
      this.masks.set(T, new ort.Tensor("float32", m, [T, T]));
    }
    return this.masks.get(T);
  }

  // qkv: (B*T, 3C), a tensor or host array; returns host {s, p: (B, H, T, T), y: (B*T, C)}
  async forward(qkv, B, T, H, hs, scale) {
    const t0 = performance.now();
    const out = await this.fwd.run({
      qkv: new ort.Tensor("float32", await onHost(qkv), [B, T, 3, H, hs]),
      mask: this.mask(T),
      scale: new ort.Tensor("float32", Float32Array.of(scale), []),
    });
    this.ms += performance.now() - t0;
    return { s: out.s.data, p: out.p.data, y: out.y.data };
  }

  // the parameter gradients of a GradJobs list: {name: host Float32Array}
  async grads(jobs) {
    const key = jobs.key();
    if (!this.gradSessions.has(key)) this.gradSessions.set(key, await ort.InferenceSession.create(jobs.model(), this.opts));
    const t0 = performance.now();
    const feeds = {};
    for (const [i, f] of jobs.feeds.entries()) feeds[`i${i}`] = new ort.Tensor("float32", await onHost(f.data), f.shape);
    const out = await this.gradSessions.get(key).run(feeds);
    this.gradMs = (this.gradMs || 0) + performance.now() - t0;
    const res = {};
    jobs.jobs.forEach((j, n) => { res[j.name] = out[`o${n}`].data; });
    return res;
  }

  // dy: (B*T, C), the gradient at the attention's output; returns host dqkv (B*T, 3C)
  async backward(qkv, p, dy, B, T, H, hs, scale) {
    const t0 = performance.now();
    const out = await this.bwd.run({
      qkv: new ort.Tensor("float32", await onHost(qkv), [B, T, 3, H, hs]),
      p: new ort.Tensor("float32", p, [B, H, T, T]),
      dy: new ort.Tensor("float32", await onHost(dy), [B, T, H, hs]),
      scale: new ort.Tensor("float32", Float32Array.of(scale), []),
    });
    this.ms += performance.now() - t0;
    return out.dqkv.data;
  }
}

// ------------------------------------------------------------- parameter gradients (onnxruntime)
// Every parameter's gradient in one onnxruntime run at the end of the backward pass: a weight is
// X^T dY (a Gemm with transA: TensorFlow.js's wasm backend would first transpose the (B*T, in)
// activation in a slow scalar kernel, then multiply in XNNPACK; onnxruntime's MLAS kernels read
// the transposed operand as it lies, as fast or up to 2x faster on these shapes: the matmul table
// of scripts/bench_browser_train.py), a bias or LayerNorm bias the sum of dY over rows, a
// LayerNorm gain the sum of dY·xhat over rows. TensorFlow.js computes only dX, layer by layer.
class GradJobs {
  constructor() { this.feeds = []; this.jobs = []; }
  // the graph input holding a host array (one input per array, however often it is used)
  input(data, shape) {
    let i = this.feeds.findIndex((f) => f.data === data && f.shape[0] === shape[0]);
    if (i < 0) { i = this.feeds.length; this.feeds.push({ data, shape }); }
    return i;
  }
  // x, dy: tensors or host arrays of `rows` rows
  in2(x, rows) { return this.input(x, [rows, (x.size || x.length) / rows]); }
  weight(name, x, dy, rows) { this.jobs.push({ op: "gemm", name, a: this.in2(x, rows), b: this.in2(dy, rows) }); }
  sum(name, dy, rows) { this.jobs.push({ op: "sum", name, a: this.in2(dy, rows) }); }
  dot(name, dy, xhat, rows) { this.jobs.push({ op: "dot", name, a: this.in2(dy, rows), b: this.in2(xhat, rows) }); }
  // the graph for this list of jobs (its structure only: any sizes)
  model() {
    const nodes = [];
    this.jobs.forEach((j, n) => {
      if (j.op === "gemm") nodes.push(onnxNode("Gemm", [`i${j.a}`, `i${j.b}`], [`o${n}`], { transA: 1 }));
      else if (j.op === "sum") nodes.push(onnxNode("ReduceSum", [`i${j.a}`, "rows"], [`o${n}`], { keepdims: 0 }));
      else {
        nodes.push(onnxNode("Mul", [`i${j.a}`, `i${j.b}`], [`m${n}`]));
        nodes.push(onnxNode("ReduceSum", [`m${n}`, "rows"], [`o${n}`], { keepdims: 0 }));
      }
    });
    return onnxModel(nodes, this.feeds.map((_, i) => `i${i}`), this.jobs.map((_, n) => `o${n}`), [onnxInt64("rows", [0], [1])]);
  }
  key() { return JSON.stringify([this.feeds.length, this.jobs.map((j) => [j.op, j.a, j.b])]); }
}

// tf.tidy for an async function: every tensor made inside is disposed, but those in the result
async function scoped(f) {
  tf.engine().startScope();
  let out;
  try {
    out = await f();
    return out;
  } finally {
    tf.engine().endScope(out);
  }
}

// ---------------------------------------------------------------------------- the model
const LINEARS = ["attn.qkv", "attn.proj", "mlp.0", "mlp.2"];   // kept transposed: (in, out)

class Trainer {
  constructor(initBuf, corpus, cfg, attention) {
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
    this.attention = attention;
    this.ids = corpus.ids;
    this.starts = arrays.batch_starts;
    this.valStarts = arrays.val_starts;
    this.params = {};   // name -> {w, m, v, decay}
    for (const e of header.arrays) {
      if (e.name === "batch_starts" || e.name === "val_starts") continue;
      let host = arrays[e.name].data, shape = e.shape;
      if (LINEARS.some((l) => e.name.endsWith(`${l}.weight`))) {   // (out, in) -> (in, out)
        const [o, n] = shape, t = new Float32Array(o * n);
        for (let i = 0; i < o; i++) for (let j = 0; j < n; j++) t[j * o + i] = host[i * n + j];
        host = t; shape = [n, o];
      } else host = Float32Array.from(host);
      this.params[e.name] = {
        host, shape, w: tf.tensor(host, shape, "float32"), m: new Float32Array(host.length), v: new Float32Array(host.length),
        decay: e.shape.length >= 2,
      };
    }
    this.t = 0;           // optimizer steps taken
    this.step = 0;        // next step to train
    this.phases = {};
  }

  w(name) { return this.params[name].w; }

  // time per phase of a step, summed (scripts/profile_browser_train.py reads this.phases)
  lap(phase) {
    const now = performance.now();
    if (phase) this.phases[phase] = (this.phases[phase] || 0) + now - this.t0;
    this.t0 = now;
  }

  dispose() {
    for (const p of Object.values(this.params)) p.w.dispose();
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

  // dX of LayerNorm (its parameters' gradients are GradJobs.dot and .sum)
  lnBack(dy, c, g) {
    const dxhat = tf.mul(dy, g);
    const inner = tf.sub(tf.sub(dxhat, tf.mean(dxhat, 1, true)), tf.mul(c.xhat, tf.mean(tf.mul(dxhat, c.xhat), 1, true)));
    return tf.mul(inner, c.rstd);
  }

  // forward over a (B, T) batch of ids; keeps what backward needs; diag: host copies for the summary
  async forward(x, B, T, keep, diag) {
    const { C, H, hs, L } = this;
    const N = B * T;
    // the token embedding's rows gathered on the host (the backend's gather is slower than the copy)
    const wte = await onHost(this.w("tok_emb.weight")), rows = new Float32Array(N * C);
    for (let n = 0; n < N; n++) rows.set(wte.subarray(x[n] * C, x[n] * C + C), n * C);
    const tok = tf.tensor(rows, [B, T, C]);
    let h = tf.reshape(tf.add(tok, tf.slice(this.w("pos_emb.weight"), [0, 0], [T, C])), [N, C]);
    const layers = [];
    const stats = [];
    for (let l = 0; l < L; l++) {
      const P = `blocks.${l}.`;
      const c1 = this.ln(h, this.w(P + "ln1.weight"), this.w(P + "ln1.bias"));
      const qkv = tf.matMul(c1.out, this.w(P + "attn.qkv.weight"));   // (N, 3C)
      const a = await this.attention.forward(qkv, B, T, H, hs, this.scale);       // s, p (B, H, T, T)
      const y = tf.tensor(a.y, [N, C]);
      const x1 = tf.add(h, tf.matMul(y, this.w(P + "attn.proj.weight")));
      const c2 = this.ln(x1, this.w(P + "ln2.weight"), this.w(P + "ln2.bias"));
      const u = tf.add(tf.matMul(c2.out, this.w(P + "mlp.0.weight")), this.w(P + "mlp.0.bias"));   // (N, F)
      const erf = tf.erf(tf.mul(u, Math.SQRT1_2));
      const g = tf.mul(tf.mul(u, tf.add(erf, 1)), 0.5);                // exact GELU
      h = tf.add(x1, tf.add(tf.matMul(g, this.w(P + "mlp.2.weight")), this.w(P + "mlp.2.bias")));
      if (keep) layers.push({ c1, qkv, p: a.p, y: a.y, c2, u, erf, g });
      if (diag) {
        const t0 = performance.now();
        const q = columns(await onHost(qkv), 3 * C, 0, C), k = columns(await onHost(qkv), 3 * C, C, C);
        stats.push(patternSummary(a.s, a.p, q, k, B * H, T));
        if (diag === "maps") Object.assign(stats[stats.length - 1], { maps: a.p, scores: a.s });
        this.phases.diagnostics = (this.phases.diagnostics || 0) + performance.now() - t0;   // part of forward
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

  async evaluate() {
    let total = 0;
    const nVal = this.valStarts.shape[0];
    for (let i = 0; i < nVal; i++) {
      const { x, y } = this.batch(this.valStarts, i, this.header.val_start);
      total += await scoped(async () => (await this.lossOf((await this.forward(x, this.B, this.T, false, false)).logits, y).loss.data())[0]);
    }
    return total / nVal;
  }

  // the probe (ids) as the current weights see it: attention maps per layer (H, T, T) and each
  // head's metrics per layer (H, 6), as attnlab.snapshots.take_snapshot computes them
  async probe(ids) {
    const T = ids.length;
    const stats = await scoped(async () => (await this.forward(Int32Array.from(ids), 1, T, false, "maps")).stats);
    return {
      maps: stats.map((st) => st.maps),
      metrics: stats.map((st) => headMetrics(st.scores, st.maps, this.H, T)),
    };
  }

  async trainStep() {
    const cfg = this.cfg, s = this.step;
    const { B, T, C, H, hs, L } = this;
    const N = B * T;
    const lr = lrAt(s, cfg);
    const { x, y } = this.batch(this.starts, s, 0);
    const record = { step: s, loss: NaN, lr, grad_norm: NaN };
    const kept = await scoped(async () => {
      this.lap();
      const fw = await this.forward(x, B, T, true, cfg.record_every > 0 && s % cfg.record_every === 0);
      this.lap("forward");
      const { loss, onehot } = this.lossOf(fw.logits, y);
      record.loss = (await loss.data())[0];
      if (fw.stats.length) record.layers = fw.stats;
      if (!Number.isFinite(record.loss)) return null;
      this.lap("loss");
      // ---- backward: dX in TensorFlow.js layer by layer, what each parameter's gradient needs
      // copied to the host, all parameter gradients in one onnxruntime run (GradJobs)
      const jobs = new GradJobs();
      const tr = (t) => tf.transpose(t);
      const wte = this.w("tok_emb.weight");
      const dlogits = tf.div(tf.sub(tf.softmax(fw.logits), onehot), N);
      jobs.weight("head", dlogits, fw.cf.out, N);                 // (V, C)
      const dhf = tf.matMul(dlogits, wte);
      jobs.dot("ln_f.weight", dhf, fw.cf.xhat, N); jobs.sum("ln_f.bias", dhf, N);
      let dx = this.lnBack(dhf, fw.cf, this.w("ln_f.weight"));
      for (let l = L - 1; l >= 0; l--) {
        const P = `blocks.${l}.`, c = fw.layers[l];
        // x2 = x1 + mlp(ln2(x1))
        jobs.sum(P + "mlp.2.bias", dx, N); jobs.weight(P + "mlp.2.weight", c.g, dx, N);
        const dg = tf.matMul(dx, tr(this.w(P + "mlp.2.weight")));
        const pdf = tf.mul(tf.exp(tf.mul(tf.square(c.u), -0.5)), 1 / Math.sqrt(2 * Math.PI));
        const du = tf.mul(dg, tf.add(tf.mul(tf.add(c.erf, 1), 0.5), tf.mul(c.u, pdf)));
        jobs.sum(P + "mlp.0.bias", du, N); jobs.weight(P + "mlp.0.weight", c.c2.out, du, N);
        const dln2 = tf.matMul(du, tr(this.w(P + "mlp.0.weight")));
        jobs.dot(P + "ln2.weight", dln2, c.c2.xhat, N); jobs.sum(P + "ln2.bias", dln2, N);
        const dx1 = tf.add(dx, this.lnBack(dln2, c.c2, this.w(P + "ln2.weight")));
        // x1 = x + proj(attention(ln1(x)))
        jobs.weight(P + "attn.proj.weight", c.y, dx1, N);
        const dy = tf.matMul(dx1, tr(this.w(P + "attn.proj.weight")));   // (N, C)
        const dqkvh = await this.attention.backward(c.qkv, c.p, dy, B, T, H, hs, this.scale);
        jobs.weight(P + "attn.qkv.weight", c.c1.out, dqkvh, N);
        const dln1 = tf.matMul(tf.tensor(dqkvh, [N, 3 * C]), tr(this.w(P + "attn.qkv.weight")));
        jobs.dot(P + "ln1.weight", dln1, c.c1.xhat, N); jobs.sum(P + "ln1.bias", dln1, N);
        dx = tf.add(dx1, this.lnBack(dln1, c.c1, this.w(P + "ln1.weight")));
      }
      // embeddings: positions sum over the batch; tokens a scatter-add by id (float64 on the host)
      jobs.sum("pos_emb.weight", dx, B);
      this.lap("backward_dx");
      const grads = await this.attention.grads(jobs);
      if (T < this.T) {
        const full = new Float32Array(this.T * C);
        full.set(grads["pos_emb.weight"]);
        grads["pos_emb.weight"] = full;
      }
      const acc = new Float64Array(grads.head), rows = await onHost(dx);
      for (let n = 0; n < N; n++) {
        const o = x[n] * C, r = n * C;
        for (let j = 0; j < C; j++) acc[o + j] += rows[r + j];
      }
      grads["tok_emb.weight"] = Float32Array.from(acc);
      this.lap("parameter_gradients");
      // ---- clip (torch.nn.utils.clip_grad_norm_) and AdamW (torch.optim.AdamW, single tensor) on the
      // host: each element's update in float64, stored as float32; the weights go back to TensorFlow.js
      const names = Object.keys(this.params);
      let sq = 0;
      for (const name of names) for (const g of grads[name]) sq += g * g;
      const total = Math.fround(Math.sqrt(sq));
      record.grad_norm = total;
      const clip = cfg.grad_clip > 0 ? Math.min(1, cfg.grad_clip / (total + 1e-6)) : 1;
      const t = this.t + 1;
      const bc1 = 1 - BETA1 ** t, bc2 = Math.sqrt(1 - BETA2 ** t), step = lr / bc1;
      for (const name of names) {
        const P = this.params[name], g = grads[name], w = P.host, m = P.m, v = P.v;
        const keep = P.decay && cfg.weight_decay ? Math.fround(1 - lr * cfg.weight_decay) : 1;
        for (let i = 0; i < w.length; i++) {
          const gi = clip === 1 ? g[i] : Math.fround(g[i] * clip);
          m[i] += (gi - m[i]) * (1 - BETA1);
          v[i] = v[i] * BETA2 + gi * gi * (1 - BETA2);
          w[i] = Math.fround(w[i] * keep) - step * m[i] / (Math.sqrt(v[i]) / bc2 + ADAM_EPS);
        }
      }
      this.lap("optimizer");
      return true;
    });
    if (kept) {
      for (const P of Object.values(this.params)) {
        P.w.dispose();
        P.w = tf.tensor(P.host, P.shape);
      }
      this.t += 1;
    }
    const last = s === cfg.max_steps - 1;
    if (kept && ((cfg.eval_every && (s + 1) % cfg.eval_every === 0) || last)) record.val_loss = await this.evaluate();
    this.step += 1;
    return record;
  }
}

// ---------------------------------------------------------------------------- the loop
const run = { trainers: [], paused: false, stopped: false, resume: null, attention: null };

// threads: the attention's (onnxruntime-web) threads, 0 for its own choice (half the logical cores,
// at most 4) where the page is cross-origin isolated; without isolation one thread whatever is asked.
// TensorFlow.js always runs on one: its multi-threaded build gains nothing here (its matMul calls
// XNNPACK without a thread pool) and starts its threads from blob: scripts, which serve's
// Content-Security-Policy (script-src 'self') refuses.
async function load(base, threads, webgpu) {
  importScripts(base + "tfjs/tf-core.min.js", base + "tfjs/tf-backend-wasm.min.js", base + "onnxruntime-web/ort.wasm.min.js");
  if (webgpu && self.navigator.gpu) importScripts(base + "tfjs/tf-backend-webgpu.min.js");   // only for the gate below
  tf = self.tf;
  tf.wasm.setWasmPaths(base + "tfjs/");
  tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  const ok = await tf.setBackend("wasm");
  if (!ok) throw new Error("the WebAssembly backend could not start");
  await tf.ready();
  const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
  const threaded = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
  ort.env.wasm.wasmPaths = base + "onnxruntime-web/";
  const ortThreads = self.crossOriginIsolated ? (threads || Math.min(4, Math.ceil((navigator.hardwareConcurrency || 1) / 2))) : 1;
  run.attention = await Attention.create(ortThreads);
  return {
    backend: tf.getBackend(), threads: tf.wasm.getThreadsCount(), simd, threaded, isolated: self.crossOriginIsolated,
    attention: "onnxruntime-web " + ort.env.versions.web, attention_threads: ortThreads,
  };
}

// ------------------------------------------------------------------------ the WebGPU gate
// TensorFlow.js's WebGPU backend (the forward pass and dX; onnxruntime's part, the attention and the
// parameter gradients, stays on WebAssembly) trains only where it reproduces the WebAssembly
// result: the first `steps` steps of every run are trained twice from the same initial weights and
// batches, on WebGPU and on WebAssembly, and WebGPU is kept only if every loss and every per-layer
// weight entropy agree within GATE_TOL and its steps are faster. Anything else (no adapter, a
// backend that does not start, an error, a NaN, a difference, slower steps) leaves the run on
// WebAssembly, and the answer says which and by how much.
// GATE_TOL is the page's promise against PyTorch (1e-4 in loss and entropy, tests/test_train_page.py):
// WebAssembly keeps within ~2e-5 of PyTorch over the first steps, float32 summed in another order
// moves the first steps by ~1e-6, while a wrong kernel moves them by far more than 1e-4 (or to NaN).
const GATE_TOL = 1e-4;

// msg: {runs: [{init, cfg}], corpus, steps, perturb}; perturb (a test hook, normally absent) is added
// to WebGPU's losses so that the fallback can be seen to work
async function gate(msg) {
  const out = { backend: "wasm", reason: "", tol: GATE_TOL, steps: msg.steps, d_loss: null, d_entropy: null, ms: {} };
  const corpus = { ids: unpack(msg.corpus).arrays.ids.data };
  const got = {};
  try {
    const adapter = self.navigator.gpu ? await navigator.gpu.requestAdapter() : null;
    if (!adapter || !tf.findBackendFactory("webgpu")) { out.reason = "no-adapter"; return out; }
    out.adapter = adapter.info ? [adapter.info.vendor, adapter.info.architecture].filter(Boolean).join(" ") : "";
    for (const backend of ["webgpu", "wasm"]) {
      if (!(await tf.setBackend(backend))) { out.reason = "no-start"; return out; }
      await tf.ready();
      got[backend] = { records: [], ms: [] };
      for (const r of msg.runs) {
        const trainer = new Trainer(r.init, corpus, r.cfg, run.attention);
        try {
          for (let s = 0; s < msg.steps; s++) {
            const t0 = performance.now();
            const record = await trainer.trainStep();
            if (s > 0) got[backend].ms.push(performance.now() - t0);   // the first step compiles WebGPU's shaders
            if (backend === "webgpu" && msg.perturb) record.loss += msg.perturb;
            got[backend].records.push(record);
          }
        } finally {
          trainer.dispose();
        }
      }
    }
    const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
    out.ms = { webgpu: median(got.webgpu.ms), wasm: median(got.wasm.ms) };
    out.losses = { webgpu: got.webgpu.records.map((r) => r.loss), wasm: got.wasm.records.map((r) => r.loss) };
    let dLoss = 0, dEnt = 0, finite = true;
    got.webgpu.records.forEach((g, i) => {
      const w = got.wasm.records[i];
      finite = finite && Number.isFinite(g.loss) && Number.isFinite(g.grad_norm);
      dLoss = Math.max(dLoss, Math.abs(g.loss - w.loss));
      (g.layers || []).forEach((l, j) => {
        finite = finite && Number.isFinite(l.weight_entropy);
        dEnt = Math.max(dEnt, Math.abs(l.weight_entropy - w.layers[j].weight_entropy));
      });
    });
    out.d_loss = finite ? dLoss : NaN;
    out.d_entropy = finite ? dEnt : NaN;
    if (!finite) out.reason = "nan";
    else if (!(dLoss <= GATE_TOL && dEnt <= GATE_TOL)) out.reason = "differs";
    else if (!(out.ms.webgpu < out.ms.wasm)) out.reason = "slower";
    else { out.reason = "passed"; out.backend = "webgpu"; }
    return out;
  } catch (err) {
    out.reason = "error";
    out.error = String((err && err.message) || err);
    return out;
  } finally {
    if (!(await tf.setBackend(out.backend))) throw new Error(`the ${out.backend} backend could not start again`);
    await tf.ready();
  }
}

const tick = () => new Promise((ok) => setTimeout(ok, 0));

async function start(msg) {
  for (const t of run.trainers) t.trainer.dispose();
  const corpus = { ids: unpack(msg.corpus).arrays.ids.data };
  run.trainers = msg.runs.map((r) => ({ id: r.id, trainer: new Trainer(r.init, corpus, r.cfg, run.attention), done: false }));
  run.paused = false; run.stopped = false;
  const snaps = new Set(msg.snapshots || []);
  const steps = msg.steps;
  const probe = msg.probe && msg.probe.length ? msg.probe : null;
  for (let s = 0; s < steps; s++) {
    for (const r of run.trainers) {
      if (r.done) continue;
      if (probe && snaps.has(s)) postMessage({ type: "snapshot", id: r.id, step: s, ...(await r.trainer.probe(probe)) });
      const t0 = performance.now();
      const record = await r.trainer.trainStep();
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
      postMessage({ type: "snapshot", id: r.id, step: r.trainer.step, ...(await r.trainer.probe(probe)) });
    }
  }
  postMessage({ type: "done", reason: run.stopped ? "stopped" : "finished" });
}

self.onmessage = async (e) => {
  const msg = e.data;
  try {
    if (msg.type === "load") postMessage({ type: "ready", ...(await load(msg.base, msg.threads, msg.webgpu)) });
    else if (msg.type === "gate") postMessage({ type: "gate", ...(await gate(msg)) });
    else if (msg.type === "start") await start(msg);
    else if (msg.type === "pause") run.paused = true;
    else if (msg.type === "resume") { run.paused = false; if (run.resume) run.resume(); }
    else if (msg.type === "stop") { run.stopped = true; run.paused = false; if (run.resume) run.resume(); }
  } catch (err) {
    postMessage({ type: "error", message: String(err && err.message || err) });
  }
};

// 动手训练 / Train: the page around static/train-worker.js.
// Where the numbers come from: under `attnlab serve`, GET /api/train/corpus and POST /api/train/init
// {set} (any config and seed, built by attnlab.web.trainexport from attnlab train's own code); on the
// static site, the files `attnlab site` wrote into train/ (the case's two shapes at its seed).
// window.attnlab.train({set: {...Config fields}, steps, backend}) resolves to the per-step records, in the
// shape of metrics.jsonl; window.attnlab.last holds the step times, the backend of that run and its
// gate (why WebGPU was or was not used).
"use strict";

(() => {
  const { el, fmt, lineChart, heat } = UI;
  const HERE = document.currentScript.src;
  const $ = (id) => document.getElementById(id);
  const isSite = () => Boolean(window.attnlab && window.attnlab.static);
  const params = new URL(window.location.href).searchParams;
  const COLLAPSE = 0.01;          // layer-0 entropy below which a run has collapsed (the case's threshold)
  const CASE_SEED = 20261014, CASE_LR = 0.003, CASE_STEPS = 1500;
  const INIT_KEYS = ["n_layer", "n_head", "d_model", "d_ff", "block_size", "vocab_size", "init_std", "seed",
    "batch_size", "val_fraction", "eval_batches"];
  const SHAPES = [
    { key: "small", label: "32 · 小模型 small（d_model 128，4 头 heads）", set: { d_model: 128, n_head: 4 }, site: true },
    { key: "big", label: "256 · 大模型 big（d_model 256，1 头 head）", set: { d_model: 256, n_head: 1 }, site: true },
    ...[32, 64, 96, 128, 192].map((d) => ({
      key: `ex2_d${d}`, label: `${d} · 练习二 exercise 2（d_model ${d}，1 头 head）`, set: { d_model: d, n_head: 1 },
    })),
  ];
  const SCALINGS = [
    { id: "scale-sqrt", key: "scaled", label: "1/√d_k", set: { scaled: true, attn_scale: null }, color: "#1f6fb2" },
    { id: "scale-none", key: "unscaled", label: "不缩放 none", set: { scaled: false, attn_scale: null }, color: "#c8442b" },
    { id: "scale-d", key: "1d", label: "1/d_k", set: { scaled: true, attn_scale: "1/d" }, color: "#3d8b3d" },
  ];
  const KEYS = ["weight_entropy", "jacobian_fro", "logit_std"];
  const TITLES = { weight_entropy: "权重熵 weight entropy", jacobian_fro: "‖J‖_F 雅可比范数 Jacobian norm", logit_std: "logit 标准差 logit std" };

  // --------------------------------------------------------------------------- data
  async function bytes(url, opts) {
    let res;
    try { res = await fetch(url, opts); } catch (e) { throw new Error(`连不上 cannot fetch ${url}`); }
    if (!res.ok) {
      let detail = `HTTP ${res.status}`;
      try { detail = (await res.json()).detail || detail; } catch (e) { /* not JSON */ }
      throw new Error(detail);
    }
    return res.arrayBuffer();
  }
  function header(buf) {
    const n = new DataView(buf).getUint32(4, true);
    return JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, n)));
  }
  // parameters of the model (the tied head counted once, as TinyGPT.num_params does)
  const paramCount = (buf) => header(buf).arrays.filter((a) => !a.name.endsWith("_starts"))
    .reduce((n, a) => n + a.shape.reduce((x, y) => x * y, 1), 0);
  let indexP = null, corpusP = null;
  const siteFile = (rel) => new URL(`train/${rel}`, window.location.href);
  const siteIndex = () => (indexP ??= fetch(siteFile("index.json")).then((r) => {
    if (!r.ok) throw new Error("这个静态网站没有训练数据（train/index.json），请重新生成。 This static site has no training data: build it again.");
    return r.json();
  }).catch((e) => { indexP = null; throw e; }));
  const corpus = () => (corpusP ??= (isSite() ? siteIndex().then((ix) => bytes(siteFile(ix.corpus)))
    : bytes("/api/train/corpus")).then((buf) => ({ buf, header: header(buf) })).catch((e) => { corpusP = null; throw e; }));

  // the initial weights and batches of a config ({set} on top of attnlab's defaults) and the full config
  async function initFor(set) {
    if (!isSite()) {
      const buf = await bytes("/api/train/init", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ set }),
      });
      return { buf, cfg: header(buf).config, init_sha256: header(buf).init_sha256, params: paramCount(buf) };
    }
    const ix = await siteIndex();
    for (const [file, entry] of Object.entries(ix.inits)) {
      const cfg = { ...entry.config, ...set };
      if ("d_model" in set && !("d_ff" in set)) cfg.d_ff = 2 * cfg.d_model;
      if (INIT_KEYS.every((k) => cfg[k] === entry.config[k])) {
        const buf = await bytes(siteFile(file));
        return { buf, cfg, init_sha256: header(buf).init_sha256, params: paramCount(buf) };
      }
    }
    throw new Error("这个静态网站只带有案例两个模型（d_head 32 与 256，种子 20261014）的初始权重和批次；其他设置请用 `attnlab serve`。 " +
      "This static site carries the initial weights and batches of the case's two models only (d_head 32 and 256, seed 20261014); " +
      "for other settings run `attnlab serve`.");
  }

  // ------------------------------------------------------------------------- worker
  let worker = null, readyP = null, busy = false;
  // whether this browser offers a WebGPU adapter at all (only then is the worker's gate tried), and
  // whether it is a software fallback (SwiftShader: 30-55x slower than WebAssembly, tests/data/webgpu_gate.json)
  const adapterP = (async () => {
    try {
      const a = navigator.gpu && (await navigator.gpu.requestAdapter());
      return { present: Boolean(a), fallback: Boolean(a && ((a.info && a.info.isFallbackAdapter) || a.isFallbackAdapter)) };
    } catch (e) { return { present: false, fallback: false }; }
  })();
  function ready() {
    if (readyP) return readyP;
    worker = new Worker(new URL("train-worker.js", HERE));
    readyP = new Promise((ok, bad) => {
      worker.onmessage = (e) => {
        if (e.data.type === "ready") ok(e.data);
        else if (e.data.type === "error") { readyP = null; bad(new Error(e.data.message)); }
      };
      worker.onerror = (e) => { readyP = null; bad(new Error(e.message || "the training worker failed to start")); };
    });
    const asked = Number(params.get("threads"));
    const threads = asked > 0 ? asked : (self.crossOriginIsolated ? 0 : 1);   // 0: the backend's own choice
    adapterP.then((a) => worker.postMessage({ type: "load", base: new URL("vendor/", HERE).href, threads, webgpu: a.present }));
    return readyP;
  }

  function probeIds(cfg, itos) {
    const stoi = new Map(itos.map((c, i) => [c, i]));
    return [...cfg.probe].slice(0, cfg.block_size).map((c) => stoi.get(c) ?? 1);
  }

  // The backend: "auto" (the default; ?backend= in the URL or train({backend})) and "webgpu" try
  // WebGPU through the worker's gate (its first GATE_STEPS steps against WebAssembly's, see
  // train-worker.js) wherever the browser offers an adapter ("auto" not where that adapter is a
  // software fallback: its gate alone would take minutes); "wasm" does not try. The gate's answer
  // for a set of configs is kept for the page's life. gatePerturb: a test hook (added to WebGPU's
  // losses in the gate, so that the fallback can be forced).
  const GATE_STEPS = 3;
  const gates = new Map();
  async function chooseBackend(backend, cp, inits, gatePerturb) {
    if (!["auto", "webgpu", "wasm"].includes(backend)) throw new Error(`backend 只能是 must be auto, webgpu or wasm, not ${backend}`);
    if (backend === "wasm") return { backend: "wasm", reason: "asked" };
    const adapter = await adapterP;
    if (!adapter.present) return { backend: "wasm", reason: "no-adapter" };
    if (backend === "auto" && adapter.fallback) return { backend: "wasm", reason: "software" };
    const key = JSON.stringify([inits.map((i) => [i.init_sha256, i.cfg]), gatePerturb || 0]);
    if (!gates.has(key)) {
      $("backend").textContent = `正在检查 WebGPU：先在 WebGPU 和 WebAssembly 上各训练前 ${GATE_STEPS} 步，比较结果… · ` +
        `Checking WebGPU: training the first ${GATE_STEPS} steps on WebGPU and on WebAssembly to compare…`;
      gates.set(key, new Promise((ok, bad) => {
        worker.onmessage = (e) => {
          if (e.data.type === "gate") ok(e.data);
          else if (e.data.type === "error") bad(new Error(e.data.message));
        };
        worker.postMessage({
          type: "gate", corpus: cp.buf.slice(0), steps: GATE_STEPS, perturb: gatePerturb || 0,
          runs: inits.map((i) => ({ init: i.buf.slice(0), cfg: i.cfg })),
        });
      }));
    }
    try { return await gates.get(key); } catch (e) { gates.delete(key); throw e; }
  }

  // which backend trains and why, Chinese first (the page's line under the progress bar)
  function gateText(g) {
    const n = (x) => (x === null || Number.isNaN(x) ? "NaN" : x.toExponential(1));
    const diff = () => `loss 相差 ${n(g.d_loss)}、权重熵相差 ${n(g.d_entropy)}（容差 ${g.tol}）· differ by ${n(g.d_loss)} in loss, ${n(g.d_entropy)} in weight entropy (tolerance ${g.tol})`;
    const ms = () => `每步 ${g.ms.webgpu.toFixed(0)} ms 对 ${g.ms.wasm.toFixed(0)} ms · ${g.ms.webgpu.toFixed(0)} vs ${g.ms.wasm.toFixed(0)} ms per step`;
    const head = `WebGPU 与 WebAssembly 的前 ${g.steps} 步 · the first ${g.steps} steps on WebGPU and WebAssembly: `;
    return {
      asked: () => "用 WebAssembly 训练（按设置，没有试 WebGPU）· Training on WebAssembly (as asked; WebGPU not tried)",
      "no-adapter": () => "用 WebAssembly 训练：这个浏览器没有 WebGPU 适配器 · Training on WebAssembly: this browser offers no WebGPU adapter",
      software: () => "用 WebAssembly 训练：这个浏览器的 WebGPU 只是软件模拟，比 WebAssembly 慢几十倍，没有试 · " +
        "Training on WebAssembly: this browser's WebGPU is a software fallback, tens of times slower than WebAssembly, not tried",
      "no-start": () => "用 WebAssembly 训练：WebGPU 没有启动 · Training on WebAssembly: WebGPU did not start",
      error: () => `用 WebAssembly 训练：WebGPU 出错 · Training on WebAssembly: WebGPU failed (${g.error})`,
      nan: () => `用 WebAssembly 训练：WebGPU 算出了 NaN · Training on WebAssembly: WebGPU gave NaN. ${head}${diff()}`,
      differs: () => `用 WebAssembly 训练：WebGPU 的结果不对 · Training on WebAssembly: WebGPU's result is wrong. ${head}${diff()}`,
      slower: () => `用 WebAssembly 训练：WebGPU 结果一致但更慢 · Training on WebAssembly: WebGPU agrees but is slower. ${head}${diff()}；${ms()}`,
      passed: () => `用 WebGPU 训练：结果一致且更快 · Training on WebGPU: it agrees and is faster. ${head}${diff()}；${ms()}`,
    }[g.reason]();
  }

  // train runs ([{set, ...}]) interleaved; hooks: onRecord(run, record), onSnapshot(run, step), stopWhen(runs)
  async function trainRuns(specs, { steps, snapshots = [], hooks = {}, backend, gatePerturb }) {
    if (busy) throw new Error("已经在训练 a run is already training");
    busy = true;
    try {
      const loaded = await ready();
      const [cp, ...inits] = await Promise.all([corpus(), ...specs.map((s) => initFor(s.set))]);
      const gate = await chooseBackend(backend || params.get("backend") || "auto", cp, inits, gatePerturb);
      const info = { ...loaded, backend: gate.backend, gate, gate_text: gateText(gate) };
      $("backend").textContent = info.gate_text;
      const runs = specs.map((s, i) => ({
        id: i, ...s, cfg: inits[i].cfg, init_sha256: inits[i].init_sha256, params: inits[i].params, records: [], ms: [], snaps: {}, snapMetrics: {}, itos: cp.header.itos,
        tokenizer: cp.header.tokenizer, fingerprint: cp.header.fingerprint, info,
      }));
      const total = steps ?? Math.max(...runs.map((r) => r.cfg.max_steps));
      // the reader's steps and attnlab train's own snapshot steps (the download's snapshots.npz)
      const snapSteps = [...new Set([...snapshots, ...snapshotSchedule(runs[0].cfg)])].sort((a, b) => a - b);
      const reason = await new Promise((ok, bad) => {
        worker.onmessage = (e) => {
          const d = e.data;
          if (d.type === "record") {
            const r = runs[d.id];
            r.records.push(d.record); r.ms.push(d.ms);
            if (hooks.onRecord) hooks.onRecord(r, d.record);
            if (hooks.stopWhen && hooks.stopWhen(runs)) worker.postMessage({ type: "stop" });
          } else if (d.type === "snapshot") {
            runs[d.id].snaps[d.step] = d.maps;
            runs[d.id].snapMetrics[d.step] = d.metrics;
            if (hooks.onSnapshot) hooks.onSnapshot(runs[d.id], d.step);
          } else if (d.type === "done" && d.id === undefined) ok(d.reason);
          else if (d.type === "error") bad(new Error(d.message));
        };
        worker.postMessage({
          type: "start", corpus: cp.buf.slice(0), steps: total, snapshots: snapSteps,
          probe: probeIds(runs[0].cfg, cp.header.itos),
          runs: runs.map((r, i) => ({ id: r.id, init: inits[i].buf, cfg: r.cfg })),
        });
      });
      return { runs, info, reason };
    } finally {
      busy = false;
    }
  }
  const control = (type) => { if (worker) worker.postMessage({ type }); };

  // ------------------------------------------------------------------- run folder
  const u8 = (v) => (typeof v === "string" ? new TextEncoder().encode(v) : v);
  // crypto.subtle exists only in a secure context (https, localhost): on a plain-http address in a
  // classroom network the vendored js-sha256 computes the same digest
  async function sha256(v) {
    if (!(self.crypto && crypto.subtle)) return self.sha256(u8(v));
    const digest = await crypto.subtle.digest("SHA-256", u8(v));
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  // attnlab.snapshots.snapshot_steps: every step below snapshot_dense, every snapshot_every-th after, the last
  function snapshotSchedule(cfg) {
    const last = cfg.max_steps, every = cfg.snapshot_every;
    if (!(every > 0)) return [];
    const dense = Math.min(cfg.snapshot_dense, last + 1), out = [];
    for (let s = 0; s < dense; s++) out.push(s);
    for (let s = Math.ceil(dense / every) * every; s <= last; s += every) out.push(s);
    if (last >= dense && last % every) out.push(last);
    return out;
  }

  // one .npy file (format 1.0) of a little-endian array
  function npy(descr, shape, data) {
    const dims = shape.length === 1 ? `${shape[0]},` : shape.join(", ");
    let head = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
    head += " ".repeat(Math.ceil((11 + head.length) / 64) * 64 - 11 - head.length) + "\n";
    const out = new Uint8Array(10 + head.length + data.byteLength);
    out.set([0x93, 78, 85, 77, 80, 89, 1, 0]);   // \x93NUMPY 1.0
    new DataView(out.buffer).setUint16(8, head.length, true);
    out.set(new TextEncoder().encode(head), 10);
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 10 + head.length);
    return out;
  }

  // float32 -> IEEE half bits, rounded to nearest even (numpy's astype(float16))
  const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
  function half(x) {
    F32[0] = x;
    const b = U32[0], sign = (b >>> 16) & 0x8000, m = b & 0x7fffff;
    const e = ((b >>> 23) & 0xff) - 127 + 15;
    if (e === 128 + 15) return sign | 0x7c00 | (m ? 0x200 : 0);   // inf, nan
    if (e >= 0x1f) return sign | 0x7c00;
    const [mant, shift] = e <= 0 ? [m | 0x800000, 14 - e] : [m, 13];
    if (shift > 24) return sign;
    let h = (e <= 0 ? 0 : e << 10) | (mant >>> shift);
    const rest = mant & ((1 << shift) - 1), mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (h & 1))) h++;
    return sign | h;
  }

  // the run's probe snapshots as attnlab.snapshots writes them (snapshots.npz), or null without any
  function snapshotsNpz(r) {
    const steps = Object.keys(r.snapMetrics).map(Number).sort((a, b) => a - b);
    if (!steps.length) return null;
    const L = r.cfg.n_layer, H = r.cfg.n_head;
    const tokens = probeIds(r.cfg, r.itos).map((i) => r.itos[i]), T = tokens.length;
    const patterns = new Uint16Array(steps.length * L * H * T * T);
    const metrics = new Float32Array(steps.length * L * H * 6);
    steps.forEach((step, n) => {
      r.snaps[step].forEach((m, l) => {
        const o = (n * L + l) * H * T * T;
        for (let i = 0; i < m.length; i++) patterns[o + i] = half(m[i]);
      });
      r.snapMetrics[step].forEach((m, l) => metrics.set(m, (n * L + l) * H * 6));
    });
    const meta = JSON.stringify({
      format: 1, probe: r.cfg.probe, tokens, metrics: ["entropy", "jacobian_fro", "logit_std", "diag", "prev", "distance"],
      n_layer: L, n_head: H,
    });
    const chars = Uint32Array.from([...meta].map((c) => c.codePointAt(0)));   // numpy '<U': UTF-32
    return fflate.zipSync({
      "steps.npy": npy("<i8", [steps.length], BigInt64Array.from(steps.map(BigInt))),
      "patterns.npy": npy("<f2", [steps.length, L, H, T, T], patterns),
      "metrics.npy": npy("<f4", [steps.length, L, H, 6], metrics),
      "meta.npy": npy(`<U${chars.length}`, [], chars),
    }, { level: 0 });
  }
  const runName = (r) => `browser_${r.shape}_${r.scaling}_s${r.cfg.seed}`;

  function summaryOf(r) {
    const recs = r.records, last = recs[recs.length - 1];
    const val = recs.filter((x) => "val_loss" in x);
    const diverged = recs.find((x) => !Number.isFinite(x.loss));
    const withLayers = recs.filter((x) => x.layers);
    return {
      steps: recs.length,
      loss_start: recs.length ? recs[0].loss : null,
      loss_end: last ? last.loss : null,
      val_loss_end: val.length ? val[val.length - 1].val_loss : null,
      diverged_at: diverged ? diverged.step : null,
      params: r.params,
      config: r.cfg,
      final_layers: withLayers.length ? withLayers[withLayers.length - 1].layers : null,
      fingerprint: r.fingerprint,
      schedule: [{ from_step: 0, max_steps: r.cfg.max_steps }],
    };
  }

  // the files of the run folder, in attnlab's schema, and browser_run.json with their sha256
  async function runFiles(r) {
    const files = {
      "config.json": JSON.stringify(r.cfg, null, 1) + "\n",
      "metrics.jsonl": r.records.map((x) => JSON.stringify(x) + "\n").join(""),
      "summary.json": JSON.stringify(summaryOf(r), null, 1) + "\n",
      "tokenizer.json": JSON.stringify(r.tokenizer) + "\n",
    };
    const snaps = snapshotsNpz(r);
    if (snaps) files["snapshots.npz"] = snaps;
    const sums = {};
    for (const [name, text] of Object.entries(files)) sums[name] = await sha256(text);
    const msPer = r.ms.length ? r.ms.reduce((a, b) => a + b, 0) / r.ms.length : null;
    files["browser_run.json"] = JSON.stringify({
      format: "attnlab-browser-run-v1", generator: "attnlab 动手训练 / Train page", steps: r.records.length,
      init_sha256: r.init_sha256, files: sums, backend: r.info.backend, threads: r.info.threads,
      attention: r.info.attention, attention_threads: r.info.attention_threads, cross_origin_isolated: r.info.isolated,
      ms_per_step: msPer, user_agent: navigator.userAgent, created: new Date().toISOString(),
    }, null, 1) + "\n";
    return files;
  }

  async function download(r) {
    const files = await runFiles(r);
    const name = runName(r);
    const zipped = fflate.zipSync(Object.fromEntries(Object.entries(files).map(([k, v]) => [`${name}/${k}`, u8(v)])));
    const a = el("a", { href: URL.createObjectURL(new Blob([zipped], { type: "application/zip" })), download: `${name}.zip` });
    document.body.append(a);
    a.click();
    a.remove();
  }

  // ---------------------------------------------------------------------------- page
  const state = { runs: [], casePairs: null, snapSteps: new Set(), drawn: 0, startedAt: 0, total: 0 };

  function setup() {
    const shape = $("shape");
    for (const s of SHAPES) {
      const off = isSite() && !s.site;
      shape.append(el("option", { value: s.key, text: s.label + (off ? "（需要 attnlab serve · needs attnlab serve）" : ""), disabled: off }));
    }
    shape.value = "big";
    if (isSite()) {
      $("seed").disabled = true;
      $("seed").title = "静态网站只带有案例的种子 · the static site carries the case's seed only";
    }
    $("start").addEventListener("click", () => start().catch((e) => message(e.message)));
    $("pause").addEventListener("click", () => {
      const paused = $("pause").dataset.paused === "1";
      control(paused ? "resume" : "pause");
      $("pause").dataset.paused = paused ? "0" : "1";
      $("pause").textContent = paused ? "暂停 Pause" : "继续 Resume";
    });
    $("stop").addEventListener("click", () => control("stop"));
    $("snap-step").addEventListener("change", drawMaps);
    fetch("/api/case").then((r) => (r.ok ? r.json() : null)).then((d) => { state.casePairs = d && d.pairs; }).catch(() => {});
  }

  function message(text) { $("train-msg").textContent = text || ""; }

  function settings() {
    const shape = SHAPES.find((s) => s.key === $("shape").value);
    const scalings = SCALINGS.filter((s) => $(s.id).checked);
    if (!scalings.length) throw new Error("至少选一种缩放。 Choose at least one scaling.");
    const lr = Number($("lr").value), seed = Number($("seed").value);
    if (!(lr > 0 && lr < 10)) throw new Error(`学习率 ${$("lr").value} 不是 0 到 10 之间的数。 The learning rate must be a number between 0 and 10.`);
    if (!(Number.isInteger(seed) && seed >= 0)) throw new Error("种子必须是非负整数。 The seed must be a whole number ≥ 0.");
    const mode = $("steps").value;
    const maxSteps = mode === "225" ? 225 : CASE_STEPS;
    const snaps = $("snaps").value.split(/[,，\s]+/).filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n >= 0);
    const specs = scalings.map((sc) => ({
      shape: shape.key, scaling: sc.key, label: `${sc.label}`, color: sc.color,
      set: { ...shape.set, ...sc.set, lr, seed, max_steps: maxSteps },
    }));
    return { specs, mode, maxSteps, snaps, shape };
  }

  const collapsed = (r) => {
    const recs = r.records.slice(-10);
    return recs.length === 10 && recs.every((x) => x.layers && x.layers[0].weight_entropy < COLLAPSE);
  };
  // the first step a run's layer-0 entropy fell below COLLAPSE, or null
  const firstBelow = (r) => (r.records.find((x) => x.layers && x.layers[0].weight_entropy < COLLAPSE) || {}).step ?? null;
  // where "until it collapses" stops by the committed case's trace of the same config and seed (the
  // same rule as collapsed(): ten steps in a row below COLLAPSE), or null without such a trace
  function caseStop(trace) {
    const e = ((trace.layers || [])[0] || {}).weight_entropy || [];
    let run = 0;
    for (let i = 0; i < e.length; i++) {
      run = e[i] < COLLAPSE ? run + 1 : 0;
      if (run === 10) return trace.step[i];
    }
    return null;
  }

  async function start() {
    message("");
    const { specs, mode, maxSteps, snaps } = settings();
    $("start").disabled = true; $("pause").disabled = false; $("stop").disabled = false;
    $("pause").dataset.paused = "0"; $("pause").textContent = "暂停 Pause";
    $("downloads").replaceChildren();
    $("snap-step").replaceChildren();
    $("maps").replaceChildren();
    state.runs = []; state.total = maxSteps * specs.length; state.startedAt = performance.now();
    state.mode = mode; state.maxSteps = maxSteps;
    status("正在载入 TensorFlow.js、onnxruntime-web、初始权重和批次… Loading TensorFlow.js, onnxruntime-web, the initial weights and the batches…");
    const unscaled = (runs) => runs.filter((r) => r.scaling === "unscaled");
    const hooks = {
      onRecord: (r) => {
        if (!state.runs.includes(r)) state.runs = [...state.runs, r].sort((a, b) => a.id - b.id);
        schedule();
      },
      onSnapshot: (r, step) => {
        if (!state.runs.includes(r)) state.runs = [...state.runs, r].sort((a, b) => a.id - b.id);
        if (!state.snapSteps.has(step)) {
          state.snapSteps.add(step);
          $("snap-step").append(el("option", { value: String(step), text: `步 step ${step}` }));
          $("snap-step").value = String(step);
        }
        drawMaps();
      },
      stopWhen: mode === "collapse" ? (runs) => unscaled(runs).length > 0 && unscaled(runs).every(collapsed) : null,
    };
    state.snapSteps = new Set();
    const pending = trainRuns(specs, { snapshots: snaps, hooks, steps: maxSteps });
    try {
      const { runs, info, reason } = await pending;
      state.runs = runs;
      clearTimeout(timer);
      timer = null;
      draw();
      const fell = unscaled(runs).filter(collapsed);
      let why = { stopped: "已停止 stopped", finished: "完成 finished" }[reason] || reason;
      if (mode === "collapse" && fell.length && fell.length === unscaled(runs).length) {
        $("progress").value = 1;
        why = `坍缩了 collapsed：${fell.map((r) => `${r.label} 层 0 的权重熵在第 ${firstBelow(r)} 步首次低于 ${COLLAPSE}`).join("，")}，` +
          `连续 10 步，训练停下 · layer-0 weight entropy first below ${COLLAPSE} at step ${fell.map(firstBelow).join(", ")}, ` +
          "ten steps in a row, so the pair stopped";
      }
      status(`${why}：${runs.map((r) => `${r.label} ${r.records.length} 步 steps`).join("，")}（${threadsText(info)}）`);
      $("downloads").replaceChildren(...runs.map((r) => el("button", {
        "data-testid": `download-${r.scaling}`, text: `下载 Download ${runName(r)}.zip`,
        onclick: () => download(r).catch((e) => message(e.message)),
      })));
    } finally {
      $("start").disabled = false; $("pause").disabled = true; $("stop").disabled = true;
    }
  }

  function status(text) { $("status").textContent = text; }

  // which runtimes trained, on how many threads, and why only one where the page is not isolated
  const threadsText = (info) => `TensorFlow.js ${info.backend === "webgpu" ? "WebGPU" : `${info.backend} ${info.threads} 线程 thread(s)`}，注意力 attention: ${info.attention} ` +
    `${info.attention_threads} 线程 thread(s)` + (info.isolated ? "" : "；页面未跨源隔离，只用一个线程 the page is not cross-origin isolated: one thread");

  let timer = null;
  function schedule() {
    if (timer) return;
    timer = setTimeout(() => { timer = null; draw(); }, 400);
  }

  // the step "until it collapses" is expected to stop at: where the committed case's unscaled run of
  // the same config and seed stopped by the same rule, or null (then the bar and the ETA count to the last step)
  function expectedStop() {
    if (state.mode !== "collapse") return null;
    const stops = state.runs.filter((r) => r.scaling === "unscaled").map(overlayFor).map((t) => (t ? caseStop(t) : null));
    return stops.length && stops.every((x) => x !== null) ? Math.max(...stops) : null;
  }

  function progress() {
    const done = state.runs.reduce((a, r) => a + r.records.length, 0);
    const n = Math.max(1, state.runs.length), stop = expectedStop();
    const total = stop !== null ? stop * n : state.total;
    $("progress").value = total ? Math.min(1, done / total) : 0;
    const ms = state.runs.flatMap((r) => r.ms.slice(-20));
    if (!ms.length) return;
    const per = ms.reduce((a, b) => a + b, 0) / ms.length;
    const left = Math.max(0, total - done) * per / 1000;
    const mins = (s) => (s >= 90 ? `${(s / 60).toFixed(1)} 分钟 min` : `${Math.round(s)} 秒 s`);
    const steps = state.runs.map((r) => r.records.length);
    const upTo = stop !== null
      ? `到约第 ${stop} 步：提交的案例在同一配置与种子下于此坍缩，最多 ${state.maxSteps} 步 · to about step ${stop}, where the committed case of this config and seed collapsed; ${state.maxSteps} at most`
      : `按 ${total / n} 步算 · at ${total / n} steps`;
    status(`第 ${Math.min(...steps)} 步 step · 每步 ${per.toFixed(0)} ms per step per model · 剩余约 ${mins(left)} left（${upTo}）`);
    $("estimate").textContent = `这台机器上一对模型预计 · estimated for the pair here：225 步 steps ≈ ${mins(225 * n * per / 1000)}，1500 步 steps ≈ ${mins(1500 * n * per / 1000)}`;
  }

  function overlayFor(r) {
    const c = r.cfg;
    if (!state.casePairs || c.seed !== CASE_SEED || c.lr !== CASE_LR || c.max_steps !== CASE_STEPS || c.attn_scale) return null;
    if (!["small", "big"].includes(r.shape)) return null;
    const p = state.casePairs[`${r.shape}_${c.scaled ? "scaled" : "unscaled"}`];
    return p && p.trace ? p.trace : null;
  }

  function draw() {
    progress();
    const charts = $("charts");
    charts.replaceChildren();
    const runs = state.runs;
    if (!runs.length) return;
    const nLayers = runs[0].cfg.n_layer;
    const overlays = runs.map(overlayFor);
    const limit = Math.max(...runs.map((r) => r.records.length));
    $("overlay-note").textContent = overlays.some(Boolean)
      ? "虚线：提交的案例（data/ch1_case.json）同一配置与种子的 PyTorch 训练。 Dashed: the committed case's PyTorch run of the same config and seed."
      : "";
    const series = (get) => runs.flatMap((r, i) => {
      const out = [{ name: r.label, x: r.records.map((x) => x.step), y: r.records.map(get.mine), color: r.color }];
      const t = overlays[i];
      if (t) {
        const n = t.step.findIndex((s) => s >= limit);
        const end = n < 0 ? t.step.length : n + 1;
        out.push({ name: `案例 case ${r.label}`, x: t.step.slice(0, end), y: get.case(t).slice(0, end), color: r.color, dash: "3 3" });
      }
      return out;
    });
    lineChart(charts, {
      title: "loss", width: 440, height: 250, testid: "chart-loss",
      series: series({ mine: (x) => x.loss, case: (t) => t.loss }),
    });
    for (const key of KEYS) {
      for (let l = 0; l < nLayers; l++) {
        lineChart(charts, {
          title: `${TITLES[key]}（层 ${l} · layer ${l}）`, width: 440, height: 250, logY: key !== "weight_entropy",
          testid: `chart-${key}-${l}`,
          series: series({
            mine: (x) => (x.layers ? x.layers[l][key] : null),
            case: (t) => ((t.layers || [])[l] || {})[key] || [],
          }),
        });
      }
    }
  }

  function drawMaps() {
    const step = Number($("snap-step").value);
    const box = $("maps");
    box.replaceChildren();
    for (const r of state.runs) {
      const maps = r.snaps[step];
      if (!maps) continue;
      const chars = probeIds(r.cfg, r.itos).map((i) => r.itos[i]);
      const T = chars.length, H = r.cfg.n_head;
      const card = el("div", { class: "card" }, el("div", { text: `${r.label} · 步 step ${step}` }));
      maps.forEach((m, l) => {
        for (let h = 0; h < H; h++) {
          const cell = 9, c = el("canvas", { width: T * cell, height: T * cell, title: `层 layer ${l} 头 head ${h}`, "data-testid": `map-${r.scaling}-${l}-${h}` });
          const g = c.getContext("2d");
          for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) {
            g.fillStyle = j > i ? "#f4f5f7" : heat(m[(h * T + i) * T + j]);
            g.fillRect(j * cell, i * cell, cell, cell);
          }
          card.append(el("figure", { class: "train-map" }, c, el("figcaption", { class: "note", text: `L${l} H${h}` })));
        }
      });
      box.append(card);
    }
  }

  // ------------------------------------------------------------------ scripting API
  async function train({ set = {}, steps, backend, gate_perturb: gatePerturb } = {}) {
    const t0 = performance.now();
    const { runs, info } = await trainRuns([{ shape: "api", scaling: "api", set }], { steps, backend, gatePerturb });
    const r = runs[0];
    window.attnlab.last = { ms: r.ms, ...info, seconds: (performance.now() - t0) / 1000, config: r.cfg };
    window.attnlab.lastRun = r;
    return r.records;
  }

  window.attnlab = Object.assign(window.attnlab || {}, {
    train,
    runFiles: async () => runFiles(window.attnlab.lastRun),
    download: async () => download(window.attnlab.lastRun),
    pageRuns: () => state.runs,
  });
  setup();
})();

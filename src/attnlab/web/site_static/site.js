// The static site's stand-in for the attnlab server (attnlab site --out DIR). Loaded before every
// page's own scripts, it answers their fetch("/api/...") in the browser, so the pages are the
// server's, unchanged:
//   POST /api/attention  the model runs here: onnxruntime-web (vendored, WebAssembly, one thread) on
//                        the ONNX export of the chosen case model, which computes in float64 like the
//                        server's forward (the same float32 weights, the same maps to ~1e-8); simplified
//                        input is converted with opencc-js exactly as attnlab.chinese.prepare does;
//   POST /api/next       the /next page's path from text to the next character: static/forward.js runs the
//                        whole model in plain JavaScript, float64 from the float32 weights, like the server;
//   GET  /api/info, /api/live, /api/runs[/<run>], /api/timeline/<run>, /api/case, POST /api/model and
//        /api/glyphs: the JSON the server's own functions gave when the site was built (data/site.json).
// Nothing leaves the browser: every file comes from this site's own folder.
// window.attnlab.attention(text, run?) returns what POST /api/attention returns.
"use strict";

(() => {
  const HERE = document.currentScript.src;            // <site>/static/site.js
  const ROOT = new URL("../", HERE);
  const realFetch = window.fetch.bind(window);
  const MAX_TEXT_CHARS = 2048;                        // the server's limit on a request's text
  const UNK = 1;                                      // attnlab.tokenizer: <pad> = 0, <unk> = 1
  const TINY = 1e-12;                                 // attnlab.diagnostics: weights <= this add 0 entropy
  const CONVERTED_NOTE = "已转换为繁体 / converted to traditional";
  // Python's str.isspace(): what attnlab.chinese keeps as typed and str.strip() removes
  const SPACES = new Set([0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
    0x2028, 0x2029, 0x202f, 0x205f, 0x3000].map((c) => String.fromCodePoint(c)));
  const isSpace = (c) => SPACES.has(c);
  const mark = (what) => { try { performance.mark(`attnlab:${what}`); } catch (e) { /* old browser */ } };

  class ApiError extends Error {
    constructor(status, detail) { super(detail); this.status = status; this.detail = detail; }
  }
  const missing = (rel) => `这个静态网站缺少文件 ${rel}，请重新生成（attnlab site --out 目录）。 ` +
    `This static site is missing ${rel}: build it again with attnlab site --out DIR.`;

  async function file(rel, kind = "json") {
    let res;
    try { res = await realFetch(new URL(rel, ROOT)); } catch (e) { throw new ApiError(503, missing(rel)); }
    if (!res.ok) throw new ApiError(503, missing(rel));
    try {
      return kind === "json" ? await res.json() : new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw new ApiError(503, missing(rel));
    }
  }
  let siteP = null;
  const site = () => (siteP ??= file("data/site.json").catch((e) => { siteP = null; throw e; }));

  function script(rel) {
    return new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = new URL(rel, HERE).href;
      s.onload = ok;
      s.onerror = () => fail(new ApiError(503, missing(`static/${rel}`)));
      document.head.append(s);
    });
  }

  // ------------------------------------------------------------- Python's round(x, 4), JSON-safe
  // toFixed rounds an exact tie away from zero; Python rounds it to even.
  function round4(x) {
    if (!Number.isFinite(x)) return null;
    const s = x.toFixed(4);
    let r = Number(s);
    const frac = Math.abs(x).toFixed(100).replace(/0+$/, "").split(".")[1] || "";
    if (frac.length === 5 && frac[4] === "5" && Number(s[s.length - 1]) % 2 === 1) {
      r = Number((x < 0 ? r + 1e-4 : r - 1e-4).toFixed(4));
    }
    return r;
  }

  // ------------------------------------------------- simplified -> traditional (attnlab.chinese)
  let s2tP = null;
  const s2t = () => (s2tP ??= script("vendor/opencc-js/cn2t.js")
    .then(() => { const c = window.OpenCC.Converter({ from: "cn", to: "t" }); mark("converter"); return c; })   // s2t
    .catch((e) => { s2tP = null; throw e; }));

  async function toTraditional(text, known) {
    const chars = [...text];
    if (chars.every((c) => known.has(c) || isSpace(c))) return text;   // nothing the vocabulary lacks
    const convert = await s2t();
    let whole = [...convert(text)];
    if (whole.length !== chars.length) {   // a phrase changed the length: one character at a time
      whole = chars.map((c) => { const t = [...convert(c)]; return t.length === 1 ? t[0] : c; });
    }
    return chars.map((a, i) => (known.has(a) || isSpace(a) ? a : whole[i])).join("");
  }

  async function prepare(text, known) {
    const converted = await toTraditional(text, known);
    const typed = [...text], conv = [...converted];
    const changes = new Map(), unknown = new Set();
    typed.forEach((a, i) => { if (a !== conv[i]) changes.set(`${a}\u0000${conv[i]}`, [a, conv[i]]); });
    const unknownPos = conv.filter((c) => !known.has(c));
    unknownPos.forEach((c) => unknown.add(c));
    return { text, converted, changes: [...changes.values()], unknown: [...unknown], nUnknown: unknownPos.length };
  }

  function convertedLine(p) {
    if (!p.changes.length) return "";
    const pairs = p.changes.slice(0, 12).map(([a, b]) => `${a}→${b}`).join(" ") + (p.changes.length > 12 ? " …" : "");
    return `${CONVERTED_NOTE}: ${pairs}`;
  }

  function unknownLine(p) {
    if (!p.nUnknown) return "";
    const shown = p.unknown.slice(0, 20).map((c) => (c === "\n" ? "⏎" : c)).join("") + (p.unknown.length > 20 ? "…" : "");
    return `${p.nUnknown} 个字不在字表里，记为 <unk>：${shown} / ` +
      `${p.nUnknown} character(s) not in the vocabulary become <unk>: ${shown}`;
  }

  // ----------------------------------------------------------------- the models (onnxruntime-web)
  let ortP = null;
  const runtime = () => (ortP ??= script("vendor/onnxruntime-web/ort.wasm.min.js").then(() => {
    const ort = window.ort;
    ort.env.wasm.wasmPaths = new URL("vendor/onnxruntime-web/", HERE).href;
    ort.env.wasm.numThreads = 1;   // no SharedArrayBuffer on a plain static host
    ort.env.wasm.proxy = false;
    mark("runtime script");
    return ort;
  }).catch((e) => { ortP = null; throw e; }));

  const models = new Map();
  let queue = Promise.resolve();   // one forward pass at a time, like the server's lock

  function model(name) {
    if (!models.has(name)) {
      models.set(name, loadModel(name).catch((e) => { models.delete(name); throw e; }));
    }
    return models.get(name);
  }

  async function loadModel(name) {
    const dir = (await site()).models[name];
    if (!dir) throw new ApiError(404, `没有这个运行 / no run with a checkpoint named '${name.slice(0, 80)}' in the runs directories`);
    const [meta, graph, weights, ort] = await Promise.all([
      file(`${dir}model.json`), file(`${dir}model.onnx`, "bytes"), file(`${dir}weights.bin`, "bytes"), runtime()]);
    let session;
    try {
      // no graph optimisation: it saves about a second of the first load (a two-layer graph has
      // nothing worth fusing), and scripts/export_onnx.py checks the graph run the same way
      session = await ort.InferenceSession.create(graph, {
        executionProviders: ["wasm"], graphOptimizationLevel: "disabled",
        externalData: [{ path: "weights.bin", data: weights }] });
    } catch (e) {
      throw new ApiError(503, `模型 ${name} 无法在浏览器里加载（${e.message}）；请重新生成网站。 ` +
        `The model ${name} cannot be loaded in the browser (${e.message}); build the site again.`);
    }
    const stoi = new Map(meta.itos.map((c, i) => [c, i]));
    mark(`model ${name}`);
    return { name, meta, info: meta.info, itos: meta.itos, stoi, session, ort };
  }

  function forward(m, ids) {
    const run = async () => {
      const feeds = { ids: new m.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]) };
      try {
        const out = await m.session.run(feeds);
        mark("forward");
        return m.meta.outputs.map((k) => out[k]);   // float64 (Float64Array data), one per layer
      } catch (e) {
        throw new ApiError(500, `模型在浏览器里运行失败。 The model failed to run in the browser: ${e.message}`);
      }
    };
    const p = queue.then(run, run);
    queue = p.catch(() => {});
    return p;
  }

  // The head portrait of attnlab.diagnostics.head_metrics, from one head's (T, T) weights at `base`:
  // means over the rows i >= 1 of the normalised entropy, p[i][i], p[i][i-1] and sum_j (i-j) p[i][j].
  function headMetrics(p, base, T, round) {
    if (T < 2) return { entropy: null, diag: null, prev: null, distance: null };
    let ent = 0, diag = 0, prev = 0, dist = 0;
    for (let i = 1; i < T; i++) {
      const row = base + i * T;
      let h = 0, d = 0;
      for (let j = 0; j < T; j++) {
        const x = p[row + j];
        if (x > TINY) h -= x * Math.log(x);
        if (j < i) d += (i - j) * x;
      }
      ent += h / Math.log(i + 1);
      diag += p[row + i];
      prev += p[row + i - 1];
      dist += d;
    }
    const n = T - 1, r = round ? round4 : (x) => (Number.isFinite(x) ? x : null);
    return { entropy: r(ent / n), diag: r(diag / n), prev: r(prev / n), distance: r(dist / n) };
  }

  // POST /api/attention, the same checks, messages and JSON as attnlab.web.server.
  // opts.exact: weights and metrics unrounded (the server rounds to 4 decimals).
  async function attention(text, run, opts = {}) {
    if (typeof text !== "string") throw new ApiError(422, "invalid request: text: Input should be a valid string");
    if (run !== undefined && run !== null && typeof run !== "string") {
      throw new ApiError(422, "invalid request: run: Input should be a valid string");
    }
    const typed = [...text];
    if (typed.length > MAX_TEXT_CHARS) {
      throw new ApiError(422, `invalid request: text: String should have at most ${MAX_TEXT_CHARS} characters`);
    }
    if (typed.every(isSpace)) throw new ApiError(422, "文本为空，请输入至少一个字。 The text is empty: type at least one character.");
    const m = await model(run || (await site()).default);
    const prep = await prepare(text, m.stoi);
    const chars = [...prep.converted];
    const ids = chars.map((c) => m.stoi.get(c) ?? UNK);
    const block = m.info.block_size;
    if (ids.length > block) {
      throw new ApiError(422, `文本有 ${ids.length} 个字，超过模型的 block_size=${block}。 ` +
        `The text has ${ids.length} tokens, more than the model's block_size=${block}.`);
    }
    const tokens = ids.map((i, k) => ({ text: i === UNK ? "<unk>" : m.itos[i], char: chars[k], typed: typed[k], unk: i === UNK }));
    const patterns = await forward(m, ids);
    const T = ids.length, w = opts.exact ? (x) => x : round4;
    const layers = patterns.map((t, layer) => {
      const p = t.data, nh = t.dims[1];
      const heads = [];
      for (let h = 0; h < nh; h++) {
        const base = h * T * T;
        const weights = Array.from({ length: T }, (_, i) => Array.from(p.subarray(base + i * T, base + (i + 1) * T), w));
        heads.push({ weights, metrics: headMetrics(p, base, T, !opts.exact) });
      }
      return { layer, heads };
    });
    return {
      run: m.name,
      step: m.info.step ?? null,
      tokens,
      n_unk: tokens.filter((t) => t.unk).length,
      unknown: prep.unknown,
      unknown_line: unknownLine(prep),
      converted: prep.changes.length > 0,
      converted_text: prep.converted,
      converted_line: convertedLine(prep),
      block_size: block,
      layers,
    };
  }

  // ------------------------------------------- POST /api/next: the /next page, forward in plain JS
  // static/forward.js runs the whole model (the ONNX graphs stop at the last attention pattern) from
  // the graph's weights.bin and rest.bin (the tensors the graph leaves out), in float64 like the server.
  const forwards = new Map();
  function forwardModel(name) {
    if (!forwards.has(name)) {
      forwards.set(name, loadForward(name).catch((e) => { forwards.delete(name); throw e; }));
    }
    return forwards.get(name);
  }

  async function loadForward(name) {
    const dir = (await site()).models[name];
    if (!dir) throw new ApiError(404, `没有这个运行 / no run with a checkpoint named '${name.slice(0, 80)}' in the runs directories`);
    const [meta, weights, rest] = await Promise.all([file(`${dir}model.json`), file(`${dir}weights.bin`, "bytes"),
      file(`${dir}rest.bin`, "bytes"), window.Forward ? null : script("forward.js")]);
    if (!meta.forward || !meta.forward.config) {
      throw new ApiError(422, `模型 ${name} 不能在浏览器里逐步计算。 The model ${name} cannot be followed step by step in the browser.`);
    }
    const net = window.Forward.load(meta.forward.config, meta.forward.tensors, { "weights.bin": weights, "rest.bin": rest });
    return { name, meta, info: meta.info, itos: meta.itos, stoi: new Map(meta.itos.map((c, i) => [c, i])), net };
  }

  async function nextChar(text, run) {
    if (typeof text !== "string") throw new ApiError(422, "invalid request: text: Input should be a valid string");
    if ([...text].length > MAX_TEXT_CHARS) {
      throw new ApiError(422, `invalid request: text: String should have at most ${MAX_TEXT_CHARS} characters`);
    }
    if ([...text].every(isSpace)) throw new ApiError(422, "文本为空，请输入至少一个字。 The text is empty: type at least one character.");
    const m = await forwardModel(run || (await site()).default);
    const prep = await prepare(text, m.stoi);
    const chars = [...prep.converted], typed = [...text];
    const ids = chars.map((c) => m.stoi.get(c) ?? UNK);
    const block = m.info.block_size;
    if (ids.length > block) {
      throw new ApiError(422, `文本有 ${ids.length} 个字，超过模型的 block_size=${block}。 ` +
        `The text has ${ids.length} tokens, more than the model's block_size=${block}.`);
    }
    const tokens = ids.map((i, k) => ({ text: i === UNK ? "<unk>" : m.itos[i], char: chars[k], typed: typed[k], unk: i === UNK, id: i }));
    const c = m.meta.forward.config;
    return {
      run: m.name, step: m.info.step ?? null, block_size: block, n_layer: c.n_layer, n_head: c.n_head, d_model: c.d_model,
      scaling: c.scale_rule, tokens, n_unk: tokens.filter((t) => t.unk).length, unknown_line: unknownLine(prep),
      converted_line: convertedLine(prep), vocab: m.itos, ...window.Forward.forward(m.net, ids),
    };
  }

  // ------------------------------------------------------------------------------ the API
  const reply = (status, body) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const noRun = (name) => new ApiError(404, `no run named '${String(name).slice(0, 80)}' in the runs directories`);
  const stored = async (a) => (a.file ? file(a.file) : a.status === 200 ? a.body : Promise.reject(new ApiError(a.status, a.body.detail)));

  function glyphs(all, text) {
    const out = { ...all, glyphs: {}, missing: [] };
    for (const c of new Set(text)) {
      if (c in all.glyphs) out.glyphs[c] = all.glyphs[c]; else out.missing.push(c);
    }
    return out;
  }

  async function route(method, path, query, body) {
    const s = await site();
    const decode = (rest) => rest.split("/").map(decodeURIComponent).join("/");
    if (method === "GET" && path === "info") {
      const run = query.get("run");
      if (run && !s.model_info[run]) throw noRun(run);
      return stored(run ? s.model_info[run] : s.info);
    }
    if (method === "POST" && path === "model") {
      const run = body && body.run;
      if (typeof run !== "string") throw new ApiError(422, "invalid request: run: Field required");
      if (!s.model_info[run]) throw new ApiError(404, `没有这个运行 / no run with a checkpoint named '${run.slice(0, 80)}' in the runs directories`);
      return stored(s.model_info[run]);
    }
    if (method === "POST" && path === "attention") {
      if (!body || typeof body !== "object") throw new ApiError(422, "invalid request: body: Field required");
      return attention(body.text, body.run);
    }
    if (method === "POST" && path === "next") {
      if (!body || typeof body !== "object") throw new ApiError(422, "invalid request: body: Field required");
      return nextChar(body.text, body.run);
    }
    if (method === "GET" && path === "live") return stored(s.live);
    if (method === "GET" && path === "runs") return stored(s.runs);
    if (method === "GET" && path.startsWith("runs/")) {
      const name = decode(path.slice(5));
      if (!s.runs_detail[name]) throw noRun(name);
      return stored(s.runs_detail[name]);
    }
    if (method === "GET" && path.startsWith("timeline/")) {
      const name = decode(path.slice(9));
      if (!s.timeline[name]) throw noRun(name);
      return stored(s.timeline[name]);
    }
    if (method === "GET" && path === "case") return stored(s.case);
    if (method === "POST" && path === "glyphs") return glyphs(await stored(s.glyphs), String((body && body.text) || ""));
    throw new ApiError(404, "unknown API endpoint");
  }

  async function answer(url, init) {
    const method = ((init && init.method) || "GET").toUpperCase();
    let body = null;
    if (init && typeof init.body === "string") {
      try { body = JSON.parse(init.body); } catch (e) { return reply(422, { detail: "invalid request: body: not JSON" }); }
    }
    try {
      return reply(200, await route(method, url.pathname.slice(5), url.searchParams, body));
    } catch (e) {
      if (e instanceof ApiError) return reply(e.status, { detail: e.detail });
      return reply(500, { detail: `internal error (${e && e.name})` });
    }
  }

  window.fetch = (input, init) => {
    const raw = typeof input === "string" || input instanceof URL ? String(input) : input && input.url;
    const url = new URL(raw, window.location.href);
    if (url.origin === window.location.origin && url.pathname.startsWith("/api/")) return answer(url, init);
    return realFetch(input, init);
  };

  // 实验 1-2: load the runtime, the page's model and the converter while the page still waits for its
  // font and info (the WebAssembly compiles off the main thread meanwhile)
  document.addEventListener("DOMContentLoaded", () => {
    if (!document.getElementById("run-select")) return;
    const quiet = () => {};   // the first request reports what went wrong
    site().then((s) => {
      const asked = new URL(window.location.href).searchParams.get("run");
      return model(asked && s.models[asked] ? asked : s.default);
    }).then(() => s2t()).catch(quiet);
  });

  window.attnlab = {
    static: true,
    // the same JSON as POST /api/attention {text, run}; rejects with an Error carrying .status and .detail
    attention: (text, run, opts) => attention(text, run, opts),
    // the same JSON as POST /api/next {text, run}: the /next page's path to the next character
    next: (text, run) => nextChar(text, run),
    info: async () => stored((await site()).info),
    runs: async () => Object.keys((await site()).models),
  };
})();

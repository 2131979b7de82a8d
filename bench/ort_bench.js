// `make bench`'s ONNX Runtime side (issue 14): times one exported model with onnxruntime-node's
// CPU execution provider, as bench/run_bench.py asks.
//
//   node bench/ort_bench.js MANIFEST.json
//
// MANIFEST: {"ort": DIR holding node_modules/onnxruntime-node, "model": M.onnx, "threads": N,
//            "optimization": graphOptimizationLevel (default "all"),
//            "min_time": S, "inputs": [{"name", "dtype" ("float32" | "int64"), "shape", "path"}],
//            "output": PATH (first output written raw, little-endian)}
// Prints one JSON line: {"median_ms", "p10_ms", "p90_ms", "calls", "output_shape"}, or
// {"error": "..."} with exit code 1.
"use strict";
const fs = require("fs");
const path = require("path");

function fail(message) {
  process.stdout.write(JSON.stringify({ error: message }) + "\n");
  process.exit(1);
}

async function main() {
  if (process.argv.length !== 3) fail("usage: node ort_bench.js MANIFEST.json");
  const manifest = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  let ort;
  try {
    ort = require(path.join(manifest.ort, "node_modules", "onnxruntime-node"));
  } catch (err) {
    fail(`cannot load onnxruntime-node from ${manifest.ort}: ${err.message}`);
  }
  const session = await ort.InferenceSession.create(manifest.model, {
    executionProviders: ["cpu"],
    graphOptimizationLevel: manifest.optimization || "all",
    executionMode: "sequential",
    intraOpNumThreads: manifest.threads,
    interOpNumThreads: 1,
  });
  const feeds = {};
  for (const input of manifest.inputs) {
    const bytes = fs.readFileSync(input.path);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    let data;
    if (input.dtype === "float32") data = new Float32Array(buffer);
    else if (input.dtype === "int64") data = new BigInt64Array(buffer);
    else fail(`input ${input.name}: dtype ${input.dtype} is not supported by this bench`);
    feeds[input.name] = new ort.Tensor(input.dtype, data, input.shape);
  }
  // Warm-up: a tenth of the time (at most 1 s), at least 3 calls.
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  let out = await session.run(feeds);
  const warmEnd = now() + Math.min(100 * manifest.min_time, 1000);
  for (let i = 0; i < 100 && (i < 2 || now() < warmEnd); ++i) await session.run(feeds);
  const samples = [];
  const start = now();
  while (samples.length < 3 || now() - start < 1000 * manifest.min_time) {
    const t0 = now();
    out = await session.run(feeds);
    samples.push(now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  const first = out[session.outputNames[0]];
  if (manifest.output) {
    const data = first.data;
    fs.writeFileSync(manifest.output, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  process.stdout.write(JSON.stringify({
    median_ms: at(0.5), p10_ms: at(0.1), p90_ms: at(0.9), calls: samples.length,
    output_shape: first.dims,
  }) + "\n");
}

main().catch((err) => fail(String(err && err.message ? err.message : err)));

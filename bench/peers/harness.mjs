// Shared by the Node peers of bench/peers.py: reads the job written by peers.py (texts, float32
// vectors exported from Engram, queries and their vectors), runs the timed phases the Python
// engines run (build, sequential latency, 2 concurrent workers, one index per LoCoMo
// conversation for recall) and writes the figures as JSON. Each engine module exports
//   build(docs, dir) -> index        docs: [{id, text, vector: Float32Array}]
//   search(index, text, vector, k) -> [id, ...]
//   throughput(job, index, order, deadline) -> number of queries answered by 2 workers
import fs from "node:fs";
import path from "node:path";

export function loadJob(jobPath) {
  const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
  const texts = JSON.parse(fs.readFileSync(job.texts, "utf8"));
  const readVecs = (p) => {
    const b = fs.readFileSync(p);
    return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  };
  const vecs = readVecs(job.vecs);
  const qv = readVecs(job.qvecs);
  const dim = job.dim;
  const qvecs = job.queries.map((_, i) => qv.subarray(i * dim, (i + 1) * dim));
  const doc = (i) => ({ id: i, text: texts[i], vector: vecs.subarray(i * dim, (i + 1) * dim) });
  return { job, texts, vecs, qvecs, dim, doc };
}

export function dirBytes(p) {
  let total = 0;
  if (!fs.existsSync(p)) return 0;
  for (const e of fs.readdirSync(p, { withFileTypes: true })) {
    const q = path.join(p, e.name);
    total += e.isDirectory() ? dirBytes(q) : fs.statSync(q).size;
  }
  return total;
}

const rssMb = () => Math.round(process.memoryUsage().rss / 1048576 * 10) / 10;

export async function run(engine, jobPath, outPath) {
  const L = loadJob(jobPath);
  const { job, texts, qvecs } = L;
  const out = { engine: engine.name, rss_mb_loaded_data: rssMb() };
  const dir = path.join(job.workdir, engine.name);
  const docs = texts.map((_, i) => L.doc(i));
  let t0 = performance.now();
  const index = await engine.build(docs, dir, L);
  out.build_s = (performance.now() - t0) / 1000;
  out.disk_bytes = engine.onDisk ? dirBytes(dir) : null;
  const order = job.order;
  for (const qi of order.slice(0, 5)) await engine.search(index, job.queries[qi], qvecs[qi], job.k);
  const lat = [];
  const tEnd = performance.now() + job.phase_seconds * 1000;
  for (const qi of order.slice(0, job.max_queries)) {
    if (performance.now() >= tEnd && lat.length >= 20) break;
    const t1 = performance.now();
    await engine.search(index, job.queries[qi], qvecs[qi], job.k);
    lat.push(performance.now() - t1);
  }
  out.lat_ms = lat;
  out.rss_mb = rssMb();
  const order2 = [];
  for (let r = 0; r < 10; r++) order2.push(...order);
  const t1 = performance.now();
  const deadline = t1 + Math.min(job.phase_seconds, 30) * 1000;
  // an engine that must set up its workers first returns {n, seconds} timed from their start
  const r = await engine.throughput(L, index, order2, deadline, jobPath, out);
  const n = typeof r === "number" ? r : r.n;
  const wall = typeof r === "number" ? (performance.now() - t1) / 1000 : r.seconds;
  out.tput_qps = n / wall;
  out.tput_queries = n;
  if (engine.close) await engine.close(index);
  const ranked = new Array(job.queries.length).fill(null);
  for (let g = 0; g < job.groups.length; g++) {
    const [s, e] = job.groups[g];
    const gdocs = [];
    for (let i = s; i < e; i++) gdocs.push(L.doc(i));
    const gi = await engine.build(gdocs, path.join(job.workdir, `${engine.name}-g${g}`), L);
    for (let qi = 0; qi < job.queries.length; qi++) {
      if (job.qgroup[qi] === g) ranked[qi] = await engine.search(gi, job.queries[qi], qvecs[qi], job.k);
    }
    if (engine.close) await engine.close(gi);
  }
  out.ranked = ranked;
  fs.writeFileSync(outPath, JSON.stringify(out));
}

// Orama (@orama/orama) for bench/peers.py: one in-memory database with a text property and a
// vector[512] property; search in hybrid mode (BM25 full text + vector, min-max normalised and
// weighted by Orama). similarity 0 lets every document into the vector side (Orama's default
// threshold, 0.8 cosine, would leave it empty for this model's vectors). 2 concurrent workers =
// 2 worker threads, each with its own copy of the database (JavaScript runs one thread each).
import { create, insertMultiple, search } from "@orama/orama";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { fileURLToPath } from "node:url";
import os from "node:os";
import { loadJob, run } from "./harness.mjs";

const engine = {
  name: "orama",
  onDisk: false,
  async build(docs, _dir, L) {
    const db = create({
      schema: { gid: "number", text: "string", embedding: `vector[${L.dim}]` },
      components: { tokenizer: { language: "english", stemming: true } },
    });
    await insertMultiple(db, docs.map((d) => ({ gid: d.id, text: d.text, embedding: Array.from(d.vector) })), 1000);
    return db;
  },
  async search(db, text, vector, k) {
    const r = await search(db, {
      mode: "hybrid",
      term: text,
      properties: ["text"],
      vector: { value: Array.from(vector), property: "embedding" },
      similarity: 0,
      limit: k,
    });
    return r.hits.map((h) => h.document.gid);
  },
  async throughput(L, db, order, deadline, jobPath, out) {
    // two more copies of the database must fit in memory with 6 GB to spare; else one thread
    const need = process.memoryUsage().rss * 2 + 6 * 2 ** 30;
    if (os.freemem() < need) {
      out.tput_note = "one thread: no memory for 2 copies of the database";
      let n = 0;
      for (const qi of order) {
        if (performance.now() >= deadline) break;
        await engine.search(db, L.job.queries[qi], L.qvecs[qi], L.job.k);
        n++;
      }
      return n;
    }
    const file = fileURLToPath(import.meta.url);
    const workers = [0, 1].map((w) => new Worker(file, { workerData: { jobPath, w } }));
    const ready = workers.map((wk) => new Promise((res) => wk.once("message", res)));
    await Promise.all(ready);   // each worker has built its own copy (not timed)
    const start = performance.now();
    const ms = Math.min(L.job.phase_seconds, 30) * 1000;
    const done = workers.map((wk, w) => new Promise((res) => {
      wk.once("message", (n) => { wk.terminate(); res(n); });
      wk.postMessage({ order: order.filter((_, i) => i % 2 === w), ms });
    }));
    const ns = await Promise.all(done);
    return { n: ns.reduce((a, b) => a + b, 0), seconds: (performance.now() - start) / 1000 };
  },
};

if (isMainThread) {
  await run(engine, process.argv[2], process.argv[3]);
} else {
  const L = loadJob(workerData.jobPath);
  const db = await engine.build(L.texts.map((_, i) => L.doc(i)), null, L);
  parentPort.postMessage("ready");
  parentPort.once("message", async ({ order, ms }) => {
    const end = performance.now() + ms;
    let n = 0;
    for (const qi of order) {
      if (performance.now() >= end) break;
      await engine.search(db, L.job.queries[qi], L.qvecs[qi], L.job.k);
      n++;
    }
    parentPort.postMessage(n);
  });
}

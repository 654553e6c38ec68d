// LanceDB (@lancedb/lancedb) for bench/peers.py: one table on disk (id, text, vector as
// FixedSizeList<Float32>[512]), a full-text index on text (Index.fts(), its defaults), no vector
// index (LanceDB searches vectors exactly without one), and hybrid queries: nearestTo(vector)
// with cosine distance + fullTextSearch(text), fused by the RRF reranker. 2 concurrent workers =
// 2 queries in flight in one process (the native side runs them on its own threads).
import * as lancedb from "@lancedb/lancedb";
import { Field, FixedSizeList, Float32, Int32, Schema, Utf8 } from "apache-arrow";
import fs from "node:fs";
import { run } from "./harness.mjs";

let rrf = null;
const engine = {
  name: "lancedb",
  onDisk: true,
  async build(docs, dir, L) {
    fs.rmSync(dir, { recursive: true, force: true });
    const db = await lancedb.connect(dir);
    const schema = new Schema([
      new Field("id", new Int32(), false),
      new Field("text", new Utf8(), false),
      new Field("vector", new FixedSizeList(L.dim, new Field("item", new Float32(), true)), false),
    ]);
    const rows = docs.map((d) => ({ id: d.id, text: d.text, vector: Array.from(d.vector) }));
    const table = await db.createTable("docs", rows, { schema });
    await table.createIndex("text", { config: lancedb.Index.fts() });
    if (!rrf) rrf = await lancedb.rerankers.RRFReranker.create();
    return { db, table };
  },
  async search({ table }, text, vector, k) {
    const rows = await table.query()
      .nearestTo(Array.from(vector))
      .distanceType("cosine")
      .fullTextSearch(text)
      .rerank(rrf)
      .select(["id"])
      .limit(k)
      .toArray();
    return rows.map((r) => r.id);
  },
  async throughput(L, index, order, deadline) {
    let n = 0;
    const worker = async (w) => {
      for (let i = w; i < order.length; i += 2) {
        if (performance.now() >= deadline) break;
        const qi = order[i];
        await engine.search(index, L.job.queries[qi], L.qvecs[qi], L.job.k);
        n++;
      }
    };
    await Promise.all([worker(0), worker(1)]);
    return n;
  },
  async close({ table, db }) {
    table.close();
    db.close();
  },
};

await run(engine, process.argv[2], process.argv[3]);

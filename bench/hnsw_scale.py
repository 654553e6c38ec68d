#!/usr/bin/env python3
"""One scope's vector index grown to 1,000,000 vectors: the HNSW path next to the exact scan.

A scope with more than `--hnsw-threshold` vectors (default 20,000) answers unfiltered vector
searches from an HNSW graph over its int8 codes (src/index/vector_index.h). This tool measures that
path at up to a million vectors of real conversational text, with `build/bench/hnsw_scale`:

- texts: every message of the LoCoMo, LongMemEval_S and Mem-Gallery dev sets, each of their
  sentences and each clause of those sentences (split at , ; : and parentheses), at least 16
  characters, deduplicated, in a fixed shuffled order; the dev sets hold about a million;
- queries: the datasets' questions (500, shuffled);
- both embedded with the built-in model on every core (cached in --cache-dir, so a second run
  skips the model), inserted one by one into the product's index and into an exact scan of the
  same codes; at each size, insert time (what growing by single adds costs the graph),
  memory, single-thread latency p50 / p99 for k = 10 and k = 200 (the hybrid search asks each
  retriever for 200), and the graph's recall against the exact answer.
- with --tool-arg=--load, each size is instead loaded into a fresh index as one batch, as a
  shard's load is (the graph built at its end, from every core, in the background): "searchable"
  is the wait of the first search after a start (the exact scan answers while the graph is
  built), "graph ready" the time until the graph answers; adding --tool-arg=--graph-file=PATH
  saves each size's graph there and times a second load whose graph starts from the file, as a
  server's does after a restart.

    python3 bench/hnsw_scale.py --tool build/bench/hnsw_scale [--sizes 20000,100000,300000,1000000]

Skips (exit 0) when the datasets are absent.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import replay  # noqa: E402

DATASETS = {"locomo": "locomo_dev.json", "longmemeval": "longmemeval_s_dev.json.xz",
            "memgallery": "mem_gallery_dev.json"}
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
CLAUSE = re.compile(r"[,;:]\s+|\s+-\s+|\s+\(")
MIN_CHARS = 16


def corpus(data_dir):
    """(texts, queries) from the dev sets present in data_dir."""
    seen, texts, queries = set(), [], []

    def keep(t):
        t = " ".join(t.split())
        if len(t) >= MIN_CHARS and t not in seen:
            seen.add(t)
            texts.append(t)

    for name, file in DATASETS.items():
        path = os.path.join(data_dir, file)
        if not os.path.exists(path):
            benchlib.log(f"skipping {name}: {path} not found")
            continue
        ds = replay.load_dataset(name, path, None)
        for user in ds.users:
            for session in user.sessions:
                for m in session.messages:
                    if not isinstance(m.content, str):
                        continue
                    keep(m.content)
                    for sentence in SENTENCE.split(m.content):
                        keep(sentence)
                        for clause in CLAUSE.split(sentence):
                            keep(clause)
        queries.extend(" ".join(q.query.split()) for q in ds.questions)
    rng = random.Random(7)
    rng.shuffle(texts)
    rng.shuffle(queries)
    return texts, queries


def insert_cell(r, load):
    if load and "searchable_s" in r:
        return f"{r['searchable_s']:.1f} / {r['insert_s']:.1f}"
    return f"{r['insert_s']:.1f}"


def table(rows, cpu):
    # --tool-arg=--load: each size is loaded as one batch (a shard's load), not grown.
    load = bool(rows and rows[0].get("load"))
    insert = "searchable / graph ready (s)" if load else "insert (s)"
    out = [f"CPU: {cpu}", "",
           f"| vectors | graph | {insert} | index MB | bytes / vector | k=10 p50 / p99 ms | "
           "exact k=10 p50 / p99 ms | recall@10 | k=200 p50 / p99 ms | exact k=200 p50 ms | "
           "recall@200 |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a, b = r["k10"], r["k200"]
        out.append(
            f"| {r['vectors']:,} | {'HNSW' if r['uses_hnsw'] else 'exact scan'} | "
            f"{insert_cell(r, load)} | {r['index_bytes'] / 1e6:.0f} | "
            f"{r['index_bytes'] / r['vectors']:.0f} | "
            f"{a['hnsw_p50_ms']:.2f} / {a['hnsw_p99_ms']:.2f} | "
            f"{a['exact_p50_ms']:.2f} / {a['exact_p99_ms']:.2f} | {a['recall']:.3f} | "
            f"{b['hnsw_p50_ms']:.2f} / {b['hnsw_p99_ms']:.2f} | {b['exact_p50_ms']:.2f} | "
            f"{b['recall']:.3f} |")
    reloads = [r for r in rows if "reload_s" in r]
    if reloads:
        out += ["", "Each size's graph saved (--tool-arg=--graph-file=PATH) and a fresh index loaded "
                "from the same vectors, its graph taken from the file:", "",
                "| vectors | graph built: searchable / ready (s) | save (s) | file MB | "
                "from the file: searchable / ready (s) | vectors taken | k=10 p50 / p99 ms | "
                "recall@10 | a removal, zeroed in the file: p50 / p99 ms |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in reloads:
            k = r["reload_k10"]
            out.append(
                f"| {r['vectors']:,} | {insert_cell(r, True)} | {r['save_s']:.2f} | "
                f"{r['graph_file_bytes'] / 1e6:.0f} | "
                f"{r['reload_searchable_s']:.1f} / {r['reload_s']:.1f} | {r['reload_adopted']:,} | "
                f"{k['hnsw_p50_ms']:.2f} / {k['hnsw_p99_ms']:.2f} | {k['recall']:.3f} | "
                f"{r.get('remove_p50_ms', 0):.2f} / {r.get('remove_p99_ms', 0):.2f} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", default=os.path.join(benchlib.REPO_ROOT, "build/bench/hnsw_scale"))
    ap.add_argument("--model-dir",
                    default=os.path.join(benchlib.REPO_ROOT, "third_party/model/package/dist"))
    ap.add_argument("--data-dir", default=benchlib.DEFAULT_DATA_DIR)
    ap.add_argument("--sizes", default="20000,100000,300000,1000000")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "engram-hnsw-scale"))
    ap.add_argument("--tool-arg", action="append", default=[],
                    help="passed to the tool as it is, e.g. --tool-arg=--hnsw-ef-search=200")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    texts, queries = corpus(args.data_dir)
    if not texts or not queries:
        benchlib.log("skipping: no dataset found")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    benchlib.log(f"{len(texts):,} distinct texts, {len(queries):,} queries; sizes {sizes}")
    os.makedirs(args.cache_dir, exist_ok=True)
    texts_path = os.path.join(args.cache_dir, "texts.txt")
    queries_path = os.path.join(args.cache_dir, "queries.txt")
    with open(texts_path, "w", encoding="utf-8") as f:
        f.write("\n".join(texts[:max(sizes)]) + "\n")
    with open(queries_path, "w", encoding="utf-8") as f:
        f.write("\n".join(queries[:args.queries]) + "\n")
    cmd = [args.tool, "--texts", texts_path, "--queries", queries_path,
           "--cache", os.path.join(args.cache_dir, "vectors.bin"), "--model-dir", args.model_dir,
           "--sizes", args.sizes, "--max-queries", str(args.queries)] + args.tool_arg
    start = time.time()
    rows = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            rows.append(json.loads(line))
            benchlib.log(f"{rows[-1]['vectors']:,} vectors measured ({time.time() - start:.0f} s)")
    if p.returncode != 0:
        benchlib.log(f"{args.tool} exited {p.returncode}")
        return 1
    cpu = benchlib.cpu_name()
    print(table(rows, cpu))
    if args.json_out:
        benchlib.write_json(args.json_out, {"cpu": cpu, "command": cmd, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Several nodes on one PostgreSQL database next to the SQLite default.

Part 1, latency and throughput (Leaderboard API, same data and clients for every configuration):
  sqlite-1: one node on its embedded SQLite store;
  pg-1:     one node on PostgreSQL;
  pg-2:     two nodes on one PostgreSQL database, clients split evenly over them.
  Each loads --memories messages into one scope, then runs --clients searches (wrk, top_k 10) for
  --seconds, then --clients adders (unique request_ids, two messages per add) for --add-seconds,
  each wrk process into a scope of its own (one scope with one node, two with two).
  With two nodes, wrk runs once per node (clients / 2 each) at the same time; throughput is the
  sum and latency percentiles are the larger of the two runs'.
Part 2, growth (pg-1, --embedder none so loading a million messages takes minutes, not hours):
  --scopes scopes filled to each total in --totals; at each total: search latency over random
  scopes with every shard warm, and the time to load a cold shard (restart, then the first search
  of each of 20 scopes), reported per 10,000 memories.

Everything runs on this machine: PostgreSQL, the nodes and wrk share its cores, so the two-node
figures show the coordination cost, not extra hardware.

  python3 bench/scale_out.py --engram build/engram --json-out bench/results/scale_out.json
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
sys.path.insert(0, BENCH_DIR)
from benchlib import Client, EngramServer, log, percentile  # noqa: E402
from load import message, query, run_wrk  # noqa: E402


class PgCluster:
    """The throw-away cluster of scripts/pg_test_cluster.sh."""

    def __enter__(self):
        out = subprocess.run(["bash", os.path.join(REPO, "scripts/pg_test_cluster.sh"), "start"],
                             check=True, capture_output=True, text=True).stdout
        env = dict(line.replace("export ", "").split("=", 1) for line in out.splitlines() if "=" in line)
        self.base, self.dir = env["ENGRAM_TEST_PG_URL"], env["ENGRAM_TEST_PG_DIR"]
        return self

    def __exit__(self, *exc):
        subprocess.run(["bash", os.path.join(REPO, "scripts/pg_test_cluster.sh"), "stop", self.dir])

    def new_database(self):
        name = "bench_" + uuid.uuid4().hex[:12]
        subprocess.run(["psql", self.base + "/postgres", "-qc", f"CREATE DATABASE {name}"], check=True)
        return self.base + "/" + name


def load_scope(url, user, n, chunk, rng, workers=4, first=0):
    """Adds n messages to `user`, numbered from `first` (request_ids stay unique across calls)."""
    chunks = []
    for start in range(first, first + n, chunk):
        msgs = [message(rng, i) for i in range(start, min(first + n, start + chunk))]
        chunks.append({"request_id": f"load:{user}:{start}", "user_id": user,
                       "session_id": f"{user}:s{start // 200}", "messages": msgs})

    def post(body):
        Client(url).post_json("/leaderboard/add", body)

    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(post, chunks))


def wrk_phase(urls, path, script, args_for, clients, seconds, threads):
    """Runs wrk against every url at once (clients split evenly); sums throughput."""
    per = max(1, clients // len(urls))
    with ThreadPoolExecutor(len(urls)) as ex:
        runs = list(ex.map(lambda u: run_wrk(u + path, script, args_for(u), per, seconds,
                                             max(1, threads // len(urls))), urls))
    return {"req_per_s": round(sum(r.get("req_per_s", 0) for r in runs), 1),
            "p50_ms": max(r.get("p50_ms") or 0 for r in runs),
            "p99_ms": max(r.get("p99_ms") or 0 for r in runs),
            "non_2xx": sum(r.get("non_2xx", 0) for r in runs),
            "socket_errors": sum(r.get("socket_errors", 0) for r in runs)}


def part1(args, cluster, tmp):
    results = {}
    rng = random.Random(args.seed)
    bodies = os.path.join(tmp, "search_bodies.txt")
    with open(bodies, "w") as f:
        for _ in range(2000):
            f.write(json.dumps({"user_id": "bench-user", "query": query(rng), "top_k": 10}) + "\n")
    msgs_file = os.path.join(tmp, "add_messages.txt")
    with open(msgs_file, "w") as f:
        for i in range(500):
            f.write(json.dumps([message(rng, 2 * i), message(rng, 2 * i + 1)]) + "\n")
    for config in args.configs.split(","):
        nodes = []
        try:
            if config == "sqlite-1":
                nodes.append(EngramServer(args.engram, extra_args=args.server_arg))
            else:
                url = cluster.new_database()
                for k in range(int(config.split("-")[1])):
                    nodes.append(EngramServer(args.engram, extra_args=args.server_arg + [
                        "--store-url", url, "--node-id", f"n{k + 1}", "--store-connections", "16"]))
            for n in nodes:
                n.start()
            urls = [n.url for n in nodes]
            t0 = time.monotonic()
            load_scope(urls[0], "bench-user", args.memories, 20, random.Random(args.seed))
            load_s = time.monotonic() - t0
            log(f"{config}: loaded {args.memories} memories in {load_s:.1f} s")
            for u in urls:  # warm every node's shard and let the vector queue drain
                Client(u).post_json("/leaderboard/search", {"user_id": "bench-user", "query": "warm up"})
            time.sleep(args.settle)
            search = wrk_phase(urls, "/leaderboard/search", os.path.join(BENCH_DIR, "search.lua"),
                               lambda u: [bodies], args.clients, args.seconds, args.threads)
            prefix = f"add-{config}-{uuid.uuid4().hex[:8]}"
            add = wrk_phase(urls, "/leaderboard/add", os.path.join(BENCH_DIR, "add.lua"),
                            lambda u: [msgs_file, prefix + u[-5:], "bench-adder-" + u[-5:]], args.clients,
                            args.add_seconds, args.threads)
            results[config] = {"load_s": round(load_s, 1), "search": search, "add": add}
            log(f"{config}: search {search}  add {add}")
        finally:
            for n in nodes:
                n.stop()
    return results


def part2(args, cluster, tmp):
    url = cluster.new_database()
    rows = []
    loaded = 0
    rng = random.Random(args.seed + 1)
    scopes = [f"scope-{i}" for i in range(args.scopes)]
    extra = ["--embedder", "none", "--retrieval", "bm25", "--store-url", url,
             "--store-connections", "16"]
    for total in [int(t) for t in args.totals.split(",")]:
        per_scope = (total - loaded) // len(scopes)
        node = EngramServer(args.engram, extra_args=extra)
        node.start()
        try:
            t0 = time.monotonic()
            with ThreadPoolExecutor(4) as ex:
                first = loaded // len(scopes)
                list(ex.map(lambda s: load_scope(node.url, s, per_scope, 100, random.Random(hash(s)), 1,
                                                 first),
                            scopes))
            loaded += per_scope * len(scopes)
            log(f"growth: {loaded} memories in {len(scopes)} scopes (+{time.monotonic() - t0:.0f} s)")
        finally:
            node.stop()
        # What an operator's autovacuum would have done by now: without it the cold-load phase
        # below competes with the post-load vacuum and analyze.
        subprocess.run(["psql", "-q", url, "-c", "VACUUM (ANALYZE) memories"], check=True)
        # Cold shards: a fresh node loads each scope on its first search.
        node = EngramServer(args.engram, extra_args=extra)
        node.start()
        try:
            c = Client(node.url)
            cold = []
            cold_scopes = rng.sample(scopes, 20)
            for s in cold_scopes:
                t = time.perf_counter()
                c.post_json("/leaderboard/search", {"user_id": s, "query": query(rng)})
                cold.append((time.perf_counter() - t) * 1000)
            warm = []
            for s in cold_scopes:  # the same searches on warm shards: the difference is the load
                t = time.perf_counter()
                c.post_json("/leaderboard/search", {"user_id": s, "query": query(rng)})
                warm.append((time.perf_counter() - t) * 1000)
            for s in scopes:  # every shard warm
                c.post_json("/leaderboard/search", {"user_id": s, "query": "warm"})
            bodies = os.path.join(tmp, f"growth_{total}.txt")
            with open(bodies, "w") as f:
                for _ in range(4000):
                    f.write(json.dumps({"user_id": rng.choice(scopes), "query": query(rng), "top_k": 10}) + "\n")
            search = run_wrk(node.url + "/leaderboard/search", os.path.join(BENCH_DIR, "search.lua"),
                             [bodies], args.clients, args.seconds, args.threads)
            per_scope_total = loaded / len(scopes)
            row = {"memories": loaded, "scopes": len(scopes),
                   "cold_first_search_ms_p50": round(percentile(cold, 50), 1),
                   "warm_search_ms_p50": round(percentile(warm, 50), 1),
                   "cold_load_ms_per_10k": round(
                       (percentile(cold, 50) - percentile(warm, 50)) * 10000 / per_scope_total, 1),
                   "search_req_per_s": search.get("req_per_s"), "search_p50_ms": search.get("p50_ms"),
                   "search_p99_ms": search.get("p99_ms"), "non_2xx": search.get("non_2xx")}
            rows.append(row)
            log(f"growth: {row}")
        finally:
            node.stop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", required=True)
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--configs", default="sqlite-1,pg-1,pg-2")
    ap.add_argument("--memories", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--add-seconds", type=int, default=5)
    ap.add_argument("--settle", type=float, default=5.0, help="seconds for the vector queue to drain")
    ap.add_argument("--scopes", type=int, default=1000)
    ap.add_argument("--totals", default="10000,100000,1000000")
    ap.add_argument("--skip-growth", action="store_true")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    out = {"machine_cores": os.cpu_count()}
    with PgCluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        out["latency"] = part1(args, cluster, tmp)
        if not args.skip_growth:
            out["growth"] = part2(args, cluster, tmp)
    print(json.dumps(out, indent=2))
    if args.json_out:
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()

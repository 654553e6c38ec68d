#!/usr/bin/env python3
"""Load test of the Leaderboard API on one 10,000-memory scope with 16 concurrent clients.

Phases (each bounded in time and count; only 127.0.0.1 / localhost targets):
  1. load: add --memories synthetic messages to one user, --chunk messages per add
     (--load-concurrency clients, default 1 for clean per-chunk latencies); RSS before/after.
  2. search: --clients concurrent clients for --seconds each, top_k 10 then top_k 100; with
     --rates, also open-loop searches at those rates (bench/open_loop.py) after the top_k 10 phase.
  3. add: --clients concurrent adders for --add-seconds, unique request_ids, into a second user
     (so the searched scope stays at --memories).
  4. cold start (only with --engram): restart the server on the same data dir and time the first
     search of the loaded scope (shard load) against the following ones.
Phases 2 and 3 use wrk (bench/search.lua, bench/add.lua) when it is installed, else a Python
threaded client (--no-wrk forces it). The Python client's own overhead (GIL, http.client) inflates
its latencies and caps its throughput; wrk numbers are the ones to quote.

  python3 bench/load.py --engram build/engram --json-out /tmp/load.json
  python3 bench/load.py --url http://127.0.0.1:8080 --pid 1234 --seconds 5
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (Client, EngramServer, HttpError, _f, dir_bytes, log,  # noqa: E402
                      percentile, require_loopback, rss_kib, write_json)
from open_loop import print_open_loop_table, run_open_loop  # noqa: E402

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

# ----------------------------------------------------------------------------------------------
# Synthetic but realistic text: short first-person / third-person statements about people, plans,
# places and preferences, words drawn with Zipf-like weights so some terms are common and most rare.

NAMES = ("Alice Bob Carol David Emma Farid Grace Hiro Ines Jonas Kiran Lena Mateo Nora Omar Priya "
         "Quinn Rosa Sven Tara Umar Vera Wei Xenia Yusuf Zoe").split()
VERBS = ("visited booked cancelled painted cooked bought sold fixed planned started finished learned "
         "taught adopted watched read wrote recommended borrowed lost found repaired moved joined "
         "left organised photographed ordered tried returned designed practised").split()
ADJS = ("old new small large quiet noisy red blue green vintage modern cheap expensive handmade "
        "broken shiny wooden spicy sweet bitter cosy remote crowded favourite strange rare electric "
        "ceramic organic second-hand local foreign").split()
NOUNS = ("bicycle guitar kitchen garden apartment cabin laptop camera novel recipe painting puppy "
         "kitten sofa ticket concert museum festival marathon workshop course certificate telescope "
         "piano violin tent backpack notebook sculpture aquarium bakery library studio greenhouse "
         "drone motorcycle kayak podcast newsletter website startup contract invoice budget "
         "vacation wedding birthday interview promotion surgery allergy medicine vaccine").split()
PLACES = ("Lisbon Kyoto Nairobi Oslo Denver Lima Seoul Porto Dublin Hanoi Austin Krakow Cairo "
          "Quebec Tbilisi Perth Bergen Valencia Accra Tucson").split()
TIMES = ("yesterday last week last month two days ago this morning on Sunday in spring in August "
         "over the holidays after work before the trip").split(" ")
TEMPLATES = (
    "{n} {v} a {a} {o} in {p} {t}.",
    "I {v} the {a} {o} {t} and it was better than expected.",
    "{n} said the {o} from {p} is {a} but worth it.",
    "We {v} a {o} near {p}; {n} wants a {a} one next time.",
    "My favourite thing lately is the {a} {o} {n} {v} {t}.",
    "Remind me that {n} {v} the {o} {t}, because the {a} {o2} is still in {p}.",
    "{n} and I {v} a {a} {o} and then a {o2} in {p}.",
    "Honestly the {o} was {a}, so {n} {v} it {t}.",
)


def zipf_choice(rng, seq, s=1.1):
    weights = getattr(zipf_choice, "_cache", {}).get((id(seq), s))
    if weights is None:
        weights = [1.0 / (i + 1) ** s for i in range(len(seq))]
        zipf_choice._cache = getattr(zipf_choice, "_cache", {})
        zipf_choice._cache[(id(seq), s)] = weights
    return rng.choices(seq, weights=weights, k=1)[0]


def sentence(rng):
    return rng.choice(TEMPLATES).format(
        n=zipf_choice(rng, NAMES), v=zipf_choice(rng, VERBS), a=zipf_choice(rng, ADJS),
        o=zipf_choice(rng, NOUNS), o2=zipf_choice(rng, NOUNS), p=zipf_choice(rng, PLACES),
        t=rng.choice(TIMES))


def message(rng, i):
    k = 1 + (rng.random() < 0.4) + (rng.random() < 0.15)
    return {"role": "user" if i % 2 == 0 else "assistant",
            "timestamp": 1704067200000 + i * 60000,
            "content": " ".join(sentence(rng) for _ in range(k))}


VOCAB = NAMES + VERBS + ADJS + NOUNS + PLACES


def query(rng):
    return " ".join(zipf_choice(rng, VOCAB, 0.8) for _ in range(rng.randint(3, 8)))


# ----------------------------------------------------------------------------------------------
# wrk

_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(tok):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", tok)
    return float(m.group(1)) * _UNIT[m.group(2)] if m else None


def parse_wrk(out):
    r = {"tool": "wrk"}
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s*{pct}(?:\.0+)?%\s+(\S+)", out, re.M)
        if m:
            r[f"p{pct}_ms"] = _ms(m.group(1))
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["req_per_s"] = float(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    r["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    return r


def run_wrk(url_path, script, script_args, clients, seconds, threads):
    cmd = ["wrk", f"-t{threads}", f"-c{clients}", f"-d{seconds}s", "--latency", "--timeout", "10s",
           "-s", script, url_path, "--"] + script_args
    log("  " + " ".join(c if c else "''" for c in cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if p.returncode != 0:
        raise SystemExit(f"wrk failed ({p.returncode}): {p.stderr.strip()[:500]}")
    r = parse_wrk(p.stdout)
    r["raw"] = p.stdout
    return r


# ----------------------------------------------------------------------------------------------
# Python threaded fallback

def run_python(client, path, make_body, clients, seconds, max_requests):
    lat, statuses = [], {}
    lock = threading.Lock()
    count = [0]
    stop_at = time.monotonic() + seconds

    def worker(tid):
        local_lat, local_status = [], {}
        n = 0
        while time.monotonic() < stop_at:
            with lock:
                if count[0] >= max_requests:
                    break
                count[0] += 1
                seq = count[0]
            body = make_body(tid, seq)
            try:
                status, _parsed, dt = client.request("POST", path, body)
            except OSError:
                status, dt = "socket-error", None
            local_status[status] = local_status.get(status, 0) + 1
            if dt is not None:
                local_lat.append(dt * 1000)
            n += 1
        with lock:
            lat.extend(local_lat)
            for k, v in local_status.items():
                statuses[k] = statuses.get(k, 0) + v

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ok = statuses.get(200, 0)
    return {"tool": "python-threads", "requests": sum(statuses.values()),
            "req_per_s": round(sum(statuses.values()) / wall, 1) if wall else None,
            "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90), "p99_ms": percentile(lat, 99),
            "non_2xx": sum(v for k, v in statuses.items() if k != 200 and k != "socket-error"),
            "socket_errors": statuses.get("socket-error", 0), "ok": ok}


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--engram", metavar="PATH", help="start this engram binary on a temp data dir")
    src.add_argument("--url", help="use a running server on 127.0.0.1")
    ap.add_argument("--pid", type=int, help="server pid for RSS when using --url")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG")
    ap.add_argument("--memories", type=int, default=10000, help="memories in the searched scope")
    ap.add_argument("--chunk", type=int, default=20, help="messages per add (default 20)")
    ap.add_argument("--load-concurrency", type=int, default=1)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--seconds", type=int, default=10, help="duration of each search phase")
    ap.add_argument("--add-seconds", type=int, default=5, help="duration of the concurrent add phase")
    ap.add_argument("--max-requests", type=int, default=200000,
                    help="cap per phase for the Python client (wrk is bounded by duration)")
    ap.add_argument("--no-wrk", action="store_true", help="use the Python client even if wrk exists")
    ap.add_argument("--no-cold", action="store_true", help="skip the restart / cold-shard phase")
    ap.add_argument("--rates", default="",
                    help="comma-separated request rates for an open-loop search phase (top_k 10, "
                         "--clients connections, --seconds each; bench/open_loop.py), e.g. 200,400")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--keep-data", action="store_true")
    args = ap.parse_args()

    args.memories = max(1, min(args.memories, 1_000_000))
    args.seconds = max(1, min(args.seconds, 600))
    args.add_seconds = max(1, min(args.add_seconds, 600))
    args.clients = max(1, min(args.clients, 256))
    use_wrk = shutil.which("wrk") is not None and not args.no_wrk
    if not use_wrk:
        log("wrk not found" if not args.no_wrk else "--no-wrk", "-> Python threaded client "
            "(its own overhead inflates latencies and caps throughput)")

    rng = random.Random(args.seed)
    run = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    user = f"eval:{run}:load:scope"
    add_user = f"eval:{run}:load:adders"
    result = {"run_id": run, "memories": args.memories, "chunk": args.chunk, "clients": args.clients,
              "client_tool": "wrk" if use_wrk else "python-threads", "seed": args.seed}
    tmp = tempfile.mkdtemp(prefix="engram-load-")
    server = None
    try:
        if args.engram:
            server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                                  keep_data=True)
            server.start()
            url, pid = server.url, server.pid
        else:
            url, pid = args.url.rstrip("/"), args.pid
        require_loopback(url)
        client = Client(url, args.api_key, timeout=30)
        time.sleep(0.5)
        rss0 = rss_kib(pid) if pid else None
        result["rss_kib_start"] = rss0

        # -- phase 1: load
        chunks = []
        i = 0
        while i < args.memories:
            n = min(args.chunk, args.memories - i)
            chunks.append({"request_id": f"{user}:chunk-{len(chunks)}", "user_id": user,
                           "session_id": f"{user}:s{len(chunks) // 10}",
                           "messages": [message(rng, i + j) for j in range(n)]})
            i += n
        log(f"phase 1: adding {args.memories} memories in {len(chunks)} adds of {args.chunk} "
            f"({args.load_concurrency} client(s))")
        add_ms, errors = [], []

        def add(body):
            try:
                _r, dt = client.post_json("/leaderboard/add", body)
                return dt * 1000
            except (HttpError, OSError) as e:
                errors.append(str(e))
                return None

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.load_concurrency) as ex:
            for ms in ex.map(add, chunks):
                if ms is not None:
                    add_ms.append(ms)
        load_s = time.perf_counter() - t0
        for e in errors[:5]:
            log("add error:", e)
        # Vectors are computed in the background after each add: wait until the server's vector
        # queue is empty, so memory and search figures are those of a fully indexed scope.
        t1 = time.perf_counter()
        while time.perf_counter() - t1 < 1200:
            try:
                st, text, _ = client.request("GET", "/metrics", None)
            except (HttpError, OSError):
                break
            m = re.search(r"^engram_vector_queue (\d+)", text if isinstance(text, str) else "", re.M)
            if not m or m.group(1) == "0":
                break
            time.sleep(0.5)
        result["vector_drain_s"] = round(time.perf_counter() - t1, 2)
        log(f"vector queue drained {result['vector_drain_s']} s after the last add")
        time.sleep(0.5)
        rss1 = rss_kib(pid) if pid else None
        result["load"] = {"adds": len(chunks), "errors": len(errors), "seconds": round(load_s, 2),
                          "p50_ms": percentile(add_ms, 50), "p99_ms": percentile(add_ms, 99),
                          "memories_per_s": round(args.memories / load_s, 1)}
        result["rss_kib_after_load"] = rss1
        if rss0 and rss1:
            result["rss_bytes_per_memory"] = round((rss1 - rss0) * 1024 / args.memories, 1)
        if server:
            result["disk_bytes_after_load"] = dir_bytes(server.store_dir)
            result["disk_bytes_per_memory"] = round(result["disk_bytes_after_load"] / args.memories, 1)

        # sanity: one search must return results from the scope
        status, parsed, _ = client.request("POST", "/leaderboard/search",
                                           {"query": query(rng), "user_id": user, "top_k": 10})
        if status != 200 or not isinstance(parsed, dict) or not parsed.get("data"):
            log(f"WARNING: sanity search answered {status}: {str(parsed)[:300]}")
        result["sanity_search_status"] = status

        # -- phase 2: search
        qrng = random.Random(args.seed + 1)
        for top_k in (10, 100):
            bodies = [json.dumps({"query": query(qrng), "user_id": user, "top_k": top_k})
                      for _ in range(2000)]
            log(f"phase 2: search top_k {top_k}, {args.clients} clients, {args.seconds}s")
            if use_wrk:
                bf = os.path.join(tmp, f"search{top_k}.txt")
                with open(bf, "w") as f:
                    f.write("\n".join(bodies) + "\n")
                r = run_wrk(url + "/leaderboard/search", os.path.join(BENCH_DIR, "search.lua"),
                            [bf, args.api_key or ""], args.clients, args.seconds, args.threads)
            else:
                r = run_python(client, "/leaderboard/search",
                               lambda tid, seq, b=bodies: b[(seq + tid * 7919) % len(b)].encode(),
                               args.clients, args.seconds, args.max_requests)
            result[f"search_top{top_k}"] = r
            if top_k == 10 and args.rates:
                host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
                result["open_loop"] = []
                for rate in [float(x) for x in args.rates.split(",") if x.strip()]:
                    log(f"phase 2b: open loop at {rate:g} searches/s, {args.clients} connections, "
                        f"{args.seconds}s")
                    result["open_loop"].append(run_open_loop(
                        host, port, "/leaderboard/search", bodies, rate, args.seconds, args.clients,
                        args.api_key))

        # -- phase 3: concurrent adds
        arng = random.Random(args.seed + 2)
        arrays = [json.dumps([message(arng, k * args.chunk + j) for j in range(args.chunk)])
                  for k in range(500)]
        log(f"phase 3: {args.clients} concurrent adders, {args.add_seconds}s, {args.chunk} messages per add")
        if use_wrk:
            mf = os.path.join(tmp, "adds.txt")
            with open(mf, "w") as f:
                f.write("\n".join(arrays) + "\n")
            r = run_wrk(url + "/leaderboard/add", os.path.join(BENCH_DIR, "add.lua"),
                        [mf, f"eval:{run}:load:add", add_user, args.api_key or ""],
                        args.clients, args.add_seconds, args.threads)
        else:
            def make_add(tid, seq):
                return ('{"request_id":"%s:chunk-%d","user_id":"%s","session_id":"%s:t%d","messages":%s}'
                        % (f"eval:{run}:load:add", seq, add_user, f"eval:{run}:load:add", tid,
                           arrays[seq % len(arrays)])).encode()
            r = run_python(client, "/leaderboard/add", make_add, args.clients, args.add_seconds,
                           args.max_requests)
        r["memories_per_s"] = round(r["req_per_s"] * args.chunk, 1) if r.get("req_per_s") else None
        result["add_concurrent"] = r
        result["rss_kib_end"] = rss_kib(pid) if pid else None

        # -- phase 4: cold shard
        if server and not args.no_cold:
            log("phase 4: restart on the same data dir, first search = cold shard load")
            server.stop(remove=False)
            t0 = time.perf_counter()
            server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                                  keep_data=args.keep_data, data_dir=server.data_dir)
            server.start()
            restart_s = time.perf_counter() - t0
            client = Client(server.url, args.api_key, timeout=60)
            rss_r = rss_kib(server.pid)
            lat = []
            for k in range(21):
                st, _p, dt = client.request("POST", "/leaderboard/search",
                                            {"query": query(qrng), "user_id": user, "top_k": 10})
                lat.append(dt * 1000 if st == 200 else None)
            warm = [x for x in lat[1:] if x is not None]
            result["cold"] = {"restart_to_listening_s": round(restart_s, 2), "rss_kib_after_restart": rss_r,
                              "first_search_ms": lat[0], "warm_search_p50_ms": percentile(warm, 50),
                              "rss_kib_after_first_search": rss_kib(server.pid)}
    finally:
        if server:
            if server.proc and server.proc.poll() is not None:
                log(f"server exited early (code {server.proc.returncode}); log tail:\n{server.log_tail()}")
            server.keep_data = args.keep_data
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print_report(result)
    if args.json_out:
        write_json(args.json_out, result)
    return 0


def print_report(r):
    print(f"### load: {r['memories']} memories in one scope, {r['clients']} clients "
          f"({r['client_tool']})\n")
    print("| phase | requests | req/s | p50 ms | p99 ms | errors |")
    print("|---|---|---|---|---|---|")
    ld = r.get("load", {})
    print(f"| add {r['chunk']} msgs, sequential load | {ld.get('adds')} | "
          f"{_f(ld.get('adds', 0) / ld['seconds'], 1) if ld.get('seconds') else '–'} | "
          f"{_f(ld.get('p50_ms'))} | {_f(ld.get('p99_ms'))} | {ld.get('errors')} |")
    for name, key in (("search top_k 10", "search_top10"), ("search top_k 100", "search_top100"),
                      (f"add {r['chunk']} msgs, {r['clients']} adders", "add_concurrent")):
        x = r.get(key)
        if not x:
            continue
        print(f"| {name} | {x.get('requests')} | {_f(x.get('req_per_s'), 1)} | {_f(x.get('p50_ms'))} | "
              f"{_f(x.get('p99_ms'))} | {x.get('non_2xx', 0) + x.get('socket_errors', 0)} |")
    print()
    if r.get("open_loop"):
        print_open_loop_table(f"Open loop (search top_k 10; requests on a fixed schedule over "
                              f"{r['clients']} connections, latency from the due time when held "
                              f"up, else from the send):",
                              r["open_loop"])
    if r.get("rss_kib_start") is not None:
        print(f"RSS: start {r['rss_kib_start'] / 1024:.1f} MiB, after load "
              f"{_f((r.get('rss_kib_after_load') or 0) / 1024, 1)} MiB, end "
              f"{_f((r.get('rss_kib_end') or 0) / 1024, 1)} MiB; "
              f"≈ {r.get('rss_bytes_per_memory', '–')} RSS bytes per memory")
    else:
        print("RSS: unknown (give --pid with --url)")
    if "disk_bytes_per_memory" in r:
        print(f"disk: {r['disk_bytes_after_load'] / 1048576:.1f} MiB after load ≈ "
              f"{r['disk_bytes_per_memory']} bytes per memory")
    if r.get("add_concurrent", {}).get("memories_per_s"):
        print(f"concurrent adds: {r['add_concurrent']['memories_per_s']} memories/s")
    if "cold" in r:
        c = r["cold"]
        print(f"cold start: restart to listening {c['restart_to_listening_s']} s; first search "
              f"{_f(c['first_search_ms'])} ms vs warm p50 {_f(c['warm_search_p50_ms'])} ms")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Load test of the V4 Agentic Memory API (/v4/openapi/.../memories/*) through HTTP.

Phases (each bounded in time and count; only 127.0.0.1 / localhost targets):
  1. load: --memories verbatim memories (infer: false) into ONE user_id, --batch messages per add,
     metadata {"topic": one of 8 topics, "batch": i}; every event polled to SUCCEEDED (FAILED
     aborts). Load throughput (memories/s from the first add to the last SUCCEEDED) and RSS
     before / after.
  2. search (the headline): --clients concurrent clients for --seconds, top_k 10, ~500 rotating
     queries, each filtered by {"AND": [{"metadata.topic": T}, {"created_at": {"gte": <load
     start>}}]}; then the same queries without filters (user_id only) for comparison.
  3. add acknowledgement: --clients clients post short first-person conversations (infer: true)
     into OTHER user_ids for --add-seconds; then wait (bounded by --drain-timeout) until
     engram_memory_events_queued on /metrics is 0, so the backlog does not disturb phase 4.
  4. event completion: --events sequential adds (infer: true, the server's extractor; with
     --engram the rule-based one), each timed from the POST to its SUCCEEDED status (2 ms polls).
  2b/3b. with --rates / --add-rates: open-loop filtered searches / adds at those request rates
     (bench/open_loop.py: a fixed schedule over --clients connections, latency from the due time
     when an earlier answer held a request up, else from its send;
     --seconds per search rate, --open-add-seconds per add rate; the event backlog of each add rate
     drains before the next).
Phases 2 and 3 use wrk (bench/search.lua: rotating POST bodies) when it is installed, else the
Python threaded client of load.py (--no-wrk forces it); quote wrk numbers.

  python3 bench/memory_load.py --engram build/engram --json-out /tmp/memory_load.json
  python3 bench/memory_load.py --url http://127.0.0.1:8080 --pid "$(pgrep -n engram)" --seconds 5
"""

import argparse
import datetime
import json
import os
import random
import shutil
import sys
import tempfile
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (Client, EngramServer, HttpError, _f, dir_bytes, log,  # noqa: E402
                      metric_sum, metrics_text, percentile, require_loopback, rss_kib,
                      write_json)
from load import message, query, run_python, run_wrk  # noqa: E402
from open_loop import print_open_loop_table, run_open_loop  # noqa: E402

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"

TOPICS = ("travel", "food", "work", "health", "family", "hobbies", "finance", "music")

# ----------------------------------------------------------------------------------------------
# Short first-person conversations the rule-based extractor turns into facts
# ("I love hiking in the Alps. My sister lives in Rome.").

ACTIVITIES = ("hiking in the Alps", "baking sourdough bread", "playing chess", "swimming in the sea",
              "reading science fiction", "cycling to work", "watching old films", "growing tomatoes",
              "painting with watercolours", "playing the cello", "running marathons",
              "learning Japanese", "climbing", "knitting", "birdwatching", "cooking Thai food")
DISLIKES = ("crowded beaches", "spicy food", "early meetings", "horror films", "loud music",
            "cold weather", "long flights", "olives")
RELATIVES = ("sister", "brother", "mother", "father", "cousin", "aunt", "uncle", "grandmother",
             "best friend", "daughter", "son")
FIRST_NAMES = ("Mia", "Leo", "Ana", "Tom", "Sara", "Ravi", "Yuki", "Omar", "Elena", "Jonas", "Ines",
               "Kofi", "Lena", "Marco", "Nadia", "Pavel")
CITIES = ("Rome", "Lisbon", "Kyoto", "Nairobi", "Oslo", "Denver", "Lima", "Seoul", "Dublin", "Hanoi",
          "Austin", "Krakow", "Cairo", "Quebec", "Perth", "Valencia")
JOBS = ("a nurse", "a teacher", "an engineer", "a chef", "a pilot", "a lawyer", "a designer",
        "an accountant", "a photographer", "a carpenter")
COMPANIES = ("Contoso", "Initech", "Globex", "Umbrella", "Hooli", "Acme", "Stark Industries",
             "Wayne Enterprises")
THINGS = ("a new bike", "a used car", "a sofa", "a camera", "a guitar", "a tent", "a laptop",
          "a kayak", "a telescope", "a coffee machine")
WHEN = ("next month", "next week", "in the summer", "next year", "this weekend")
FACT_TEMPLATES = (
    "I love {act}.",
    "I really enjoy {act}.",
    "I hate {dis}.",
    "My {rel} lives in {city}.",
    "My {rel} {name} lives in {city}.",
    "I live in {city}.",
    "I work at {co} as {job}.",
    "I'm going to visit {city} {when}.",
    "I bought {thing} yesterday.",
    "My favorite city is {city}.",
)
REPLIES = ("That sounds great!", "Thanks for telling me.", "Good to know.", "Nice, noted.",
           "Interesting!")


def fact_sentence(rng):
    return rng.choice(FACT_TEMPLATES).format(
        act=rng.choice(ACTIVITIES), dis=rng.choice(DISLIKES), rel=rng.choice(RELATIVES),
        name=rng.choice(FIRST_NAMES), city=rng.choice(CITIES), job=rng.choice(JOBS),
        co=rng.choice(COMPANIES), thing=rng.choice(THINGS), when=rng.choice(WHEN))


def conversation(rng):
    """A user turn of 1–3 first-person statements and a short assistant reply."""
    said = " ".join(fact_sentence(rng) for _ in range(rng.randint(1, 3)))
    return [{"role": "user", "content": said}, {"role": "assistant", "content": rng.choice(REPLIES)}]


def unique_messages(rng, n):
    """n verbatim messages with distinct texts (the server folds exact duplicates of a scope)."""
    seen, out, i = set(), [], 0
    while len(out) < n:
        m = message(rng, i)
        i += 1
        key = " ".join(m["content"].lower().split())
        if key in seen:
            continue
        seen.add(key)
        out.append({"role": m["role"], "content": m["content"]})
    return out


def iso_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ----------------------------------------------------------------------------------------------
# API helpers

def post_add(client, body, retry_seconds=60):
    """POST memories/add; retries 429 (event queue full) for up to retry_seconds.
    Returns (event_id, ack seconds of the accepted attempt)."""
    deadline = time.monotonic() + retry_seconds
    while True:
        status, parsed, dt = client.request("POST", P4 + "/memories/add", body)
        if status == 200 and isinstance(parsed, dict) and parsed.get("event_id"):
            if parsed.get("status") != "PENDING":
                log(f"ANOMALY: add answered status {parsed.get('status')!r}, expected PENDING")
            return parsed["event_id"], dt
        if status == 429 and time.monotonic() < deadline:
            time.sleep(0.2)
            continue
        raise HttpError(status, json.dumps(parsed) if not isinstance(parsed, str) else parsed)


def get_event(client, event_id):
    status, parsed, _ = client.request("GET", f"{P4}/events/{event_id}")
    if status != 200 or not isinstance(parsed, dict):
        raise HttpError(status, json.dumps(parsed) if not isinstance(parsed, str) else str(parsed))
    return parsed


def check_event(ev):
    if ev.get("status") == "FAILED":
        raise SystemExit(f"event {ev.get('id')} FAILED: {ev.get('error_message')}")
    return ev.get("status") == "SUCCEEDED"


def metric(client, name):
    return metric_sum(metrics_text(client), name)


def scope_total(client, user):
    qs = urllib.parse.urlencode({"user_id": user, "page_size": 1})
    status, parsed, _ = client.request("GET", f"{P4}/memories?{qs}")
    return parsed.get("total") if status == 200 and isinstance(parsed, dict) else None


def run_post_phase(use_wrk, args, client, url, tmp, name, path, bodies, seconds):
    """wrk (search.lua rotates the bodies) or the Python client, for `seconds`."""
    if use_wrk:
        bf = os.path.join(tmp, f"{name}.txt")
        with open(bf, "w") as f:
            f.write("\n".join(bodies) + "\n")
        return run_wrk(url + path, os.path.join(BENCH_DIR, "search.lua"), [bf, args.api_key or ""],
                       args.clients, seconds, args.threads)
    return run_python(client, path, lambda tid, seq, b=bodies: b[(seq + tid * 7919) % len(b)].encode(),
                      args.clients, seconds, args.max_requests)


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--engram", metavar="PATH", help="start this engram binary on a temp data dir")
    src.add_argument("--url", help="use a running server on 127.0.0.1")
    ap.add_argument("--pid", type=int, help="server pid for RSS when using --url")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="passed to `engram serve` (repeatable); --extractor rules is added unless "
                         "an --extractor is given")
    ap.add_argument("--memories", type=int, default=10000, help="memories in the searched scope")
    ap.add_argument("--batch", type=int, default=50, help="messages per add in the load (default 50)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--seconds", type=int, default=10, help="duration of each search phase")
    ap.add_argument("--add-seconds", type=int, default=1,
                    help="duration of the add-acknowledgement phase (longer runs fill the server's "
                         "10,000-event queue at ~5,000 acks/s and measure its 429s instead)")
    ap.add_argument("--rates", help="comma-separated rates for open-loop filtered searches, e.g. 200,400")
    ap.add_argument("--add-rates", help="comma-separated rates for open-loop adds, e.g. 100,400")
    ap.add_argument("--open-add-seconds", type=int,
                    help="duration of each open-loop add rate (default: --add-seconds)")
    ap.add_argument("--events", type=int, default=50, help="sequential adds timed to SUCCEEDED (phase 4)")
    ap.add_argument("--queries", type=int, default=500, help="distinct search bodies (default 500)")
    ap.add_argument("--load-timeout", type=int, default=1800, help="bound on phase 1, seconds")
    ap.add_argument("--drain-timeout", type=int, default=600,
                    help="bound on waiting for the event queue after phase 3, seconds")
    ap.add_argument("--max-requests", type=int, default=200000,
                    help="cap per phase for the Python client (wrk is bounded by duration)")
    ap.add_argument("--no-wrk", action="store_true", help="use the Python client even if wrk exists")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--keep-data", action="store_true")
    args = ap.parse_args()

    args.memories = max(1, min(args.memories, 1_000_000))
    args.batch = max(1, min(args.batch, 1000))           # the API accepts at most 1,000 messages
    args.seconds = max(1, min(args.seconds, 600))
    args.add_seconds = max(1, min(args.add_seconds, 600))
    args.open_add_seconds = max(1, min(args.open_add_seconds or args.add_seconds, 600))
    args.clients = max(1, min(args.clients, 256))
    args.events = max(1, min(args.events, 10000))
    args.queries = max(1, min(args.queries, 100000))
    use_wrk = shutil.which("wrk") is not None and not args.no_wrk
    if not use_wrk:
        log("wrk not found" if not args.no_wrk else "--no-wrk", "-> Python threaded client "
            "(its own overhead inflates latencies and caps throughput)")
    server_args = list(args.server_arg)
    if args.engram and not any(a.split("=")[0] == "--extractor" for a in server_args):
        server_args += ["--extractor", "rules"]

    rng = random.Random(args.seed)
    run = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    user = f"eval:{run}:mem:scope"
    result = {"run_id": run, "memories": args.memories, "batch": args.batch, "clients": args.clients,
              "client_tool": "wrk" if use_wrk else "python-threads", "seed": args.seed,
              "server_args": server_args if args.engram else None, "anomalies": []}
    anomalies = result["anomalies"]

    def anomaly(msg):
        log("ANOMALY:", msg)
        anomalies.append(msg)

    def drain_events():
        """Waits (bounded) until no event is queued; returns (queued at first, queued at last, s)."""
        q_after = metric(client, "engram_memory_events_queued")
        t1 = time.perf_counter()
        q = q_after
        while q is not None and q > 0 and time.perf_counter() - t1 < args.drain_timeout:
            time.sleep(0.25)
            q = metric(client, "engram_memory_events_queued")
        drain_s = time.perf_counter() - t1
        if q is None:
            anomaly("engram_memory_events_queued missing from /metrics")
        elif q > 0:
            anomaly(f"event queue still holds {int(q)} events after {args.drain_timeout} s")
        time.sleep(0.5)   # the queue gauge excludes the events the workers are running
        return q_after, q, drain_s

    def rates(text):
        return [float(x) for x in (text or "").split(",") if x.strip()]

    tmp = tempfile.mkdtemp(prefix="engram-memload-")
    server = None
    try:
        if args.engram:
            server = EngramServer(args.engram, api_key=args.api_key, extra_args=server_args,
                                  keep_data=args.keep_data)
            server.start()
            url, pid = server.url, server.pid
        else:
            url, pid = args.url.rstrip("/"), args.pid
        require_loopback(url)
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port
        client = Client(url, args.api_key, timeout=30)
        time.sleep(0.5)
        result["rss_kib_start"] = rss_kib(pid) if pid else None
        # Warm-up in a separate user (first embedding, first search) so that the RSS baseline
        # does not charge lazily loaded models and buffers to the memories.
        wuser = f"eval:{run}:mem:warmup"
        wid, _ = post_add(client, {"messages": "I like warm tea.", "user_id": wuser, "infer": False})
        stop = time.monotonic() + 60
        while not check_event(get_event(client, wid)) and time.monotonic() < stop:
            time.sleep(0.02)
        client.request("POST", P4 + "/memories/search", {"query": "tea", "user_id": wuser})
        time.sleep(0.3)
        rss0 = rss_kib(pid) if pid else None
        result["rss_kib_warm"] = rss0

        # -- phase 1: load (verbatim memories, one scope)
        msgs = unique_messages(rng, args.memories)
        adds = []
        for i in range(0, args.memories, args.batch):
            b = len(adds)
            adds.append({"messages": msgs[i:i + args.batch], "user_id": user, "infer": False,
                         "metadata": {"topic": TOPICS[b % len(TOPICS)], "batch": b}})
        log(f"phase 1: {args.memories} verbatim memories in {len(adds)} adds of {args.batch} messages")
        load_start_iso = iso_now()
        result["load_start"] = load_start_iso
        t0 = time.perf_counter()
        deadline = time.monotonic() + args.load_timeout
        ack_ms, event_ids = [], []
        for body in adds:
            eid, dt = post_add(client, body)
            ack_ms.append(dt * 1000)
            event_ids.append(eid)
        posted_s = time.perf_counter() - t0
        # Events of one scope run one after another; wait for each in turn.
        stored = 0
        for eid in event_ids:
            while True:
                ev = get_event(client, eid)
                if check_event(ev):
                    stored += len(ev.get("results") or [])
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"phase 1 did not finish within {args.load_timeout} s "
                                     f"(event {eid} still pending)")
                time.sleep(0.02)
        load_s = time.perf_counter() - t0
        time.sleep(0.5)
        rss1 = rss_kib(pid) if pid else None
        total = scope_total(client, user)
        if stored != args.memories:
            anomaly(f"load events list {stored} memory ids in results, expected {args.memories}")
        if total != args.memories:
            anomaly(f"scope holds {total} memories after the load, expected {args.memories}")
        result["load"] = {"adds": len(adds), "seconds": round(load_s, 2),
                          "post_seconds": round(posted_s, 2),
                          "ack_p50_ms": percentile(ack_ms, 50), "ack_p99_ms": percentile(ack_ms, 99),
                          "memories_per_s": round(args.memories / load_s, 1),
                          "memories_in_scope": total, "memories_in_event_results": stored}
        result["rss_kib_after_load"] = rss1
        if rss0 and rss1:
            result["rss_bytes_per_memory"] = round((rss1 - rss0) * 1024 / args.memories, 1)
        if server:
            result["disk_bytes_after_load"] = dir_bytes(server.store_dir)
            result["disk_bytes_per_memory"] = round(result["disk_bytes_after_load"] / args.memories, 1)
        log(f"  loaded in {load_s:.1f} s ({result['load']['memories_per_s']} memories/s; "
            f"adds posted in {posted_s:.1f} s)")

        # -- sanity: filtered searches return only matching memories of the scope
        qrng = random.Random(args.seed + 1)
        queries = [(query(qrng), TOPICS[k % len(TOPICS)]) for k in range(args.queries)]

        def filtered(q, topic):
            return {"query": q, "user_id": user, "top_k": 10,
                    "filters": {"AND": [{"metadata.topic": topic},
                                        {"created_at": {"gte": load_start_iso}}]}}

        for q, topic in queries[:8]:
            status, parsed, _ = client.request("POST", P4 + "/memories/search", filtered(q, topic))
            res = parsed.get("results") if isinstance(parsed, dict) else None
            if status != 200 or res is None:
                anomaly(f"filtered search answered {status}: {str(parsed)[:300]}")
                continue
            if not res:
                anomaly(f"filtered search for topic {topic} returned nothing")
            scores = [r.get("score") for r in res]
            if any(not isinstance(s, (int, float)) or not 0 <= s <= 1 for s in scores) or \
                    scores != sorted(scores, reverse=True):
                anomaly(f"scores not in 0..1 or not descending: {scores}")
            for r in res:
                if r.get("user_id") != user or (r.get("metadata") or {}).get("topic") != topic or \
                        not str(r.get("created_at", "")) >= load_start_iso:
                    anomaly(f"filtered search returned a non-matching memory: "
                            f"{ {k: r.get(k) for k in ('id', 'user_id', 'metadata', 'created_at')} }")
                    break
        result["sanity_searches"] = 8

        # -- phase 2: search, filtered then unfiltered
        for name, make in (("search_filtered", filtered),
                           ("search_unfiltered",
                            lambda q, _t: {"query": q, "user_id": user, "top_k": 10})):
            bodies = [json.dumps(make(q, t)) for q, t in queries]
            log(f"phase 2: {name}, top_k 10, {args.clients} clients, {args.seconds}s")
            result[name] = run_post_phase(use_wrk, args, client, url, tmp, name,
                                          P4 + "/memories/search", bodies, args.seconds)
            if name == "search_filtered" and args.rates:
                result["search_filtered_open_loop"] = []
                for rate in rates(args.rates):
                    log(f"phase 2b: open loop at {rate:g} filtered searches/s, {args.clients} "
                        f"connections, {args.seconds}s")
                    result["search_filtered_open_loop"].append(run_open_loop(
                        host, port, P4 + "/memories/search", bodies, rate, args.seconds,
                        args.clients, args.api_key))

        # -- phase 3: add acknowledgement (infer true, other users)
        arng = random.Random(args.seed + 2)
        bodies = [json.dumps({"messages": conversation(arng), "user_id": f"eval:{run}:mem:adder-{k % 64}"})
                  for k in range(500)]
        log(f"phase 3: add acknowledgement, {args.clients} clients, {args.add_seconds}s, 64 other users")
        r = run_post_phase(use_wrk, args, client, url, tmp, "adds", P4 + "/memories/add", bodies,
                           args.add_seconds)
        q_after, q, drain_s = drain_events()
        r["queued_after"] = None if q_after is None else int(q_after)
        r["drain_s"] = round(drain_s, 2)
        accepted = (r.get("requests") or 0) - (r.get("non_2xx") or 0)
        r["accepted"] = accepted
        if q is not None and q == 0 and drain_s > 0.3 and q_after:
            r["drain_events_per_s"] = round(q_after / drain_s, 1)
        result["add_ack"] = r
        log(f"  {accepted} adds accepted, queue {r['queued_after']} after the phase, "
            f"drained in {drain_s:.1f} s")
        if args.add_rates:
            result["add_ack_open_loop"] = []
            for rate in rates(args.add_rates):
                log(f"phase 3b: open loop at {rate:g} adds/s, {args.clients} connections, "
                    f"{args.open_add_seconds}s")
                x = run_open_loop(host, port, P4 + "/memories/add", bodies, rate,
                                  args.open_add_seconds, args.clients, args.api_key)
                x["queued_after"], _, x["drain_s"] = drain_events()
                result["add_ack_open_loop"].append(x)

        # -- phase 4: event completion time, sequential
        erng = random.Random(args.seed + 3)
        euser = f"eval:{run}:mem:events"
        log(f"phase 4: {args.events} sequential adds (infer true) timed to SUCCEEDED")
        done_ms, ack4, actions = [], [], {}
        for _ in range(args.events):
            t = time.perf_counter()
            eid, dt = post_add(client, {"messages": conversation(erng), "user_id": euser})
            ack4.append(dt * 1000)
            stop = time.monotonic() + 60
            while True:
                ev = get_event(client, eid)
                if check_event(ev):
                    break
                if time.monotonic() > stop:
                    raise SystemExit(f"event {eid} not SUCCEEDED after 60 s")
                time.sleep(0.002)
            done_ms.append((time.perf_counter() - t) * 1000)
            for e in ev.get("events") or []:
                actions[e.get("event")] = actions.get(e.get("event"), 0) + 1
        result["event_completion"] = {"events": args.events, "p50_ms": percentile(done_ms, 50),
                                      "p99_ms": percentile(done_ms, 99), "max_ms": max(done_ms),
                                      "ack_p50_ms": percentile(ack4, 50), "actions": actions}
        result["rss_kib_end"] = rss_kib(pid) if pid else None
    finally:
        if server:
            if server.proc and server.proc.poll() is not None:
                log(f"server exited early (code {server.proc.returncode}); log tail:\n{server.log_tail()}")
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print_report(result)
    if args.json_out:
        write_json(args.json_out, result)
    return 0


def print_report(r):
    print(f"### memory API load: {r['memories']} memories in one user_id, {r['clients']} clients "
          f"({r['client_tool']})\n")
    ld = r.get("load", {})
    print(f"load: {ld.get('adds')} adds of {r['batch']} verbatim messages in {ld.get('seconds')} s "
          f"= {ld.get('memories_per_s')} memories/s (ack p50 {_f(ld.get('ack_p50_ms'))} ms, "
          f"p99 {_f(ld.get('ack_p99_ms'))} ms); scope holds {ld.get('memories_in_scope')}\n")
    print("| phase | requests | req/s | p50 ms | p90 ms | p99 ms | errors |")
    print("|---|---|---|---|---|---|---|")
    for name, key in (("search, filters topic + created_at", "search_filtered"),
                      ("search, user_id only", "search_unfiltered"),
                      ("add ack (infer, other users)", "add_ack")):
        x = r.get(key)
        if not x:
            continue
        print(f"| {name} | {x.get('requests')} | {_f(x.get('req_per_s'), 1)} | {_f(x.get('p50_ms'))} | "
              f"{_f(x.get('p90_ms'))} | {_f(x.get('p99_ms'))} | "
              f"{(x.get('non_2xx') or 0) + (x.get('socket_errors') or 0)} |")
    print()
    a = r.get("add_ack")
    if a:
        print(f"after the add phase: {a.get('queued_after')} events queued, drained in {a.get('drain_s')} s"
              + (f" (≈ {a['drain_events_per_s']} events/s)" if a.get("drain_events_per_s") else ""))
    title = (f"Open loop ({{}}; requests on a fixed schedule over {r['clients']} connections, "
             f"latency from the due time when held up, else from the send):")
    if r.get("search_filtered_open_loop"):
        print_open_loop_table(title.format("search, filters topic + created_at"),
                              r["search_filtered_open_loop"])
    if r.get("add_ack_open_loop"):
        print_open_loop_table(title.format("add ack, infer true, other users"), r["add_ack_open_loop"])
    e = r.get("event_completion")
    if e:
        print(f"event completion (POST → SUCCEEDED, {e['events']} sequential): p50 {_f(e['p50_ms'])} ms, "
              f"p99 {_f(e['p99_ms'])} ms, max {_f(e['max_ms'])} ms; actions {e['actions']}")
    if r.get("rss_kib_start") is not None:
        print(f"RSS: start {r['rss_kib_start'] / 1024:.1f} MiB, after warm-up "
              f"{_f((r.get('rss_kib_warm') or 0) / 1024, 1)} MiB, after load "
              f"{_f((r.get('rss_kib_after_load') or 0) / 1024, 1)} MiB, end "
              f"{_f((r.get('rss_kib_end') or 0) / 1024, 1)} MiB; "
              f"≈ {r.get('rss_bytes_per_memory', '–')} RSS bytes per memory")
    else:
        print("RSS: unknown (give --pid with --url)")
    if "disk_bytes_per_memory" in r:
        print(f"disk: {r['disk_bytes_after_load'] / 1048576:.1f} MiB after load ≈ "
              f"{r['disk_bytes_per_memory']} bytes per memory")
    for a in r.get("anomalies", []):
        print("ANOMALY:", a)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Latency of MCP tools/call memory_recall, in the session-based revision 2025-11-25 and the
stateless revision 2026-07-28, beside REST memories/search, in one run on one server.

  1. load: --memories verbatim memories (infer: false) into ONE user_id, --batch messages per add,
     every event polled to SUCCEEDED.
  2. for each of --rounds rounds, alternating so drift hits all three alike, --clients concurrent
     clients for --seconds, with the same queries, on:
       - MCP 2025-11-25 (session): each client opens its own session (initialize,
         notifications/initialized), then calls memory_recall {query, user_id, top_k 10} with
         Mcp-Session-Id;
       - MCP 2026-07-28 (stateless): no handshake, no session; every POST /mcp is a self-contained
         tools/call memory_recall carrying the revision's params._meta envelope and its
         MCP-Protocol-Version, Mcp-Method and Mcp-Name headers;
       - REST: POST memories/search with the same body.
     Then the same with one client (no queueing: the per-call overhead), with the server's own
     handling time from /metrics.
A call counts when it is HTTP 200 and a result that is not isError (the stateless one must also
say resultType "complete"); anything else is an error. Latency is measured by the client from send
to the last byte (keep-alive, one connection per client). Only 127.0.0.1 / localhost targets. Not
part of the test run.

  python3 bench/mcp_load.py --engram build/engram
  python3 bench/mcp_load.py --engram build/engram --server-arg=--embedder --server-arg=builtin
"""

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Client, EngramServer, _f, cpu_name, log, percentile, require_loopback  # noqa: E402
from load import message, query  # noqa: E402

P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"
USER = "mcp-bench-user"
STATELESS = "2026-07-28"

# Measured in this order in every round; each mode's name in the table and the /metrics route of
# its server-side time.
MODES = ("mcp", "stateless", "rest")
NAMES = {"mcp": "MCP 2025-11-25 (session) tools/call memory_recall",
         "stateless": f"MCP {STATELESS} (stateless) tools/call memory_recall",
         "rest": "REST memories/search"}
ROUTES = {"mcp": "mcp", "stateless": "mcp", "rest": "memory_search"}


def load_memories(client, n, batch, rng):
    t0 = time.monotonic()
    events = []
    for start in range(0, n, batch):
        msgs = [{"role": "user", "content": message(rng, i)["content"]}
                for i in range(start, min(n, start + batch))]
        body, _ = client.post_json(P4 + "/memories/add",
                                   {"messages": msgs, "user_id": USER, "infer": False})
        events.append(body["event_id"])
    for eid in events:
        while True:
            status, body, _ = client.request("GET", P4 + "/events/" + eid)
            if status == 200 and body["status"] == "SUCCEEDED":
                break
            if status != 200 or body["status"] == "FAILED":
                raise SystemExit(f"event {eid} did not succeed: {status} {body}")
            time.sleep(0.01)
    log(f"loaded {n} memories in {time.monotonic() - t0:.1f}s")


def mcp_session(url, key):
    """A client with its own MCP session (initialize, then notifications/initialized)."""
    c = Client(url, key)
    c.headers["Accept"] = "application/json, text/event-stream"
    # benchlib's client keeps no response headers: initialize on a connection of our own to read
    # the Mcp-Session-Id.
    conn = http.client.HTTPConnection(c.host, c.port, timeout=30)
    conn.request("POST", c.base + "/mcp", body=json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "mcp_load", "version": "1"}}}), headers=c.headers)
    resp = conn.getresponse()
    resp.read()
    sid = resp.getheader("Mcp-Session-Id")
    conn.close()
    if resp.status != 200 or not sid:
        raise SystemExit(f"initialize: HTTP {resp.status}")
    c.headers["Mcp-Session-Id"] = sid
    c.headers["MCP-Protocol-Version"] = "2025-11-25"
    c.request("POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return c


def mcp_stateless(url, key):
    """A client of the stateless revision: no handshake, no session; every tools/call
    memory_recall carries the revision's headers (the same on every call of this benchmark)."""
    c = Client(url, key)
    c.headers["Accept"] = "application/json, text/event-stream"
    c.headers["MCP-Protocol-Version"] = STATELESS
    c.headers["Mcp-Method"] = "tools/call"
    c.headers["Mcp-Name"] = "memory_recall"
    return c


def recall_ok(status, body, stateless=False):
    """A tools/call answer is a result, not a JSON-RPC error nor an isError result (the stateless
    revision's result also says resultType "complete")."""
    result = body.get("result") if isinstance(body, dict) else None
    if status != 200 or not isinstance(result, dict) or result.get("isError", True):
        return False
    return not stateless or result.get("resultType") == "complete"


def server_time(client, route):
    """(sum seconds, count) of the server's own handling time of `route` (/metrics)."""
    status, text, _ = client.request("GET", "/metrics")
    total = count = 0.0
    for line in (text if isinstance(text, str) else "").splitlines():
        if line.startswith(f'engram_http_request_duration_seconds_sum{{route="{route}"}}'):
            total = float(line.split()[-1])
        if line.startswith(f'engram_http_request_duration_seconds_count{{route="{route}"}}'):
            count = float(line.split()[-1])
    return total, count


def run(mode, url, key, clients, seconds, seed):
    lat = []
    errors = [0]
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(k):
        rng = random.Random(seed * 1000 + k)
        if mode == "mcp":
            c = mcp_session(url, key)
        elif mode == "stateless":
            c = mcp_stateless(url, key)
        else:
            c = Client(url, key)
        mine = []
        bad = 0
        ready.wait()
        i = 0
        while time.monotonic() < stop_at[0]:
            q = query(rng)
            if mode == "mcp":
                status, body, dt = c.request("POST", "/mcp", {
                    "jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "memory_recall",
                               "arguments": {"query": q, "user_id": USER, "top_k": 10}}})
                ok = recall_ok(status, body)
            elif mode == "stateless":
                status, body, dt = c.request("POST", "/mcp", {
                    "jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "memory_recall",
                               "arguments": {"query": q, "user_id": USER, "top_k": 10},
                               "_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS,
                                         "io.modelcontextprotocol/clientCapabilities": {}}}})
                ok = recall_ok(status, body, stateless=True)
            else:
                status, body, dt = c.request("POST", P4 + "/memories/search",
                                             {"query": q, "user_id": USER, "top_k": 10})
                ok = status == 200
            i += 1
            if ok:
                mine.append(dt * 1000)
            else:
                bad += 1
        with lock:
            lat.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    # Set before the barrier opens: the clients read it as soon as they pass.
    stop_at[0] = time.monotonic() + seconds + 0.05
    ready.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    return {"mode": mode, "clients": clients, "n": len(lat), "errors": errors[0],
            "rps": len(lat) / wall if wall else 0,
            "p50": percentile(lat, 50), "p90": percentile(lat, 90), "p99": percentile(lat, 99),
            "mean": sum(lat) / len(lat) if lat else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", default="build/engram", help="server binary to start")
    ap.add_argument("--url", help="a running server instead (loopback only)")
    ap.add_argument("--api-key", default="bench-key")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra `engram serve` argument (repeatable)")
    ap.add_argument("--memories", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    server = None
    if args.url:
        require_loopback(args.url)
        url = args.url
    else:
        extra = args.server_arg or ["--embedder", "none", "--retrieval", "bm25"]
        server = EngramServer(args.engram, api_key=args.api_key, extra_args=extra)
        server.start()
        url = server.url
    try:
        rng = random.Random(7)
        load_memories(Client(url, args.api_key), args.memories, args.batch, rng)
        results = []
        for r in range(args.rounds):
            for mode in MODES:
                res = run(mode, url, args.api_key, args.clients, args.seconds, seed=r)
                log(f"round {r + 1} {mode:9s} x{args.clients}: {res['n']} calls, p50 {_f(res['p50'])} ms, "
                    f"p99 {_f(res['p99'])} ms, {res['rps']:.0f}/s, errors {res['errors']}")
                results.append(res)
        metrics = Client(url, args.api_key)
        for mode in MODES:
            # Both MCP modes share the route: the passes run one after another, so the difference
            # is this mode's alone.
            route = ROUTES[mode]
            before = server_time(metrics, route)
            res = run(mode, url, args.api_key, 1, args.seconds / 2, seed=99)
            after = server_time(metrics, route)
            calls = after[1] - before[1]
            res["server_mean_ms"] = (after[0] - before[0]) / calls * 1000 if calls else None
            log(f"single {mode:9s}: {res['n']} calls, p50 {_f(res['p50'], 3)} ms, p99 {_f(res['p99'], 3)} ms, "
                f"server-side mean {_f(res['server_mean_ms'], 3)} ms")
            results.append(res)
    finally:
        if server:
            server.stop()

    print(f"\n{cpu_name()}, {os.cpu_count()} cores; {args.memories} memories in one scope; "
          f"server args: {' '.join(args.server_arg or ['--embedder none --retrieval bm25'])}\n")
    print("| path | clients | calls | p50 ms | p90 ms | p99 ms | calls/s | errors | server-side mean ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for res in results:
        print(f"| {NAMES[res['mode']]} | {res['clients']} | {res['n']} | {_f(res['p50'], 3)} | {_f(res['p90'], 3)} | "
              f"{_f(res['p99'], 3)} | {res['rps']:.0f} | {res['errors']} | {_f(res.get('server_mean_ms'), 3)} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"cpu": cpu_name(), "results": results, "args": vars(args)}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Facts that change over time, through the V4 API: does a question about a past year answer with
the version that held then, and a question about now with the current one?

Synthetic conversations (no dataset needed): each user states one fact three times over the
years, each time with another value ("I live in Lisbon." in 2019, "I live in Oslo." in 2021,
"I live in Quito." in 2023), one add per statement (`infer: true`, the message timestamped in
that year), each waited for before the next. Then, per user, one question per year ("Where did I
live in 2021?") and one about now ("Where do I live?"), searched by `user_id` with `top_k` 1:

- through V4 `memories/search`, which shows the version a question about a time asks for;
- through mem0's `/v3/memories/search/` on the same server, which ranks the same memories and
  shows their current text: what the answer reads without versions.

A result is right when its text holds the value of the asked year (or the latest value). Also
counted: the events' decisions (ADD / UPDATE / NONE) and the results that show a replaced
version (with `valid_to`). Prints a Markdown table; --json-out writes the figures.

  python3 bench/versions.py --engram build/engram [--users 60] [--json-out F]
"""

import argparse
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Client, EngramServer, cpu_name, log, write_json  # noqa: E402

P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"
YEARS = (2019, 2021, 2023)

# (statement, question about a year, question about now, values). Values are generic and
# drawn at random; none is special-cased anywhere.
KINDS = (
    ("I live in {v}.", "Where did I live in {y}?", "Where do I live?",
     ["Lisbon", "Oslo", "Quito", "Nairobi", "Hanoi", "Tallinn", "Denver", "Perth", "Lyon",
      "Cusco", "Bergen", "Malaga"]),
    ("I work at {v}.", "Where did I work in {y}?", "Where do I work?",
     ["Initech", "Globex", "Umbrella Labs", "Vandelay Industries", "Acme Robotics", "Hooli",
      "Stark Freight", "Wayne Foods", "Soylent Media", "Cyberdyne Bank"]),
    ("I drive a {v}.", "What car did I drive in {y}?", "What car do I drive?",
     ["Volvo", "Subaru", "Skoda", "Mazda", "Peugeot", "Fiat", "Kia", "Tesla", "Renault",
      "Dacia"]),
)


def wait_event(client, eid, timeout_s=60):
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        status, ev, _ = client.request("GET", f"{P4}/events/{eid}")
        if status == 200 and isinstance(ev, dict) and ev.get("status") in ("SUCCEEDED", "FAILED"):
            return ev
        time.sleep(0.005)
    return None


def run(args):
    rng = random.Random(args.seed)
    users = []
    for u in range(args.users):
        kind = KINDS[u % len(KINDS)]
        values = rng.sample(kind[3], len(YEARS))
        users.append({"id": f"versions-{args.seed}-{u}", "kind": kind, "values": values})

    decisions = Counter()
    by_kind = {}  # statement -> Counter of its adds' decisions
    with EngramServer(args.engram, extra_args=args.server_args) as server:
        client = Client(server.url)
        t0 = time.perf_counter()
        for user in users:
            statement = user["kind"][0]
            for year, value in zip(YEARS, user["values"]):
                ts = f"{year}-06-15T10:00:00Z"
                body = {"messages": [{"role": "user", "content": statement.format(v=value)}],
                        "user_id": user["id"], "infer": True, "timestamp": ts}
                ack, _ = client.post_json(P4 + "/memories/add", body)
                ev = wait_event(client, ack["event_id"])
                if ev is None or ev.get("status") != "SUCCEEDED":
                    decisions["failed or timed out"] += 1
                    continue
                for e in ev.get("events", []):
                    decisions[e.get("event", "?")] += 1
                    by_kind.setdefault(statement, Counter())[e.get("event", "?")] += 1
        add_s = time.perf_counter() - t0
        log(f"adds: {len(users) * len(YEARS)} in {add_s:.1f} s; decisions {dict(decisions)}")

        right = Counter()
        asked = Counter()
        shown_replaced = 0
        for user in users:
            _, past_q, now_q, _ = user["kind"]
            questions = [(past_q.format(y=y), v, "past year") for y, v in
                         zip(YEARS[:-1], user["values"][:-1])]
            questions.append((past_q.format(y=YEARS[-1]), user["values"][-1], "latest year"))
            questions.append((now_q, user["values"][-1], "now"))
            for question, expected, what in questions:
                asked[what] += 1
                v4, _ = client.post_json(P4 + "/memories/search",
                                         {"query": question, "user_id": user["id"], "top_k": 1})
                hits = v4.get("results", [])
                if hits and expected.lower() in hits[0].get("memory", "").lower():
                    right[("v4", what)] += 1
                    right[("v4", user["kind"][0])] += 1
                asked[user["kind"][0]] += 1
                if hits and hits[0].get("valid_to"):
                    shown_replaced += 1
                m0, _ = client.post_json("/v3/memories/search/",
                                         {"query": question, "filters": {"user_id": user["id"]},
                                          "top_k": 1})
                hits = m0.get("results", [])
                if hits and expected.lower() in hits[0].get("memory", "").lower():
                    right[("mem0", what)] += 1

    whats = ("past year", "latest year", "now")
    result = {
        "cpu": cpu_name(), "users": args.users, "years": list(YEARS), "seed": args.seed,
        "add_seconds": round(add_s, 1), "decisions": dict(decisions),
        "decisions_by_statement": {k: dict(v) for k, v in by_kind.items()},
        "results_showing_a_replaced_version": shown_replaced,
        "accuracy_at_1": {api: {w: round(right[(api, w)] / asked[w], 3) for w in whats}
                          for api in ("v4", "mem0")},
        "questions": {w: asked[w] for w in whats},
        "v4_accuracy_at_1_by_statement": {k: round(right[("v4", k)] / max(1, asked[k]), 3)
                                          for k in by_kind},
    }
    print(f"\nFacts stated in {', '.join(map(str, YEARS))}, {args.users} users, one run "
          f"({result['cpu']}); decisions {dict(decisions)}\n")
    print("| search | a past year | the latest year | now |")
    print("|---|---|---|---|")
    for api, label in (("v4", "V4 (versions shown)"), ("mem0", "mem0 (current text)")):
        acc = result["accuracy_at_1"][api]
        print(f"| {label} | {acc['past year']:.3f} | {acc['latest year']:.3f} | {acc['now']:.3f} |")
    print(f"\nquestions: {', '.join(f'{w} {asked[w]}' for w in whats)}; V4 results showing a "
          f"replaced version: {shown_replaced}")
    for statement, counts in by_kind.items():
        print(f"\"{statement}\": decisions {dict(counts)}, V4 right at 1 "
              f"{right[('v4', statement)] / max(1, asked[statement]):.3f}")
    if args.json_out:
        write_json(args.json_out, result)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engram", required=True, help="the engram binary")
    ap.add_argument("--users", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json-out")
    ap.add_argument("--server-arg", dest="server_args", action="append", default=[],
                    help="an extra `engram serve` argument (repeatable)")
    run(ap.parse_args())


if __name__ == "__main__":
    main()

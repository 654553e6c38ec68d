#!/usr/bin/env python3
"""Chaos soak: mixed Leaderboard and V4 memory load against a real `engram serve` that is killed
with SIGKILL at random moments and restarted on the same data directory, then an invariant check.

Load (--clients threads, for --minutes):
  - Leaderboard adds (POST /leaderboard/add, 1-3 messages, each with a unique random word). An add
    that got no answer (the kill cut its connection) is re-sent with the same request_id and body
    once the server is back (the contract is idempotent), so every add ends acknowledged or
    "unanswered at the end". 429 and 503 are retried the same way.
  - V4 adds (memories/add, infer: false, 1-3 messages with unique words), answered PENDING with an
    event id; each client polls its events until SUCCEEDED / FAILED and keeps at most
    --max-pending-events of them open, so the event backlog stays bounded.
  - Searches of both APIs for words already acknowledged (V4: of events that SUCCEEDED), and now
    and then a replay of an acknowledged Leaderboard add (same answer expected, nothing stored).
Chaos: the main thread sends SIGKILL after a random interval (uniform in 0.2-1.8 x --kill-every,
so --kill-every is the mean), restarts the server on the same data directory (a new port: the
clients switch to it) and repeats until the load time is over.

Statuses: 2xx fine; 503 (the server refusing while it cannot take work) and 429 (queue full) are
allowed, counted and retried; any other status is a violation. Connection errors while the server
is down (or cut by the kill) are expected and counted; those while it is up are counted apart.

Check, after a clean SIGTERM stop (exit code 0 expected) and a restart:
  - every acknowledged Leaderboard add's words are found exactly once (search, the word as query,
    top_k 100, results whose text holds the word); unanswered ones at most once, all or nothing;
  - every acknowledged V4 event ends (SUCCEEDED or FAILED) within --event-wait seconds;
  - every word of a SUCCEEDED V4 add is in exactly one memory of its user (list of the user's
    memories), others at most once; a sample is also searched;
  - no status other than 2xx / 429 / 503 was answered during the whole run.
Exit code 1 if any of these fails (or a restart, the clean stop or the check itself fails).

  timeout 600 python3 bench/chaos_soak.py --minutes 1 --kill-every 10
  python3 bench/chaos_soak.py --engram build/engram --minutes 30 --json-out /tmp/chaos.json
"""

import argparse
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Client, EngramServer, _f, cpu_name, log, percentile, write_json  # noqa: E402
from load import sentence  # noqa: E402

LB_ADD = "/leaderboard/add"
LB_SEARCH = "/leaderboard/search"
P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"

# The integration tests' unique-word alphabet: no vowels, so no real word or stem collides.
LETTERS = "bcdfghjklmnpqrtvwxz"
WORD_RE = re.compile(r"q[bcdfghjklmnpqrtvwxz]{11}")
MAX_EXAMPLES = 20      # violations kept with their request and answer
IDLE_RECONNECT_S = 5.0
ENDED = ("SUCCEEDED", "FAILED")


def content_text(content):
    """A Leaderboard result's text: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(p["text"] for p in content
                     if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))


def count_lb(data, word):
    """Copies of `word` in a Leaderboard answer. Occurrences, not results: an excerpt joins
    matches that sit next to each other in a session, so two stored copies of one add would be
    one result, but no message is shown twice in one answer."""
    return sum(content_text(r.get("content")).count(word) for r in data if isinstance(r, dict))


def count_v4(results, word):
    return sum(1 for r in results if isinstance(r, dict) and word in str(r.get("memory", "")))


def short(obj, n=400):
    s = obj if isinstance(obj, str) else json.dumps(obj)
    return s if len(s) <= n else s[:n] + "…"


class ConnError(Exception):
    """No answer. `down`: the server was down or killed meanwhile (expected)."""

    def __init__(self, down, cause):
        super().__init__(str(cause))
        self.down = down
        self.cause = cause


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = collections.Counter()
        self.violations = []
        self.violation_count = 0

    def inc(self, key, n=1):
        with self.lock:
            self.c[key] += n

    def violation(self, kind, **detail):
        with self.lock:
            self.violation_count += 1
            self.c["violation: " + kind] += 1
            if len(self.violations) < MAX_EXAMPLES:
                self.violations.append({"kind": kind, **detail})
        log(f"VIOLATION {kind}: {short(detail, 600)}")


class Target:
    """The server's current address. Every start listens on a new port (port 0), so each request
    takes the current client; the generation tells a request cut by a kill from one that failed
    while the server stayed up."""

    def __init__(self, api_key, timeout):
        self.api_key = api_key
        self.timeout = timeout
        self.lock = threading.Lock()
        self.up = threading.Event()
        self.client = None
        self.gen = 0

    def set_up(self, url):
        with self.lock:
            self.client = Client(url, self.api_key, timeout=self.timeout)
            self.gen += 1
            self.up.set()

    def set_down(self):
        with self.lock:
            self.up.clear()
            self.gen += 1

    def snapshot(self):
        with self.lock:
            return self.client, self.gen, self.up.is_set()


class Soak:
    def __init__(self, args, target, stats, run_id):
        self.args = args
        self.target = target
        self.stats = stats
        self.run_id = run_id
        self.lock = threading.Lock()
        self.words = set()
        self.lb_records = []     # every Leaderboard add: user, words, body, state
        self.v4_records = []     # every V4 add: user, words, body, state, event_id, status
        self.lb_words = []       # (user, word) acknowledged: search targets
        self.v4_words = []       # (user, word) of SUCCEEDED events: search targets
        self.stop_load = threading.Event()
        self.abort = threading.Event()
        self.write_deadline = None
        self.local = threading.local()

    def new_word(self, rng):
        while True:
            w = "q" + "".join(rng.choice(LETTERS) for _ in range(11))
            with self.lock:
                if w not in self.words:
                    self.words.add(w)
                    return w

    def pick(self, rng, pool):
        with self.lock:
            return rng.choice(pool) if pool else None

    # -- one request, classified

    def call(self, method, path, body, route, wait_until=None):
        """(status, parsed answer). Waits for the server while it is down (until wait_until);
        counts 429 / 503; records any other non-2xx as a violation; raises ConnError."""
        if not self.target.up.is_set():
            left = (wait_until or time.monotonic() + 60) - time.monotonic()
            if left <= 0 or not self.target.up.wait(timeout=min(left, 60)):
                raise ConnError(True, "server down")
        client, gen, up = self.target.snapshot()
        # The server closes keep-alive connections idle for --idle-timeout-ms (30 s); a request
        # sent on one it is closing fails without a fault of the server, so a connection left
        # idle for a while is replaced before use.
        now = time.monotonic()
        if now - getattr(self.local, "last", now) > IDLE_RECONNECT_S:
            client._drop()
        self.local.last = now
        try:
            status, parsed, _ = client.request(method, path, body, retries=0)
        except (OSError, http.client.HTTPException) as e:
            _, gen2, up2 = self.target.snapshot()
            down = not up or gen2 != gen or not up2
            if down:
                self.stats.inc("connection errors while down")
            else:
                self.stats.inc("connection errors while up")
                if isinstance(e, TimeoutError):
                    self.stats.inc("timeouts while up")
                log(f"note: {route}: {type(e).__name__} ({e}) while the server was up")
            raise ConnError(down, e) from None
        self.stats.inc(f"{route} {status}")
        if status == 503:
            self.stats.inc("503")
        elif status == 429:
            self.stats.inc("429")
        elif not 200 <= status < 300:
            self.stats.violation("5xx" if status >= 500 else f"unexpected {status}", method=method,
                                 path=path, request=short(body) if body is not None else None,
                                 status=status, answer=short(parsed))
        return status, parsed

    def send_until_answered(self, method, path, body, route, retries_key):
        """Re-sends the same body after no answer, 429 or 503 until write_deadline; returns the
        first other (status, parsed), or None if none came in time."""
        first = True
        while time.monotonic() < self.write_deadline and not self.abort.is_set():
            if not first:
                self.stats.inc(retries_key)
            first = False
            try:
                status, parsed = self.call(method, path, body, route, self.write_deadline)
            except ConnError:
                time.sleep(0.1)
                continue
            if status in (429, 503):
                time.sleep(0.25)
                continue
            return status, parsed
        return None

    def event_ended(self, rec, ev):
        rec["status"] = ev.get("status")
        if rec["status"] == "FAILED":
            self.stats.inc("v4 events failed")
            log(f"note: event {rec['event_id']} FAILED: {ev.get('error_message')}")
            return
        # infer: false stores each message verbatim: one ADD per message, or NONE when the same
        # text is already stored (a re-sent add whose first copy was kept).
        decided = " ".join(str(d.get("memory", "")) for d in ev.get("events") or []
                           if isinstance(d, dict) and d.get("event") in ("ADD", "NONE"))
        missing = [w for w in rec["words"] if w not in decided]
        if missing:
            self.stats.violation("event decisions", event_id=rec["event_id"], missing=missing,
                                 answer=short(ev))
        with self.lock:
            self.v4_words.extend((rec["user"], w) for w in rec["words"])


class Worker(threading.Thread):
    def __init__(self, soak, wid, seed):
        super().__init__(daemon=True, name=f"client-{wid}")
        self.soak = soak
        self.wid = wid
        self.rng = random.Random(seed)
        self.lb_user = f"chaos:{soak.run_id}:lb:{wid}"
        self.v4_user = f"chaos:{soak.run_id}:v4:{wid}"
        self.session = None
        self.lb_seq = 0
        self.v4_seq = 0
        self.acked = []          # this client's acknowledged Leaderboard adds (replays)
        self.pending = []        # this client's V4 events not seen ended
        self.last_poll = 0.0

    def run(self):
        try:
            while not self.soak.stop_load.is_set() and not self.soak.abort.is_set():
                self.poll_events()
                self.one_op()
        except Exception:  # a bug of this tool must not pass as a clean run
            self.soak.stats.violation("client crashed", client=self.wid, trace=traceback.format_exc())

    def one_op(self):
        r = self.rng.random()
        if r < 0.35:
            self.lb_add()
        elif r < 0.60:
            if len(self.pending) < self.soak.args.max_pending_events:
                self.v4_add()
            else:
                self.lb_add()
        elif r < 0.78:
            self.lb_search()
        elif r < 0.95:
            self.v4_search()
        else:
            self.lb_replay()

    def messages(self, words, tag):
        return [f"{sentence(self.rng)} {tag} {j} records the code word {w}." for j, w in enumerate(words)]

    def lb_add(self):
        s = self.soak
        k = self.lb_seq
        self.lb_seq += 1
        if k % 25 == 0:
            self.session = f"{self.lb_user}:session-{k // 25}"
        words = [s.new_word(self.rng) for _ in range(self.rng.randint(1, 3))]
        now_ms = int(time.time() * 1000)
        msgs = [{"role": ("user", "assistant")[j % 2], "content": text, "timestamp": now_ms + j}
                for j, text in enumerate(self.messages(words, f"Entry {self.wid}.{k}"))]
        body = {"request_id": f"{self.lb_user}:add-{k}", "user_id": self.lb_user,
                "session_id": self.session, "messages": msgs}
        rec = {"user": self.lb_user, "words": words, "body": body, "state": "sent"}
        with s.lock:
            s.lb_records.append(rec)
        ans = s.send_until_answered("POST", LB_ADD, body, "leaderboard add", "leaderboard retries")
        if ans is None:
            rec["state"] = "unanswered"
            return
        status, parsed = ans
        want = {"success": True, "request_id": body["request_id"], "user_id": body["user_id"],
                "session_id": body["session_id"]}
        if status == 200 and parsed == want:
            rec["state"] = "acked"
            self.acked.append(rec)
            s.stats.inc("leaderboard adds acknowledged")
            with s.lock:
                s.lb_words.extend((self.lb_user, w) for w in words)
            return
        rec["state"] = "refused"
        if status == 200:
            s.stats.violation("add answer", path=LB_ADD, request=short(body), answer=short(parsed))

    def lb_replay(self):
        """The same request_id and body again: the first answer back, nothing stored."""
        s = self.soak
        if not self.acked:
            return self.lb_add()
        rec = self.rng.choice(self.acked)
        body = rec["body"]
        try:
            status, parsed = s.call("POST", LB_ADD, body, "leaderboard add")
        except ConnError:
            return
        if status != 200:
            return
        s.stats.inc("leaderboard replays")
        want = {"success": True, "request_id": body["request_id"], "user_id": body["user_id"],
                "session_id": body["session_id"]}
        if parsed != want:
            s.stats.violation("replay answer", path=LB_ADD, request=short(body), answer=short(parsed))

    def v4_add(self):
        s = self.soak
        k = self.v4_seq
        self.v4_seq += 1
        words = [s.new_word(self.rng) for _ in range(self.rng.randint(1, 3))]
        body = {"messages": [{"role": "user", "content": t}
                             for t in self.messages(words, f"Memo {self.wid}.{k}")],
                "user_id": self.v4_user, "infer": False}
        rec = {"user": self.v4_user, "words": words, "body": body, "state": "sent",
               "event_id": None, "status": None}
        with s.lock:
            s.v4_records.append(rec)
        # V4 adds carry no request id; re-sending one that got no answer is still safe because
        # verbatim adds store an exact duplicate of a scope's memory as NONE, never twice.
        ans = s.send_until_answered("POST", P4 + "/memories/add", body, "v4 add", "v4 retries")
        if ans is None:
            rec["state"] = "unanswered"
            return
        status, parsed = ans
        eid = parsed.get("event_id") if isinstance(parsed, dict) else None
        if status == 200 and parsed.get("status") == "PENDING" and str(eid).startswith("me-"):
            rec["state"] = "acked"
            rec["event_id"] = eid
            self.pending.append(rec)
            s.stats.inc("v4 adds acknowledged")
            return
        rec["state"] = "refused"
        if status == 200:
            s.stats.violation("add answer", path=P4 + "/memories/add", request=short(body),
                              answer=short(parsed))

    def poll_events(self):
        if not self.pending or time.monotonic() - self.last_poll < 0.2:
            return
        self.last_poll = time.monotonic()
        for rec in list(self.pending[:8]):
            ev = poll_event(self.soak, rec)
            if ev is False:
                return
            if ev is not None and ev.get("status") in ENDED:
                self.pending.remove(rec)

    def lb_search(self):
        s = self.soak
        hit = s.pick(self.rng, s.lb_words)
        if hit is None:
            return self.lb_add()
        user, word = hit
        search_checked(s, "leaderboard", user, word, during_load=True)

    def v4_search(self):
        s = self.soak
        hit = s.pick(self.rng, s.v4_words)
        if hit is None:
            return self.v4_add() if len(self.pending) < s.args.max_pending_events else None
        user, word = hit
        search_checked(s, "v4", user, word, during_load=True)


def poll_event(s, rec, wait_until=None):
    """GET events/{id}: the event (recorded when ended), None on another answer, False when the
    server gave no answer."""
    try:
        status, ev = s.call("GET", f"{P4}/events/{rec['event_id']}", None, "v4 event", wait_until)
    except ConnError:
        return False
    if status != 200 or not isinstance(ev, dict):
        return None
    st = ev.get("status")
    if st in ENDED:
        if rec["status"] is None:
            s.event_ended(rec, ev)
    elif st not in ("PENDING", "RUNNING"):
        s.stats.violation("event status", event_id=rec["event_id"], answer=short(ev))
    return ev


def search_once(s, api, user, word, wait_until=None):
    """How many results hold `word` (None: no usable answer)."""
    if api == "leaderboard":
        path, body, key = LB_SEARCH, {"query": word, "user_id": user, "top_k": 100}, "data"
    else:
        path, body, key = P4 + "/memories/search", {"query": word, "user_id": user, "top_k": 100}, "results"
    try:
        status, parsed = s.call("POST", path, body, f"{api} search", wait_until)
    except ConnError:
        return None
    if status != 200:
        return None
    items = parsed.get(key) if isinstance(parsed, dict) else None
    if not isinstance(items, list):
        s.stats.violation("search answer", path=path, request=short(body), answer=short(parsed))
        return None
    s.stats.inc(f"{api} searches")
    return count_lb(items, word) if api == "leaderboard" else count_v4(items, word)


def search_checked(s, api, user, word, during_load):
    """A search for an acknowledged word: found once, or a violation. A miss is asked again
    after half a second before it counts, so that a write becoming visible a moment after its
    acknowledgement shows up as a transient miss, not as a loss."""
    n = search_once(s, api, user, word)
    if n == 1 or n is None:
        return n
    if n == 0:
        time.sleep(0.5)
        n2 = search_once(s, api, user, word)
        if n2 == 1:
            s.stats.inc(f"{api} transient search misses")
            return n2
        if n2 is None:
            return None
        n = n2
    phase = "during load" if during_load else "after restart"
    s.stats.violation(f"{api} search {'miss' if n == 0 else 'duplicate'} {phase}", user=user,
                      word=word, found=n)
    return n


# ----------------------------------------------------------------------------------------------
# Final check

def check(s, args):
    """The invariants after the final restart; returns a dict of figures."""
    stats = s.stats
    res = {"lost": {"leaderboard": 0, "v4": 0}, "duplicated": {"leaderboard": 0, "v4": 0},
           "partial": 0, "events_unended": 0, "unchecked": 0, "lost_examples": [],
           "duplicated_examples": []}
    check_deadline = time.monotonic() + args.check_timeout

    def lost(api, rec, word, n):
        key = "lost" if n == 0 else "duplicated"
        res[key][api] += 1
        if len(res[key + "_examples"]) < MAX_EXAMPLES:
            res[key + "_examples"].append({"api": api, "user": rec["user"], "word": word, "found": n,
                                           "state": rec["state"], "event_id": rec.get("event_id"),
                                           "event_status": rec.get("status"),
                                           "request_id": rec["body"].get("request_id")})
        log(f"{key.upper()}: {api} word {word} found {n} times ({rec['state']} add of {rec['user']})")

    # 1. every acknowledged V4 event ends
    log(f"check: {sum(1 for r in s.v4_records if r['event_id'])} V4 events must end "
        f"(at most {args.event_wait:.0f} s)")
    ev_deadline = min(check_deadline, time.monotonic() + args.event_wait)
    open_ev = [r for r in s.v4_records if r["event_id"] and r["status"] is None]
    while open_ev and time.monotonic() < ev_deadline:
        for rec in list(open_ev):
            ev = poll_event(s, rec, ev_deadline)
            if ev is not None and ev is not False and ev.get("status") in ENDED:
                open_ev.remove(rec)
            if time.monotonic() >= ev_deadline:
                break
        if open_ev:
            time.sleep(0.2)
    res["events_unended"] = len(open_ev)
    for rec in open_ev[:MAX_EXAMPLES]:
        log(f"UNENDED: event {rec['event_id']} of {rec['user']} not SUCCEEDED/FAILED after "
            f"{args.event_wait:.0f} s")
    res["events_unended_ids"] = [r["event_id"] for r in open_ev[:MAX_EXAMPLES]]

    # 2. Leaderboard: acknowledged words found exactly once, the others at most once, all or nothing
    jobs = [(rec, w) for rec in s.lb_records for w in rec["words"]]
    log(f"check: {len(jobs)} Leaderboard words of {len(s.lb_records)} adds, one search each")

    def lb_job(job):
        rec, word = job
        for _ in range(20):
            if time.monotonic() >= check_deadline:
                break
            n = search_once(s, "leaderboard", rec["user"], word, check_deadline)
            if n is not None:
                return n
            time.sleep(0.25)
        return None

    with ThreadPoolExecutor(max_workers=max(1, args.clients)) as pool:
        counts = list(pool.map(lb_job, jobs))
    found = collections.defaultdict(list)
    for (rec, word), n in zip(jobs, counts):
        if n is None:
            res["unchecked"] += 1
            continue
        found[id(rec)].append(n)
        if rec["state"] == "acked" and n != 1:
            lost("leaderboard", rec, word, n)
        elif n > 1:
            lost("leaderboard", rec, word, n)
    for rec in s.lb_records:
        ns = found.get(id(rec), [])
        if (rec["state"] != "acked" and len(ns) == len(rec["words"]) and 0 in ns
                and any(n > 0 for n in ns)):
            res["partial"] += 1
            stats.violation("partially stored add", user=rec["user"],
                            request_id=rec["body"]["request_id"], found=ns)

    # 3. V4: list every user's memories; each word of a SUCCEEDED add in exactly one memory
    per_user = collections.defaultdict(collections.Counter)
    foreign = 0
    for user in sorted({r["user"] for r in s.v4_records}):
        seen, total, page = 0, None, 1
        while page <= 1000 and time.monotonic() < check_deadline:
            qs = urllib.parse.urlencode({"user_id": user, "page_number": page, "page_size": 1000})
            try:
                status, parsed = s.call("GET", f"{P4}/memories?{qs}", None, "v4 list", check_deadline)
            except ConnError:
                time.sleep(0.25)
                continue
            if status in (429, 503):
                time.sleep(0.25)
                continue
            if status != 200 or not isinstance(parsed, dict):
                break
            items = parsed.get("results") or []
            total = parsed.get("total")
            for m in items:
                ws = set(WORD_RE.findall(str(m.get("memory", ""))))
                if not ws:
                    foreign += 1
                for w in ws:
                    per_user[user][w] += 1
            seen += len(items)
            if not items or (isinstance(total, int) and seen >= total):
                break
            page += 1
        if total is None or seen < total:
            res["unchecked"] += 1
            log(f"check: memories of {user} not fully listed ({seen} of {total})")
    if foreign:
        stats.violation("memories not written by this run", count=foreign)
    res["v4_memories"] = sum(sum(c.values()) for c in per_user.values())
    for rec in s.v4_records:
        for w in rec["words"]:
            n = per_user[rec["user"]][w]
            if rec["state"] == "acked" and rec["status"] == "SUCCEEDED":
                if n != 1:
                    lost("v4", rec, w, n)
            elif n > 1:
                lost("v4", rec, w, n)

    # 4. a sample of stored V4 words is found by search too (the index agrees with the store)
    rng = random.Random(args.seed)
    sample = [(r["user"], w) for r in s.v4_records if r["status"] == "SUCCEEDED" for w in r["words"]]
    sample = rng.sample(sample, min(len(sample), args.check_sample))
    log(f"check: {len(sample)} V4 words searched")
    for user, word in sample:
        if time.monotonic() >= check_deadline:
            res["unchecked"] += 1
            continue
        search_checked(s, "v4", user, word, during_load=False)
    return res


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", default=os.path.join("build", "engram"), metavar="PATH",
                    help="engram binary (default build/engram)")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="passed to `engram serve` as it is (repeatable)")
    ap.add_argument("--api-key", help="started with --api-key KEY and sent by the clients")
    ap.add_argument("--minutes", type=float, default=5.0, help="load time (default 5)")
    ap.add_argument("--kill-every", type=float, default=15.0,
                    help="mean seconds between SIGKILLs (default 15; 0: no kills)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--max-pending-events", type=int, default=8,
                    help="V4 events a client keeps open before it stops adding (default 8)")
    ap.add_argument("--http-timeout", type=float, default=10.0, help="seconds per request (default 10)")
    ap.add_argument("--start-timeout", type=float, default=120.0,
                    help="seconds a start may take until 'listening on' (default 120)")
    ap.add_argument("--drain-seconds", type=float, default=30.0,
                    help="after the load, time an unanswered add keeps being re-sent (default 30)")
    ap.add_argument("--event-wait", type=float, default=60.0,
                    help="after the restart, time V4 events get to end (default 60)")
    ap.add_argument("--check-timeout", type=float,
                    help="bound on the check in seconds (default: 600 or twice the load time if "
                         "longer; the check searches every acknowledged word once)")
    ap.add_argument("--check-sample", type=int, default=200, help="V4 words searched in the check (200)")
    ap.add_argument("--deadline", type=float,
                    help="overall bound in seconds (default: load + every other bound + 120)")
    ap.add_argument("--seed", type=int, help="random seed (default: random; printed)")
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    args = ap.parse_args()

    args.clients = max(1, min(args.clients, 64))
    args.minutes = max(0.05, args.minutes)
    args.max_pending_events = max(1, args.max_pending_events)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    if args.check_timeout is None:
        args.check_timeout = max(600.0, 2 * args.minutes * 60)
    if args.deadline is None:
        args.deadline = (args.minutes * 60 + args.drain_seconds + args.event_wait + args.check_timeout
                         + 3 * args.start_timeout + 120)
    cpu = cpu_name()
    run_id = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    rng = random.Random(args.seed)

    tmp = tempfile.mkdtemp(prefix="engram-chaos-")
    stats = Stats()
    target = Target(args.api_key, args.http_timeout)
    soak = Soak(args, target, stats, run_id)
    server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                          keep_data=True, start_timeout=args.start_timeout, data_dir=tmp)
    failures = []           # reasons the run fails besides the counted invariants
    restart_s = []
    kills = unexpected_exits = 0
    clean_stop_code = None
    res = {}

    def watchdog():
        # The last resort against a hang anywhere: stop our server and leave with an error.
        log(f"overall deadline of {args.deadline:.0f} s passed: aborting")
        if server.proc and server.proc.poll() is None:
            server.proc.kill()
        log(f"server log tail:\n{server.log_tail()}")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        os._exit(1)

    timer = threading.Timer(args.deadline, watchdog)
    timer.daemon = True
    timer.start()
    t_start = time.monotonic()
    try:
        server.start()
        target.set_up(server.url)
        load_end = time.monotonic() + args.minutes * 60
        soak.write_deadline = load_end + args.drain_seconds
        log(f"chaos soak {run_id}: {args.minutes:g} min, {args.clients} clients, SIGKILL every "
            f"~{args.kill_every:g} s, seed {args.seed}, data {tmp}")
        workers = [Worker(soak, i, rng.randrange(1 << 31)) for i in range(args.clients)]
        for w in workers:
            w.start()

        def interval():
            return rng.uniform(0.2, 1.8) * args.kill_every

        def restart(why):
            t = time.monotonic()
            server.proc = None
            server.start()
            restart_s.append(time.monotonic() - t)
            target.set_up(server.url)
            log(f"restarted after {why} in {restart_s[-1]:.2f} s")

        next_kill = time.monotonic() + interval() if args.kill_every > 0 else float("inf")
        while time.monotonic() < load_end and not soak.abort.is_set():
            time.sleep(0.05)
            code = server.proc.poll()
            if code is not None:
                unexpected_exits += 1
                target.set_down()
                failures.append(f"server exited by itself with code {code}")
                log(f"server exited by itself with code {code}; log tail:\n{server.log_tail()}")
                restart("an unexpected exit")
                next_kill = time.monotonic() + interval() if args.kill_every > 0 else float("inf")
                continue
            if time.monotonic() >= next_kill:
                target.set_down()
                server.proc.send_signal(signal.SIGKILL)
                server.proc.wait(timeout=30)
                kills += 1
                restart(f"SIGKILL {kills}")
                next_kill = time.monotonic() + interval()
        soak.stop_load.set()
        log("load over; clients finish their unanswered adds")
        for w in workers:
            w.join(timeout=max(1.0, soak.write_deadline - time.monotonic()) + 2 * args.http_timeout)
            if w.is_alive():
                failures.append(f"client {w.wid} did not finish")
        load_seconds = time.monotonic() - t_start

        # A clean stop must keep everything and exit 0; the check runs on the restarted server.
        target.set_down()
        proc = server.proc
        server.stop(remove=False)
        clean_stop_code = proc.returncode
        if clean_stop_code != 0:
            failures.append(f"SIGTERM stop exited with code {clean_stop_code}")
        restart("SIGTERM")
        res = check(soak, args)
        if res["unchecked"]:
            failures.append(f"{res['unchecked']} items could not be checked in time")
    except SystemExit as e:          # a start that failed (benchlib raises SystemExit)
        soak.abort.set()
        failures.append(f"server start failed: {str(e)[:300]}")
        load_seconds = time.monotonic() - t_start
    finally:
        soak.stop_load.set()
        if server.proc and server.proc.poll() is not None and server.proc.returncode != 0:
            failures.append(f"server exited with code {server.proc.returncode} during the check")
        server.stop(remove=False)
        timer.cancel()

    c = stats.c
    lb_ack = c["leaderboard adds acknowledged"]
    v4_ack = c["v4 adds acknowledged"]
    lost = sum((res.get("lost") or {}).values())
    dup = sum((res.get("duplicated") or {}).values())
    unended = res.get("events_unended", 0)
    figures = {
        "cpu": cpu, "cores": os.cpu_count(), "run_id": run_id, "seed": args.seed,
        "binary": os.path.abspath(args.engram), "server_args": args.server_arg,
        "minutes": args.minutes, "clients": args.clients, "kill_every_s": args.kill_every,
        "seconds": round(time.monotonic() - t_start, 1), "load_and_drain_seconds": round(load_seconds, 1),
        "kills_survived": kills, "unexpected_exits": unexpected_exits, "restarts": len(restart_s),
        "restart_p50_s": percentile(restart_s, 50), "restart_max_s": max(restart_s) if restart_s else None,
        "clean_stop_exit_code": clean_stop_code,
        "adds_acknowledged": {"leaderboard": lb_ack, "v4": v4_ack},
        "messages_acknowledged": {
            "leaderboard": sum(len(r["words"]) for r in soak.lb_records if r["state"] == "acked"),
            "v4": sum(len(r["words"]) for r in soak.v4_records if r["state"] == "acked")},
        "unanswered_at_end": {"leaderboard": sum(r["state"] == "unanswered" for r in soak.lb_records),
                              "v4": sum(r["state"] == "unanswered" for r in soak.v4_records)},
        "resends": {"leaderboard": c["leaderboard retries"], "v4": c["v4 retries"]},
        "leaderboard_replays": c["leaderboard replays"],
        "searches": {"leaderboard": c["leaderboard searches"], "v4": c["v4 searches"]},
        "transient_search_misses": {"leaderboard": c["leaderboard transient search misses"],
                                    "v4": c["v4 transient search misses"]},
        "v4_events_failed": c["v4 events failed"], "v4_memories_listed": res.get("v4_memories"),
        "answers_503": c["503"], "answers_429": c["429"],
        "connection_errors": {"while_down": c["connection errors while down"],
                              "while_up": c["connection errors while up"],
                              "timeouts_while_up": c["timeouts while up"]},
        "lost": lost, "duplicated": dup, "partially_stored": res.get("partial", 0),
        "lost_by_api": res.get("lost"), "duplicated_by_api": res.get("duplicated"),
        "events_unended": unended, "violations": stats.violation_count,
        "statuses": {k: v for k, v in sorted(c.items())
                     if re.search(r" \d{3}$", k) and not k.startswith("violation")},
        "violation_examples": stats.violations,
        "lost_examples": res.get("lost_examples", []),
        "duplicated_examples": res.get("duplicated_examples", []),
        "events_unended_ids": res.get("events_unended_ids", []),
        "failures": failures,
    }
    ok = (not failures and lost == 0 and dup == 0 and unended == 0 and stats.violation_count == 0
          and res.get("partial", 0) == 0)
    figures["passed"] = ok
    print_report(figures)
    if not ok:
        log(f"server log tail ({server.log_path}):\n{server.log_tail(6000)}")
    if args.json_out:
        write_json(args.json_out, figures)
    if args.keep:
        log(f"kept {tmp} (data in data/, server log in server.log)")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


def print_report(r):
    def pair(d):
        return f"{d.get('leaderboard')} / {d.get('v4')}"

    ce = r["connection_errors"]
    print(f"### chaos soak: {r['minutes']:g} min, {r['clients']} clients, SIGKILL every "
          f"~{r['kill_every_s']:g} s ({r['cpu']}, {r['cores']} cores; seed {r['seed']})\n")
    print("| figure | value |")
    print("|---|---|")
    rows = [
        ("kills survived", r["kills_survived"]),
        ("restarts (p50 / max s to listening)",
         f"{r['restarts']} ({_f(r['restart_p50_s'])} / {_f(r['restart_max_s'])})"),
        ("unexpected server exits", r["unexpected_exits"]),
        ("SIGTERM stop exit code", r["clean_stop_exit_code"]),
        ("adds acknowledged (Leaderboard / V4)", pair(r["adds_acknowledged"])),
        ("messages acknowledged (Leaderboard / V4)", pair(r["messages_acknowledged"])),
        ("re-sends of unanswered / 429 / 503 adds (Leaderboard / V4)", pair(r["resends"])),
        ("adds unanswered at the end (Leaderboard / V4)", pair(r["unanswered_at_end"])),
        ("Leaderboard replays of acknowledged adds", r["leaderboard_replays"]),
        ("searches (Leaderboard / V4)", pair(r["searches"])),
        ("transient search misses (Leaderboard / V4)", pair(r["transient_search_misses"])),
        ("V4 events FAILED", r["v4_events_failed"]),
        ("503 answers", r["answers_503"]),
        ("429 answers", r["answers_429"]),
        ("connection errors while down / while up (timeouts)",
         f"{ce['while_down']} / {ce['while_up']} ({ce['timeouts_while_up']})"),
        ("**lost** (Leaderboard / V4)", f"{r['lost']} ({pair(r['lost_by_api'] or {})})"),
        ("**duplicated** (Leaderboard / V4)", f"{r['duplicated']} ({pair(r['duplicated_by_api'] or {})})"),
        ("**partially stored adds**", r["partially_stored"]),
        ("**events unended**", r["events_unended"]),
        ("**violations**", r["violations"]),
    ]
    for name, v in rows:
        print(f"| {name} | {v} |")
    print()
    for v in r["violation_examples"]:
        print("VIOLATION:", short(v, 1500))
    for v in r["lost_examples"]:
        print("LOST:", json.dumps(v))
    for v in r["duplicated_examples"]:
        print("DUPLICATED:", json.dumps(v))
    for f in r["failures"]:
        print("FAILURE:", f)
    print("PASS" if r["passed"] else "FAIL")


if __name__ == "__main__":
    sys.exit(main())

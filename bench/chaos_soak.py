#!/usr/bin/env python3
"""Chaos soak: mixed Leaderboard, V4 memory, skills (V3) and knowledge-base load against a real
`engram serve` that is killed with SIGKILL at random moments and restarted on the same data
directory, then an invariant check.

Load (--clients threads, for --minutes; --apis chooses which of the four APIs take part):
  - Leaderboard adds (POST /leaderboard/add, 1-3 messages, each with a unique random word). An add
    that got no answer (the kill cut its connection) is re-sent with the same request_id and body
    once the server is back (the contract is idempotent), so every add ends acknowledged or
    "unanswered at the end". 429 and 503 are retried the same way.
  - V4 adds (memories/add, infer: false, 1-3 messages with unique words), answered PENDING with an
    event id; each client polls its events until SUCCEEDED / FAILED and keeps at most
    --max-pending-events of them open, so the event backlog stays bounded.
  - Skill writes, on a small share of the iterations: imports (skills/import, synchronous, a ZIP
    holding one SKILL.md named procedure-<word>) and extractions (skills/add, a request "How do I
    calibrate the <word> sensor?" answered by numbered steps, which the built-in extractor turns
    into the skill calibrate-the-<word>-sensor; the task is polled until completed / failed, at
    most --max-pending-events open per client). A skill's name is unique per owner and writing a
    name again makes a new version of the same skill, so both are re-sent after no answer, 429
    or 503 like Leaderboard adds.
  - Knowledge-base uploads, on a small share of the iterations: a small Markdown file holding one
    unique word is written to the import directory (--import-dir, given to the server) and
    uploaded as a LOCAL document with an id of its own (one knowledge base per client). Uploading
    an existing id replaces that document, so an upload is re-sent the same way; each document is
    polled until SUCCESS / FAIL, at most --max-pending-events open per client.
  - Searches of every API for words already acknowledged (V4: of events that SUCCEEDED; skills:
    also a get of the skill; knowledge bases: of documents that reached SUCCESS), and now and then
    a replay of an acknowledged Leaderboard add (same answer expected, nothing stored).
Chaos: the main thread sends SIGKILL after a random interval (uniform in 0.2-1.8 x --kill-every,
so --kill-every is the mean), restarts the server on the same data directory (a new port: the
clients switch to it) and repeats until the load time is over.

Statuses: 2xx fine; 503 (the server refusing while it cannot take work) and 429 (queue full) are
allowed, counted and retried; any other status is a violation. Connection errors while the server
is down (or cut by the kill) are expected and counted; those while it is up are counted apart.

Check, after a clean SIGTERM stop (exit code 0 expected) and a restart:
  - every acknowledged V4 event, skill extraction task and knowledge-base document ends
    (SUCCEEDED / FAILED, completed / failed, SUCCESS / FAIL) within --event-wait seconds;
  - every acknowledged Leaderboard add's words are found exactly once (search, the word as query,
    top_k 100, results whose text holds the word); unanswered ones at most once, all or nothing;
  - every word of a SUCCEEDED V4 add is in exactly one memory of its user (list of the user's
    memories), others at most once; a sample is also searched;
  - every acknowledged skill (an import, or the skill of a completed extraction) is got by its id
    with its name, and a search for its word finds exactly one skill with the word in its name:
    that one; skill writes unanswered at the end or whose task failed are found at most once;
  - the word of every acknowledged document that reached SUCCESS is found by a knowledge-base
    search in exactly one chunk, of that document; other uploads are found at most once;
  - no status other than 2xx / 429 / 503 was answered during the whole run.
Exit code 1 if any of these fails (or a restart, the clean stop or the check itself fails).

  timeout 600 python3 bench/chaos_soak.py --minutes 1 --kill-every 10
  python3 bench/chaos_soak.py --engram build/engram --minutes 30 --json-out /tmp/chaos.json
  python3 bench/chaos_soak.py --minutes 2 --apis skills,kb
"""

import argparse
import base64
import collections
import http.client
import io
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
import zipfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Client, EngramServer, _f, cpu_name, log, percentile, write_json  # noqa: E402
from load import sentence  # noqa: E402

LB_ADD = "/leaderboard/add"
LB_SEARCH = "/leaderboard/search"
P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"
P3 = "/v3/openapi/workspaces/default/memory/agentic-memory"

# --apis names -> the names used in figures and reports
API_KEYS = {"lb": "leaderboard", "leaderboard": "leaderboard", "v4": "v4", "skills": "skills",
            "kb": "kb"}
ALL_APIS = ("leaderboard", "v4", "skills", "kb")
API_LABELS = {"leaderboard": "Leaderboard", "v4": "V4", "skills": "skills", "kb": "KB"}

# The integration tests' unique-word alphabet: no vowels, so no real word or stem collides.
LETTERS = "bcdfghjklmnpqrtvwxz"
WORD_RE = re.compile(r"q[bcdfghjklmnpqrtvwxz]{11}")
MAX_EXAMPLES = 20      # violations kept with their request and answer
IDLE_RECONNECT_S = 5.0
ENDED = ("SUCCEEDED", "FAILED")
TASK_ENDED = ("completed", "failed")
DOC_ENDED = ("SUCCESS", "FAIL")

# A client's operations: (weight, API, method). Skill and knowledge-base operations take a small
# share, so the Leaderboard and V4 load still dominates when every API takes part.
OPS = (
    (0.35, "leaderboard", "lb_add"),
    (0.25, "v4", "v4_add"),
    (0.18, "leaderboard", "lb_search"),
    (0.17, "v4", "v4_search"),
    (0.05, "leaderboard", "lb_replay"),
    (0.03, "skills", "skill_import"),
    (0.015, "skills", "skill_extract"),
    (0.025, "skills", "skill_lookup"),
    (0.035, "kb", "kb_upload"),
    (0.025, "kb", "kb_search"),
)


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


def v3_result(parsed):
    """The `result` object of a V3 success envelope, or None."""
    if isinstance(parsed, dict) and parsed.get("status") == "OK" and isinstance(parsed.get("result"), dict):
        return parsed["result"]
    return None


def zip_base64(files):
    """A ZIP archive of {path: text}, base64-encoded (the body of a skill import)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in files.items():
            z.writestr(path, text)
    return base64.b64encode(buf.getvalue()).decode("ascii")


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
    def __init__(self, args, target, stats, run_id, import_dir=None):
        self.args = args
        self.target = target
        self.stats = stats
        self.run_id = run_id
        self.import_dir = import_dir   # the server's --import-dir (knowledge-base files)
        self.lock = threading.Lock()
        self.words = set()
        self.lb_records = []     # every Leaderboard add: user, words, body, state
        self.v4_records = []     # every V4 add: user, words, body, state, event_id, status
        self.skill_records = []  # every skill write: kind, user, words, name, body, state, task_id,
        #                          id (the skill's), status (the task's)
        self.kb_records = []     # every upload: user (the kb id), words, body, state, id, status
        self.lb_words = []       # (user, word) acknowledged: search targets
        self.v4_words = []       # (user, word) of SUCCEEDED events: search targets
        self.skill_words = []    # (user, word, skill id) of acknowledged skills: search targets
        self.kb_words = []       # (kb id, word, doc id) of documents that reached SUCCESS
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

    def task_ended(self, rec, task):
        rec["status"] = task.get("status")
        if rec["status"] == "failed":
            self.stats.inc("skill tasks failed")
            log(f"note: skill task {rec['task_id']} failed: {task.get('error_message')}")
            return
        # The conversation holds one procedure: its skill, whatever the task's history (a task
        # run again after a kill writes the same name, i.e. a new version of the same skill).
        ids = task.get("skill_ids")
        if not isinstance(ids, list) or len(ids) != 1 or not str(ids[0]).startswith("s-"):
            self.stats.violation("skill task result", task_id=rec["task_id"], name=rec["name"],
                                 answer=short(task))
            return
        rec["id"] = ids[0]
        with self.lock:
            self.skill_words.append((rec["user"], rec["words"][0], rec["id"]))

    def doc_ended(self, rec, doc):
        rec["status"] = doc.get("status")
        if rec["status"] == "FAIL":
            self.stats.inc("kb documents failed")
            log(f"note: document {rec['user']}/{rec['id']} FAIL: {doc.get('error_message')}")
            return
        if rec["words"][0] not in str(doc.get("content", "")):
            self.stats.violation("document content", kb_id=rec["user"], doc_id=rec["id"],
                                 word=rec["words"][0], answer=short(doc))
            return
        with self.lock:
            self.kb_words.append((rec["user"], rec["words"][0], rec["id"]))


class Worker(threading.Thread):
    def __init__(self, soak, wid, seed):
        super().__init__(daemon=True, name=f"client-{wid}")
        self.soak = soak
        self.wid = wid
        self.rng = random.Random(seed)
        self.lb_user = f"chaos:{soak.run_id}:lb:{wid}"
        self.v4_user = f"chaos:{soak.run_id}:v4:{wid}"
        self.skill_user = f"chaos:{soak.run_id}:skills:{wid}"
        self.kb_id = f"chaos-{soak.run_id}-kb{wid}"
        self.session = None
        self.lb_seq = 0
        self.v4_seq = 0
        self.skill_seq = 0
        self.kb_seq = 0
        self.acked = []          # this client's acknowledged Leaderboard adds (replays)
        self.pending = []        # this client's V4 events not seen ended
        self.tasks = []          # this client's skill extraction tasks not seen ended
        self.docs = []           # this client's knowledge-base documents not seen ended
        self.last_poll = 0.0
        ops = [(w, m) for w, api, m in OPS if api in soak.args.apis]
        total = sum(w for w, _ in ops)
        self.ops = []            # (cumulative share, method)
        acc = 0.0
        for w, m in ops:
            acc += w / total
            self.ops.append((acc, getattr(self, m)))

    def run(self):
        try:
            while not self.soak.stop_load.is_set() and not self.soak.abort.is_set():
                self.poll_pending()
                self.one_op()
        except Exception:  # a bug of this tool must not pass as a clean run
            self.soak.stats.violation("client crashed", client=self.wid, trace=traceback.format_exc())

    def one_op(self):
        r = self.rng.random()
        for share, op in self.ops:
            if r < share:
                return op()
        return self.ops[-1][1]()

    def full(self, open_items):
        return len(open_items) >= self.soak.args.max_pending_events

    def instead(self):
        """What a client does when the operation it drew cannot run (its backlog of open events,
        tasks or documents is full, or nothing is acknowledged yet to search for)."""
        if "leaderboard" in self.soak.args.apis:
            return self.lb_add()
        time.sleep(0.05)

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
        rec = {"api": "leaderboard", "user": self.lb_user, "words": words, "body": body, "state": "sent"}
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
        if self.full(self.pending):
            return self.instead()
        k = self.v4_seq
        self.v4_seq += 1
        words = [s.new_word(self.rng) for _ in range(self.rng.randint(1, 3))]
        body = {"messages": [{"role": "user", "content": t}
                             for t in self.messages(words, f"Memo {self.wid}.{k}")],
                "user_id": self.v4_user, "infer": False}
        rec = {"api": "v4", "user": self.v4_user, "words": words, "body": body, "state": "sent",
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

    def poll_pending(self):
        """Polls up to 8 open V4 events, skill tasks and documents each, at most every 0.2 s."""
        if not (self.pending or self.tasks or self.docs) or time.monotonic() - self.last_poll < 0.2:
            return
        self.last_poll = time.monotonic()
        for open_items, poll, ended in ((self.pending, poll_event, ENDED),
                                        (self.tasks, poll_task, TASK_ENDED),
                                        (self.docs, poll_doc, DOC_ENDED)):
            for rec in list(open_items[:8]):
                got = poll(self.soak, rec)
                if got is False:
                    return
                if got is not None and got.get("status") in ended:
                    open_items.remove(rec)

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
            return self.v4_add() if not self.full(self.pending) else self.instead()
        user, word = hit
        search_checked(s, "v4", user, word, during_load=True)

    # -- skills (V3)

    def skill_write(self, rec, path, route):
        """Sends a skill write until answered; returns the V3 result of a 200, else None (the
        record's state says why)."""
        s = self.soak
        with s.lock:
            s.skill_records.append(rec)
        ans = s.send_until_answered("POST", path, rec["body"], route, "skills retries")
        if ans is None:
            rec["state"] = "unanswered"
            return None
        status, parsed = ans
        res = v3_result(parsed)
        if status != 200 or res is None:
            rec["state"] = "refused"
            if status == 200:
                s.stats.violation("skill write answer", path=path, name=rec["name"],
                                  answer=short(parsed))
            return None
        return res

    def skill_import(self):
        """A ZIP holding one SKILL.md, named after a unique word (synchronous)."""
        s = self.soak
        k = self.skill_seq
        self.skill_seq += 1
        word = s.new_word(self.rng)
        name = f"procedure-{word}"
        md = (f"---\nname: {name}\ndescription: Calibrate the {word} instrument panel.\n"
              f"tags: [chaos, calibration]\n---\n# Calibrate the {word} panel\n\n"
              f"1. {sentence(self.rng)}\n2. Switch the panel off and on again (skill {self.wid}.{k}).\n"
              f"3. Write down the readings.\n")
        body = {"zip_base64": zip_base64({"SKILL.md": md}), "user_id": self.skill_user}
        rec = {"api": "skills", "kind": "import", "user": self.skill_user, "words": [word],
               "name": name, "body": body, "state": "sent", "task_id": None, "id": None,
               "status": None}
        res = self.skill_write(rec, P3 + "/skills/import", "skills import")
        if res is None:
            return
        data = res.get("data")
        got = data[0] if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict) else {}
        if (res.get("imported_count") != 1 or got.get("name") != name
                or not str(got.get("id")).startswith("s-") or got.get("owner") != self.skill_user):
            rec["state"] = "refused"
            s.stats.violation("skill import answer", name=name, answer=short(res))
            return
        rec["state"] = "acked"
        rec["id"] = got["id"]
        rec["status"] = "completed"
        s.stats.inc("skills writes acknowledged")
        s.stats.inc("skill imports acknowledged")
        if got.get("version") != "1.0.0":
            # An earlier copy whose answer the kill cut was stored: the re-send is a new version.
            s.stats.inc("skill imports answered as a new version")
        with s.lock:
            s.skill_words.append((self.skill_user, word, rec["id"]))

    def skill_extract(self):
        """A conversation with one procedure (asynchronous: a task, polled until it ends)."""
        s = self.soak
        if self.full(self.tasks):
            return self.instead()
        k = self.skill_seq
        self.skill_seq += 1
        word = s.new_word(self.rng)
        body = {"user_id": self.skill_user, "messages": [
            {"role": "user", "content": f"How do I calibrate the {word} sensor?"},
            {"role": "assistant", "content":
                f"1. Power off the {word} sensor.\n2. Run the calibration tool (note {self.wid}.{k}).\n"
                f"3. {sentence(self.rng)}"}]}
        rec = {"api": "skills", "kind": "extract", "user": self.skill_user, "words": [word],
               "name": f"calibrate-the-{word}-sensor", "body": body, "state": "sent",
               "task_id": None, "id": None, "status": None}
        res = self.skill_write(rec, P3 + "/skills/add", "skills add")
        if res is None:
            return
        tid = res.get("task_id")
        if not str(tid).startswith("st-"):
            rec["state"] = "refused"
            s.stats.violation("skill add answer", name=rec["name"], answer=short(res))
            return
        rec["state"] = "acked"
        rec["task_id"] = tid
        self.tasks.append(rec)
        s.stats.inc("skills writes acknowledged")
        s.stats.inc("skill extractions acknowledged")

    def skill_lookup(self):
        """A search for an acknowledged skill's word, or a get of the skill by its id."""
        s = self.soak
        hit = s.pick(self.rng, s.skill_words)
        if hit is None:
            return self.skill_import()
        user, word, sid = hit
        if self.rng.random() < 0.7:
            search_checked(s, "skills", user, word, during_load=True, expect=sid)
            return
        get_skill(s, user, sid, during_load=True)

    # -- knowledge bases

    def kb_upload(self):
        """A small Markdown document holding a unique word, written to the import directory and
        uploaded with an id of its own; polled until it ends."""
        s = self.soak
        if self.full(self.docs):
            return self.instead()
        k = self.kb_seq
        self.kb_seq += 1
        word = s.new_word(self.rng)
        doc_id = f"doc-{self.wid}-{k}"
        rel = f"{self.kb_id}/{doc_id}.md"
        text = (f"# Field note {self.wid}.{k}\n\n{sentence(self.rng)} The code word of this note is "
                f"{word}.\n\n{sentence(self.rng)}\n")
        path = os.path.join(s.import_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        body = {"type": "LOCAL", "doc": {"id": doc_id, "title": f"Field note {self.wid}.{k}",
                                         "file_url": rel}}
        rec = {"api": "kb", "user": self.kb_id, "words": [word], "body": body, "state": "sent",
               "id": doc_id, "status": None}
        with s.lock:
            s.kb_records.append(rec)
        url = f"{P3}/knowledge-bases/{self.kb_id}/docs"
        ans = s.send_until_answered("POST", url, body, "kb upload", "kb retries")
        if ans is None:
            rec["state"] = "unanswered"
            return
        status, parsed = ans
        res = v3_result(parsed)
        if (status == 200 and res is not None and res.get("id") == doc_id
                and res.get("status") == "PROCESSING"):
            rec["state"] = "acked"
            self.docs.append(rec)
            s.stats.inc("kb uploads acknowledged")
            return
        rec["state"] = "refused"
        if status == 200:
            s.stats.violation("upload answer", path=url, request=short(body), answer=short(parsed))

    def kb_search(self):
        s = self.soak
        hit = s.pick(self.rng, s.kb_words)
        if hit is None:
            return self.kb_upload()
        kb_id, word, doc_id = hit
        search_checked(s, "kb", kb_id, word, during_load=True, expect=doc_id)


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


def poll_task(s, rec, wait_until=None):
    """GET skills/tasks/{id}: the task (recorded when ended), None on another answer, False when
    the server gave no answer."""
    try:
        status, parsed = s.call("GET", f"{P3}/skills/tasks/{rec['task_id']}", None, "skills task",
                                wait_until)
    except ConnError:
        return False
    task = v3_result(parsed)
    if status != 200 or task is None:
        return None
    st = task.get("status")
    if st in TASK_ENDED:
        if rec["status"] is None:
            s.task_ended(rec, task)
    elif st not in ("pending", "running"):
        s.stats.violation("task status", task_id=rec["task_id"], answer=short(task))
    return task


def poll_doc(s, rec, wait_until=None):
    """GET knowledge-bases/{kb}/docs/{id}: the document (recorded when ended), None on another
    answer, False when the server gave no answer."""
    path = f"{P3}/knowledge-bases/{rec['user']}/docs/{urllib.parse.quote(rec['id'])}"
    try:
        status, parsed = s.call("GET", path, None, "kb doc", wait_until)
    except ConnError:
        return False
    doc = v3_result(parsed)
    if status != 200 or doc is None:
        return None
    st = doc.get("status")
    if st in DOC_ENDED:
        if rec["status"] is None:
            s.doc_ended(rec, doc)
    elif st != "PROCESSING":
        s.stats.violation("document status", kb_id=rec["user"], doc_id=rec["id"], answer=short(doc))
    return doc


def get_skill(s, user, sid, during_load, name=None, wait_until=None):
    """GET skills/{id}?user_id=: True when the skill came back (with `name` when given), False
    when it is missing or wrong (a violation), None without a usable answer."""
    path = f"{P3}/skills/{sid}?" + urllib.parse.urlencode({"user_id": user})
    try:
        status, parsed = s.call("GET", path, None, "skills get", wait_until)
    except ConnError:
        return None
    if status in (429, 503):
        return None
    res = v3_result(parsed)
    phase = "during load" if during_load else "after restart"
    if status == 404:        # a violation already (call): the acknowledged skill is missing
        log(f"note: skill {sid} of {user} not found {phase}")
        return False
    if (status != 200 or res is None or res.get("skill_id") != sid or res.get("user_id") != user
            or (name is not None and res.get("name") != name)
            or "SKILL.md" not in (res.get("files") or {})):
        if status == 200:
            s.stats.violation(f"skill get answer {phase}", user=user, skill_id=sid, name=name,
                              answer=short(parsed))
        return False
    s.stats.inc("skills gets")
    return True


def search_hits(s, api, user, word, wait_until=None):
    """The results holding `word`, as a list of their ids (None: no usable answer). Leaderboard:
    one None per copy of the word (count_lb); V4: memory ids; skills: ids of the skills with the
    word in their name; knowledge bases (`user` is the kb id): doc ids of the chunks holding it."""
    if api == "leaderboard":
        path, body = LB_SEARCH, {"query": word, "user_id": user, "top_k": 100}
    elif api == "v4":
        path, body = P4 + "/memories/search", {"query": word, "user_id": user, "top_k": 100}
    elif api == "skills":
        path, body = P3 + "/skills/search", {"query": word, "user_id": user, "size": 100}
    else:
        path, body = f"{P3}/knowledge-bases/{user}/search", {"query": word, "top_k": 100}
    try:
        status, parsed = s.call("POST", path, body, f"{api} search", wait_until)
    except ConnError:
        return None
    if status != 200:
        return None
    if api in ("skills", "kb"):
        res = v3_result(parsed)
        items = res.get("results") if res is not None else None
    else:
        key = "data" if api == "leaderboard" else "results"
        items = parsed.get(key) if isinstance(parsed, dict) else None
    if not isinstance(items, list):
        s.stats.violation("search answer", path=path, request=short(body), answer=short(parsed))
        return None
    s.stats.inc(f"{api} searches")
    items = [r for r in items if isinstance(r, dict)]
    if api == "leaderboard":
        return [None] * count_lb(items, word)
    if api == "v4":
        return [r.get("id") for r in items if word in str(r.get("memory", ""))]
    if api == "skills":
        return [r.get("skill_id") for r in items if word in str(r.get("name", ""))]
    return [r.get("doc_id") for r in items if word in str(r.get("chunk", ""))]


def search_once(s, api, user, word, wait_until=None):
    """How many results hold `word` (None: no usable answer)."""
    ids = search_hits(s, api, user, word, wait_until)
    return None if ids is None else len(ids)


def search_checked(s, api, user, word, during_load, expect=None):
    """A search for an acknowledged word: found once (in the item `expect` when given), or a
    violation. A miss is asked again after half a second before it counts, so that a write
    becoming visible a moment after its acknowledgement shows up as a transient miss, not as a
    loss."""
    phase = "during load" if during_load else "after restart"
    ids = search_hits(s, api, user, word)
    if ids is None:
        return None
    if not ids:
        time.sleep(0.5)
        ids = search_hits(s, api, user, word)
        if ids is None:
            return None
        if len(ids) == 1:
            s.stats.inc(f"{api} transient search misses")
    n = len(ids)
    if n != 1:
        s.stats.violation(f"{api} search {'miss' if n == 0 else 'duplicate'} {phase}", user=user,
                          word=word, found=n, ids=ids)
    elif expect is not None and ids[0] != expect:
        s.stats.violation(f"{api} search found another item {phase}", user=user, word=word,
                          expected=expect, found_id=ids[0])
    return n


# ----------------------------------------------------------------------------------------------
# Final check

def check(s, args):
    """The invariants after the final restart; returns a dict of figures."""
    stats = s.stats
    res = {"lost": {a: 0 for a in ALL_APIS}, "duplicated": {a: 0 for a in ALL_APIS},
           "partial": 0, "events_unended": 0, "unended": {"v4": 0, "skills": 0, "kb": 0},
           "unchecked": 0, "lost_examples": [], "duplicated_examples": []}
    check_deadline = time.monotonic() + args.check_timeout

    def lost(api, rec, word, n):
        key = "lost" if n == 0 else "duplicated"
        res[key][api] += 1
        if len(res[key + "_examples"]) < MAX_EXAMPLES:
            ex = {"api": api, "user": rec["user"], "word": word, "found": n, "state": rec["state"]}
            if api == "leaderboard":
                ex["request_id"] = rec["body"].get("request_id")
            elif api == "v4":
                ex.update(event_id=rec.get("event_id"), event_status=rec.get("status"))
            elif api == "skills":
                ex.update(kind=rec["kind"], name=rec["name"], skill_id=rec.get("id"),
                          task_id=rec.get("task_id"), task_status=rec.get("status"))
            else:
                ex.update(doc_id=rec["id"], doc_status=rec.get("status"))
            res[key + "_examples"].append(ex)
        log(f"{key.upper()}: {api} word {word} found {n} times ({rec['state']} write of {rec['user']})")

    # 1. every acknowledged V4 event, skill task and knowledge-base document ends
    open_items = ([(r, poll_event, ENDED) for r in s.v4_records if r["event_id"] and r["status"] is None]
                  + [(r, poll_task, TASK_ENDED) for r in s.skill_records
                     if r["task_id"] and r["status"] is None]
                  + [(r, poll_doc, DOC_ENDED) for r in s.kb_records
                     if r["state"] == "acked" and r["status"] is None])
    counts = {"v4": f"{sum(1 for r in s.v4_records if r['event_id'])} V4 events",
              "skills": f"{sum(1 for r in s.skill_records if r['task_id'])} skill tasks",
              "kb": f"{sum(1 for r in s.kb_records if r['state'] == 'acked')} documents"}
    counts = [v for k, v in counts.items() if k in args.apis]
    if counts:
        log(f"check: {', '.join(counts)} must end (at most {args.event_wait:.0f} s; "
            f"{len(open_items)} still open)")
    ev_deadline = min(check_deadline, time.monotonic() + args.event_wait)
    while open_items and time.monotonic() < ev_deadline:
        for item in list(open_items):
            rec, poll, ended = item
            got = poll(s, rec, ev_deadline)
            if got is not None and got is not False and got.get("status") in ended:
                open_items.remove(item)
            if time.monotonic() >= ev_deadline:
                break
        if open_items:
            time.sleep(0.2)

    def open_id(rec):
        return {"v4": lambda: rec["event_id"], "skills": lambda: rec["task_id"],
                "kb": lambda: f"{rec['user']}/{rec['id']}"}[rec["api"]]()

    res["events_unended"] = len(open_items)
    for rec, _, ended in open_items:
        res["unended"][rec["api"]] += 1
    for rec, _, ended in open_items[:MAX_EXAMPLES]:
        log(f"UNENDED: {rec['api']} {open_id(rec)} of {rec['user']} not {'/'.join(ended)} after "
            f"{args.event_wait:.0f} s")
    res["events_unended_ids"] = [open_id(rec) for rec, _, _ in open_items[:MAX_EXAMPLES]]

    # 2. Leaderboard: acknowledged words found exactly once, the others at most once, all or nothing
    jobs = [(rec, w) for rec in s.lb_records for w in rec["words"]]
    if "leaderboard" in args.apis:
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
    if "v4" in args.apis:
        log(f"check: {len(sample)} V4 words searched")
    for user, word in sample:
        if time.monotonic() >= check_deadline:
            res["unchecked"] += 1
            continue
        search_checked(s, "v4", user, word, during_load=False)

    # 5. skills: the word of every acknowledged skill names exactly one skill, that one, which a
    #    get returns with its name; the other writes are found at most once
    def retried(fn):
        for _ in range(20):
            if time.monotonic() >= check_deadline:
                break
            got = fn()
            if got is not None:
                return got
            time.sleep(0.25)
        return None

    def skill_job(rec):
        ids = retried(lambda: search_hits(s, "skills", rec["user"], rec["words"][0], check_deadline))
        got = None
        if rec["id"] is not None:
            got = retried(lambda: get_skill(s, rec["user"], rec["id"], False, rec["name"], check_deadline))
        return ids, got

    if "skills" in args.apis:
        log(f"check: {len(s.skill_records)} skill writes, one search each (and a get of each skill)")
    with ThreadPoolExecutor(max_workers=max(1, args.clients)) as pool:
        outcomes = list(pool.map(skill_job, s.skill_records))
    for rec, (ids, got) in zip(s.skill_records, outcomes):
        word = rec["words"][0]
        if ids is None or (rec["id"] is not None and got is None):
            res["unchecked"] += 1
            continue
        if rec["id"] is not None:        # an acknowledged import, or a completed extraction
            if got is False:             # the get did not return it: lost whatever search says
                log(f"check: skill {rec['id']} ({rec['name']}) not returned by its get; "
                    f"its word found {len(ids)} times")
                lost("skills", rec, word, 0)
            elif len(ids) != 1:
                lost("skills", rec, word, len(ids))
            elif ids[0] != rec["id"]:
                stats.violation("skills search found another skill after restart", user=rec["user"],
                                word=word, expected=rec["id"], found_id=ids[0])
        elif len(ids) > 1:
            lost("skills", rec, word, len(ids))

    # 6. knowledge bases: the word of every document that reached SUCCESS is in exactly one chunk,
    #    of that document; the other uploads are found at most once
    if "kb" in args.apis:
        log(f"check: {len(s.kb_records)} document uploads, one search each")
    with ThreadPoolExecutor(max_workers=max(1, args.clients)) as pool:
        outcomes = list(pool.map(
            lambda rec: retried(lambda: search_hits(s, "kb", rec["user"], rec["words"][0], check_deadline)),
            s.kb_records))
    for rec, ids in zip(s.kb_records, outcomes):
        word = rec["words"][0]
        if ids is None:
            res["unchecked"] += 1
            continue
        if rec["state"] == "acked" and rec["status"] == "SUCCESS":
            if len(ids) != 1:
                lost("kb", rec, word, len(ids))
            elif ids[0] != rec["id"]:
                stats.violation("kb search found another document after restart", kb_id=rec["user"],
                                word=word, expected=rec["id"], found_id=ids[0])
        elif len(ids) > 1:
            lost("kb", rec, word, len(ids))
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
    ap.add_argument("--apis", default="lb,v4,skills,kb", metavar="LIST",
                    help="APIs under load and checked, comma-separated from lb, v4, skills, kb "
                         "(default all four)")
    ap.add_argument("--max-pending-events", type=int, default=8,
                    help="V4 events, skill tasks and documents (each) a client keeps open before "
                         "it stops writing them (default 8)")
    ap.add_argument("--http-timeout", type=float, default=10.0, help="seconds per request (default 10)")
    ap.add_argument("--start-timeout", type=float, default=120.0,
                    help="seconds a start may take until 'listening on' (default 120)")
    ap.add_argument("--drain-seconds", type=float, default=30.0,
                    help="after the load, time an unanswered add keeps being re-sent (default 30)")
    ap.add_argument("--event-wait", type=float, default=60.0,
                    help="after the restart, time V4 events, skill tasks and documents get to end "
                         "(default 60)")
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
    names = [a.strip().lower() for a in args.apis.split(",") if a.strip()]
    unknown = [a for a in names if a not in API_KEYS]
    if unknown or not names:
        ap.error(f"--apis: unknown {', '.join(unknown)} (choose from lb, v4, skills, kb)" if unknown
                 else "--apis: name at least one of lb, v4, skills, kb")
    args.apis = [a for a in ALL_APIS if a in {API_KEYS[n] for n in names}]
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
    server_args = list(args.server_arg)
    import_dir = None
    if "kb" in args.apis:
        # Documents are LOCAL files of this directory, read by their relative paths.
        import_dir = os.path.join(tmp, "import")
        os.makedirs(import_dir)
        server_args += ["--import-dir", import_dir, "--import-dir-layout", "shared"]
    stats = Stats()
    target = Target(args.api_key, args.http_timeout)
    soak = Soak(args, target, stats, run_id, import_dir)
    server = EngramServer(args.engram, api_key=args.api_key, extra_args=server_args,
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
            f"~{args.kill_every:g} s, APIs {','.join(args.apis)}, seed {args.seed}, data {tmp}")
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
        log("load over; clients finish their unanswered writes")
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
    lost = sum((res.get("lost") or {}).values())
    dup = sum((res.get("duplicated") or {}).values())
    unended = res.get("events_unended", 0)
    records = {"leaderboard": soak.lb_records, "v4": soak.v4_records, "skills": soak.skill_records,
               "kb": soak.kb_records}

    def per_api(f):
        return {a: f(a) for a in ALL_APIS}

    figures = {
        "cpu": cpu, "cores": os.cpu_count(), "run_id": run_id, "seed": args.seed,
        "binary": os.path.abspath(args.engram), "server_args": server_args, "apis": args.apis,
        "minutes": args.minutes, "clients": args.clients, "kill_every_s": args.kill_every,
        "seconds": round(time.monotonic() - t_start, 1), "load_and_drain_seconds": round(load_seconds, 1),
        "kills_survived": kills, "unexpected_exits": unexpected_exits, "restarts": len(restart_s),
        "restart_p50_s": percentile(restart_s, 50), "restart_max_s": max(restart_s) if restart_s else None,
        "clean_stop_exit_code": clean_stop_code,
        # Leaderboard / V4 adds, skill imports + extractions, document uploads
        "writes_acknowledged": {"leaderboard": c["leaderboard adds acknowledged"],
                              "v4": c["v4 adds acknowledged"],
                              "skills": c["skills writes acknowledged"],
                              "kb": c["kb uploads acknowledged"]},
        "messages_acknowledged": {
            "leaderboard": sum(len(r["words"]) for r in soak.lb_records if r["state"] == "acked"),
            "v4": sum(len(r["words"]) for r in soak.v4_records if r["state"] == "acked")},
        "skill_writes_acknowledged": {"imports": c["skill imports acknowledged"],
                                      "extractions": c["skill extractions acknowledged"]},
        "skill_imports_answered_as_new_version": c["skill imports answered as a new version"],
        "unanswered_at_end": per_api(lambda a: sum(r["state"] == "unanswered" for r in records[a])),
        "resends": {"leaderboard": c["leaderboard retries"], "v4": c["v4 retries"],
                    "skills": c["skills retries"], "kb": c["kb retries"]},
        "leaderboard_replays": c["leaderboard replays"],
        "searches": per_api(lambda a: c[f"{a} searches"]),
        "skill_gets": c["skills gets"],
        "transient_search_misses": per_api(lambda a: c[f"{a} transient search misses"]),
        "v4_events_failed": c["v4 events failed"], "v4_memories_listed": res.get("v4_memories"),
        "skill_tasks_failed": c["skill tasks failed"], "kb_documents_failed": c["kb documents failed"],
        "answers_503": c["503"], "answers_429": c["429"],
        "connection_errors": {"while_down": c["connection errors while down"],
                              "while_up": c["connection errors while up"],
                              "timeouts_while_up": c["timeouts while up"]},
        "lost": lost, "duplicated": dup, "partially_stored": res.get("partial", 0),
        "lost_by_api": res.get("lost"), "duplicated_by_api": res.get("duplicated"),
        "events_unended": unended, "unended_by_api": res.get("unended"),
        "violations": stats.violation_count,
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
    apis = r["apis"]

    def per(d, only=None):
        names = [a for a in apis if only is None or a in only]
        return " / ".join(str((d or {}).get(a)) for a in names)

    def label(only=None):
        return " / ".join(API_LABELS[a] for a in apis if only is None or a in only)

    def has(*names):
        return any(a in apis for a in names)

    ce = r["connection_errors"]
    print(f"### chaos soak: {r['minutes']:g} min, {r['clients']} clients, SIGKILL every "
          f"~{r['kill_every_s']:g} s, APIs {label()} ({r['cpu']}, {r['cores']} cores; "
          f"seed {r['seed']})\n")
    print("| figure | value |")
    print("|---|---|")
    lbv4 = ("leaderboard", "v4")
    ended = ("v4", "skills", "kb")
    rows = [
        ("kills survived", r["kills_survived"]),
        ("restarts (p50 / max s to listening)",
         f"{r['restarts']} ({_f(r['restart_p50_s'])} / {_f(r['restart_max_s'])})"),
        ("unexpected server exits", r["unexpected_exits"]),
        ("SIGTERM stop exit code", r["clean_stop_exit_code"]),
        (f"writes acknowledged ({label()})", per(r["writes_acknowledged"])),
        (f"messages acknowledged ({label(lbv4)})", per(r["messages_acknowledged"], lbv4))
        if has(*lbv4) else None,
        ("skill writes acknowledged (imports / extractions)",
         f"{r['skill_writes_acknowledged']['imports']} / {r['skill_writes_acknowledged']['extractions']}")
        if has("skills") else None,
        ("skill imports answered as a new version (an earlier copy was stored)",
         r["skill_imports_answered_as_new_version"]) if has("skills") else None,
        (f"re-sends of unanswered / 429 / 503 writes ({label()})", per(r["resends"])),
        (f"writes unanswered at the end ({label()})", per(r["unanswered_at_end"])),
        ("Leaderboard replays of acknowledged adds", r["leaderboard_replays"])
        if has("leaderboard") else None,
        (f"searches ({label()})", per(r["searches"])),
        ("skill gets", r["skill_gets"]) if has("skills") else None,
        (f"transient search misses ({label()})", per(r["transient_search_misses"])),
        ("V4 events FAILED", r["v4_events_failed"]) if has("v4") else None,
        ("skill tasks failed", r["skill_tasks_failed"]) if has("skills") else None,
        ("KB documents FAIL", r["kb_documents_failed"]) if has("kb") else None,
        ("503 answers", r["answers_503"]),
        ("429 answers", r["answers_429"]),
        ("connection errors while down / while up (timeouts)",
         f"{ce['while_down']} / {ce['while_up']} ({ce['timeouts_while_up']})"),
        (f"**lost** ({label()})", f"{r['lost']} ({per(r['lost_by_api'])})"),
        (f"**duplicated** ({label()})", f"{r['duplicated']} ({per(r['duplicated_by_api'])})"),
        ("**partially stored adds**", r["partially_stored"]) if has("leaderboard") else None,
        (f"**unended** ({label(ended)})", f"{r['events_unended']} ({per(r['unended_by_api'], ended)})")
        if has(*ended) else None,
        ("**violations**", r["violations"]),
    ]
    for row in rows:
        if row is not None:
            print(f"| {row[0]} | {row[1]} |")
    print()
    for v in r["violation_examples"]:
        print("VIOLATION:", short(v, 1500))
    for v in r["lost_examples"]:
        print("LOST:", json.dumps(v))
    for v in r["duplicated_examples"]:
        print("DUPLICATED:", json.dumps(v))
    for v in r["events_unended_ids"]:
        print("UNENDED:", v)
    for f in r["failures"]:
        print("FAILURE:", f)
    print("PASS" if r["passed"] else "FAIL")


if __name__ == "__main__":
    sys.exit(main())

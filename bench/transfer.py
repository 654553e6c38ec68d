#!/usr/bin/env python3
"""Export and import benchmark: `engram export` and `engram import` on a filled store, with
round-trip checks.

Steps (each command under a timeout; only servers this tool started are stopped):
  1. fill: `engram serve` on a temporary data dir; --users Leaderboard users x --messages
     messages each (adds of --chunk messages on --concurrency clients, synthetic sentences of
     bench/load.py), plus --memories V4 memories (memories/add, infer: false, --chunk messages per
     add, over --v4-users users) polled until SUCCEEDED; each V4 user's memory count is checked.
     Then the tool waits until `engram_vector_queue` on /metrics is 0 (every record has its vector;
     the export below counts records without one).
  2. searches on the original: --lb-queries Leaderboard searches and --v4-queries V4 searches,
     each query made of words of one message the searched user sent; their answers are kept.
  3. `engram export --data-dir DIR FILE` timed while the server still runs.
  4. the server is stopped; `engram export --no-vectors` of the same dir (size comparison);
     `engram import --data-dir NEW FILE` into a fresh dir, then the same import again, which must
     write nothing (its summary line says what it wrote); `engram export` of the imported dir,
     whose records (every line but the header) must be byte-identical to the first export's.
  5. with ENGRAM_TEST_PG_URL (postgresql://user@host:port): a new database is created with
     `psql`, the file is imported into it (`--store-url URL/<db>`) twice (the second must write
     nothing), exported back, and the records compared with the SQLite export; the database is
     dropped at the end. Without `psql`, or when CREATE DATABASE fails, this step is skipped.
  6. a server on the imported dir answers the same searches, then the original restarted on its
     own dir: both load their scopes from disk, and every answer must be equal (ids, contents,
     times, scores). The restarted original's answers are also compared with its answers of
     step 2 (scopes built add by add in the running server); those differences are listed as
     notes (whether only scores differ, and by how much), not failures: they are the server's,
     not the transfer's.

Output: a Markdown table (CPU, AVX2 / AVX-512), mismatch lines, and with --json-out every figure.
Exit code 1 when a check failed.

  timeout 900 python3 bench/transfer.py --server-arg=--model-dir=third_party/model/package/dist
  python3 bench/transfer.py --users 5 --messages 100 --memories 100 --json-out /tmp/transfer.json
"""

import argparse
import base64
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (Client, EngramServer, HttpError, _f, cpu_name, dir_bytes, log,  # noqa: E402
                      metric_sum, metrics_text, write_json)
from load import sentence  # noqa: E402

LB_ADD = "/leaderboard/add"
LB_SEARCH = "/leaderboard/search"
P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"
BASE_TS_MS = 1704067200000          # 2024-01-01T00:00:00Z, the first message's time
SUMMARY_RE = re.compile(r"(\d+) Leaderboard messages, (\d+) images, (\d+) agent memories, "
                        r"(\d+) skills, (\d+) knowledge-base documents")
SUMMARY_KEYS = ("messages", "images", "memories", "skills", "kb_documents")
QUERY_STOP = {"the", "and", "then", "that", "with", "from", "than", "because", "still", "next",
              "time", "wants", "said", "worth", "expected", "better", "honestly", "remind",
              "favourite", "thing", "lately", "was", "one", "but", "after", "before", "over",
              "this", "last", "week", "month", "days", "ago", "morning", "near"}


def cpu_flags():
    """AVX2 and the AVX-512 subsets the CPU reports (/proc/cpuinfo)."""
    order = []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    order = line.split(":", 1)[1].split()
                    break
    except OSError:
        pass
    return {"avx2": "avx2" in order, "avx512": [f for f in order if f.startswith("avx512")]}


def parse_summary(text):
    """{messages, images, memories, skills, kb_documents} of each summary in a command's
    stderr, in order (an import prints two: written, already there)."""
    return [dict(zip(SUMMARY_KEYS, map(int, m.groups()))) for m in SUMMARY_RE.finditer(text or "")]


def run_cmd(cmd, timeout):
    """Runs an engram command; (seconds, exit code, stderr). A timeout kills it (exit code None)."""
    log("running:", " ".join(cmd))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode("utf-8", "replace")
        return time.perf_counter() - t0, None, err + f"\n(killed after {timeout:.0f} s)"
    dt = time.perf_counter() - t0
    err = p.stderr.decode("utf-8", "replace").strip()
    if err:
        log("  " + err.replace("\n", "\n  "))
    return dt, p.returncode, err


def file_stats(path):
    """(bytes, lines, records without a vector) of an export file."""
    size = os.path.getsize(path)
    lines = 0
    no_vector = 0
    with open(path, "rb") as f:
        first = True
        for line in f:
            lines += 1
            if first:
                first = False
                continue
            if b'"vector":' not in line:
                no_vector += 1
    return size, lines, no_vector


def records_bytes(path):
    """An export file without its header line (the header names the time of writing)."""
    with open(path, "rb") as f:
        data = f.read()
    nl = data.find(b"\n")
    return data[nl + 1:] if nl >= 0 else b""


def compare_records(a_path, b_path):
    """None when the records of two exports are byte-identical, else a description of the first
    difference and whether the same lines come in another order."""
    a, b = records_bytes(a_path), records_bytes(b_path)
    if a == b:
        return None
    al, bl = a.split(b"\n"), b.split(b"\n")
    first = next((i for i, (x, y) in enumerate(zip(al, bl)) if x != y), min(len(al), len(bl)))

    def show(lines):
        if first >= len(lines):
            return "(end of file)"
        s = lines[first].decode("utf-8", "replace")
        s = re.sub(r'"data":"[A-Za-z0-9+/=]{40,}"', '"data":"<base64>"', s)
        return s[:600]

    return {"lines": [len(al) - 1, len(bl) - 1],
            "first_difference_line": first + 2,    # 1-based, counting the header
            "same_lines_other_order": sorted(al) == sorted(bl),
            "a": show(al), "b": show(bl)}


def decode_vector_dims(path):
    """Dimensions and model of the first vector in an export (a sanity figure for the table)."""
    with open(path, "rb") as f:
        f.readline()
        for line in f:
            rec = json.loads(line)
            v = rec.get("vector")
            if isinstance(v, dict):
                return len(base64.b64decode(v.get("data", ""))) // 4, v.get("model")
    return None, None


# ----------------------------------------------------------------------------------------------
# Fill

def distinct_texts(rng, n, seen):
    """n message texts of 1-3 sentences, none sent before (`seen`, shared across users)."""
    out = []
    while len(out) < n:
        k = 1 + (rng.random() < 0.4) + (rng.random() < 0.15)
        t = " ".join(sentence(rng) for _ in range(k))
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def post_retrying(client, path, body, deadline_s=300.0):
    """POST with retries on 429 / 503 (same body); the parsed answer, or raises HttpError."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return client.post_json(path, body)[0]
        except HttpError as e:
            if e.status in (429, 503) and time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            raise


def fill(client, args, run, rng, anomalies):
    seen = set()
    lb_users = {}
    bodies = []
    for u in range(args.users):
        user = f"bench:{run}:lb:{u}"
        texts = distinct_texts(rng, args.messages, seen)
        lb_users[user] = texts
        for j in range(0, len(texts), args.chunk):
            part = texts[j:j + args.chunk]
            session = f"{user}:s{j // (args.chunk * 10)}"
            bodies.append({"request_id": f"{user}:add-{j // args.chunk}", "user_id": user,
                           "session_id": session,
                           "messages": [{"role": ("user", "assistant")[(j + i) % 2], "content": t,
                                         "timestamp": BASE_TS_MS + (j + i) * 60000}
                                        for i, t in enumerate(part)]})
    v4_users = {}
    v4_bodies = []
    per_user = [args.memories // args.v4_users + (1 if i < args.memories % args.v4_users else 0)
                for i in range(args.v4_users)]
    for u, n in enumerate(per_user):
        user = f"bench:{run}:v4:{u}"
        texts = distinct_texts(rng, n, seen)
        v4_users[user] = texts
        for j in range(0, len(texts), args.chunk):
            v4_bodies.append({"user_id": user, "infer": False,
                              "metadata": {"batch": j // args.chunk},
                              "messages": [{"role": "user", "content": t}
                                           for t in texts[j:j + args.chunk]]})

    errors = []
    lock = threading.Lock()

    def lb_add(body):
        try:
            r = post_retrying(client, LB_ADD, body)
            if not (isinstance(r, dict) and r.get("success") is True):
                with lock:
                    anomalies.append(f"leaderboard add {body['request_id']}: {json.dumps(r)[:200]}")
        except (HttpError, OSError) as e:
            with lock:
                errors.append(f"leaderboard add {body['request_id']}: {e}")

    def v4_add(body):
        try:
            r = post_retrying(client, P4 + "/memories/add", body)
            eid = r.get("event_id") if isinstance(r, dict) else None
            if not eid:
                with lock:
                    anomalies.append(f"v4 add answered {json.dumps(r)[:200]}")
            return eid
        except (HttpError, OSError) as e:
            with lock:
                errors.append(f"v4 add: {e}")
            return None

    log(f"fill: {len(bodies)} Leaderboard adds ({args.users} users x {args.messages} messages), "
        f"{len(v4_bodies)} V4 adds ({args.memories} memories, {args.v4_users} users)")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as ex:
        list(ex.map(lb_add, bodies))
    lb_s = time.perf_counter() - t0
    q_after_lb = metric_sum(metrics_text(client), "engram_vector_queue")
    t1 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as ex:
        events = [e for e in ex.map(v4_add, v4_bodies) if e]
    open_ev = set(events)
    failed = []
    deadline = time.monotonic() + args.event_wait
    while open_ev and time.monotonic() < deadline:
        for eid in list(open_ev):
            st, ev, _ = client.request("GET", f"{P4}/events/{eid}")
            status = ev.get("status") if st == 200 and isinstance(ev, dict) else None
            if status == "SUCCEEDED":
                open_ev.discard(eid)
            elif status == "FAILED":
                open_ev.discard(eid)
                failed.append(eid)
                anomalies.append(f"v4 event {eid} FAILED: {json.dumps(ev)[:300]}")
        if open_ev:
            time.sleep(0.1)
    v4_s = time.perf_counter() - t1
    if open_ev:
        anomalies.append(f"{len(open_ev)} V4 events not ended after {args.event_wait:.0f} s")
    for e in errors[:5]:
        log("error:", e)
    if errors:
        anomalies.append(f"{len(errors)} adds failed, e.g. {errors[0]}")

    # Each V4 user holds one memory per message sent.
    for user, texts in v4_users.items():
        qs = urllib.parse.urlencode({"user_id": user, "page_number": 1, "page_size": 1000})
        st, parsed, _ = client.request("GET", f"{P4}/memories?{qs}")
        total = parsed.get("total") if st == 200 and isinstance(parsed, dict) else None
        if total != len(texts):
            anomalies.append(f"V4 user {user} holds {total} memories, {len(texts)} sent")

    # Vectors are computed in the background after each add.
    t2 = time.perf_counter()
    q_first = metric_sum(metrics_text(client), "engram_vector_queue")
    q = q_first
    while q and time.perf_counter() - t2 < args.vector_wait:
        time.sleep(0.2)
        q = metric_sum(metrics_text(client), "engram_vector_queue")
    vec_s = time.perf_counter() - t2
    if q is None:
        log("the server reports no engram_vector_queue: not waiting for vectors")
    elif q:
        anomalies.append(f"engram_vector_queue still {q:.0f} after {args.vector_wait:.0f} s")
    else:
        log(f"vector queue empty {vec_s:.1f} s after the last add ({q_first:.0f} queued then)")
    fig = {"leaderboard_adds": len(bodies), "leaderboard_messages": sum(map(len, lb_users.values())),
           "leaderboard_seconds": round(lb_s, 2),
           "leaderboard_messages_per_s": round(sum(map(len, lb_users.values())) / lb_s, 1) if lb_s else None,
           "v4_adds": len(v4_bodies), "v4_memories": sum(map(len, v4_users.values())),
           "v4_events_failed": len(failed), "v4_seconds_to_succeeded": round(v4_s, 2),
           "vector_queue_after_leaderboard_adds": q_after_lb, "vector_queue_after_adds": q_first, "vector_wait_seconds": round(vec_s, 2),
           "vector_queue_at_end": q, "add_errors": len(errors)}
    return lb_users, v4_users, fig


# ----------------------------------------------------------------------------------------------
# Searches

def make_queries(rng, lb_users, v4_users, n_lb, n_v4):
    def words_of(text):
        ws = [w for w in re.findall(r"[A-Za-z][A-Za-z-]+", text)
              if len(w) > 2 and w.lower() not in QUERY_STOP]
        rng.shuffle(ws)
        return " ".join(ws[:rng.randint(2, 4)]) or text

    out = []
    lb = sorted(lb_users)
    for i in range(n_lb):
        user = lb[i % len(lb)] if lb else None
        if user:
            out.append(("leaderboard", user, words_of(rng.choice(lb_users[user]))))
    v4 = sorted(v4_users)
    for i in range(n_v4):
        user = v4[i % len(v4)] if v4 else None
        if user and v4_users[user]:
            out.append(("v4", user, words_of(rng.choice(v4_users[user]))))
    return out


def run_searches(client, queries, top_k):
    """Each query's answer list (None when it failed)."""
    answers = []
    for api, user, q in queries:
        if api == "leaderboard":
            path, body, key = LB_SEARCH, {"user_id": user, "query": q, "top_k": top_k}, "data"
        else:
            path, body, key = P4 + "/memories/search", {"user_id": user, "query": q, "top_k": top_k}, "results"
        try:
            r = post_retrying(client, path, body, 60)
            items = r.get(key) if isinstance(r, dict) else None
        except (HttpError, OSError) as e:
            log(f"search failed ({api} {q!r}): {e}")
            items = None
        answers.append(items)
    return answers


def diff_answers(a, b):
    """None when two answers are equal, else (kind, words, relative score difference): kind
    "scores" when the same results come in the same order and only scores differ (the largest
    relative difference given), else "results" (the first difference in words)."""
    if a is None or b is None:
        return ("results", "no answer" if a is None and b is None
                else f"answer missing on one side ({a is None}, {b is None})", None)
    if len(a) != len(b):
        return ("results", f"{len(a)} vs {len(b)} results; ids {[r.get('id') for r in a][:5]} vs "
                           f"{[r.get('id') for r in b][:5]}", None)
    first, worst = None, 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        words = f"result {i + 1} differs in {keys}: " + "; ".join(
            f"{k}: {json.dumps(x.get(k))[:120]} vs {json.dumps(y.get(k))[:120]}" for k in keys[:3])
        sx, sy = x.get("score"), y.get("score")
        if keys != ["score"] or not all(isinstance(v, (int, float)) for v in (sx, sy)):
            return ("results", words, None)
        worst = max(worst, abs(sx - sy) / max(abs(sx), abs(sy), 1e-30))
        first = first or words
    return None if first is None else ("scores", first, worst)


def compare_searches(queries, base, other):
    """[{api, user_id, query, kind, difference, max_relative_score_difference}] of the queries
    whose answers differ."""
    mismatches = []
    for (api, user, q), a, b in zip(queries, base, other):
        d = diff_answers(a, b)
        if d:
            mismatches.append({"api": api, "user_id": user, "query": q, "kind": d[0],
                               "difference": d[1], "max_relative_score_difference": d[2]})
    return mismatches


# ----------------------------------------------------------------------------------------------
# PostgreSQL

def pg_url_with_db(base, db):
    u = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))


def psql(base_url, sql, timeout=60):
    """(ok, output) of one SQL statement through `psql` on the server's own database."""
    cmd = ["psql", base_url, "-v", "ON_ERROR_STOP=1", "-X", "-q", "-c", sql]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return p.returncode == 0, (p.stderr or p.stdout).strip()


# ----------------------------------------------------------------------------------------------

def step(name, path, seconds, code, err, records=None, size=None):
    """A table row: records / bytes of the file moved, and rates over the command's time."""
    r = {"step": name, "seconds": round(seconds, 3), "exit_code": code,
         "summary": parse_summary(err), "stderr": err[-2000:]}
    if path and os.path.exists(path):
        if size is None:
            size, lines, no_vec = file_stats(path)
            r.update(lines=lines, records_without_vector=no_vec)
            records = lines - 1
        r.update(bytes=size, records=records)
        r.setdefault("lines", records + 1)
        if seconds > 0:
            r["records_per_s"] = round(records / seconds, 1)
            r["mb_per_s"] = round(size / 1e6 / seconds, 2)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", default=os.path.join("build", "engram"), metavar="PATH",
                    help="engram binary (default build/engram)")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="passed to `engram serve` as it is (repeatable)")
    ap.add_argument("--users", type=int, default=20, help="Leaderboard users (default 20)")
    ap.add_argument("--messages", type=int, default=500, help="messages per Leaderboard user (500)")
    ap.add_argument("--memories", type=int, default=500, help="V4 memories, infer: false (500)")
    ap.add_argument("--v4-users", type=int, default=5, help="users the V4 memories go to (5)")
    ap.add_argument("--chunk", type=int, default=10, help="messages per add (10)")
    ap.add_argument("--concurrency", type=int, default=4, help="concurrent adds (4)")
    ap.add_argument("--lb-queries", type=int, default=20, help="Leaderboard searches compared (20)")
    ap.add_argument("--v4-queries", type=int, default=5, help="V4 searches compared (5)")
    ap.add_argument("--top-k", type=int, default=10, help="top_k of the compared searches (10)")
    ap.add_argument("--command-timeout", type=float, default=300.0,
                    help="seconds an export or import may take (300)")
    ap.add_argument("--event-wait", type=float, default=300.0, help="seconds V4 events may take (300)")
    ap.add_argument("--vector-wait", type=float, default=600.0,
                    help="seconds the background vectors may take after the fill (600)")
    ap.add_argument("--deadline", type=float, default=1800.0,
                    help="overall bound in seconds: past it the servers are killed and the tool "
                         "exits 1 (1800)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    args.users = max(1, args.users)
    args.messages = max(1, args.messages)
    args.memories = max(0, args.memories)
    args.v4_users = max(1, args.v4_users)
    args.chunk = max(1, args.chunk)
    engram = os.path.abspath(args.engram)
    if not os.access(engram, os.X_OK):
        raise SystemExit(f"engram binary not found or not executable: {engram}")

    rng = random.Random(args.seed)
    run = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    tmp = tempfile.mkdtemp(prefix="engram-transfer-")
    orig_root, imp_root = os.path.join(tmp, "original"), os.path.join(tmp, "imported")
    export_path = os.path.join(tmp, "export.jsonl")
    novec_path = os.path.join(tmp, "export-no-vectors.jsonl")
    reexport_path = os.path.join(tmp, "export-of-import.jsonl")
    pg_export_path = os.path.join(tmp, "export-of-postgresql.jsonl")
    os.makedirs(orig_root)
    os.makedirs(imp_root)
    servers = []
    pg = {"base": os.environ.get("ENGRAM_TEST_PG_URL", "").strip(), "db": None}
    anomalies, failures, steps = [], [], []
    res = {"run_id": run, "cpu": cpu_name(), "cores": os.cpu_count(), **cpu_flags(),
           "binary": engram, "server_args": args.server_arg, "users": args.users,
           "messages_per_user": args.messages, "v4_memories": args.memories,
           "v4_users": args.v4_users, "chunk": args.chunk, "seed": args.seed}

    def drop_pg():
        if pg["db"]:
            ok, out = psql(pg["base"], f'DROP DATABASE IF EXISTS "{pg["db"]}"')
            if not ok:
                ok, out = psql(pg["base"], f'DROP DATABASE IF EXISTS "{pg["db"]}" WITH (FORCE)')
            log(f"dropped database {pg['db']}" if ok else f"could not drop database {pg['db']}: {out}")
            pg["db"] = None

    def watchdog():
        log(f"overall deadline of {args.deadline:.0f} s passed: aborting")
        for s in servers:
            if s.proc and s.proc.poll() is None:
                s.proc.kill()
        drop_pg()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        os._exit(1)

    def start_server(root):
        s = EngramServer(engram, extra_args=args.server_arg, keep_data=True, data_dir=root)
        servers.append(s)
        s.start()
        return s, Client(s.url, timeout=60)

    def stop_server(s):
        s.stop(remove=False)
        servers.remove(s)

    timer = threading.Timer(args.deadline, watchdog)
    timer.daemon = True
    timer.start()
    t_start = time.monotonic()
    exit_code = 1
    try:
        # 1. fill
        server, client = start_server(orig_root)
        orig_store = server.store_dir
        lb_users, v4_users, res["fill"] = fill(client, args, run, rng, anomalies)

        # 2. searches on the original
        queries = make_queries(rng, lb_users, v4_users, args.lb_queries, args.v4_queries)
        base_answers = run_searches(client, queries, args.top_k)
        empty = sum(1 for a in base_answers if not a)
        if empty:
            anomalies.append(f"{empty} of {len(queries)} searches on the original returned nothing")
        res["store_bytes_original"] = dir_bytes(orig_store)

        # 3. export beside the running server
        dt, code, err = run_cmd([engram, "export", "--data-dir", orig_store, export_path],
                                args.command_timeout)
        steps.append(step("export (server running)", export_path, dt, code, err))
        if code != 0:
            raise RuntimeError(f"export failed: {err[-500:]}")
        dims, model = decode_vector_dims(export_path)
        res["vector_dims"], res["vector_model"] = dims, model
        exported = (steps[-1]["summary"] or [{}])[0]
        want = {"messages": args.users * args.messages, "memories": args.memories}
        for k, v in want.items():
            if exported.get(k) != v:
                anomalies.append(f"export holds {exported.get(k)} {k}, {v} were added")
        if steps[-1].get("records_without_vector"):
            anomalies.append(f"{steps[-1]['records_without_vector']} exported records carry no vector")

        # 4. stop; export without vectors; import twice into a fresh dir; export the import
        stop_server(server)
        dt, code, err = run_cmd([engram, "export", "--no-vectors", "--data-dir", orig_store, novec_path],
                                args.command_timeout)
        steps.append(step("export --no-vectors (server stopped)", novec_path, dt, code, err))
        size, lines, _ = file_stats(export_path)
        imp_store = os.path.join(imp_root, "data")

        def import_twice(label, target_args):
            """The first import writes everything, the second nothing."""
            dt, code, err = run_cmd([engram, "import", *target_args, export_path], args.command_timeout)
            first = step(f"import into {label}", export_path, dt, code, err, lines - 1, size)
            steps.append(first)
            dt, code, err = run_cmd([engram, "import", *target_args, export_path], args.command_timeout)
            again = step(f"import into {label} again", export_path, dt, code, err, lines - 1, size)
            steps.append(again)
            for r in (first, again):
                if r["exit_code"] != 0:
                    failures.append(f"{r['step']}: exit code {r['exit_code']}: {r['stderr'][-300:]}")
            zero = dict.fromkeys(SUMMARY_KEYS, 0)
            if first["exit_code"] == 0:
                if len(first["summary"]) != 2 or first["summary"][0] != exported or first["summary"][1] != zero:
                    failures.append(f"{first['step']}: wrote {first['summary'][:1]}, skipped "
                                    f"{first['summary'][1:2]}; the export holds {exported}")
            if again["exit_code"] == 0:
                idem = len(again["summary"]) == 2 and again["summary"][0] == zero and again["summary"][1] == exported
                again["idempotent"] = idem
                if not idem:
                    failures.append(f"{again['step']} was not idempotent: wrote {again['summary'][:1]}, "
                                    f"already there {again['summary'][1:2]}; the export holds {exported}")
            return first["exit_code"] == 0

        imported = False
        if import_twice("SQLite", ["--data-dir", imp_store]):
            res["store_bytes_imported"] = dir_bytes(imp_store)
            dt, code, err = run_cmd([engram, "export", "--data-dir", imp_store, reexport_path],
                                    args.command_timeout)
            steps.append(step("export of the imported SQLite dir", reexport_path, dt, code, err))
            if code == 0:
                d = compare_records(export_path, reexport_path)
                res["sqlite_round_trip_identical"] = d is None
                if d:
                    failures.append(f"export of the imported SQLite dir differs from the original's: "
                                    f"{json.dumps(d)}")
            imported = True

        # 5. PostgreSQL
        if not pg["base"]:
            res["postgresql"] = "skipped: ENGRAM_TEST_PG_URL not set"
        elif not shutil.which("psql"):
            res["postgresql"] = "skipped: psql not installed"
            log(res["postgresql"])
        else:
            db = f"engram_transfer_{run.replace('-', '_')}"
            ok, out = psql(pg["base"], f'CREATE DATABASE "{db}"')
            if not ok:
                res["postgresql"] = f"skipped: CREATE DATABASE failed: {out[:300]}"
                log(res["postgresql"])
            else:
                pg["db"] = db
                res["postgresql"] = f"database {db}"
                url = pg_url_with_db(pg["base"], db)
                if import_twice("PostgreSQL", ["--store-url", url]):
                    dt, code, err = run_cmd([engram, "export", "--store-url", url, pg_export_path],
                                            args.command_timeout)
                    steps.append(step("export from PostgreSQL", pg_export_path, dt, code, err))
                    if code != 0:
                        failures.append(f"export from PostgreSQL: exit code {code}: {err[-300:]}")
                    else:
                        d = compare_records(export_path, pg_export_path)
                        res["postgresql_round_trip_identical"] = d is None
                        if d:
                            failures.append(f"export from PostgreSQL differs from the SQLite export: "
                                            f"{json.dumps(d)}")
                drop_pg()

        # 6. searches on the imported dir, and on the original restarted on its own dir: both
        # servers load their scopes from disk, so their answers must be equal to the last bit.
        if imported:
            server, client = start_server(imp_root)
            res["vector_queue_imported_start"] = metric_sum(metrics_text(client), "engram_vector_queue")
            imp_answers = run_searches(client, queries, args.top_k)
            time.sleep(0.5)
            res["vector_queue_imported_after_searches"] = metric_sum(metrics_text(client),
                                                                     "engram_vector_queue")
            stop_server(server)
            server, client = start_server(orig_root)
            restarted = run_searches(client, queries, args.top_k)
            stop_server(server)
            mism = compare_searches(queries, restarted, imp_answers)
            res["search_mismatches"] = mism
            if mism:
                failures.append(f"{len(mism)} of {len(queries)} searches differ between the original "
                                f"(restarted) and the imported store")
            # The original's answers from before its stop against the same server restarted:
            # reported (a property of the server, not of the transfer), not a failure.
            res["search_differences_before_stop"] = compare_searches(queries, base_answers, restarted)
        res["searches"] = {"leaderboard": sum(q[0] == "leaderboard" for q in queries),
                           "v4": sum(q[0] == "v4" for q in queries), "top_k": args.top_k,
                           "queries": [{"api": a, "user_id": u, "query": q} for a, u, q in queries]}
        for r in steps:
            if r["exit_code"] != 0 and not any(f.startswith(r["step"]) for f in failures):
                failures.append(f"{r['step']}: exit code {r['exit_code']}: {r['stderr'][-300:]}")
        exit_code = 0 if not failures and not anomalies else 1
    except (RuntimeError, SystemExit, HttpError, OSError) as e:
        failures.append(f"aborted: {str(e)[:500]}")
    finally:
        for s in list(servers):
            stop_server(s)
        drop_pg()
        timer.cancel()

    res["steps"] = steps
    res["anomalies"] = anomalies
    res["failures"] = failures
    res["seconds"] = round(time.monotonic() - t_start, 1)
    res["passed"] = exit_code == 0
    print_report(res)
    if args.json_out:
        write_json(args.json_out, res)
    if args.keep:
        log(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_code


def print_report(r):
    avx512 = ", ".join(f[len("avx512"):].lstrip("_").upper() for f in r["avx512"])
    fill = r.get("fill") or {}
    print(f"### engram export / import: {fill.get('leaderboard_messages', '–')} Leaderboard messages "
          f"({r['users']} users), {fill.get('v4_memories', '–')} V4 memories\n")
    print(f"CPU: {r['cpu']} ({r['cores']} cores); AVX2 {'yes' if r['avx2'] else 'no'}; "
          f"AVX-512: {avx512 or 'none'}")
    if fill:
        print(f"fill: Leaderboard {fill['leaderboard_seconds']} s ({_f(fill['leaderboard_messages_per_s'], 0)} "
              f"messages/s), V4 {fill['v4_seconds_to_succeeded']} s to SUCCEEDED, vectors "
              f"{fill['vector_wait_seconds']} s more (queue {_f(fill['vector_queue_after_leaderboard_adds'], 0)} "
              f"after the Leaderboard adds, {_f(fill['vector_queue_after_adds'], 0)} after the V4 events); vectors: {r.get('vector_dims')} dims ({r.get('vector_model')})")
    mb = (lambda b: "–" if b is None else f"{b / 1e6:.2f}")
    print(f"store: original {mb(r.get('store_bytes_original'))} MB (server running), imported "
          f"{mb(r.get('store_bytes_imported'))} MB\n")
    print("| step | records | lines | file MB | seconds | records/s | MB/s | written / already there |")
    print("|---|---|---|---|---|---|---|---|")
    for s in r["steps"]:
        summ = s["summary"]
        if s["step"].startswith("import") and len(summ) == 2:
            note = f"{summ[0]['messages']}+{summ[0]['memories']} / {summ[1]['messages']}+{summ[1]['memories']}"
            if "idempotent" in s:
                note += " (idempotent)" if s["idempotent"] else " (**NOT idempotent**)"
        elif s["exit_code"] != 0:
            note = f"exit code {s['exit_code']}"
        else:
            note = ""
        print(f"| {s['step']} | {_f(s.get('records'))} | {_f(s.get('lines'))} | {mb(s.get('bytes'))} | "
              f"{s['seconds']:.2f} | {_f(s.get('records_per_s'), 0)} | {_f(s.get('mb_per_s'))} | {note} |")
    print()
    print("written / already there: Leaderboard messages + agent memories from the import's summary line\n")
    sr = r.get("searches") or {}
    nq = len(sr.get("queries", []))
    mism = r.get("search_mismatches")
    warm = r.get("search_differences_before_stop")

    def count(ms, kind):
        return sum(1 for m in ms if m["kind"] == kind)

    worst = max((m["max_relative_score_difference"] or 0 for m in warm or []), default=None)
    lines = [("SQLite round trip: records byte-identical", r.get("sqlite_round_trip_identical")),
             ("PostgreSQL", r.get("postgresql")),
             ("PostgreSQL round trip: records byte-identical", r.get("postgresql_round_trip_identical")),
             (f"searches (Leaderboard {sr.get('leaderboard')} + V4 {sr.get('v4')}, top_k "
              f"{sr.get('top_k')}) identical on the imported store and the restarted original",
              None if mism is None else f"{nq - len(mism)} of {nq}"),
             ("the original restarted against itself before its stop: results differ / only "
              "scores differ (largest relative score difference)",
              None if warm is None else
              f"{count(warm, 'results')} / {count(warm, 'scores')} ({_f(worst, 1) if not worst else f'{worst:.1e}'})"),
             ("vector queue on the imported server (start / after searches)",
              f"{_f(r.get('vector_queue_imported_start'), 0)} / "
              f"{_f(r.get('vector_queue_imported_after_searches'), 0)}")]
    for name, v in lines:
        print(f"- {name}: {'–' if v is None else v}")
    print()
    for m in mism or []:
        print("SEARCH MISMATCH (restarted original vs imported):", json.dumps(m))
    for m in warm or []:
        print("NOTE: the original before its stop vs restarted:", json.dumps(m))
    for a in r["anomalies"]:
        print("ANOMALY:", a)
    for f in r["failures"]:
        print("FAILURE:", f)
    print("PASS" if r["passed"] else "FAIL", f"({r['seconds']} s)")


if __name__ == "__main__":
    sys.exit(main())

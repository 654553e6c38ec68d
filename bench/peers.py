#!/usr/bin/env python3
"""Engram's search next to engines a user could pick instead, on the same machine, in one run.

Engines (each searches the same corpus with the same queries; every vector engine searches the
IDENTICAL 512-d vectors: the ones Engram stored for the corpus, read back with `engram export`;
texts Engram stores as several passages' vectors, and the queries, are embedded with `engram
embed`, the same built-in model; without the engram engine every text is):
  fts5     SQLite FTS5 (BM25, porter) + exact cosine over the vectors (pure Python), fused by
           reciprocal rank fusion (k 60, 100 candidates a side)
  xapian   Xapian BM25Weight, English stemming, text only (python3-xapian)
  orama    @orama/orama hybrid mode (bench/peers/orama.mjs)
  lancedb  @lancedb/lancedb full-text index + flat vector search, RRF reranker
           (bench/peers/lancedb.mjs)
  engram   `engram serve` end to end over HTTP: POST /leaderboard/add and /leaderboard/search
           (query-vector cache off, so every search embeds its query)

Per engine: index build time for --memories memories in one index / scope, single-query
latency p50/p99 (sequential, top 10), throughput with 2 concurrent workers, RSS, on-disk bytes
per memory, recall@10 on LoCoMo dev (each question searched within its own conversation's turns,
scored as bench/replay.py scores it). Peers search precomputed query vectors, Engram embeds the
query inside its search; peers' figures are also given with Engram's measured per-query
embedding time added.

  python3 bench/peers.py --engram build/engram --memories 10000 --json-out /tmp/peers.json
  python3 bench/peers.py --engram build/engram --memories 100000 --engines fts5,xapian,engram

Data from ../shared/data (benchlib.DEFAULT_DATA_DIR): locomo_dev.json, longmemeval_s_dev.json.xz;
a missing file prints `skipping: …` and exits 0. Python 3 standard library only (plus the
optional python3-xapian); Node engines need `npm install` in bench/peers (a missing engine is skipped
with a message).
"""

import argparse
import array
import base64
import hashlib
import heapq
import json
import operator
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (DEFAULT_DATA_DIR, REPO_ROOT, Client, EngramServer, _f, cpu_name,  # noqa: E402
                      dir_bytes, log, metric_sum, metrics_text, percentile, rss_kib, write_json)
import replay  # noqa: E402  (the LoCoMo / LongMemEval loaders, the Leaderboard fill, scoring)
from hnsw_scale import CLAUSE, MIN_CHARS, SENTENCE  # noqa: E402  (how a message is cut)

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
PEERS_DIR = os.path.join(BENCH_DIR, "peers")
DIM = 512
TOP_K = 10
RRF_K = 60           # reciprocal rank fusion constant (the usual 60)
RRF_DEPTH = 100      # candidates taken from each side before fusion
LONG_MIN_CHARS = 1024
ENGINES = ("fts5", "xapian", "orama", "lancedb", "engram")
ENGINE_LABEL = {
    "fts5": "SQLite FTS5 + cosine (pure Python), RRF",
    "xapian": "Xapian BM25 (text only)",
    "orama": "Orama hybrid",
    "lancedb": "LanceDB FTS + vector, RRF",
    "engram": "Engram (HTTP, embeds the query)",
}


# ----------------------------------------------------------------------------------------------
# Corpus: the LoCoMo dev turns first (their conversations are the quality groups), then LongMemEval
# turns, then (--fill) pairs of earlier turns joined, or the sentences and clauses of LongMemEval
# messages as bench/hnsw_scale.py cuts them, until N unique texts.

class Doc:
    __slots__ = ("text", "role", "ts_ms", "turn")

    def __init__(self, text, role, ts_ms, turn=None):
        self.text, self.role, self.ts_ms, self.turn = text, role, ts_ms, turn


def embed_cli_splits(text):
    """`engram embed` takes its texts as command-line arguments, and its argument parser reads
    one that starts with "[" and ends with "]" as a list of several values (JSON arrays in
    LongMemEval do); such texts are left out so every text gets exactly one vector."""
    return text[:1] in "[{" and text[-1:] in "]}"


# What the Leaderboard counts as white space (src/core/leaderboard_service.cc): a message of only
# these is accepted and stores nothing (docs/leaderboard.md), so the corpus leaves such texts out
# and every engine indexes the same memories. Python's str.isspace differs (it lacks U+200B and
# U+FEFF and adds U+001C-U+001F).
LEADERBOARD_SPACES = frozenset(" \t\n\v\f\r\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004"
                               "\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u2028\u2029\u202f"
                               "\u205f\u3000\ufeff")


def leaderboard_blank(text):
    return all(c in LEADERBOARD_SPACES for c in text)


def fragments(lme_users):
    """The sentences and clauses of the LongMemEval messages (at least MIN_CHARS characters,
    whitespace collapsed), in the dataset's order: as bench/hnsw_scale.py cuts them."""
    for u in lme_users:
        for s in u.sessions:
            for m in s.messages:
                if not isinstance(m.content, str):
                    continue
                role = m.role if m.role in ("user", "assistant") else "user"
                for sentence in SENTENCE.split(m.content):
                    for t in [sentence] + CLAUSE.split(sentence):
                        t = " ".join(t.split())
                        if len(t) >= MIN_CHARS:
                            yield Doc(t, role, s.ts_ms)


def build_corpus(locomo, lme_users, n, long_mode, fill_mode="pairs"):
    docs, seen = [], set()
    groups = []          # (start, end) of each LoCoMo conversation in docs
    for u in locomo.users:
        start = len(docs)
        for s in u.sessions:
            for m in s.messages:
                if m.content not in seen:
                    seen.add(m.content)
                    docs.append(Doc(m.content, m.role, s.ts_ms, m.turn))
        groups.append((start, len(docs)))
    fill = []

    def admit(text):
        """Takes `text` into the fill when every engine can index it: new, not blank as the
        Leaderboard counts it, one `engram embed` argument."""
        if text in seen or leaderboard_blank(text) or embed_cli_splits(text):
            return False
        seen.add(text)
        return True

    for u in lme_users:
        for s in u.sessions:
            for m in s.messages:
                c = m.content
                if not isinstance(c, str) or (len(c) > LONG_MIN_CHARS) != long_mode \
                        or not admit(c):
                    continue
                fill.append(Doc(c, m.role if m.role in ("user", "assistant") else "user", s.ts_ms))
    if fill_mode == "fragments":
        for d in fragments(lme_users):
            if len(docs) + len(fill) >= n:
                break
            if (len(d.text) > LONG_MIN_CHARS) == long_mode and admit(d.text):
                fill.append(d)
    base = fill[:]
    k = 1
    while len(docs) + len(fill) < n and base and k < len(base):
        # another pass: each text joined with the one k places further on (unique, same style)
        for i, d in enumerate(base):
            if len(docs) + len(fill) >= n:
                break
            e = base[(i + k) % len(base)]
            t = d.text + "\n" + e.text
            if admit(t):
                fill.append(Doc(t, d.role, d.ts_ms))
        k += 1
    docs += fill[:max(0, n - len(docs))]
    return docs[:max(n, groups[-1][1])], groups


# ----------------------------------------------------------------------------------------------
# Vectors: `engram embed TEXT...` prints one JSON array a line; cached by a hash of the texts.

def vector_cache_path(model_dir, texts, cache_dir):
    h = hashlib.sha256()
    h.update(os.path.basename(os.path.realpath(model_dir or "")).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    os.makedirs(cache_dir, exist_ok=True)
    return os.path.join(cache_dir, f"vectors-{h.hexdigest()[:24]}-{len(texts)}.f32")


def cached_vectors(path, n):
    return os.path.exists(path) and os.path.getsize(path) == n * DIM * 4


def embed_texts(binary, model_dir, texts, cache_dir, known=None):
    """The texts' vectors in a float32 file (cached by a hash of the texts): `known` (index ->
    array of DIM floats, e.g. read from Engram's export) as given, the rest embedded with `engram
    embed`. Returns (path, seconds spent embedding or None)."""
    path = vector_cache_path(model_dir, texts, cache_dir)
    if cached_vectors(path, len(texts)):
        log(f"vectors: {len(texts)} from cache {path}")
        return path, None
    out = [None] * len(texts)
    for i, v in (known or {}).items():
        out[i] = v
    todo = [i for i in range(len(texts)) if out[i] is None]
    log(f"vectors: {len(texts) - len(todo)} given, embedding {len(todo)} texts with "
        f"`{binary} embed` (2 processes)")
    batches, cur, size = [], [], 0
    for i in todo:
        t = texts[i]
        if cur and (len(cur) >= 1000 or size + len(t) > 1_000_000):
            batches.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += len(t) + 1
    if cur:
        batches.append(cur)
    cmd = [binary, "embed"] + ([f"--model-dir={model_dir}"] if model_dir else [])
    t0 = time.perf_counter()
    done = [0]
    lock = threading.Lock()
    errors = []

    def worker(mine):
        for b in mine:
            # "--" ends the options: a text starting with "-" is a text
            p = subprocess.run(cmd + ["--"] + [texts[i] for i in b], capture_output=True, text=True,
                               timeout=600)
            lines = p.stdout.splitlines()
            if p.returncode != 0 or len(lines) != len(b):
                errors.append(f"embed exited {p.returncode} with {len(lines)}/{len(b)} vectors: "
                              f"{p.stderr.strip()[:300]}")
                return
            for i, line in zip(b, lines):
                v = json.loads(line)
                if len(v) != DIM:
                    errors.append(f"vector of {len(v)} dimensions, expected {DIM}")
                    return
                out[i] = v
            with lock:
                done[0] += len(b)
                if done[0] // 5000 != (done[0] - len(b)) // 5000:
                    log(f"  {done[0]}/{len(texts)} embedded")

    threads = [threading.Thread(target=worker, args=(batches[j::2],)) for j in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("embedding failed: " + errors[0])
    secs = time.perf_counter() - t0
    a = array.array("f")
    for v in out:
        a.extend(v)  # a list of floats or an array('f')
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        a.tofile(f)
    os.replace(tmp, path)
    log(f"vectors: {len(todo)} embedded in {secs:.1f} s -> {path}")
    return path, secs


def exported_vectors(binary, store_dir, user_id, texts):
    """The vectors Engram stored for `texts` (Leaderboard messages of `user_id`), read with
    `engram export` beside the server: index -> array of DIM floats. A message stored as several
    passages has one vector per passage (src/core/passage_vectors.h) and is left out, as is any
    text the export does not hold verbatim."""
    index = {t: i for i, t in enumerate(texts)}
    found = {}
    cmd = [binary, "export", "-", f"--data-dir={store_dir}", f"--user={user_id}"]
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        for line in p.stdout:
            rec = json.loads(line)
            if rec.get("type") != "leaderboard_message":
                continue
            i = index.get(rec.get("text"))
            vec = rec.get("vector")
            if i is None or not vec:
                continue
            data = base64.b64decode(vec["data"])
            if len(data) != DIM * 4:
                continue
            v = array.array("f")
            v.frombytes(data)
            if sys.byteorder != "little":
                v.byteswap()
            found[i] = v
        err = p.stderr.read().decode("utf-8", "replace")
    if p.returncode != 0:
        raise SystemExit(f"engram export exited {p.returncode}: {err.strip()[:300]}")
    log(f"vectors: {len(found)} of {len(texts)} read from Engram's export in "
        f"{time.perf_counter() - t0:.1f} s")
    return found


def read_vectors(path, start=0, count=None):
    a = array.array("f")
    with open(path, "rb") as f:
        f.seek(start * DIM * 4)
        n = count if count is not None else (os.path.getsize(path) // 4 // DIM - start)
        a.fromfile(f, n * DIM)
    return a


# ----------------------------------------------------------------------------------------------
# Python engines. Each runs in a worker process of its own (`--worker NAME`), so its RSS is its own.

def _rss_mb():
    k = rss_kib(os.getpid())
    return None if k is None else round(k / 1024, 1)


class Fts5Cosine:
    """SQLite FTS5 (porter) on a file + float32 vector BLOBs in the same file, scanned in memory
    (pure Python dot products; the vectors are unit length, so dot = cosine); RRF of both."""

    def __init__(self, job, path):
        self.job, self.path = job, path
        self.db_path = os.path.join(path, "fts.db")
        self.ids, self.vecs = [], []
        self.db = None

    def build(self, texts, vecs, start, end):
        os.makedirs(self.path, exist_ok=True)
        db = sqlite3.connect(self.db_path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter')")
        db.execute("CREATE TABLE vecs(id INTEGER PRIMARY KEY, v BLOB)")
        db.executemany("INSERT INTO docs(rowid, content) VALUES (?, ?)",
                       ((i, texts[i]) for i in range(start, end)))
        db.executemany("INSERT INTO vecs(id, v) VALUES (?, ?)",
                       ((i, vecs[(i - start) * DIM:(i - start + 1) * DIM].tobytes())
                        for i in range(start, end)))
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db = db
        self._load_vectors()

    def _load_vectors(self):
        self.ids, self.vecs = [], []
        for i, blob in self.db.execute("SELECT id, v FROM vecs ORDER BY id"):
            self.ids.append(i)
            self.vecs.append(array.array("f", blob))

    def reopen(self):
        self.db = sqlite3.connect(self.db_path)

    def search(self, qtext, qvec, k):
        mq = replay.fts5_query(qtext)
        text = [r[0] for r in self.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
            (mq, RRF_DEPTH))] if mq else []
        mul = operator.mul
        scores = [sum(map(mul, qvec, v)) for v in self.vecs]
        best = heapq.nlargest(RRF_DEPTH, range(len(scores)), key=scores.__getitem__)
        vec = [self.ids[j] for j in best]
        fused = {}
        for lst in (text, vec):
            for r, i in enumerate(lst):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + r + 1)
        return heapq.nlargest(k, fused, key=fused.__getitem__)


class XapianBM25:
    """Xapian on disk: TermGenerator + QueryParser with the English stemmer (STEM_SOME), the same
    short stop-word list as the FTS5 baseline, default operator OR, BM25Weight. Text only."""

    def __init__(self, job, path):
        self.job, self.path = job, path
        self.db = None
        self.qp = None

    def build(self, texts, vecs, start, end):
        db = xapian.WritableDatabase(self.path, xapian.DB_CREATE_OR_OVERWRITE)
        tg = xapian.TermGenerator()
        tg.set_stemmer(xapian.Stem("english"))
        for i in range(start, end):
            doc = xapian.Document()
            tg.set_document(doc)
            tg.index_text(texts[i])
            db.replace_document(i + 1, doc)   # docid = corpus index + 1
        db.commit()
        db.close()
        self.reopen()

    def reopen(self):
        self.db = xapian.Database(self.path)
        qp = xapian.QueryParser()
        qp.set_stemmer(xapian.Stem("english"))
        qp.set_stemming_strategy(xapian.QueryParser.STEM_SOME)
        qp.set_default_op(xapian.Query.OP_OR)
        stopper = xapian.SimpleStopper()
        for w in replay.STOPWORDS:
            stopper.add(w)
        self._stopper = stopper   # the parser keeps a reference only
        qp.set_stopper(stopper)
        qp.set_database(self.db)
        self.qp = qp
        self.enquire = xapian.Enquire(self.db)
        self.enquire.set_weighting_scheme(xapian.BM25Weight())

    def search(self, qtext, qvec, k):
        q = self.qp.parse_query(qtext, 0)
        self.enquire.set_query(q)
        return [m.docid - 1 for m in self.enquire.get_mset(0, k)]


PY_ENGINES = {"fts5": Fts5Cosine, "xapian": XapianBM25}


def _child_throughput(eng, queries, qvecs, order, deadline, wfd):
    eng.reopen()
    n = 0
    for qi in order:
        if time.perf_counter() >= deadline:
            break
        eng.search(queries[qi], qvecs[qi], TOP_K)
        n += 1
    os.write(wfd, f"{n}\n".encode())
    os.close(wfd)


def run_py_worker(name, job_path, out_path):
    job = json.load(open(job_path, encoding="utf-8"))
    texts = json.load(open(job["texts"], encoding="utf-8"))
    queries = job["queries"]
    qv = read_vectors(job["qvecs"])
    qvecs = [qv[i * DIM:(i + 1) * DIM].tolist() for i in range(len(queries))]
    vecs = read_vectors(job["vecs"]) if name == "fts5" else None
    rss_runtime = _rss_mb()
    out = {"engine": name, "rss_mb_loaded_data": rss_runtime}
    cls = PY_ENGINES[name]
    path = os.path.join(job["workdir"], name)
    eng = cls(job, path)
    t0 = time.perf_counter()
    eng.build(texts, vecs, 0, len(texts))
    out["build_s"] = time.perf_counter() - t0
    out["disk_bytes"] = dir_bytes(path)
    del vecs
    order = job["order"]
    budget = job["phase_seconds"]
    for qi in order[:5]:
        eng.search(queries[qi], qvecs[qi], TOP_K)
    lat = []
    t_end = time.perf_counter() + budget
    for qi in order[:job["max_queries"]]:
        if time.perf_counter() >= t_end and len(lat) >= 20:
            break
        t1 = time.perf_counter()
        eng.search(queries[qi], qvecs[qi], TOP_K)
        lat.append((time.perf_counter() - t1) * 1000)
    out["lat_ms"] = lat
    out["rss_mb"] = _rss_mb()
    # throughput: 2 forked workers, each with its own handle, alternate queries
    order2 = (order * 10)[:max(len(order) * 10, 1)]
    deadline = time.perf_counter() + min(budget, 30)
    pipes, pids = [], []
    t1 = time.perf_counter()
    for w in range(2):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                _child_throughput(eng, queries, qvecs, order2[w::2], deadline, wfd)
            finally:
                os._exit(0)
        os.close(wfd)
        pipes.append(r)
        pids.append(pid)
    total = 0
    for r, pid in zip(pipes, pids):
        with os.fdopen(r) as f:
            s = f.read().strip()
        os.waitpid(pid, 0)
        total += int(s or 0)
    wall = time.perf_counter() - t1
    out["tput_qps"] = total / wall if wall else None
    out["tput_queries"] = total
    # quality: one index per LoCoMo conversation, each question searched in its own
    ranked = [None] * len(queries)
    for g, (s, e) in enumerate(job["groups"]):
        gv = read_vectors(job["vecs"], s, e - s) if name == "fts5" else None
        ge = cls(job, os.path.join(job["workdir"], f"{name}-g{g}"))
        ge.build(texts, gv, s, e)
        for qi, qg in enumerate(job["qgroup"]):
            if qg == g:
                ranked[qi] = ge.search(queries[qi], qvecs[qi], TOP_K)
    out["ranked"] = ranked
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)


# ----------------------------------------------------------------------------------------------
# Running the engines

def run_worker_process(name, cmd, timeout_s, out_path):
    log(f"[{name}] " + " ".join(cmd))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return {"engine": name, "error": f"timed out after {timeout_s:.0f} s"}
    if p.returncode != 0 or not os.path.exists(out_path):
        return {"engine": name, "error": f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-600:]}"}
    r = json.load(open(out_path, encoding="utf-8"))
    r["wall_s"] = round(time.perf_counter() - t0, 1)
    return r


def python_for(name):
    """The interpreter for a Python engine's worker: this one, or for Xapian the system python3
    when only it has the Debian python3-xapian module."""
    if name != "xapian" or xapian is not None:
        return sys.executable
    for py in ("/usr/bin/python3",):
        if os.path.realpath(py) != os.path.realpath(sys.executable) and os.access(py, os.X_OK):
            if subprocess.run([py, "-c", "import xapian"], capture_output=True).returncode == 0:
                return py
    return None


def node_available():
    node = shutil.which("node")
    if not node:
        return None, "node not found on PATH"
    if not os.path.isdir(os.path.join(PEERS_DIR, "node_modules")):
        return None, "bench/peers/node_modules missing (run `npm install` in bench/peers)"
    return node, None


def engram_args(args):
    base = ["--query-cache-entries=0"] + ([f"--model-dir={args.model_dir}"] if args.model_dir else [])
    return base + args.server_arg


def fill_engram(args, corpus_ds, run_id):
    """Engram's index build: the N memories as Leaderboard adds into one scope, timed until their
    vectors are stored too. Runs first, alone on the machine; the server then stops and its data
    directory stays, for `engram export` (the peers' vectors) and for run_engram's searches."""
    out = {"engine": "engram"}
    srv = EngramServer(args.engram, extra_args=engram_args(args) + ["--leaderboard-results=turns"],
                       keep_data=True)
    srv.start()
    try:
        client = Client(srv.url)
        sc = replay.Scorer("engram-fill", "engram")
        before = replay.model_counters(client)
        out["rss_mb_idle"] = round(rss_kib(srv.pid) / 1024, 1)
        t0 = time.perf_counter()
        n_msgs, _check = replay.fill_leaderboard(corpus_ds, client, sc, run_id, 2, 50)
        replay.record_fill(client, sc, before, t0, n_msgs, True)
        out["build_s"] = time.perf_counter() - t0
        out["add_errors"] = sc.add_errors
        out["fill"] = sc.extra
        out["rss_mb_after_build"] = round(rss_kib(srv.pid) / 1024, 1)
    finally:
        srv.stop(remove=False)
    out["data_dir"], out["store_dir"] = srv.data_dir, srv.store_dir
    out["user_id"] = replay.user_id_of(corpus_ds, run_id, corpus_ds.users[0])
    return out


def run_engram(args, job, built, run_id, locomo, quality_qs):
    """Engram over HTTP, the query-vector cache off (every search embeds its query). Results in
    `turns` mode (one memory a result, like the peers): the server restarted on the N-memory scope
    fill_engram built (speed, RSS with the scope loaded, disk), one for LoCoMo (one user per
    conversation, as bench/replay.py adds it); then LoCoMo again on a server whose every result is
    an excerpt (quality only: `excerpts` without its lead, since with the default lead of 30 the
    first 10 results are single turns, as in `turns`)."""
    base = engram_args(args)
    out = dict(built)
    for k in ("data_dir", "store_dir", "user_id"):
        out.pop(k, None)
    with EngramServer(args.engram, extra_args=base + ["--leaderboard-results=turns"],
                      keep_data=args.keep, data_dir=built["data_dir"]) as srv:
        client = Client(srv.url)
        uid = built["user_id"]
        queries, order = job["queries"], job["order"]
        empty = [0]

        def search(qi):
            resp, dt = client.post_json("/leaderboard/search",
                                        {"query": queries[qi], "user_id": uid, "top_k": TOP_K})
            if not (isinstance(resp, dict) and resp.get("data")):
                empty[0] += 1
            return dt

        for i in range(5):   # warm-up: the scope's load after the restart; not LoCoMo questions
            client.post_json("/leaderboard/search",
                             {"query": f"warm-up query number {i}", "user_id": uid, "top_k": TOP_K})
        m0 = replay.model_counters(client)
        lat = []
        t_end = time.perf_counter() + args.phase_seconds
        for qi in order[:args.max_queries]:
            if time.perf_counter() >= t_end and len(lat) >= 20:
                break
            lat.append(search(qi) * 1000)
        m1 = replay.model_counters(client)
        out["lat_ms"] = lat
        if m0 and m1:
            texts = m1["engram_embed_texts_total"] - m0["engram_embed_texts_total"]
            secs = m1["engram_embed_seconds_total"] - m0["engram_embed_seconds_total"]
            out["embed_texts_during_latency"] = texts
            out["embed_ms_per_query"] = secs * 1000 / texts if texts else None
        out["rss_mb"] = round(rss_kib(srv.pid) / 1024, 1)
        out["disk_bytes"] = dir_bytes(srv.store_dir)
        # throughput: 2 client threads (keep-alive, one connection each)
        n = [0, 0]
        deadline = time.perf_counter() + min(args.phase_seconds, 30)
        order2 = order * 10

        def worker(w):
            for qi in order2[w::2]:
                if time.perf_counter() >= deadline:
                    break
                search(qi)
                n[w] += 1
        t1 = time.perf_counter()
        ths = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        wall = time.perf_counter() - t1
        out["tput_qps"] = sum(n) / wall
        out["tput_queries"] = sum(n)
        out["speed_searches_without_results"] = empty[0]
        srv.stop(remove=False)
        out["disk_bytes_with_wal"] = out["disk_bytes"]
        out["disk_bytes"] = dir_bytes(srv.store_dir)   # after the clean stop (WAL checkpointed)
    for mode in ("turns", "excerpts"):
        flags = [f"--leaderboard-results={mode}"]
        if mode == "excerpts":
            flags.append("--excerpt-lead-results=0")
        with EngramServer(args.engram, extra_args=base + flags) as srv:
            client = Client(srv.url)
            qsc = replay.Scorer("engram", "engram")
            replay.fill_leaderboard(locomo, client, qsc, run_id, 2, replay.CHUNK)
            replay.wait_vector_queue(client)
            for q in quality_qs:
                resp, _dt = client.post_json("/leaderboard/search", {
                    "query": q.query, "user_id": replay.user_id_of(locomo, run_id, q.user),
                    "top_k": TOP_K})
                data = resp.get("data") if isinstance(resp, dict) else None
                replay.score_results(qsc, q, [replay._item(x, "content") for x in (data or [])])
            s = qsc.summary()
            key = "" if mode == "turns" else "_excerpts"
            out["recall@10" + key] = s["recall@10"]
            out["results_unmatched" + key] = s["results_unmatched"]
            out["quality_tokens_mean" + key] = s["tokens"]
    return out


def score_peer(ranked, quality_qs, docs):
    sc = replay.Scorer("peer", "peer")
    for q, ids in zip(quality_qs, ranked):
        ids = ids or []
        sc.score(q, [[docs[i].turn] if docs[i].turn else [] for i in ids],
                 [len(docs[i].text) for i in ids])
    s = sc.summary()
    return s["recall@10"], s["tokens"]


# ----------------------------------------------------------------------------------------------
# Report

def cpu_features():
    try:
        flags = open("/proc/cpuinfo").read().split("flags", 1)[1].split("\n", 1)[0].split()
    except (OSError, IndexError):
        return ""
    names = [("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_vnni", "AVX-512 VNNI"),
             ("avx_vnni", "AVX-VNNI"), ("avx512_bf16", "AVX-512 BF16")]
    return ", ".join(n for f, n in names if f in flags)


def summarise(r, embed_ms):
    lat = r.get("lat_ms") or []
    s = {"engine": r["engine"], "label": ENGINE_LABEL[r["engine"]]}
    if r.get("error"):
        s["error"] = r["error"]
        return s
    s["build_s"] = round(r["build_s"], 2)
    s["p50_ms"] = percentile(lat, 50)
    s["p99_ms"] = percentile(lat, 99)
    s["timed_queries"] = len(lat)
    s["tput_qps"] = r.get("tput_qps")
    s["rss_mb"] = r.get("rss_mb")
    s["disk_bytes"] = r.get("disk_bytes")
    s["recall@10"] = r.get("recall@10")
    s["answer_tokens_mean"] = r.get("quality_tokens_mean")
    for k in ("recall@10_excerpts", "quality_tokens_mean_excerpts", "embed_ms_per_query"):
        if r.get(k) is not None:
            s[k] = r[k]
    if r.get("tput_note"):
        s["tput_note"] = r["tput_note"]
    s["vectors"] = r["engine"] != "xapian"
    if r["engine"] != "engram" and embed_ms is not None and s["p50_ms"] is not None:
        e = embed_ms if s["vectors"] else 0.0
        s["p50_ms_with_embed"] = s["p50_ms"] + e
        s["p99_ms_with_embed"] = s["p99_ms"] + e
        # 2 workers, each embeds then searches: 2 / (2 / qps + embed seconds)
        s["tput_qps_with_embed"] = (2 / (2 / s["tput_qps"] + e / 1000)) if s["tput_qps"] else None
    return s


def ms(v):
    return "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")


def qps(v):
    return "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:,.0f}")


def rfmt(v):
    """A ratio with 2 significant digits below 1, 2 decimals up to 100."""
    return "–" if v is None else (f"{v:.2g}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:,.0f}")


# why a peer can come out ahead of Engram on a figure (printed only where it does)
WHY = {
    "build": "Engram's build embeds every memory with its model inside the timing and stores each "
             "add durably; the peer was handed precomputed vectors",
    "p50": "the peer answers in-process; Engram's time includes HTTP, JSON and embedding the query",
    "p99": "the peer answers in-process; Engram's time includes HTTP, JSON and embedding the query",
    "q/s": "the peer answers in-process; Engram's 2 client threads share the 2 cores with the server",
    "RSS": "Engram's RSS includes the built-in embedding model and the server's threads and caches",
    "disk": "Engram's data dir keeps the text with ids, times and sessions in SQLite beside the "
            "vectors and the full-text index",
    "recall@10": "ranking differs on this question set",
}


WHY_TEXT_ONLY = {
    "build": "the peer indexes text only; Engram's build also embeds every memory with its model "
             "and stores each add durably",
    "p50": "text only and in-process: no query embedding, no vector scan, no HTTP",
    "p99": "text only and in-process: no query embedding, no vector scan, no HTTP",
    "q/s": "text only and in-process: no query embedding, no vector scan, no HTTP",
    "RSS": "the peer holds a text index only; Engram's RSS includes the embedding model and the "
           "vectors",
    "disk": "the peer stores a text index only, no vectors",
}


def markdown(rows, meta):
    n = meta["memories"]
    lines = [f"{meta['cpu']}, {meta['cores']} cores; {n:,} memories "
             f"({'long messages, ' if meta['long'] else ''}{meta['mean_chars']:.0f} characters mean) "
             f"in one index / scope; {meta['quality_questions']} LoCoMo questions; Engram's query "
             f"embedding {ms(meta['embed_ms_per_query'])} ms a query (its /metrics, during the "
             f"latency phase)" + (f"; Engram's build includes embedding the memories "
                                   f"({meta['engram_fill_model_seconds']:.1f} model-seconds)"
                                   if meta.get("engram_fill_model_seconds") else ""),
             "",
             "| engine | build s | p50 ms | p99 ms | p50 / p99 ms + query embedding | q/s, 2 workers "
             "| q/s + embedding | RSS MB | disk B / memory | recall@10 | tokens / answer |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for s in rows:
        if s.get("error"):
            lines.append(f"| {s['label']} | failed: {s['error'][:160]} ||||||||||")
            continue
        disk = f"{s['disk_bytes'] / n:,.0f}" if s.get("disk_bytes") else "– (in memory)"
        if s["engine"] == "engram":
            we = "(included)"
            tqe = "(included)"
        elif not s["vectors"]:
            we = "(no vectors)"
            tqe = "(no vectors)"
        else:
            we = f"{ms(s.get('p50_ms_with_embed'))} / {ms(s.get('p99_ms_with_embed'))}"
            tqe = qps(s.get("tput_qps_with_embed"))
        lines.append(f"| {s['label']} | {s['build_s']:.1f} | {ms(s['p50_ms'])} | {ms(s['p99_ms'])} "
                     f"| {we} | {qps(s['tput_qps'])} | {tqe} | {_f(s['rss_mb'], 0)} | {disk} "
                     f"| {_f(s['recall@10'], 3)} | {_f(s['answer_tokens_mean'], 0)} |")
        if s.get("tput_note"):
            notes.append(f"{s['label']} q/s: {s['tput_note']}")
        if s.get("recall@10_excerpts") is not None:
            lines.append(f"| Engram, every result an excerpt | | | | | | | | "
                         f"| {_f(s['recall@10_excerpts'], 3)} | {_f(s['quality_tokens_mean_excerpts'], 0)} |")
    if notes:
        lines += [""] + [f"- {x}" for x in notes]
    eng = next((s for s in rows if s["engine"] == "engram" and not s.get("error")), None)
    if eng:
        lines += ["", "Engram / peer: time, memory and disk below 1 and throughput and recall above "
                  "1 favour Engram; the peers' latency and throughput include the query embedding.",
                  "", "| peer | build | p50 | p99 | q/s | RSS | disk | recall@10 |",
                  "|---|---|---|---|---|---|---|---|"]
        wins = []

        def ratio(a, b):
            return a / b if a is not None and b else None
        for s in rows:
            if s is eng or s.get("error"):
                continue
            r = {"build": ratio(eng["build_s"], s["build_s"]),
                 "p50": ratio(eng["p50_ms"], s.get("p50_ms_with_embed", s["p50_ms"])),
                 "p99": ratio(eng["p99_ms"], s.get("p99_ms_with_embed", s["p99_ms"])),
                 "q/s": ratio(eng["tput_qps"], s.get("tput_qps_with_embed", s["tput_qps"])),
                 "RSS": ratio(eng["rss_mb"], s["rss_mb"]),
                 "disk": ratio(eng["disk_bytes"], s["disk_bytes"]),
                 "recall@10": ratio(eng["recall@10"], s["recall@10"])}
            lines.append(f"| {s['label']} | " + " | ".join(rfmt(v) for v in r.values()) + " |")
            for k, v in r.items():
                higher_better = k in ("q/s", "recall@10")
                if v is not None and ((v < 1) if higher_better else (v > 1)):
                    why = WHY_TEXT_ONLY.get(k, WHY[k]) if not s["vectors"] else WHY[k]
                    wins.append(f"- {s['label']} wins on {k} ({rfmt(v)}): {why}.")
        if wins:
            lines += ["", "Where a peer wins:", ""] + wins
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------

class Stopped(BaseException):
    """SIGTERM: a BaseException so the engines' error handlers (which report an engine's failure
    and go on) let it through to the finally blocks."""


def stop_on_signal(_sig, _frame):
    raise Stopped()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", metavar="PATH", default=os.path.join(REPO_ROOT, "build", "engram"))
    ap.add_argument("--model-dir", default=None,
                    help="built-in model directory (default: third_party/model/package/dist when present)")
    ap.add_argument("--server-arg", action="append", default=[], help="extra `engram serve` argument")
    ap.add_argument("--memories", type=int, default=10000)
    ap.add_argument("--long", action="store_true", help="long messages (over 1 KB) instead of short turns")
    ap.add_argument("--fill", choices=("pairs", "fragments"), default="pairs",
                    help="after the unique turns: pairs of turns joined (default), or the "
                         "messages' sentences and clauses first (short memories at a million)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--phase-seconds", type=float, default=60.0,
                    help="time bound of each engine's latency phase (throughput: at most 30 s)")
    ap.add_argument("--max-queries", type=int, default=760, help="timed queries at most (sequential)")
    ap.add_argument("--engine-timeout", type=float, default=1800.0)
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "engram-peers-cache"),
                    help="vectors cached here by a hash of the texts")
    ap.add_argument("--json-out")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    # `timeout` and service managers stop with SIGTERM: exit through the finally blocks, so the
    # server stops and the temporary indexes (gigabytes at 100,000 memories) are removed.
    signal.signal(signal.SIGTERM, stop_on_signal)

    if args.worker:
        return run_py_worker(args.worker, args.job, args.out)

    locomo_path = os.path.join(args.data_dir, replay.DATASET_FILES["locomo"])
    lme_path = os.path.join(args.data_dir, replay.DATASET_FILES["longmemeval"])
    for p in (locomo_path, lme_path):
        if not os.path.exists(p):
            print(f"skipping: {p} not found")
            return 0
    if args.model_dir is None:
        d = os.path.join(REPO_ROOT, "third_party", "model", "package", "dist")
        args.model_dir = d if os.path.isdir(d) else None
    args.engram = os.path.abspath(args.engram)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"unknown engine {e}; choose from {','.join(ENGINES)}")

    locomo = replay.load_dataset("locomo", locomo_path, 0)
    lme = replay.load_dataset("longmemeval", lme_path, 0)
    docs, groups = build_corpus(locomo, lme.users, args.memories, args.long, args.fill)
    if len(docs) < args.memories:
        log(f"note: only {len(docs)} unique texts available")
    turn_index = {}
    for g, (s, e) in enumerate(groups):
        for i in range(s, e):
            turn_index[(g, docs[i].turn)] = i
    user_group = {id(u): g for g, u in enumerate(locomo.users)}
    quality_qs = locomo.questions
    queries = [q.query for q in quality_qs]
    log(f"corpus: {len(docs)} memories ({sum(len(d.text) for d in docs) / len(docs):.0f} chars "
        f"mean), {len(groups)} LoCoMo conversations = docs 0..{groups[-1][1]}, {len(queries)} questions")

    tmp = tempfile.mkdtemp(prefix="engram-peers-")
    results = {}
    built = None
    try:
        texts = [d.text for d in docs]
        run_id = f"peers-{os.getpid()}"
        known = None
        if "engram" in engines:
            sessions = [replay.Session(f"c{j // 50}", docs[j].ts_ms,
                                       [replay.Message(d.role, d.text, None) for d in docs[j:j + 50]])
                        for j in range(0, len(docs), 50)]
            corpus_ds = replay.Dataset("peers", [replay.User("speed", sessions)], [], [])
            t0 = time.perf_counter()
            try:
                built = fill_engram(args, corpus_ds, run_id)
                if not cached_vectors(vector_cache_path(args.model_dir, texts, args.cache_dir),
                                      len(texts)):
                    known = exported_vectors(args.engram, built["store_dir"], built["user_id"],
                                             texts)
            except (SystemExit, OSError, Exception) as e:  # noqa: BLE001 (report, go on)
                results["engram"] = {"engine": "engram", "error": str(e)[:600],
                                     "wall_s": round(time.perf_counter() - t0, 1)}
        vec_path, vec_secs = embed_texts(args.engram, args.model_dir, texts, args.cache_dir, known)
        qvec_path, _ = embed_texts(args.engram, args.model_dir, queries, args.cache_dir)
        texts_path = os.path.join(tmp, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        # the timed queries: every LoCoMo question once, in a fixed interleaved order
        order = [i for k in range(7) for i in range(k, len(queries), 7)]
        job = {"texts": texts_path, "vecs": vec_path, "qvecs": qvec_path, "dim": DIM,
               "queries": queries, "groups": groups,
               "qgroup": [user_group[id(q.user)] for q in quality_qs], "k": TOP_K,
               "order": order, "phase_seconds": args.phase_seconds, "max_queries": args.max_queries,
               "workdir": tmp, "rrf_k": RRF_K, "rrf_depth": RRF_DEPTH}
        job_path = os.path.join(tmp, "job.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)

        def report():
            """The table so far, written to --json-out after every engine, so that a run stopped
            part way keeps what it measured."""
            embed_ms = results.get("engram", {}).get("embed_ms_per_query")
            rows = [summarise(results[n], embed_ms) for n in engines if n in results]
            meta = {"cpu": f"{cpu_name()} ({cpu_features()})", "cores": os.cpu_count(),
                    "memories": len(docs), "long": args.long, "fill": args.fill,
                    "mean_chars": round(sum(len(d.text) for d in docs) / len(docs), 1),
                    "quality_questions": len(quality_qs), "embed_ms_per_query": embed_ms,
                    "engram_fill_model_seconds":
                        (results.get("engram", {}).get("fill") or {}).get("fill_model_seconds"),
                    "corpus_embed_seconds": vec_secs,
                    "vectors_from_engram_export": len(known) if known is not None else None,
                    "top_k": TOP_K, "rrf_k": RRF_K, "rrf_depth": RRF_DEPTH,
                    "total_seconds": round(time.perf_counter() - t_all, 1),
                    "engines_done": [n for n in engines if n in results]}
            table = markdown(rows, meta)
            if args.json_out:
                raw = {n: {k: v for k, v in x.items() if k != "lat_ms"}
                       for n, x in results.items()}
                write_json(args.json_out, {"meta": meta, "rows": rows, "raw": raw, "table": table})
            return table

        t_all = time.perf_counter()
        for name in engines:
            out_path = os.path.join(tmp, f"out-{name}.json")
            if name == "engram":
                if built is None:
                    continue  # its build failed: reported above
                t0 = time.perf_counter()
                try:
                    results[name] = run_engram(args, job, built, run_id, locomo, quality_qs)
                except (SystemExit, OSError, Exception) as e:  # noqa: BLE001 (report, go on)
                    results[name] = {"engine": name, "error": str(e)[:600]}
                results[name]["wall_s"] = round(time.perf_counter() - t0, 1)
            elif name in PY_ENGINES:
                py = python_for(name)
                if py is None:
                    results[name] = {"engine": name, "error": "python3-xapian not installed "
                                     "(apt-get install python3-xapian)"}
                    continue
                cmd = [py, os.path.abspath(__file__), "--worker", name, "--job", job_path,
                       "--out", out_path]
                results[name] = run_worker_process(name, cmd, args.engine_timeout, out_path)
            else:
                node, why = node_available()
                if not node:
                    results[name] = {"engine": name, "error": why}
                    continue
                cmd = [node, "--max-old-space-size=8192", os.path.join(PEERS_DIR, f"{name}.mjs"),
                       job_path, out_path]
                results[name] = run_worker_process(name, cmd, args.engine_timeout, out_path)
            r = results[name]
            if r.get("ranked") is not None:
                r["recall@10"], r["quality_tokens_mean"] = score_peer(r.pop("ranked"), quality_qs, docs)
            log(f"[{name}] done in {r.get('wall_s')} s" + (f": {r['error']}" if r.get("error") else ""))

            report()
        print(report())
    finally:
        if args.keep:
            log(f"kept {tmp}" + (f" and {built['data_dir']}" if built else ""))
        else:
            shutil.rmtree(tmp, ignore_errors=True)
            if built:
                shutil.rmtree(built["data_dir"], ignore_errors=True)
    return 0


import sqlite3  # noqa: E402
try:
    import xapian  # noqa: E402
except ImportError:
    xapian = None

if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stopped:
        log("stopped by SIGTERM")
        sys.exit(128 + signal.SIGTERM)

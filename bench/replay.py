#!/usr/bin/env python3
"""Retrieval quality of Engram through the real HTTP API (Leaderboard Add/Search), the way the
Agent Memory Leaderboard drives it, next to a SQLite FTS5 BM25 baseline on the same turns; with
--api v4 the same data goes through the V4 Agentic Memory API (memories/add with infer false,
memories/search) instead.

Examples (from the repo root):
  python3 bench/replay.py --engram build/engram --dataset locomo --fts5 --json-out /tmp/locomo.json
  python3 bench/replay.py --url http://127.0.0.1:8080 --api-key K --dataset longmemeval --limit 20
  python3 bench/replay.py --fts5-only --dataset locomo
  python3 bench/replay.py --engram build/engram --api v4 --dataset locomo --json-out /tmp/v4.json

See bench/README.md for what every metric means and how results are matched to gold turns.
"""

import argparse
import ast
import json
import lzma
import os
import random
import re
import sqlite3
import sys
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (DEFAULT_DATA_DIR, Client, EngramServer, HttpError, log,  # noqa: E402
                      metric_sum, metrics_text, percentile, write_json)

CHUNK = 20          # messages per leaderboard add
TOP_K = 100         # leaderboard search depth
SEND_REFERENCE_DATE = False  # --reference-date
RECALL_KS = (1, 5, 10, 20, 50, 100)
ALL_KS = (10, 50, 100)
TOKEN_BUDGETS = (1000, 2000, 4000, 8000, 16000)
ANSWER_MODEL_TOKENS = 117760  # the prefix of the results the Leaderboard's answer model reads
CHARS_PER_TOKEN = 4.0

DATASET_FILES = {
    "locomo": "locomo_dev.json",
    "longmemeval": "longmemeval_s_dev.json.xz",
    "memgallery": "mem_gallery_dev.json",
}
LOCOMO_CATEGORIES = {1: "1-multi-hop", 2: "2-temporal", 3: "3-open-domain", 4: "4-single-hop"}


# ----------------------------------------------------------------------------------------------
# Dataset model: users -> sessions -> messages (each message carries the gold unit id it belongs
# to), and questions (query, gold unit ids, category).

class Message:
    __slots__ = ("role", "content", "turn")

    def __init__(self, role, content, turn):
        self.role, self.content, self.turn = role, content, turn


class Session:
    __slots__ = ("key", "ts_ms", "messages")

    def __init__(self, key, ts_ms, messages):
        self.key, self.ts_ms, self.messages = key, ts_ms, messages


class User:
    __slots__ = ("key", "sessions", "by_content", "ts_by_content", "by_prefix")

    def __init__(self, key, sessions):
        self.key, self.sessions = key, sessions
        # content as sent -> every gold unit (turn / round) that sent exactly this text
        self.by_content = {}
        self.ts_by_content = {}
        for s in sessions:
            for m in s.messages:
                lst = self.by_content.setdefault(m.content, [])
                if m.turn not in lst:
                    lst.append(m.turn)
                self.ts_by_content.setdefault(m.content, set()).add(s.ts_ms)
        # first line (PREFIX chars at most) -> the contents that begin with it, for excerpts
        self.by_prefix = {}
        for c in self.by_content:
            if isinstance(c, str) and c.strip():
                self.by_prefix.setdefault(_line_key(c), []).append(c)

    def messages(self):
        for s in self.sessions:
            yield from s.messages


PREFIX = 64
_ROLE_LABEL = re.compile(r"^(user|assistant|system|tool|developer): ")
_DATE_PREFIX = re.compile(r"^\[[^\]\n]*\] ")


def _line_key(text):
    return text.split("\n", 1)[0][:PREFIX]


class Question:
    __slots__ = ("qid", "user", "query", "gold", "category", "answer", "options", "asked_at")

    def __init__(self, qid, user, query, gold, category, answer=None, asked_at=None):
        self.qid, self.user, self.query, self.gold, self.category = qid, user, query, gold, category
        self.answer = None if answer is None else str(answer).strip() or None
        self.options = None  # set by add_synthetic_options
        # When the question was asked (ISO 8601), where the dataset says (LongMemEval's
        # question_date); sent as reference_date with --reference-date.
        self.asked_at = asked_at


def add_synthetic_options(questions, n, seed):
    """Multiple-choice options for datasets that have none: the question's own gold answer plus
    n - 1 answers of other questions to the same user (else of the whole dataset), shuffled and
    lettered "A. …". The dev files carry no options, yet the Leaderboard sends them with
    multiple-choice questions; this measures how a search uses them. Questions without an answer
    get none. Deterministic for a seed."""
    by_user = {}
    for q in questions:
        if q.answer:
            by_user.setdefault(q.user.key, []).append(q.answer)
    everyone = sorted({a for lst in by_user.values() for a in lst})
    given = 0
    for q in questions:
        if not q.answer:
            continue
        rng = random.Random(f"{seed}:{q.qid}")
        pool = sorted({a for a in by_user.get(q.user.key, []) if a != q.answer})
        if len(pool) < n - 1:
            pool = [a for a in everyone if a != q.answer]
        opts = [q.answer] + rng.sample(pool, min(n - 1, len(pool)))
        rng.shuffle(opts)
        q.options = [f"{chr(ord('A') + i)}. {o}" for i, o in enumerate(opts)]
        given += 1
    return given


class Dataset:
    def __init__(self, name, users, questions, notes):
        self.name, self.users, self.questions, self.notes = name, users, questions, notes


def _ms(dt):
    return int(dt.replace(tzinfo=timezone.utc).timestamp() * 1000)


def _maybe_json(v):
    """Some dataset exports store lists as JSON (or Python-literal) strings."""
    if isinstance(v, str):
        s = v.strip()
        if s[:1] in ("[", "{"):
            try:
                return json.loads(s)
            except ValueError:
                return ast.literal_eval(s)
    return v


def load_locomo(path, limit):
    data = json.load(open(path, encoding="utf-8"))
    if limit:
        data = data[:limit]
    users, questions = [], []
    dropped_empty = dropped_ids = 0
    fixed_ids = 0
    for sample in data:
        conv = sample["conversation"]
        sid = sample["sample_id"]
        a, b = conv["speaker_a"], conv["speaker_b"]
        keys = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                      key=lambda k: int(k.split("_")[1]))
        sessions, known = [], set()
        for k in keys:
            n = int(k.split("_")[1])
            when = datetime.strptime(conv[f"{k}_date_time"].strip(), "%I:%M %p on %d %B, %Y")
            msgs = []
            for t in conv[k]:
                content = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    content += f" [shares a photo: {t['blip_caption']}]"
                role = "user" if t["speaker"] == a else "assistant"
                if t["speaker"] not in (a, b):
                    role = "user"
                msgs.append(Message(role, content, t["dia_id"]))
                known.add(t["dia_id"])
            sessions.append(Session(f"s{n}", _ms(when), msgs))
        user = User(sid, sessions)
        users.append(user)
        for i, qa in enumerate(sample["qa"]):
            cat = qa.get("category")
            if cat not in LOCOMO_CATEGORIES:
                continue
            gold = []
            for ev in qa.get("evidence") or []:
                # a few evidence entries are malformed: "D8:6; D9:17", "D:11:26", "D"
                for part in re.split(r"[;,\s]+", str(ev)):
                    if not part:
                        continue
                    norm = re.sub(r"^D:(\d+):(\d+)$", r"D\1:\2", part)
                    if norm != part:
                        fixed_ids += 1
                    if norm in known:
                        if norm not in gold:
                            gold.append(norm)
                    else:
                        dropped_ids += 1
            if not gold:
                dropped_empty += 1
                continue
            questions.append(Question(f"{sid}:q{i}", user, qa["question"], gold,
                                      LOCOMO_CATEGORIES[cat], qa.get("answer")))
    notes = [f"categories 1-4; {dropped_empty} question(s) without any valid evidence id skipped",
             f"{dropped_ids} evidence id(s) not found among the turns ignored; "
             f"{fixed_ids} malformed id(s) normalised (D:11:26 -> D11:26, 'a; b' split)"]
    return users, questions, notes


def _lme_date(s):
    s = re.sub(r"\s*\([A-Za-z]+\)\s*", " ", s.strip())
    return datetime.strptime(s, "%Y/%m/%d %H:%M")


def load_longmemeval(path, limit):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if limit:
        data = data[:limit]
    users, questions = [], []
    no_gold = empty = 0
    for q in data:
        qid = q["question_id"]
        hs = _maybe_json(q["haystack_sessions"])
        dates = _maybe_json(q["haystack_dates"])
        sessions, gold = [], []
        for k, (sess, date) in enumerate(zip(hs, dates)):
            msgs = []
            for j, t in enumerate(_maybe_json(sess)):
                # Sent exactly as published, empty turns included: the platform does not clean
                # them either, and the server must accept them (docs/leaderboard.md).
                content = t.get("content", "")
                if not isinstance(content, str) or not content.strip():
                    empty += 1
                turn = f"s{k}:t{j}"
                msgs.append(Message(t.get("role", "user"), content, turn))
                ha = t.get("has_answer")
                if ha is True or (isinstance(ha, str) and ha.lower() == "true"):
                    gold.append(turn)
            sessions.append(Session(f"s{k}", _ms(_lme_date(date)), msgs))
        user = User(qid, sessions)
        users.append(user)
        if not gold:
            no_gold += 1
            continue
        asked = q.get("question_date")
        asked_at = _lme_date(asked).strftime("%Y-%m-%dT%H:%M:00Z") if asked else None
        questions.append(Question(qid, user, q["question"], gold, q["question_type"],
                                  q.get("answer"), asked_at))
    notes = [f"{no_gold} question(s) without any has_answer turn (abstention) skipped from recall, "
             f"their haystacks still added",
             f"{empty} empty message(s) sent as published"]
    return users, questions, notes


def load_memgallery(path, limit):
    data = json.load(open(path, encoding="utf-8"))
    chars = list(data.items())
    if limit:
        chars = chars[:limit]
    users, questions = [], []
    no_clue = bad_clue = with_image = 0
    for name, ch in chars:
        sessions, known = [], set()
        for s in ch["multi_session_dialogues"]:
            msgs = []
            for r in s["dialogues"]:
                rid = r["round"]
                known.add(rid)
                # Every turn the round has is sent as published, empty ones included.
                if "user" in r:
                    msgs.append(Message("user", r["user"], rid))
                for cap in r.get("image_caption") or []:
                    if cap is not None:
                        msgs.append(Message("user", cap, rid))
                if "assistant" in r:
                    msgs.append(Message("assistant", r["assistant"], rid))
            sessions.append(Session(s["session_id"],
                                    _ms(datetime.strptime(s["date"].strip(), "%Y-%m-%d")), msgs))
        user = User(name, sessions)
        users.append(user)
        for i, qa in enumerate(ch["human-annotated QAs"]):
            gold = [c for c in (qa.get("clue") or []) if c in known]
            bad_clue += len(qa.get("clue") or []) - len(gold)
            if not gold:
                no_clue += 1
                continue
            query = qa["question"]
            if qa.get("image_caption"):
                # the question carries an image; this dev file only has its caption
                query = f"{query}\n[image: {qa['image_caption']}]"
                with_image += 1
            questions.append(Question(f"{name}:q{i}", user, query, gold, qa.get("point", "?"),
                                      qa.get("answer")))
    notes = [f"gold = the QA's 'clue' rounds; {no_clue} QA(s) with an empty clue list skipped",
             f"{bad_clue} clue id(s) not found ignored; {with_image} question(s) with an image: "
             f"caption appended to the query text",
             "a round = user text, then one user message per image caption, then assistant text; "
             "a round is found when any of its messages is returned"]
    return users, questions, notes


LOADERS = {"locomo": load_locomo, "longmemeval": load_longmemeval, "memgallery": load_memgallery}


def load_dataset(name, path, limit):
    users, questions, notes = LOADERS[name](path, limit)
    return Dataset(name, users, questions, notes)


# ----------------------------------------------------------------------------------------------
# Metrics

def content_text(c):
    """A result's content as text: a string, or the text parts of a ContentPart array."""
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        parts = []
        for p in c:
            if isinstance(p, dict) and p.get("type") == "text":
                parts.append(str(p.get("text", "")))
        return "\n".join(parts)
    return "" if c is None else str(c)


def match_result(user, content):
    """Gold units a returned content stands for: strip the "[<date>] " prefix (everything up to
    the first "] "), look the rest up among the texts sent for this user; fall back to the whole
    content; else read it as an excerpt of several turns (match_excerpt). Returns (turn list,
    whether the date prefix was present, the sent texts it holds)."""
    if content.startswith("[") and "] " in content:
        rest = content.split("] ", 1)[1]
        hit = user.by_content.get(rest)
        if hit is not None:
            return hit, True, [rest]
    hit = user.by_content.get(content)
    if hit is not None:
        return hit, False, [content]
    return match_excerpt(user, content)


def match_excerpt(user, content):
    """A result that shows a run of turns, one a line, each line begun by an optional "[<date>] "
    and an optional role label: every sent text that begins at the start of a line and is there
    whole. Returns (turns in order, whether it began with a date, the texts) or (None, False,
    None) when no sent text is found."""
    turns, texts, pos = [], [], 0
    for line in content.split("\n"):
        start = pos
        pos += len(line) + 1
        m = _DATE_PREFIX.match(line)
        if m:
            line, start = line[m.end():], start + m.end()
        m = _ROLE_LABEL.match(line)
        for skip in ((0, m.end()) if m else (0,)):
            for c in user.by_prefix.get(_line_key(line[skip:]), ()):
                if content.startswith(c, start + skip) and c not in texts:
                    texts.append(c)
                    turns += [t for t in user.by_content[c] if t not in turns]
    if not texts:
        return None, False, None
    return turns, content.startswith("["), texts


class Scorer:
    """Accumulates per-question metrics for one system (Engram or FTS5)."""

    def __init__(self, label, system):
        self.label, self.system = label, system
        self.rows = []            # per question dicts
        self.search_ms = []
        self.add_ms = []
        self.add_errors = 0
        self.search_errors = 0
        self.results_seen = 0
        self.results_unmatched = 0
        self.results_no_prefix = 0
        self.anomalies = {}       # kind -> [count, example]
        self.extra = {}

    def anomaly(self, kind, example):
        a = self.anomalies.setdefault(kind, [0, example])
        a[0] += 1

    def score(self, q, ranked, lengths_chars):
        """ranked: list of turn-id lists, in rank order; lengths_chars: len(content) per result."""
        first_rank, first_end = {}, {}
        cum = 0.0
        for i, (turns, n) in enumerate(zip(ranked, lengths_chars)):
            cum += n / CHARS_PER_TOKEN
            for t in turns or ():
                if t not in first_rank:
                    first_rank[t] = i
                    first_end[t] = cum
        gold = q.gold
        row = {"qid": q.qid, "category": q.category, "n_gold": len(gold), "n_results": len(ranked)}
        for k in RECALL_KS:
            row[f"recall@{k}"] = sum(1 for g in gold if first_rank.get(g, 1 << 30) < k) / len(gold)
        for k in ALL_KS:
            row[f"all@{k}"] = 1.0 if all(first_rank.get(g, 1 << 30) < k for g in gold) else 0.0
        for b in TOKEN_BUDGETS:
            row[f"recall@{b // 1000}k_tokens"] = \
                sum(1 for g in gold if first_end.get(g, float("inf")) <= b) / len(gold)
        row["gold_ranks"] = [first_rank.get(g) for g in gold]
        row["results"] = len(ranked)
        row["tokens"] = cum  # what an answering model reads: every result's content
        self.rows.append(row)

    def summary(self):
        n = len(self.rows)
        out = {"label": self.label, "system": self.system, "questions": n}
        keys = [f"recall@{k}" for k in RECALL_KS] + [f"all@{k}" for k in ALL_KS] + \
               [f"recall@{b // 1000}k_tokens" for b in TOKEN_BUDGETS]
        for k in keys + ["results", "tokens"]:
            out[k] = (sum(r[k] for r in self.rows) / n) if n else None
        tokens = [r["tokens"] for r in self.rows]
        out["tokens_p50"] = percentile(tokens, 50)
        out["tokens_p95"] = percentile(tokens, 95)
        out["over_answer_model_prefix"] = \
            (sum(t > ANSWER_MODEL_TOKENS for t in tokens) / n) if n else None
        cats = {}
        for r in self.rows:
            cats.setdefault(r["category"], []).append(r)
        out["per_category"] = {
            c: {"questions": len(rs),
                **{k: sum(r[k] for r in rs) / len(rs)
                   for k in ("recall@10", "recall@50", "recall@100", "all@10", "all@50", "all@100",
                             "recall@2k_tokens")}}
            for c, rs in sorted(cats.items())}
        for name, vals in (("add_ms", self.add_ms), ("search_ms", self.search_ms)):
            out[f"{name}_p50"] = percentile(vals, 50)
            out[f"{name}_p99"] = percentile(vals, 99)
            out[f"{name}_count"] = len(vals)
        out["add_errors"] = self.add_errors
        out["search_errors"] = self.search_errors
        out["results_seen"] = self.results_seen
        out["results_unmatched"] = self.results_unmatched
        out["results_without_date_prefix"] = self.results_no_prefix
        out["anomalies"] = {k: {"count": v[0], "example": v[1]} for k, v in self.anomalies.items()}
        out.update(self.extra)
        return out


# ----------------------------------------------------------------------------------------------
# SQLite FTS5 baseline

_TERM_RE = re.compile(r"[^\W_]+", re.UNICODE)
# Generic English function words (articles, auxiliaries, pronouns, question words, common
# prepositions and conjunctions). Not derived from any dataset. With them the OR query ranks turns
# by words like "did" / "the"; without them the baseline matches the DESIGN.md calibration.
STOPWORDS = frozenset("""
a an the is are was were be been do does did what when where who whom which why how of in on at to
for from by with and or not that this these those it its i you he she they we his her their my your
our has have had will would can could should as about into than then there here
""".split())
FTS5_STOPWORDS = True


def fts5_query(text):
    terms = _TERM_RE.findall(text)
    if FTS5_STOPWORDS:
        kept = [t for t in terms if t.lower() not in STOPWORDS]
        terms = kept or terms
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def run_fts5(ds, label):
    sc = Scorer(label, "sqlite-fts5")
    db = sqlite3.connect(":memory:")
    tables = {}
    t0 = time.perf_counter()
    for i, u in enumerate(ds.users):
        name = f"u{i}"
        db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(content, tokenize='porter')")
        rows = [(m.content,) for m in u.messages()]
        db.executemany(f"INSERT INTO {name}(content) VALUES (?)", rows)
        tables[id(u)] = name
    db.commit()
    sc.extra["index_seconds"] = round(time.perf_counter() - t0, 3)
    for q in ds.questions:
        name = tables[id(q.user)]
        mq = fts5_query(q.query)
        t1 = time.perf_counter()
        res = db.execute(f"SELECT content FROM {name} WHERE {name} MATCH ? "
                         f"ORDER BY bm25({name}) LIMIT ?", (mq, TOP_K)).fetchall() if mq else []
        sc.search_ms.append((time.perf_counter() - t1) * 1000)
        ranked = [q.user.by_content.get(c, []) for (c,) in res]
        sc.results_seen += len(res)
        sc.score(q, ranked, [len(c) for (c,) in res])
    db.close()
    return sc


# ----------------------------------------------------------------------------------------------
# Engram through the HTTP API: the Leaderboard Add/Search path, or the V4 Agentic Memory API
# (memories/add with infer false, memories/search). Both store the same chunks under the same
# user ids and their results are matched to gold turns the same way (by content).

P4 = "/v4/openapi/workspaces/default/memory/agentic-memory"
APIS = ("leaderboard", "v4")


def user_id_of(ds, run_id, user):
    return f"eval:{run_id}:{ds.name}:{user.key}"


def session_id_of(user_id, session):
    return f"{user_id}:{session.key}"


def _session_chunks(ds, run_id, chunk):
    """(user_id, session, chunk index, messages of one add) in source order."""
    for u in ds.users:
        user_id = user_id_of(ds, run_id, u)
        for s in u.sessions:
            for j in range(0, len(s.messages), chunk):
                yield user_id, s, j // chunk, s.messages[j:j + chunk]


def build_chunks(ds, run_id, chunk=CHUNK):
    """Leaderboard add bodies: every message carries its session's timestamp (Unix ms)."""
    chunks = []
    for user_id, s, j, part in _session_chunks(ds, run_id, chunk):
        session_id = session_id_of(user_id, s)
        chunks.append({
            "request_id": f"{session_id}:chunk-{j}",
            "messages": [{"role": m.role, "timestamp": s.ts_ms, "content": m.content}
                         for m in part],
            "user_id": user_id,
            "session_id": session_id,
        })
    return chunks


def build_v4_adds(ds, run_id, chunk=CHUNK):
    """V4 memories/add bodies for the same chunks, stored verbatim (infer false). The session is
    metadata.session_id (V4's session_id filter field; run_id would make every session a scope
    of its own), the session's date the add's timestamp (Unix seconds; V4 has no per-message
    time)."""
    return [{"messages": [{"role": m.role, "content": m.content} for m in part],
             "user_id": user_id,
             "infer": False,
             "metadata": {"session_id": session_id_of(user_id, s)},
             "timestamp": s.ts_ms / 1000}
            for user_id, s, _, part in _session_chunks(ds, run_id, chunk)]


def _collapse(text):
    """Whitespace-collapsed text: what V4 compares to recognise a verbatim duplicate."""
    return " ".join(re.findall(r"[^ \t\n\r]+", text))


def _verbatim_count(contents):
    """Memories an infer-false add of these contents should store: one per distinct non-blank
    message."""
    return len({_collapse(c) for c in contents} - {""})


def _iso_to_ms(s):
    try:
        s2 = s.strip().replace("Z", "+00:00")
        return round(datetime.fromisoformat(s2).timestamp() * 1000)
    except (ValueError, AttributeError):
        return None


EMBED_METRICS = ("engram_embed_seconds_total", "engram_embed_texts_total",
                 "engram_embed_batches_total")


def model_counters(client):
    """{metric: summed over lanes} of the model's work (/metrics), plus engram_vector_queue;
    None when the server does not report them (an older build, or no embedder)."""
    text = metrics_text(client)
    out = {}
    for name in EMBED_METRICS + ("engram_vector_queue",):
        out[name] = metric_sum(text, name)
        if out[name] is None:
            return None
    return out


def wait_vector_queue(client, timeout_s=1800.0):
    """Waits until no memory waits for a vector (the fill's model work is done)."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        c = model_counters(client)
        if c is None or c["engram_vector_queue"] == 0:
            return
        time.sleep(0.05)
    log("vector queue still not empty; fill figures include only part of the model work")


def _post_all(bodies, post, concurrency):
    """post(body) for every body on `concurrency` clients; the answers in body order."""
    out = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as ex:
        for r in ex.map(post, bodies):
            out.append(r)
            if len(out) % 500 == 0:
                log(f"  {len(out)}/{len(bodies)} adds")
    return out


def fill_leaderboard(ds, client, sc, run_id, concurrency, chunk):
    """Leaderboard adds; each answers once its messages are stored and searchable. Then re-sends
    the first chunk: an idempotent retry must answer success and store nothing new."""
    chunks = build_chunks(ds, run_id, chunk)
    n_msgs = sum(len(c["messages"]) for c in chunks)
    log(f"adding {len(chunks)} chunks ({n_msgs} messages, {len(ds.users)} users) "
        f"with {concurrency} concurrent clients")
    errors = []
    throttled = [0]

    def add(body):
        # A 429 (vectors of earlier adds still being computed; nothing was stored) is retried with
        # the same request_id, as the Leaderboard's client does, for up to 600 s.
        deadline = time.perf_counter() + 600
        while True:
            try:
                resp, dt = client.post_json("/leaderboard/add", body)
                break
            except HttpError as e:
                if e.status == 429 and time.perf_counter() < deadline:
                    throttled[0] += 1
                    time.sleep(0.2)
                    continue
                errors.append(f"{body['request_id']}: {e}")
                return None
            except OSError as e:
                errors.append(f"{body['request_id']}: {e}")
                return None
        ok = isinstance(resp, dict) and resp.get("success") is True
        if not ok:
            sc.anomaly("add: success is not true", json.dumps(resp)[:300])
        elif (resp.get("request_id") != body["request_id"] or resp.get("user_id") != body["user_id"]
              or resp.get("session_id") != body["session_id"]):
            sc.anomaly("add: ids not echoed exactly", json.dumps(resp)[:300])
        return dt * 1000

    t0 = time.perf_counter()
    sc.add_ms = [ms for ms in _post_all(chunks, add, concurrency) if ms is not None]
    add_s = time.perf_counter() - t0
    sc.add_errors = len(errors)
    for e in errors[:5]:
        log("add error:", e)
    sc.extra.update({"add_chunks": len(chunks), "add_messages": n_msgs,
                     "add_throttled": throttled[0],
                     "add_seconds": round(add_s, 2),
                     "add_messages_per_s": round(n_msgs / add_s, 1) if add_s else None})
    return n_msgs, lambda: check_leaderboard_retry(client, sc, chunks)


def check_leaderboard_retry(client, sc, chunks):
    if not chunks:
        return
    try:
        resp, _ = client.post_json("/leaderboard/add", chunks[0])
        if not (isinstance(resp, dict) and resp.get("success") is True):
            sc.anomaly("add retry (same request_id) not answered success", json.dumps(resp)[:300])
    except (HttpError, OSError) as e:
        sc.anomaly("add retry (same request_id) failed", str(e)[:300])


def wait_v4_events(client, sc, event_ids, timeout_s=1800.0):
    """Polls every event until it ends; {event id: final event} of the SUCCEEDED ones."""
    pending, done = set(event_ids), {}
    deadline = time.perf_counter() + timeout_s
    while pending and time.perf_counter() < deadline:
        for eid in sorted(pending):
            status, ev, _ = client.request("GET", f"{P4}/events/{eid}")
            if status != 200 or not isinstance(ev, dict):
                sc.anomaly("event: GET not answered 200", f"HTTP {status}")
                pending.discard(eid)
            elif ev.get("status") == "SUCCEEDED":
                done[eid] = ev
                pending.discard(eid)
            elif ev.get("status") == "FAILED":
                sc.anomaly("event: FAILED", str(ev.get("error_message"))[:300])
                pending.discard(eid)
        if pending:
            time.sleep(0.05)
    if pending:
        sc.anomaly("event: not ended within the timeout", f"{len(pending)} event(s)")
    return done


def post_v4_add(client, sink, body, wait_s):
    """POST P4/memories/add. A 429 (the server's event queue is full; it drains while we wait) is
    retried for up to wait_s seconds. Returns (event_id, ack_ms, error): `error` describes a
    refused or failed request; an answer without PENDING and an event_id is an anomaly of `sink`,
    returned with event_id None."""
    deadline = time.perf_counter() + wait_s
    while True:
        try:
            resp, dt = client.post_json(P4 + "/memories/add", body)
            break
        except HttpError as e:
            if e.status == 429 and time.perf_counter() < deadline:
                time.sleep(0.2)
                continue
            return None, None, str(e)
        except OSError as e:
            return None, None, str(e)
    if not (isinstance(resp, dict) and resp.get("status") == "PENDING" and resp.get("event_id")):
        sink.anomaly("add: not answered PENDING with an event_id", json.dumps(resp)[:300])
        return None, dt * 1000, None
    return resp["event_id"], dt * 1000, None


def fill_v4(ds, client, sc, run_id, concurrency, chunk):
    """V4 adds (answered PENDING), then every event polled until SUCCEEDED: only then are the
    memories searchable. Checks that infer false stores one memory per distinct message."""
    adds = build_v4_adds(ds, run_id, chunk)
    n_msgs = sum(len(a["messages"]) for a in adds)
    log(f"adding {len(adds)} V4 adds ({n_msgs} messages, {len(ds.users)} users, infer false) "
        f"with {concurrency} concurrent clients")
    errors = []

    def add(body):
        eid, ms, error = post_v4_add(client, sc, body, wait_s=60)
        if error:
            errors.append(f"{body['metadata']['session_id']}: {error}")
        return eid, ms

    t0 = time.perf_counter()
    acks = _post_all(adds, add, concurrency)
    ack_s = time.perf_counter() - t0
    sc.add_ms = [ms for _, ms in acks if ms is not None]
    events = wait_v4_events(client, sc, [eid for eid, _ in acks if eid])
    add_s = time.perf_counter() - t0
    sc.add_errors = len(errors) + sum(1 for eid, _ in acks if eid and eid not in events)
    for e in errors[:5]:
        log("add error:", e)
    decisions = {}
    for body, (eid, _) in zip(adds, acks):
        ev = events.get(eid)
        if ev is None:
            continue
        kinds = [e.get("event") for e in ev.get("events") or [] if isinstance(e, dict)]
        for k in kinds:
            decisions[k] = decisions.get(k, 0) + 1
        want = _verbatim_count(m["content"] for m in body["messages"])
        if kinds.count("ADD") + kinds.count("NONE") != want or \
                len(ev.get("results") or []) != kinds.count("ADD"):
            sc.anomaly("event: not one memory per distinct message",
                       f"{want} distinct message(s), decisions {kinds}")
    sc.extra.update({"add_chunks": len(adds), "add_messages": n_msgs,
                     "add_seconds": round(add_s, 2), "ack_seconds": round(ack_s, 2),
                     "add_messages_per_s": round(n_msgs / add_s, 1) if add_s else None,
                     "v4_decisions": decisions})
    return n_msgs, lambda: check_v4_scopes(ds, client, sc, run_id)


def check_v4_scopes(ds, client, sc, run_id):
    """Each user's memory count (GET memories total) against its distinct non-blank messages."""
    stored = expected = 0
    for u in ds.users:
        user_id = user_id_of(ds, run_id, u)
        qs = urllib.parse.urlencode({"user_id": user_id, "page_size": 1})
        status, parsed, _ = client.request("GET", f"{P4}/memories?{qs}")
        total = parsed.get("total") if status == 200 and isinstance(parsed, dict) else None
        want = _verbatim_count(m.content for m in u.messages())
        if total != want:
            sc.anomaly("scope: memory count differs from distinct messages",
                       f"{u.key}: {total} stored, {want} distinct")
        stored += total or 0
        expected += want
    sc.extra.update({"v4_memories": stored, "v4_distinct_messages": expected})


def record_fill(client, sc, before, t0, n_msgs, local_server):
    """The fill: the adds plus the background vectors they queued (a leaderboard add answers
    once its text is stored; its vectors follow). Model utilisation = model seconds / (fill
    seconds x cores of the server machine)."""
    if before is None:
        return
    wait_vector_queue(client)
    fill_s = time.perf_counter() - t0
    after = model_counters(client)
    if after is None:
        return
    d = {k: after[k] - before[k] for k in EMBED_METRICS}
    cores = os.cpu_count() if local_server else None
    model_s = d["engram_embed_seconds_total"]
    batches = d["engram_embed_batches_total"]
    sc.extra.update({
        "fill_seconds": round(fill_s, 2),
        "fill_messages_per_s": round(n_msgs / fill_s, 1) if fill_s else None,
        "fill_model_seconds": round(model_s, 2),
        "fill_model_batches": int(batches),
        "fill_model_texts": int(d["engram_embed_texts_total"]),
        "fill_texts_per_batch":
            round(d["engram_embed_texts_total"] / batches, 2) if batches else None,
        "server_cores": cores,
        "fill_model_utilisation":
            round(model_s / (fill_s * cores), 3) if cores and fill_s else None})


def _item(item, text_key):
    """A result as {id, text, score, created_at} (None / "" for what it lacks)."""
    if not isinstance(item, dict):
        return {"id": None, "text": "", "score": None, "created_at": None}
    return {"id": item.get("id"), "text": content_text(item.get(text_key)),
            "score": item.get("score"), "created_at": item.get("created_at")}


def search_leaderboard(client, sc, q, user_id):
    body = {"query": q.query, "user_id": user_id, "top_k": TOP_K}
    if q.options:
        body["options"] = q.options
    if SEND_REFERENCE_DATE and q.asked_at:
        body["reference_date"] = q.asked_at
    resp, dt = client.post_json("/leaderboard/search", body)
    data = resp.get("data") if isinstance(resp, dict) else None
    if not isinstance(data, list):
        sc.anomaly("search: 'data' missing or not a list", json.dumps(resp)[:300])
        data = []
    return [_item(x, "content") for x in data], dt * 1000


def search_v4(client, sc, q, user_id):
    """memories/search confined to the user by a filter; options are a leaderboard field only."""
    body = {"query": q.query, "filters": {"AND": [{"user_id": user_id}]}, "top_k": TOP_K}
    if SEND_REFERENCE_DATE and q.asked_at:
        body["reference_date"] = q.asked_at
    resp, dt = client.post_json(P4 + "/memories/search", body)
    data = resp.get("results") if isinstance(resp, dict) else None
    if not isinstance(data, list):
        sc.anomaly("search: 'results' missing or not a list", json.dumps(resp)[:300])
        data = []
    for x in data:
        if isinstance(x, dict) and x.get("user_id") != user_id:
            sc.anomaly("search: result of another user_id", str(x.get("id")))
        s = x.get("score") if isinstance(x, dict) else None
        if not (isinstance(s, (int, float)) and 0 <= s <= 1):
            sc.anomaly("search: score not in 0..1", str(s))
    return [_item(x, "memory") for x in data], dt * 1000


def score_results(sc, q, items):
    """Checks one search's results and scores them against the question's gold turns."""
    if len(items) > TOP_K:
        sc.anomaly("search: more than top_k results", str(len(items)))
    ranked, lengths = [], []
    seen_ids = set()
    prev_score = None
    for item in items:
        sc.results_seen += 1
        text = item["text"]
        if not text:
            sc.anomaly("search: empty content", json.dumps(item)[:300])
        if item["id"] in seen_ids:
            sc.anomaly("search: duplicate result id", str(item["id"]))
        seen_ids.add(item["id"])
        score = item["score"]
        if isinstance(score, (int, float)) and prev_score is not None and score > prev_score + 1e-9:
            sc.anomaly("search: scores not in descending order", f"{prev_score} then {score}")
        if isinstance(score, (int, float)):
            prev_score = score
        turns, had_prefix, orig = match_result(q.user, text)
        if turns is None:
            sc.results_unmatched += 1
            sc.anomaly("search: result content matches no sent message", text[:200])
            turns = []
        else:
            if not had_prefix:
                sc.results_no_prefix += 1
            created = _iso_to_ms(item["created_at"])
            times = set().union(*(q.user.ts_by_content.get(t, set()) for t in orig))
            if created is None:
                sc.anomaly("search: created_at missing or not ISO 8601",
                           str(item["created_at"])[:100])
            elif created not in times:
                sc.anomaly("search: created_at differs from the message timestamp",
                           f"{item['created_at']} vs {sorted(times)[:3]} (ms)")
        ranked.append(turns)
        lengths.append(len(text))
    sc.score(q, ranked, lengths)


def search_all(ds, client, sc, run_id, concurrency, search):
    log(f"searching {len(ds.questions)} questions (top_k {TOP_K}, {concurrency} concurrent)")
    errors = []

    def one(q):
        try:
            items, ms = search(client, sc, q, user_id_of(ds, run_id, q.user))
        except (HttpError, OSError) as e:
            errors.append(f"{q.qid}: {e}")
            return q, None, None
        return q, items, ms

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as ex:
        results = list(ex.map(one, ds.questions))
    for q, items, ms in results:
        if items is None:
            sc.score(q, [], [])
            continue
        sc.search_ms.append(ms)
        score_results(sc, q, items)
    sc.search_errors = len(errors)
    for e in errors[:5]:
        log("search error:", e)


def run_engram(ds, client, label, run_id, concurrency, search_concurrency, chunk=CHUNK,
               local_server=True, api="leaderboard"):
    sc = Scorer(label, "engram")
    sc.extra["api"] = api
    fill, search = (fill_v4, search_v4) if api == "v4" else (fill_leaderboard, search_leaderboard)
    before = model_counters(client)
    t0 = time.perf_counter()
    n_msgs, check = fill(ds, client, sc, run_id, concurrency, chunk)
    record_fill(client, sc, before, t0, n_msgs, local_server)
    check()
    search_all(ds, client, sc, run_id, search_concurrency, search)
    return sc


# ----------------------------------------------------------------------------------------------
# Output

def fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def fmt_ms(a, b):
    if a is None:
        return "–"
    return f"{a:.2f} / {b:.2f}" if a < 10 else f"{a:.1f} / {b:.1f}"


def markdown(ds_name, summaries):
    lines = [f"### {ds_name}: {summaries[0]['questions'] if summaries else 0} questions", ""]
    head = (["label", "system", "n"] + [f"R@{k}" for k in RECALL_KS] + [f"All@{k}" for k in ALL_KS] +
            [f"R@{b // 1000}k tok" for b in TOKEN_BUDGETS] +
            ["tokens p50/p95", f"> {ANSWER_MODEL_TOKENS:,} tok", "add p50/p99 ms",
             "search p50/p99 ms"])
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for s in summaries:
        cells = [s["label"], s["system"], str(s["questions"])]
        cells += [fmt(s[f"recall@{k}"]) for k in RECALL_KS]
        cells += [fmt(s[f"all@{k}"]) for k in ALL_KS]
        cells += [fmt(s[f"recall@{b // 1000}k_tokens"]) for b in TOKEN_BUDGETS]
        cells += [f"{fmt(s.get('tokens_p50'), 0)} / {fmt(s.get('tokens_p95'), 0)}",
                  fmt(s.get("over_answer_model_prefix"))]
        cells += [fmt_ms(s["add_ms_p50"], s["add_ms_p99"]), fmt_ms(s["search_ms_p50"], s["search_ms_p99"])]
        lines.append("| " + " | ".join(cells) + " |")
    cats = sorted({c for s in summaries for c in s["per_category"]})
    if cats:
        lines += ["", "Per category (questions): recall@10 / recall@100 / all evidence@100", ""]
        head = ["label", "system"] + [f"{c} ({summaries[0]['per_category'].get(c, {}).get('questions', 0)})"
                                      for c in cats]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for s in summaries:
            cells = [s["label"], s["system"]]
            for c in cats:
                pc = s["per_category"].get(c, {})
                cells.append(" / ".join(fmt(pc.get(k)) for k in ("recall@10", "recall@100", "all@100")))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--engram", metavar="PATH", help="start this engram binary on a temp data dir")
    src.add_argument("--url", help="use a running server, e.g. http://127.0.0.1:8080")
    src.add_argument("--fts5-only", action="store_true", help="only the SQLite FTS5 baseline, no server")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `engram serve` (repeatable; use --server-arg=--flag)")
    ap.add_argument("--api", choices=APIS, default="leaderboard",
                    help="leaderboard: /leaderboard/add + search (default); v4: the Agentic Memory "
                         "API, memories/add with infer false + memories/search")
    ap.add_argument("--dataset", choices=sorted(DATASET_FILES), default="locomo")
    ap.add_argument("--data-file", help="dataset path (default ../shared/data/<file> from the repo root)")
    ap.add_argument("--label", help="name of this run in tables (default: engram, engram-v4 with "
                                    "--api v4)")
    ap.add_argument("--run-id", help="run id inside user/request ids (default: random)")
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--fts5", action="store_true", help="also compute the SQLite FTS5 baseline")
    ap.add_argument("--fts5-all-terms", action="store_true",
                    help="FTS5 query keeps stop words (default: drop a small English stop-word list)")
    ap.add_argument("--limit", type=int, default=0, help="first N conversations / questions / characters")
    ap.add_argument("--concurrency", type=int, default=4, help="concurrent add clients (default 4)")
    ap.add_argument("--chunk", type=int, default=CHUNK, metavar="N",
                    help=f"messages per add (default {CHUNK}; 1-2 is how mem0-style clients add)")
    ap.add_argument("--search-concurrency", type=int, default=1,
                    help="concurrent search clients (default 1: clean latencies)")
    ap.add_argument("--keep-data", action="store_true", help="keep the temp server data dir")
    ap.add_argument("--per-question", action="store_true", help="include per-question rows in --json-out")
    ap.add_argument("--synthetic-options", type=int, default=0, metavar="N",
                    help="send N multiple-choice options per question: its gold answer and N-1 other "
                         "questions' answers (the dev files have no options; 0 = none)")
    ap.add_argument("--reference-date", action="store_true",
                    help="send each question's date as reference_date, where the dataset has one "
                         "(LongMemEval's question_date; beyond the Leaderboard's contract)")
    args = ap.parse_args()

    path = args.data_file or os.path.join(DEFAULT_DATA_DIR, DATASET_FILES[args.dataset])
    if not os.path.exists(path):
        print(f"skipping: {path} not found")
        return 0
    if not (args.engram or args.url or args.fts5_only):
        ap.error("one of --engram, --url or --fts5-only is required")

    global FTS5_STOPWORDS, SEND_REFERENCE_DATE
    FTS5_STOPWORDS = not args.fts5_all_terms
    SEND_REFERENCE_DATE = args.reference_date
    t0 = time.perf_counter()
    ds = load_dataset(args.dataset, path, args.limit)
    n_msgs = sum(len(s.messages) for u in ds.users for s in u.sessions)
    dup = sum(1 for u in ds.users for c, ts in u.by_content.items() if len(ts) > 1)
    log(f"{args.dataset}: {len(ds.users)} users, {n_msgs} messages, {len(ds.questions)} questions "
        f"(loaded in {time.perf_counter() - t0:.1f}s); {dup} text(s) sent for more than one turn")
    if args.synthetic_options > 1:
        given = add_synthetic_options(ds.questions, min(args.synthetic_options, 10), seed=42)
        ds.notes.append(f"synthetic multiple-choice options ({args.synthetic_options}: the gold "
                        f"answer + other questions' answers) sent with {given} question(s)")
    for n in ds.notes:
        log("  note:", n)

    run_id = args.run_id or f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    label = args.label or ("fts5" if args.fts5_only else
                           "engram-v4" if args.api == "v4" else "engram")
    summaries = []
    server_info = {}

    if args.fts5 or args.fts5_only:
        sc = run_fts5(ds, "sqlite-fts5" if not args.fts5_only else label)
        summaries.append(sc)

    if not args.fts5_only:
        server = None
        try:
            if args.engram:
                server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                                      keep_data=args.keep_data)
                server.start()
                url = server.url
            else:
                url = args.url
            client = Client(url, args.api_key)
            local = bool(args.engram) or urllib.parse.urlsplit(url).hostname in (
                "127.0.0.1", "localhost", "::1")
            sc = run_engram(ds, client, label, run_id, args.concurrency, args.search_concurrency,
                            max(1, args.chunk), local, args.api)
            summaries.insert(0, sc)
            server_info = {"url": url, "server_args": args.server_arg,
                           "started_by_tool": bool(args.engram)}
        finally:
            if server:
                if server.proc and server.proc.poll() is not None:
                    log(f"server exited early (code {server.proc.returncode}); log tail:\n"
                        f"{server.log_tail()}")
                server.stop()

    sums = [s.summary() for s in summaries]
    print(markdown(args.dataset, sums))
    for s in sums:
        if s["system"] != "engram":
            continue
        print()
        stored = " (until every event SUCCEEDED)" if s["api"] == "v4" else ""
        print(f"engram, {s['api']} API: {s['add_chunks']} adds ({s['add_messages']} messages) in "
              f"{s['add_seconds']}s{stored} "
              f"= {s['add_messages_per_s']} messages/s; errors add {s['add_errors']}, "
              f"search {s['search_errors']}; results {s['results_seen']}, unmatched "
              f"{s['results_unmatched']}, without date prefix {s['results_without_date_prefix']}")
        if s["api"] == "v4":
            print(f"engram v4: acknowledged in {s['ack_seconds']}s; decisions {s['v4_decisions']}; "
                  f"memories {s.get('v4_memories')} for {s.get('v4_distinct_messages')} distinct "
                  f"messages")
        if "fill_seconds" in s:
            util = s["fill_model_utilisation"]
            print(f"engram fill (adds until every vector is stored): {s['fill_seconds']}s = "
                  f"{s['fill_messages_per_s']} messages/s; model {s['fill_model_seconds']}s in "
                  f"{s['fill_model_batches']} passes, {fmt(s['fill_texts_per_batch'], 2)} texts "
                  f"per pass; model utilisation "
                  f"{'–' if util is None else f'{util:.1%}'} of {fmt(s['server_cores'])} cores")
        for k, v in s["anomalies"].items():
            print(f"  ANOMALY {k}: {v['count']}x, e.g. {v['example']}")
    print()
    print("notes: " + "; ".join(ds.notes))

    if args.json_out:
        out = {"dataset": args.dataset, "api": None if args.fts5_only else args.api,
               "data_file": path, "run_id": run_id, "label": label,
               "limit": args.limit, "concurrency": args.concurrency,
               "search_concurrency": args.search_concurrency, "top_k": TOP_K,
               "chunk_messages": max(1, args.chunk), "chars_per_token": CHARS_PER_TOKEN,
               "reference_date": args.reference_date,
               "users": len(ds.users), "messages": n_msgs, "notes": ds.notes,
               "server": server_info, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "rows": sums}
        if args.per_question:
            out["per_question"] = {s.system: s.rows for s in summaries}
        write_json(args.json_out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Memory extraction quality of the V4 Agentic Memory API on LoCoMo: every conversation replayed
through memories/add with infer true (extraction, "x"), infer false (verbatim, "v") and infer false
with one run_id per session (verbatim spread over scopes, "s"), plus the Leaderboard path, in one
run against one server. Memories are scored through their `provenance` (the add's messages they
came from), mapped back to dia_ids: coverage of the gold observations, evidence turns reached by
memories/search, a hand-labelled precision sample, add and event timing. Every path is also scored
without provenance: is the gold answer's wording contained in the first k results.

  python3 bench/v4_extraction.py --engram build/engram --json-out /tmp/v4x.json
  python3 bench/v4_extraction.py --engram build/engram --limit 1 --label-out /tmp/sample.jsonl
  python3 bench/v4_extraction.py --url http://127.0.0.1:8080 --api-key K --no-leaderboard
  python3 bench/v4_extraction.py --engram build/engram --modes v,s

bench/README.md (v4_extraction.py) defines every figure.
"""

import argparse
import json
import math
import os
import random
import re
import sys
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay  # noqa: E402
from benchlib import (DEFAULT_DATA_DIR, Client, EngramServer, HttpError, log,  # noqa: E402
                      percentile, write_json)
from replay import CHUNK, P4, STOPWORDS, load_dataset  # noqa: E402

TOP_K = 100
KS = (10, 100)
CONTAIN_KS = (5, 10, 20, 100)            # answer containment depths
BUDGETS = (1000, 2000)
THRESHOLDS = (0.0, 0.2, 0.3, 0.4, 0.5)   # 0.0 = the memory only has to cite an evidence turn
MODES = {"x": True, "v": False, "s": False}   # user id infix -> infer
# modes whose sessions each get their own run_id under the conversation's user_id: a user's
# memories spread over many scopes, as a client that opens a run per chat writes them
RUN_PER_SESSION = frozenset("s")
MODE_NAMES = {"x": "infer:true", "v": "infer:false", "s": "infer:false, run_id per session"}


class Sink:
    """Anomalies (kind -> [count, example]); replay.wait_v4_events-style callers report here."""

    def __init__(self):
        self.anomalies = {}
        self.lock = threading.Lock()

    def anomaly(self, kind, example):
        with self.lock:
            a = self.anomalies.setdefault(kind, [0, example])
            a[0] += 1


# ----------------------------------------------------------------------------------------------
# Data: the raw LoCoMo turns (speaker and text kept apart, which replay.load_locomo merges) and the
# observations. Questions come from replay.load_locomo, so gold sets equal replay.py's.

class Conv:
    def __init__(self, key):
        self.key = key
        self.sessions = []       # (n, ISO time, Unix seconds, [(dia_id, speaker, content)])
        self.observations = []   # (fact text, [dia_ids])
        self.turn_text = {}      # dia_id -> "speaker: content"


def _dia_ids(ev, known):
    """Evidence as a list of known dia_ids: a list, or "D1:3", "D8:6; D9:17", "D:11:26"."""
    out = []
    for e in ev if isinstance(ev, list) else [ev]:
        for part in re.split(r"[;,\s]+", str(e)):
            part = re.sub(r"^D:(\d+):(\d+)$", r"D\1:\2", part)
            if part in known and part not in out:
                out.append(part)
    return out


def load_conversations(path, limit):
    data = json.load(open(path, encoding="utf-8"))
    convs, dropped_obs = [], 0
    for sample in data[:limit] if limit else data:
        c, conv = Conv(sample["sample_id"]), sample["conversation"]
        for k in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                        key=lambda k: int(k.split("_")[1])):
            when = datetime.strptime(conv[f"{k}_date_time"].strip(), "%I:%M %p on %d %B, %Y")
            when = when.replace(tzinfo=timezone.utc)
            turns = []
            for t in conv[k]:
                content = t["text"]
                if t.get("blip_caption"):
                    content += f" [shares a photo: {t['blip_caption']}]"
                if not content.strip():
                    continue     # the API rejects blank content
                turns.append((t["dia_id"], t["speaker"], content))
                c.turn_text[t["dia_id"]] = f"{t['speaker']}: {content}"
            c.sessions.append((int(k.split("_")[1]), when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               int(when.timestamp()), turns))
        for facts_by_speaker in (sample.get("observation") or {}).values():
            for facts in facts_by_speaker.values():
                for fact in facts:
                    ids = _dia_ids(fact[1], c.turn_text) if len(fact) > 1 else []
                    if ids and content_words(fact[0]):
                        c.observations.append((fact[0], ids))
                    else:
                        dropped_obs += 1
        convs.append(c)
    return convs, dropped_obs


# ----------------------------------------------------------------------------------------------
# Text: content words for the overlap of a gold observation with a memory, tokens for budgets.

_EXTRA_STOP = frozenset("""
me him them us so but if just also very some any all no nor up out over after before while because
being am its itself myself yourself herself himself themselves ours yours mine hers theirs whose
each few more most other such only own same too now once s
""".split())
_STOP = STOPWORDS | _EXTRA_STOP


def _stem(w):
    # crude on purpose: "paints"/"painted"/"painting", "carves"/"carving", "running"/"run" and
    # "stories"/"story" meet; a final e and a doubled final consonant are dropped after the suffix
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    for suffix, keep in (("ing", 3), ("ed", 3), ("s", 3)):
        if w.endswith(suffix) and len(w) - len(suffix) >= keep and not w.endswith("ss"):
            w = w[:-len(suffix)]
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def content_words(text):
    text = re.sub(r"['\u2019]s\b", "", text.lower())
    return {_stem(w) for w in re.findall(r"[a-z0-9]+", text) if w not in _STOP}


def tokens(text):
    return math.ceil(len(text) / 4)


def _turn_order(dia):
    m = re.fullmatch(r"D(\d+):(\d+)", dia)
    return (int(m.group(1)), int(m.group(2))) if m else (1 << 30, 0)


# ----------------------------------------------------------------------------------------------
# Replay through memories/add. Each conversation is one client thread that posts its adds in
# order and waits for each event before the next: extraction reconciles a fact against what the
# scope already holds, so the order of a conversation's adds must be the order it was said.

def uid(run_id, mode, key):
    return f"{run_id}-{mode}-{key}"


def build_adds(conv, user_id, infer, chunk, run_per_session=False):
    """[(body, [(dia_id, speaker)] in the order of body.messages)] for one conversation."""
    adds = []
    for n, iso, ts, turns in conv.sessions:
        for j in range(0, len(turns), chunk):
            part = turns[j:j + chunk]
            body = {"messages": [{"role": "user", "name": sp, "content": text, "timestamp": iso}
                                 for _, sp, text in part],
                    "user_id": user_id, "infer": infer, "timestamp": ts}
            if run_per_session:
                # each session a run, as a client that stores sessions as runs sends it: no
                # session id of its own, searched by user_id across the runs
                body["run_id"] = f"s{n}"
            else:
                # V4's session_id filter field; verbatim turns of one session are a conversation
                body["metadata"] = {"session_id": f"{user_id}:s{n}"}
            adds.append((body, [(d, sp) for d, sp, _ in part]))
    return adds


def wait_event(client, sink, eid, timeout_s):
    """Polls one event (as replay.wait_v4_events does, at 5 ms) until it ends; the event or None."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        status, ev, _ = client.request("GET", f"{P4}/events/{eid}")
        if status != 200 or not isinstance(ev, dict):
            sink.anomaly("event: GET not answered 200", f"HTTP {status}")
            return None
        if ev.get("status") == "SUCCEEDED":
            return ev
        if ev.get("status") == "FAILED":
            sink.anomaly("event: FAILED", str(ev.get("error_message"))[:300])
            return None
        time.sleep(0.005)
    sink.anomaly("event: not ended within the timeout", eid)
    return None


def post_add(client, sink, body):
    """(event id, ack ms); a full event queue (429) drains while we wait, up to 600 s."""
    eid, ms, error = replay.post_v4_add(client, sink, body, wait_s=600)
    if error:
        sink.anomaly("add: error", error[:300])
    return eid, ms


def replay_mode(client, sink, convs, run_id, mode, chunk, concurrency, event_timeout):
    infer = MODES[mode]
    event_turns, ack_ms, done_ms, decisions = {}, [], [], Counter()
    lock = threading.Lock()
    adds = {c.key: build_adds(c, uid(run_id, mode, c.key), infer, chunk, mode in RUN_PER_SESSION)
            for c in convs}
    n_adds = sum(len(a) for a in adds.values())
    n_msgs = sum(len(b["messages"]) for a in adds.values() for b, _ in a)

    def one(conv):
        for body, turns in adds[conv.key]:
            t = time.perf_counter()
            eid, ms = post_add(client, sink, body)
            ev = wait_event(client, sink, eid, event_timeout) if eid else None
            with lock:
                if ms is not None:
                    ack_ms.append(ms)
                if eid:
                    event_turns[eid] = turns
                if ev is not None:
                    done_ms.append((time.perf_counter() - t) * 1000)
                    decisions.update(e.get("event") for e in ev.get("events") or []
                                     if isinstance(e, dict))

    log(f"{MODE_NAMES[mode]}: {n_adds} adds ({n_msgs} messages, {len(convs)} users), "
        f"{min(concurrency, len(convs))} conversation(s) at a time")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as ex:
        list(ex.map(one, convs))
    secs = time.perf_counter() - t0
    return event_turns, {
        "adds": n_adds, "messages": n_msgs, "events_seconds": round(secs, 2),
        "ack_ms_p50": percentile(ack_ms, 50), "ack_ms_p99": percentile(ack_ms, 99),
        "event_ms_p50": percentile(done_ms, 50), "event_ms_p99": percentile(done_ms, 99),
        "events_succeeded": len(done_ms), "decisions": dict(decisions)}


def list_memories(client, sink, user_id):
    out, page = [], 1
    while True:
        qs = urllib.parse.urlencode({"user_id": user_id, "page_number": page, "page_size": 1000})
        status, parsed, _ = client.request("GET", f"{P4}/memories?{qs}")
        if status != 200 or not isinstance(parsed, dict):
            sink.anomaly("list: GET memories not answered 200", f"HTTP {status}")
            return out
        rows = parsed.get("results") or []
        out += rows
        if not rows or len(out) >= (parsed.get("total") or 0):
            return out
        page += 1


def cited_turns(mem, event_turns, sink):
    """dia_ids of the add messages a memory's provenance names (its event's index -> dia_id)."""
    prov = mem.get("provenance") if isinstance(mem, dict) else None
    if not isinstance(prov, dict):
        sink.anomaly("provenance: missing", str(mem.get("id") if isinstance(mem, dict) else mem))
        return []
    turns = event_turns.get(prov.get("event_id"))
    if turns is None:
        sink.anomaly("provenance: event_id of no add of this run", str(prov.get("event_id")))
        return []
    out = []
    for m in prov.get("messages") or []:
        i = m.get("index") if isinstance(m, dict) else None
        if not isinstance(i, int) or not 0 <= i < len(turns):
            sink.anomaly("provenance: message index outside the add", f"{i} of {len(turns)}")
            continue
        dia, speaker = turns[i]
        if m.get("name") != speaker:
            sink.anomaly("provenance: name differs from the turn's speaker",
                         f"{m.get('name')!r} vs {speaker!r}")
        if dia not in out:
            out.append(dia)
    return out


# ----------------------------------------------------------------------------------------------
# Metrics

def coverage(convs, mems_by_conv):
    """Fraction of observations whose best citing memory reaches each threshold."""
    covered, total, best_all = Counter(), 0, []
    for c in convs:
        by_turn = {}
        for words, turns in mems_by_conv[c.key]:
            for t in turns:
                by_turn.setdefault(t, []).append(words)
        for text, ids in c.observations:
            gold = content_words(text)
            cands = [w for d in ids for w in by_turn.get(d, ())]
            best = max((len(gold & w) / len(gold) for w in cands), default=None)
            total += 1
            best_all.append(best)
            for th in THRESHOLDS:
                covered[th] += best is not None and best >= th - 1e-12
    return {"observations": total,
            **{f"coverage@{th:g}": (covered[th] / total if total else None) for th in THRESHOLDS},
            "mean_best_overlap_when_cited": (sum(b for b in best_all if b is not None) /
                                             max(1, sum(b is not None for b in best_all)))}


def answer_containment(answer, texts):
    """{"contained@k": 1.0 | 0.0} per CONTAIN_KS: every content word of the gold answer is among
    the content words of the first k texts (what a reader given k results could answer from,
    whatever memory holds it); {} when the answer has no content word: the question is left out."""
    gold = content_words(answer or "")
    if not gold:
        return {}
    seen, done, out = set(), 0, {}
    for k in CONTAIN_KS:
        for text in texts[done:k]:
            seen |= content_words(text)
        done = k
        out[f"contained@{k}"] = float(gold <= seen)
    return out


class Recall:
    """Per-question evidence-turn recall of one path: results in rank order, each with the turns it
    reaches and its text (tokens = ceil(len / 4)); and the gold answer's containment in the texts.
    """

    def __init__(self):
        self.rows, self.search_ms, self.errors = [], [], 0
        # results showing a version an update replaced (valid_to set), and the questions with one
        self.replaced_results, self.replaced_questions = 0, 0

    def score(self, q, ranked, texts):
        first_rank, first_end, cum = {}, {}, 0
        for i, (turns, text) in enumerate(zip(ranked, texts)):
            cum += tokens(text)
            for t in turns or ():
                first_rank.setdefault(t, i)
                first_end.setdefault(t, cum)
        g = q.gold
        row = {"qid": q.qid, "category": q.category, "results": len(ranked),
               "tokens@10": sum(tokens(t) for t in texts[:10])}
        for k in KS:
            row[f"recall@{k}"] = sum(first_rank.get(t, 1 << 30) < k for t in g) / len(g)
        for b in BUDGETS:
            row[f"recall@{b // 1000}k_tokens"] = \
                sum(first_end.get(t, 1 << 62) <= b for t in g) / len(g)
        row.update(answer_containment(q.answer, texts))
        self.rows.append(row)

    def summary(self):
        keys = [f"recall@{k}" for k in KS] + [f"recall@{b // 1000}k_tokens" for b in BUDGETS] + \
               ["tokens@10"]
        ckeys = [f"contained@{k}" for k in CONTAIN_KS]

        def mean(rows, k):
            return sum(r[k] for r in rows) / len(rows) if rows else None

        def containment(rows):
            scored = [r for r in rows if ckeys[0] in r]
            return {"answer_questions": len(scored), **{k: mean(scored, k) for k in ckeys}}
        cats = {}
        for r in self.rows:
            cats.setdefault(r["category"], []).append(r)
        scored = containment(self.rows)
        return {"questions": len(self.rows), **{k: mean(self.rows, k) for k in keys},
                **scored, "answer_skipped": len(self.rows) - scored["answer_questions"],
                "per_category": {c: {"questions": len(rs), "recall@10": mean(rs, "recall@10"),
                                     "recall@100": mean(rs, "recall@100"), **containment(rs)}
                                 for c, rs in sorted(cats.items())},
                "search_ms_p50": percentile(self.search_ms, 50),
                "search_ms_p99": percentile(self.search_ms, 99), "search_errors": self.errors,
                "replaced_versions_shown": self.replaced_results,
                "questions_shown_a_replaced_version": self.replaced_questions}


def search_v4(client, sink, questions, run_id, mode, event_turns):
    rec = Recall()
    for q in questions:
        user_id = uid(run_id, mode, q.user.key)
        body = {"query": q.query, "filters": {"AND": [{"user_id": user_id}]}, "top_k": TOP_K}
        try:
            resp, dt = client.post_json(P4 + "/memories/search", body)
        except (HttpError, OSError) as e:
            rec.errors += 1
            sink.anomaly("search: error", str(e)[:300])
            rec.score(q, [], [])
            continue
        rec.search_ms.append(dt * 1000)
        results = resp.get("results") if isinstance(resp, dict) else None
        if not isinstance(results, list):
            sink.anomaly("search: 'results' missing or not a list", json.dumps(resp)[:300])
            results = []
        for r in results:
            if isinstance(r, dict) and r.get("user_id") not in (None, user_id):
                sink.anomaly("search: result of another user_id", str(r.get("id")))
            # shows that the scope spread took effect (and that no other mode got a run_id)
            if isinstance(r, dict) and bool(r.get("run_id")) != (mode in RUN_PER_SESSION):
                sink.anomaly("search: run_id present unlike the add" if r.get("run_id") else
                             "search: run_id missing unlike the add", str(r.get("id")))
        replaced = sum(isinstance(r, dict) and r.get("valid_to") is not None for r in results)
        rec.replaced_results += replaced
        rec.replaced_questions += replaced > 0
        rec.score(q, [cited_turns(r, event_turns, sink) for r in results],
                  [replay.content_text(r.get("memory")) for r in results])
    return rec


class LeaderboardScorer(replay.Scorer):
    """replay.Scorer (its checks, latencies, anomalies) that also feeds our Recall, so the
    Leaderboard figures use the same token estimate and answer containment as the V4 ones.
    Results are matched to turns by content (replay.match_result)."""

    def __init__(self, label):
        super().__init__(label, "engram")
        self.rec = Recall()
        self.texts = {}   # qid -> its results' texts, which replay's score() is not given

    def search(self, client, sc, q, user_id):
        items, ms = replay.search_leaderboard(client, sc, q, user_id)
        self.texts[q.qid] = [it["text"] for it in items]
        return items, ms

    def score(self, q, ranked, lengths_chars):
        # a failed search scores ([], []) and left no texts
        self.rec.score(q, ranked, self.texts.pop(q.qid, []))
        super().score(q, ranked, lengths_chars)


def run_leaderboard(client, ds, run_id, chunk, concurrency, local):
    """As replay.run_engram does for --api leaderboard, with LeaderboardScorer."""
    sc = LeaderboardScorer("leaderboard")
    before = replay.model_counters(client)
    t0 = time.perf_counter()
    n_msgs, check = replay.fill_leaderboard(ds, client, sc, run_id, concurrency, chunk)
    replay.record_fill(client, sc, before, t0, n_msgs, local)   # waits for the vectors
    check()
    replay.search_all(ds, client, sc, run_id, 1, sc.search)
    s = sc.summary()
    sc.rec.search_ms = sc.search_ms
    out = sc.rec.summary()
    out.update({k: s.get(k) for k in ("add_ms_p50", "add_ms_p99", "add_seconds", "fill_seconds",
                                      "add_messages", "add_errors", "results_unmatched")})
    out["anomalies"] = s["anomalies"]
    return out


# ----------------------------------------------------------------------------------------------
# Precision: a seeded sample of extracted memories, labelled by hand, keyed on (text, source turns)
# because memory ids change from run to run.

def precision_sample(extracted, n, seed):
    pop = sorted(extracted, key=lambda m: (m["conv_index"],
                                           [_turn_order(d) for d in m["source_ids"]], m["memory"]))
    return random.Random(seed).sample(pop, min(n, len(pop)))


def read_labels(path):
    """{(memory text, source dia_ids): "correct" | "wrong"}; unlabelled lines are left out."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {(d["memory"], tuple(d.get("source_ids") or [])): d["label"] for d in rows
            if d.get("label") in ("correct", "wrong")}


# ----------------------------------------------------------------------------------------------
# Output

def f3(v):
    return "–" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def ms2(a, b):
    return "–" if a is None else f"{a:.1f} / {b:.1f}"


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def _row(cells):
    return "| " + " | ".join(cells) + " |"


def _paths(res):
    """(label, memories, mem/msg, search summary, ack p50, ack p99, all-events s) of every path
    run: the V4 modes in run order, then the Leaderboard."""
    paths = [(m["label"], m["memories"], m["memories_per_message"], m["search"], m["ack_ms_p50"],
              m["ack_ms_p99"], m["events_seconds"]) for m in res["modes"].values()]
    lb = res.get("leaderboard")
    if lb:   # a Leaderboard add answers once stored; "all events" = until the vectors are in
        paths.append((lb["label"], lb["add_messages"], 1.0, lb, lb["add_ms_p50"], lb["add_ms_p99"],
                      lb.get("fill_seconds") or lb["add_seconds"]))
    return paths


def _contained(s):
    return " / ".join(f3(s.get(f"contained@{k}")) for k in CONTAIN_KS)


def markdown(res):
    paths = _paths(res)
    first = paths[0][3]
    head = ["path", "memories", "mem/msg", "R@10", "R@100", "R@1k tok", "R@2k tok",
            "tok/answer"] + [f"AC@{k}" for k in CONTAIN_KS] + ["ack p50/p99 ms", "all events s"]
    lines = [f"### LoCoMo V4 extraction: {res['conversations']} conversation(s), "
             f"{res['messages']} messages, {first['questions']} questions", "",
             _row(head), "|" + "---|" * len(head)]
    for name, n, mpm, s, a50, a99, secs in paths:
        lines.append(_row([name, str(n), f3(mpm)] + [f3(s[k]) for k in (
            "recall@10", "recall@100", "recall@1k_tokens", "recall@2k_tokens")] +
            ["–" if s["tokens@10"] is None else f"{s['tokens@10']:.0f}"] +
            [f3(s[f"contained@{k}"]) for k in CONTAIN_KS] + [ms2(a50, a99), str(secs)]))
    lines += ["", f"tok/answer = mean tokens of the first 10 results; AC@k = answer containment in "
                  f"the first k results ({first['answer_questions']} questions, "
                  f"{first['answer_skipped']} skipped: answer without a content word)"]
    modes = res["modes"]
    if "x" in modes:
        p, cov = res["precision"], modes["x"]["coverage"]
        prec = "not measured" if p["precision"] is None else \
            f"{p['precision']:.3f} ({p['matched']} labelled)"
        head = ["observations"] + [("cites evidence" if th == 0 else f"cov@{th:g}")
                                   for th in THRESHOLDS] + ["precision"]
        lines += ["", _row(head), "|" + "---|" * len(head),
                  _row([str(cov["observations"])] +
                       [f3(cov[f"coverage@{th:g}"]) for th in THRESHOLDS] + [prec])]
    lines += ["", _row(["path", "event decisions"]), "|---|---|"] + \
        [_row([m["label"], json.dumps(m["decisions"])]) for m in modes.values()]
    cats = first["per_category"]
    for title, cell in (("Recall@10", lambda c: f3(c.get("recall@10"))),
                        ("Answer containment at " + " / ".join(map(str, CONTAIN_KS)), _contained)):
        lines += ["", f"{title} per category (questions):", "",
                  _row(["path"] + [f"{c} ({cats[c]['questions']})" for c in cats]),
                  "|" + "---|" * (len(cats) + 1)]
        for name, _, _, s, *_ in paths:
            lines.append(_row([name] + [cell(s["per_category"].get(c, {})) for c in cats]))
    return "\n".join(lines)


def print_goals(res):
    """The lines a change is judged by, for the paths that ran."""
    m, lb = res["modes"], res.get("leaderboard")
    x, v = m.get("x"), m.get("v")
    if x and v:
        print(f"infer:true recall@10 vs infer:false recall@10: {f3(x['search']['recall@10'])} vs "
              f"{f3(v['search']['recall@10'])}")
        print(f"memories per message ratio (infer:true / infer:false): "
              f"{f3(ratio(x['memories_per_message'], v['memories_per_message']))}")
        print(f"tokens per answer (within top 10) ratio (infer:true / infer:false): "
              f"{f3(ratio(x['search']['tokens@10'], v['search']['tokens@10']))}")
    # the verbatim paths hold the same turns: one scope, one scope per session, the Leaderboard
    verbatim = [(MODE_NAMES[k], m[k]["search"]) for k in ("v", "s") if k in m] + \
        ([("leaderboard", lb)] if lb else [])
    if len(verbatim) > 1:
        print("verbatim recall@10: " + ", ".join(f"{n} {f3(s['recall@10'])}" for n, s in verbatim))
    paths = [(MODE_NAMES[k], s["search"]) for k, s in m.items()] + \
        ([("leaderboard", lb)] if lb else [])
    print("answer containment@10: " + ", ".join(f"{n} {f3(s['contained@10'])}" for n, s in paths))
    if x:
        print(f"observation coverage at 0.3: {f3(x['coverage']['coverage@0.3'])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--engram", metavar="PATH", help="start this engram binary on a temp data dir")
    src.add_argument("--url", help="use a running server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `engram serve` (repeatable; e.g. "
                         "--server-arg=--extractor=llm)")
    ap.add_argument("--data-file", help="LoCoMo path (default ../shared/data/locomo_dev.json)")
    ap.add_argument("--limit", type=int, default=0, help="first N conversations")
    ap.add_argument("--label", default="engram", help="name of this run in tables")
    ap.add_argument("--run-id", help="prefix of the user ids (default: random)")
    ap.add_argument("--chunk", type=int, default=CHUNK, help=f"turns per add (default {CHUNK})")
    ap.add_argument("--concurrency", type=int, default=4,
                    help="conversations replayed at a time (default 4)")
    ap.add_argument("--event-timeout", type=float, default=600.0, help="seconds per event (600)")
    ap.add_argument("--no-leaderboard", action="store_true", help="skip the Leaderboard path")
    ap.add_argument("--modes", default="x,v,s",
                    help="V4 modes to run, in order (default x,v,s): x = infer true, v = infer "
                         "false, s = infer false with one run_id per session")
    ap.add_argument("--label-sample", type=int, default=100, metavar="N",
                    help="extracted memories in the precision sample (default 100)")
    ap.add_argument("--label-out", metavar="FILE", help="write the sample as JSON lines to label")
    ap.add_argument("--labels", metavar="FILE",
                    help="labelled JSON lines (kept outside the repository, beside the data)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--keep-data", action="store_true", help="keep the temp server data dir")
    args = ap.parse_args()
    modes = list(dict.fromkeys(m.strip() for m in args.modes.split(",") if m.strip()))
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes: a comma-separated list of {', '.join(MODES)}, got {args.modes!r}")

    path = args.data_file or os.path.join(DEFAULT_DATA_DIR, "locomo_dev.json")
    if not os.path.exists(path):
        print(f"skipping: {path} not found")
        return 0
    t_start = time.perf_counter()
    convs, dropped_obs = load_conversations(path, args.limit)
    ds = load_dataset("locomo", path, args.limit)
    n_msgs = sum(len(s[3]) for c in convs for s in c.sessions)
    log(f"locomo: {len(convs)} conversations, {n_msgs} messages, "
        f"{sum(len(c.observations) for c in convs)} observations ({dropped_obs} without a valid "
        f"evidence turn or content word dropped), {len(ds.questions)} questions")
    run_id = args.run_id or f"v4x{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    chunk = max(1, args.chunk)
    sink = Sink()
    res = {"dataset": "locomo", "data_file": path, "run_id": run_id, "label": args.label,
           "limit": args.limit, "chunk_messages": chunk, "top_k": TOP_K,
           "contain_ks": list(CONTAIN_KS),
           "conversations": len(convs), "messages": n_msgs, "server_args": args.server_arg,
           "modes": {}, "notes": ds.notes + [f"{dropped_obs} observation(s) dropped"]}
    server, extracted = None, []
    try:
        if args.engram:
            server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                                  keep_data=args.keep_data)
            server.start()
        url = server.url if server else args.url
        client = Client(url, args.api_key)
        turns, mems = {}, {}
        for mode in modes:
            turns[mode], res["modes"][mode] = replay_mode(client, sink, convs, run_id, mode, chunk,
                                                          args.concurrency, args.event_timeout)
            mems[mode] = {c.key: list_memories(client, sink, uid(run_id, mode, c.key)) for c in convs}
        extractor = Counter(
            (m.get("provenance") or {}).get("extractor") or "none"
            for ms in mems.get("x", {}).values() for m in ms if isinstance(m, dict))
        res["extractors"] = dict(extractor)
        ext_name = extractor.most_common(1)[0][0] if extractor else "none"
        for mode, m in res["modes"].items():
            m["label"] = f"{args.label} infer:true ({ext_name})" if MODES[mode] \
                else f"{args.label} {MODE_NAMES[mode]} (verbatim)"
            m["memories"] = sum(len(v) for v in mems[mode].values())
            m["memories_per_message"] = m["memories"] / m["messages"] if m["messages"] else None
            m["sources"] = dict(Counter((r.get("provenance") or {}).get("source")
                                        for v in mems[mode].values() for r in v))

        if "x" in modes:   # coverage and the precision population, from extraction provenance
            cited = {c.key: [(r.get("memory") or "", cited_turns(r, turns["x"], sink))
                             for r in mems["x"][c.key]] for c in convs}
            res["modes"]["x"]["coverage"] = coverage(
                convs, {k: [(content_words(t), ids) for t, ids in v] for k, v in cited.items()})
            res["modes"]["x"]["memories_citing_no_turn"] = sum(not ids for v in cited.values()
                                                               for _, ids in v)
            for i, c in enumerate(convs):
                for r, (text, ids) in zip(mems["x"][c.key], cited[c.key]):
                    if (r.get("provenance") or {}).get("source") == "extraction":
                        extracted.append({"id": r.get("id"), "user_id": uid(run_id, "x", c.key),
                                          "memory": text, "source_ids": ids, "conv_index": i,
                                          "sources": [c.turn_text[d] for d in ids]})
        for mode in modes:
            log(f"searching {len(ds.questions)} questions, {MODE_NAMES[mode]}")
            res["modes"][mode]["search"] = search_v4(client, sink, ds.questions, run_id, mode,
                                                     turns[mode]).summary()
        if not args.no_leaderboard:
            local = bool(args.engram) or urllib.parse.urlsplit(url).hostname in (
                "127.0.0.1", "localhost", "::1")
            res["leaderboard"] = run_leaderboard(client, ds, run_id, chunk, args.concurrency, local)
            res["leaderboard"]["label"] = f"{args.label} leaderboard"
    finally:
        if server:
            if server.proc and server.proc.poll() is not None:
                log(f"server exited early (code {server.proc.returncode}); log tail:\n"
                    f"{server.log_tail()}")
            server.stop()

    sample = precision_sample(extracted, args.label_sample, args.seed)
    if args.label_out:
        with open(args.label_out, "w", encoding="utf-8") as f:
            for m in sample:
                f.write(json.dumps({k: m[k] for k in ("id", "user_id", "memory", "source_ids",
                                                      "sources")}, ensure_ascii=False) + "\n")
        log(f"wrote {len(sample)} memories to label to {args.label_out} "
            f'(add "label": "correct" | "wrong" to each line)')
    labels_path = args.labels
    if labels_path and not os.path.exists(labels_path):
        raise SystemExit(f"labels file not found: {labels_path}")
    labels = read_labels(labels_path) if labels_path else {}
    judged = [labels.get((m["memory"], tuple(m["source_ids"]))) for m in sample]
    matched = sum(j is not None for j in judged)
    res["precision"] = {"labels_file": labels_path, "labels": len(labels), "sample": len(sample),
                        "matched": matched, "correct": judged.count("correct"),
                        "precision": judged.count("correct") / matched if matched else None}
    res["anomalies"] = {k: {"count": n, "example": e} for k, (n, e) in sink.anomalies.items()}
    res["seconds"] = round(time.perf_counter() - t_start, 1)

    print(markdown(res))
    print()
    lb_anomalies = (res.get("leaderboard") or {}).get("anomalies", {})
    for k, a in list(res["anomalies"].items()) + [("leaderboard: " + k, a)
                                                  for k, a in lb_anomalies.items()]:
        print(f"  ANOMALY {k}: {a['count']}x, e.g. {a['example']}")
    p = res["precision"]
    if "x" not in modes:
        print("precision: not measured (infer:true not run)")
    elif not labels:
        print("precision: not measured (no labels)")
    elif not matched:
        print(f"precision: not measured (none of {len(sample)} sampled memories matches one of "
              f"{len(labels)} labels)")
    else:
        print(f"precision: {f3(p['precision'])} = {p['correct']} correct / {matched} labelled "
              f"({matched} of {len(sample)} sampled memories matched one of {len(labels)} labels)")
    print_goals(res)
    print(f"run time {res['seconds']}s")
    if args.json_out:
        write_json(args.json_out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())

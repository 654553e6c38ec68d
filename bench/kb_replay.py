#!/usr/bin/env python3
"""Knowledge-base (V3) search quality through the real HTTP API.

Every LoCoMo session becomes one Markdown document of its conversation's knowledge base (one
knowledge base per conversation): a "# Session N: <date>" heading, then every turn as a paragraph
"Speaker: text". The documents are uploaded as LOCAL files from an import directory, every one is
polled until SUCCESS, and each question searches its own conversation's knowledge base.

Gold: a question's evidence turns. Document recall@k = fraction of the sessions holding them whose
document has a chunk among the first k results; chunk recall@k = fraction of the evidence turns
whose whole line appears (substring, whitespace collapsed) in one of the first k chunks.

Examples (from the repo root):
  python3 bench/kb_replay.py --engram build/engram --json-out /tmp/kb.json
  python3 bench/kb_replay.py --engram build/engram --limit 2 --label quick

See bench/README.md ("kb_replay.py") for the details.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (DEFAULT_DATA_DIR, Client, EngramServer, HttpError, log,  # noqa: E402
                      percentile, write_json)
from replay import DATASET_FILES, load_dataset  # noqa: E402

P3 = "/v3/openapi/workspaces/default/memory/agentic-memory"
RECALL_KS = (1, 5, 10)
DEFAULT_TOP_K = 10
CENSUS_TOP_K = 1000  # the default --max-top-k: one search that returns every chunk of a small KB
DATASETS = ("locomo",)


def _collapse(text):
    return " ".join(text.split())


def session_number(session_key):
    return int(session_key.lstrip("s"))


def session_title(session):
    when = datetime.fromtimestamp(session.ts_ms / 1000, tz=timezone.utc)
    date = f"{when.hour % 12 or 12}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on " \
           f"{when.day} {when.strftime('%B')}, {when.year}"
    return f"Session {session_number(session.key)}: {date}"


def session_markdown(session):
    """The document of one session: its heading, then one paragraph per turn."""
    parts = [f"# {session_title(session)}"]
    parts += [m.content for m in session.messages]
    return "\n\n".join(parts) + "\n"


def kb_id_of(user):
    return f"locomo-{user.key}"


class Kb:
    """One conversation's knowledge base: its documents and the turn -> (doc id, line) maps."""

    def __init__(self, user):
        self.user = user
        self.kb_id = kb_id_of(user)
        self.docs = []                # (doc_id, title, relative path, markdown)
        self.doc_of_turn = {}         # dia_id -> doc id
        self.line_of_turn = {}        # dia_id -> the turn's text as written, whitespace collapsed
        for s in user.sessions:
            doc_id = s.key
            rel = f"{self.kb_id}/{doc_id}.md"
            self.docs.append((doc_id, session_title(s), rel, session_markdown(s)))
            for m in s.messages:
                self.doc_of_turn[m.turn] = doc_id
                self.line_of_turn[m.turn] = _collapse(m.content)


class Report:
    def __init__(self, label):
        self.label = label
        self.anomalies = {}
        self.rows = []
        self.search_ms = []
        self.search_errors = 0
        self.extra = {}

    def anomaly(self, kind, example):
        a = self.anomalies.setdefault(kind, {"count": 0, "example": example})
        a["count"] += 1

    def summary(self):
        n = len(self.rows)

        def mean(key):
            return round(sum(r[key] for r in self.rows) / n, 4) if n else None

        out = {"label": self.label, "n": n}
        for k in RECALL_KS:
            out[f"doc_recall@{k}"] = mean(f"doc_recall@{k}")
        for k in RECALL_KS:
            out[f"chunk_recall@{k}"] = mean(f"chunk_recall@{k}")
        for k in RECALL_KS:
            out[f"doc_hit@{k}"] = mean(f"doc_hit@{k}")
        out["doc_mrr"] = mean("doc_mrr")
        cats = {}
        for r in self.rows:
            cats.setdefault(r["category"], []).append(r)
        kmax = max(RECALL_KS)
        out["per_category"] = {
            c: {"n": len(rs),
                f"doc_recall@{kmax}": round(sum(r[f"doc_recall@{kmax}"] for r in rs) / len(rs), 4),
                f"chunk_recall@{kmax}": round(sum(r[f"chunk_recall@{kmax}"] for r in rs) / len(rs),
                                              4)}
            for c, rs in sorted(cats.items())}
        p50, p99 = percentile(self.search_ms, 50), percentile(self.search_ms, 99)
        out["search_p50_ms"] = None if p50 is None else round(p50, 2)
        out["search_p99_ms"] = None if p99 is None else round(p99, 2)
        out["search_errors"] = self.search_errors
        out.update(self.extra)
        out["anomalies"] = self.anomalies
        return out


def v3_result(resp, rep, what):
    res = resp.get("result") if isinstance(resp, dict) else None
    if not isinstance(res, dict):
        rep.anomaly(f"{what}: 'result' missing or not an object", json.dumps(resp)[:300])
        return {}
    return res


def write_documents(kbs, import_dir):
    total = 0
    for kb in kbs:
        for _doc_id, _title, rel, text in kb.docs:
            path = os.path.join(import_dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            total += len(text.encode("utf-8"))
    return total


def upload_all(client, kbs, rep):
    ms = []
    for kb in kbs:
        for doc_id, title, rel, _text in kb.docs:
            body = {"type": "LOCAL", "doc": {"id": doc_id, "title": title, "file_url": rel}}
            resp, dt = client.post_json(f"{P3}/knowledge-bases/{kb.kb_id}/docs", body)
            ms.append(dt * 1000)
            res = v3_result(resp, rep, "upload")
            if res.get("id") != doc_id:
                rep.anomaly("upload: id not echoed", f"{doc_id} -> {res.get('id')}")
            if res.get("status") != "PROCESSING":
                rep.anomaly("upload: status is not PROCESSING", str(res.get("status")))
    return ms


def list_statuses(client, kb, rep):
    """doc id -> status over every page of the knowledge base's document list."""
    out, page = {}, 1
    while True:
        status, resp, _ = client.request(
            "GET", f"{P3}/knowledge-bases/{kb.kb_id}/docs?page_number={page}&page_size=100")
        if status != 200:
            raise HttpError(status, json.dumps(resp) if not isinstance(resp, str) else resp)
        res = v3_result(resp, rep, "list")
        items = res.get("results") or []
        for d in items:
            out[d.get("id")] = d.get("status")
        if len(out) >= int(res.get("total") or 0) or not items:
            return out
        page += 1


def wait_ingested(client, kbs, rep, timeout_s):
    """Polls every knowledge base's list until no document is PROCESSING; FAIL is reported."""
    deadline = time.monotonic() + timeout_s
    pending = {kb.kb_id for kb in kbs}
    by_id = {kb.kb_id: kb for kb in kbs}
    while pending:
        for kb_id in sorted(pending):
            kb = by_id[kb_id]
            st = list_statuses(client, kb, rep)
            missing = [d for d, *_ in kb.docs if d not in st]
            if missing:
                rep.anomaly("list: uploaded document missing", f"{kb_id}/{missing[0]}")
            if all(st.get(d) in ("SUCCESS", "FAIL") for d, *_ in kb.docs if d in st):
                for d, *_ in kb.docs:
                    if st.get(d) == "FAIL":
                        status, resp, _ = client.request(
                            "GET", f"{P3}/knowledge-bases/{kb_id}/docs/{urllib.parse.quote(d)}")
                        err = (resp.get("result") or {}).get("error_message") \
                            if isinstance(resp, dict) else resp
                        rep.anomaly("ingestion: document FAIL", f"{kb_id}/{d}: {err}")
                pending.discard(kb_id)
        if pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"documents still PROCESSING after {timeout_s:.0f}s: "
                                 f"{sorted(pending)[:5]}")
            time.sleep(0.05)


def check_contents(client, kbs, rep):
    """Each stored document's extracted text must hold every turn of its session."""
    for kb in kbs:
        for doc_id, _title, _rel, text in kb.docs:
            status, resp, _ = client.request(
                "GET", f"{P3}/knowledge-bases/{kb.kb_id}/docs/{urllib.parse.quote(doc_id)}")
            content = (resp.get("result") or {}).get("content", "") if isinstance(resp, dict) \
                else ""
            if status != 200 or _collapse(content) != _collapse(text):
                rep.anomaly("get: content differs from the uploaded text",
                            f"{kb.kb_id}/{doc_id} (HTTP {status}, {len(content)} vs {len(text)} "
                            f"chars)")


def search(client, kb, query, top_k):
    resp, dt = client.post_json(f"{P3}/knowledge-bases/{kb.kb_id}/search",
                                {"query": query, "top_k": top_k})
    res = resp.get("result") if isinstance(resp, dict) else None
    hits = res.get("results") if isinstance(res, dict) else None
    return hits, dt * 1000, resp


def check_hits(hits, kb, top_k, rep):
    if len(hits) > top_k:
        rep.anomaly("search: more than top_k results", str(len(hits)))
    prev, seen = None, set()
    doc_ids = {d for d, *_ in kb.docs}
    for h in hits:
        key = (h.get("doc_id"), h.get("position"))
        if key in seen:
            rep.anomaly("search: duplicate chunk", str(key))
        seen.add(key)
        if h.get("doc_id") not in doc_ids:
            rep.anomaly("search: doc_id not of this knowledge base", str(h.get("doc_id")))
        if not h.get("chunk"):
            rep.anomaly("search: empty chunk", str(key))
        s = h.get("score")
        if not (isinstance(s, (int, float)) and 0 <= s <= 1):
            rep.anomaly("search: score not in 0..1", str(s))
        elif prev is not None and s > prev + 1e-9:
            rep.anomaly("search: scores not in descending order", f"{prev} then {s}")
        if isinstance(s, (int, float)):
            prev = s


def census(client, kbs, questions, rep):
    """One wide search per knowledge base: how many chunks it holds, their sizes, and how many
    evidence turns appear whole in some chunk (the ceiling of chunk recall)."""
    chunks_total, sizes, headings = 0, [], 0
    evid_total = evid_whole = 0
    for kb in kbs:
        try:
            hits, _ms, resp = search(client, kb, "session", CENSUS_TOP_K)
        except HttpError as e:  # a server started with a smaller --max-top-k
            rep.anomaly("census: search refused", str(e)[:300])
            continue
        if not isinstance(hits, list):
            rep.anomaly("census: 'result.results' missing", json.dumps(resp)[:300])
            continue
        texts = {}
        for h in hits:
            texts[(h.get("doc_id"), h.get("position"))] = _collapse(str(h.get("chunk", "")))
            if h.get("heading"):
                headings += 1
        chunks_total += len(texts)
        sizes += [len(t.encode("utf-8")) for t in texts.values()]
        turns = {t for q in questions if q.user is kb.user for t in q.gold}
        for t in turns:
            evid_total += 1
            line = kb.line_of_turn[t]
            if any(line in c for c in texts.values()):
                evid_whole += 1
    docs = sum(len(kb.docs) for kb in kbs)
    rep.extra.update({
        "chunks_seen": chunks_total, "chunks_per_document": round(chunks_total / docs, 2)
        if docs else None,
        "chunk_bytes_p50": percentile(sizes, 50), "chunk_bytes_max": max(sizes) if sizes else None,
        "results_with_heading": headings,
        "evidence_turns": evid_total,
        "evidence_turns_whole_in_a_chunk": evid_whole})


def score(rep, q, kb, hits):
    gold_turns = list(q.gold)
    gold_docs = {kb.doc_of_turn[t] for t in gold_turns}
    row = {"qid": q.qid, "category": q.category, "gold_turns": len(gold_turns),
           "gold_docs": len(gold_docs)}
    docs = [h.get("doc_id") for h in hits]
    chunks = [_collapse(str(h.get("chunk", ""))) for h in hits]
    for k in RECALL_KS:
        found_docs = gold_docs & set(docs[:k])
        row[f"doc_recall@{k}"] = len(found_docs) / len(gold_docs)
        row[f"doc_hit@{k}"] = 1.0 if found_docs else 0.0
        found = sum(1 for t in gold_turns if any(kb.line_of_turn[t] in c for c in chunks[:k]))
        row[f"chunk_recall@{k}"] = found / len(gold_turns)
    rank = next((i for i, d in enumerate(docs) if d in gold_docs), None)
    row["doc_mrr"] = 0.0 if rank is None else 1.0 / (rank + 1)
    rep.rows.append(row)


def fmt(v, d=3):
    """A ratio as ".812" (None as "–")."""
    if v is None:
        return "–"
    return f"{v:.{d}f}".lstrip("0") if isinstance(v, float) and 0 <= v < 1 else \
        f"{v:.{d}f}" if isinstance(v, float) else str(v)


def fmt_ms(v):
    return "–" if v is None else f"{v:.1f}"


def markdown(summaries):
    head = ["label", "n"] + [f"doc R@{k}" for k in RECALL_KS] + \
           [f"chunk R@{k}" for k in RECALL_KS] + ["search p50 / p99 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summaries:
        cells = [s["label"], str(s["n"])] + [fmt(s[f"doc_recall@{k}"]) for k in RECALL_KS] + \
                [fmt(s[f"chunk_recall@{k}"]) for k in RECALL_KS] + \
                [f"{fmt_ms(s['search_p50_ms'])} / {fmt_ms(s['search_p99_ms'])}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", metavar="PATH", required=True,
                    help="start this engram binary on a temp data dir with a temp import dir")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `engram serve` (repeatable; use --server-arg=--flag)")
    ap.add_argument("--dataset", choices=DATASETS, default="locomo")
    ap.add_argument("--data-file", help="dataset path (default ../shared/data/<file> from the repo root)")
    ap.add_argument("--limit", type=int, default=0, help="first N conversations (0: all)")
    ap.add_argument("--top-k", type=int, default=DEFAULT_TOP_K,
                    help=f"search depth (default {DEFAULT_TOP_K}, at least {max(RECALL_KS)})")
    ap.add_argument("--label", default="engram", help="name of this run in tables")
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--per-question", action="store_true", help="include per-question rows in --json-out")
    ap.add_argument("--ingest-timeout", type=float, default=900.0, metavar="S",
                    help="longest wait for every document to leave PROCESSING (default 900)")
    ap.add_argument("--keep-data", action="store_true", help="keep the temp data and import dirs")
    args = ap.parse_args()
    if args.top_k < max(RECALL_KS):
        ap.error(f"--top-k must be at least {max(RECALL_KS)}")

    path = args.data_file or os.path.join(DEFAULT_DATA_DIR, DATASET_FILES[args.dataset])
    if not os.path.exists(path):
        print(f"skipping: {path} not found")
        return 0
    ds = load_dataset(args.dataset, path, args.limit)
    kbs = [Kb(u) for u in ds.users]
    kb_of_user = {id(kb.user): kb for kb in kbs}
    n_docs = sum(len(kb.docs) for kb in kbs)
    log(f"{args.dataset}: {len(kbs)} knowledge bases, {n_docs} documents, "
        f"{len(ds.questions)} questions")
    for n in ds.notes:
        log("  note:", n)

    rep = Report(args.label)
    binary = os.path.abspath(args.engram)
    st = os.stat(binary)
    rep.extra.update({"engram": binary, "engram_bytes": st.st_size,
                      "engram_mtime": datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
                      .strftime("%Y-%m-%dT%H:%M:%SZ")})
    import_dir = tempfile.mkdtemp(prefix="engram-kb-import-")
    server = None
    try:
        doc_bytes = write_documents(kbs, import_dir)
        server = EngramServer(binary, api_key=args.api_key, keep_data=args.keep_data,
                              extra_args=["--import-dir", import_dir] + args.server_arg)
        server.start()
        client = Client(server.url, args.api_key)

        t0 = time.perf_counter()
        upload_ms = upload_all(client, kbs, rep)
        wait_ingested(client, kbs, rep, args.ingest_timeout)
        ingest_s = time.perf_counter() - t0
        log(f"{n_docs} documents ({doc_bytes} bytes) uploaded and ingested in {ingest_s:.1f}s")
        check_contents(client, kbs, rep)
        census(client, kbs, ds.questions, rep)

        errors = []
        log(f"searching {len(ds.questions)} questions (top_k {args.top_k})")
        for q in ds.questions:
            kb = kb_of_user[id(q.user)]
            try:
                hits, ms, resp = search(client, kb, q.query, args.top_k)
            except (HttpError, OSError) as e:
                errors.append(f"{q.qid}: {e}")
                score(rep, q, kb, [])
                continue
            if not isinstance(hits, list):
                rep.anomaly("search: 'result.results' missing or not a list", json.dumps(resp)[:300])
                hits = []
            rep.search_ms.append(ms)
            check_hits(hits, kb, args.top_k, rep)
            score(rep, q, kb, hits)
        rep.search_errors = len(errors)
        for e in errors[:5]:
            log("search error:", e)
        rep.extra.update({
            "documents": n_docs, "document_bytes": doc_bytes, "ingest_seconds": round(ingest_s, 2),
            "upload_p50_ms": round(percentile(upload_ms, 50), 2),
            "upload_p99_ms": round(percentile(upload_ms, 99), 2), "top_k": args.top_k})
    finally:
        if server:
            if server.proc and server.proc.poll() is not None:
                log(f"server exited early (code {server.proc.returncode}); log tail:\n"
                    f"{server.log_tail()}")
            server.stop()
        if args.keep_data:
            log(f"kept import dir {import_dir}")
        else:
            shutil.rmtree(import_dir, ignore_errors=True)

    s = rep.summary()
    print(markdown([s]))
    print()
    print(f"{s['label']}: {s['documents']} documents in {len(kbs)} knowledge bases, ingested in "
          f"{s['ingest_seconds']}s (upload p50 {s['upload_p50_ms']} ms); {s['chunks_seen']} chunks "
          f"({s['chunks_per_document']} per document, p50 {s['chunk_bytes_p50']} bytes, max "
          f"{s['chunk_bytes_max']}); evidence turns whole in a chunk "
          f"{s['evidence_turns_whole_in_a_chunk']}/{s['evidence_turns']}; search errors "
          f"{s['search_errors']}; doc MRR {fmt(s['doc_mrr'])}")
    kmax = max(RECALL_KS)
    for c, v in s["per_category"].items():
        print(f"  {c}: n {v['n']}, doc R@{kmax} {fmt(v[f'doc_recall@{kmax}'])}, "
              f"chunk R@{kmax} {fmt(v[f'chunk_recall@{kmax}'])}")
    for k, v in s["anomalies"].items():
        print(f"  ANOMALY {k}: {v['count']}x, e.g. {v['example']}")
    print("notes: " + "; ".join(ds.notes))

    if args.json_out:
        out = {"dataset": args.dataset, "data_file": path, "limit": args.limit,
               "knowledge_bases": len(kbs), "server_args": args.server_arg,
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": [s]}
        if args.per_question:
            out["per_question"] = rep.rows
        write_json(args.json_out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

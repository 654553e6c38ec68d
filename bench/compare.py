#!/usr/bin/env python3
"""Compare replay.py runs: one Markdown table, a row per (label, system).

  python3 bench/compare.py /tmp/hybrid.json /tmp/bm25.json /tmp/vector.json
  python3 bench/compare.py --categories /tmp/*.json      # adds recall@10 per question category

Each file is a `replay.py --json-out` result; a file holds the Engram row and, with --fts5, the
SQLite FTS5 row. The same FTS5 row repeated across files (same dataset, same limit) is shown once.
"""

import json
import sys


def fmt(v, d=3):
    return "–" if v is None else (f"{v:.{d}f}" if isinstance(v, float) else str(v))


def fmt_ms(v):
    return "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    categories = argv[0] == "--categories"
    if categories:
        argv = argv[1:]
    cols = ["dataset", "label", "system", "n", "R@1", "R@5", "R@10", "R@100", "All@10",
            "R@2k tok", "results", "tokens", "search p50 ms", "search p99 ms"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    seen_fts = set()
    for path in argv:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for r in doc.get("rows", []):
            if r["system"] == "sqlite-fts5":
                key = (doc.get("dataset"), doc.get("limit"), r.get("recall@10"), r.get("recall@100"))
                if key in seen_fts:
                    continue
                seen_fts.add(key)
            cells = [doc.get("dataset", "?"), r["label"], r["system"], str(r["questions"]),
                     fmt(r.get("recall@1")), fmt(r.get("recall@5")), fmt(r.get("recall@10")),
                     fmt(r.get("recall@100")), fmt(r.get("all@10")), fmt(r.get("recall@2k_tokens")),
                     fmt(r.get("results"), 1), fmt(r.get("tokens"), 0),
                     fmt_ms(r.get("search_ms_p50")), fmt_ms(r.get("search_ms_p99"))]
            print("| " + " | ".join(cells) + " |")
    if categories:
        print_categories(argv)
    return 0


def print_categories(paths):
    rows, names = [], []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for r in doc.get("rows", []):
            cats = r.get("per_category") or {}
            for c in cats:
                if c not in names:
                    names.append(c)
            rows.append((doc.get("dataset", "?"), r["label"], cats))
    names.sort()
    seen = set()
    print()
    print("| dataset | label | " + " | ".join(f"R@10 {n}" for n in names) + " |")
    print("|" + "---|" * (len(names) + 2))
    for ds, label, cats in rows:
        if (ds, label) in seen:
            continue
        seen.add((ds, label))
        cells = []
        for n in names:
            v = cats.get(n)
            if isinstance(v, dict):
                v = v.get("recall@10")
            cells.append(fmt(v))
        print(f"| {ds} | {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

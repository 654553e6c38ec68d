#!/usr/bin/env python3
"""Coding-scale benchmark of the Leaderboard API: one user's code-heavy conversations (whole
source files fenced as code, unified diffs, tracebacks / backtraces / compiler logs, short chat
about the code), generated deterministically from the text files of this machine's Debian install
(/usr/include/**/*.h, *.py and *.c under /usr/lib/python3* and /usr/share, and
/usr/share/doc/*/changelog.Debian.gz), added through POST /leaderboard/add and searched through
POST /leaderboard/search.

Phases:
  1. ingest: every session into ONE user_id, --chunk messages per add, --clients posters (a
     session's chunks in order); throughput, add latency, 429s, the time until the vectors caught
     up (engram_vector_queue on /metrics), server RSS and data-dir size;
  2. cold shard load: SIGTERM, restart on the same data dir, the first and second search;
  3. search latency: --queries sequential searches at top_k 10 and as many at top_k 100;
  4. retrieval quality on code: --questions "which header declares foo?" questions, each with
     exactly one right file; hit@1/5/10 and the bytes an answer costs, under every --modes entry
     (hybrid = the server's default, anything else = --retrieval=<mode>; the same data dir
     restarted with that flag).

  python3 bench/coding.py --engram build/engram --json-out /tmp/coding.json
  python3 bench/coding.py --engram build/engram --tokens 6000000 --clients 2
  python3 bench/coding.py --engram build/engram --modes bm25 --server-arg=--neighbours=0
  python3 bench/coding.py --generate-only --tokens 300000      # corpus figures, no server

bench/README.md (coding.py) defines every figure.
"""

import argparse
import difflib
import glob
import gzip
import json
import os
import random
import re
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (Client, EngramServer, HttpError, _f, dir_bytes, log,  # noqa: E402
                      metric_sum, metrics_text, percentile, rss_kib, write_json)

MIN_FILE, MAX_FILE = 1024, 80 * 1024     # whole files sent: 1-80 KB
BIG_RESULT = 8192                        # "results over 8 KiB" threshold (bytes)
KS = (1, 5, 10)
BASE_MS = 1_704_096_000_000              # 2024-01-01T08:00:00Z, the first session's start
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
C_KEYWORDS = frozenset("""
if else while for do switch case default return sizeof typedef goto break continue defined
define include undef ifdef ifndef elif endif pragma static_assert _Static_assert __typeof__
typeof alignof _Alignof __attribute__ __asm__ asm
""".split())


# ----------------------------------------------------------------------------------------------
# Corpus: the text files of this machine, in a deterministic (sorted) order.

def _walk(roots, suffixes):
    out = []
    for root in roots:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for name in files:
                if not name.endswith(suffixes):
                    continue
                p = os.path.join(d, name)
                try:
                    if os.path.islink(p):
                        continue   # the same text under two paths would not be one right file
                    size = os.path.getsize(p)
                except OSError:
                    continue
                if MIN_FILE <= size <= MAX_FILE:
                    out.append(p)
    return sorted(set(out))


def read_text(path):
    """The file as text (changelog.Debian.gz decompressed), or None: binary, not UTF-8, or
    unreadable. A changelog longer than MAX_FILE is cut at the last entry that fits."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read(4 * MAX_FILE)
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE + 1)
    except (OSError, EOFError):
        return None
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if len(text.encode()) > MAX_FILE:
        if not path.endswith(".gz"):
            return None
        cut = text.rfind("\n\n", 0, MAX_FILE // 2)   # chars != bytes: stay well inside
        if cut < MIN_FILE:
            return None
        text = text[:cut + 1]
    if len(text.encode()) < MIN_FILE or not text.strip():
        return None
    return text


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def strip_c_comments(text):
    """Comments blanked out, their newlines kept (line numbers stay right)."""
    return _C_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n") or " ", text)


_DECL = re.compile(r"^[ \t]*(?:extern[ \t]+)?((?:[A-Za-z_]\w*[ \t*]+)+)\**[ \t]*"
                   r"([A-Za-z_]\w*)[ \t]*\(", re.M)


def c_prototypes(text):
    """[(name, line, params)] of the function declarations `type name (params) [attrs];` whose
    type and name start on one line (glibc style `extern int foo (const char *__s, ...)` and
    plain `int foo(void);`). Internal names (leading _) and statements are left out."""
    out, seen = [], set()
    text = strip_c_comments(text)
    for m in _DECL.finditer(text):
        types, name = m.group(1), m.group(2)
        if name in C_KEYWORDS or name.startswith("_") or name in seen:
            continue
        if any(w in C_KEYWORDS for w in IDENT.findall(types)):
            continue
        # the parameter list: balanced parentheses, no statement or preprocessor inside
        i, depth, n = m.end(), 1, len(text)
        while i < n and depth and i - m.end() < 600:
            c = text[i]
            if c in ";{}#":
                break
            depth += c == "("
            depth -= c == ")"
            i += 1
        if depth:
            continue
        params = " ".join(text[m.end():i - 1].split())
        # after it, attributes (__THROW, __nonnull ((1)), __wur) up to the ';' of a declaration
        tail = text[i:i + 300]
        semi, brace, eq = tail.find(";"), tail.find("{"), tail.find("=")
        if semi < 0 or (0 <= brace < semi) or (0 <= eq < semi):
            continue
        seen.add(name)
        out.append((name, text.count("\n", 0, m.start(2)) + 1, params))
    return out


_C_DEF = re.compile(r"^(?:[A-Za-z_][\w \t*]*[ \t*])?([A-Za-z_]\w*)[ \t]*\(([^;{}]*)\)[ \t]*\{?$",
                    re.M)
_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", re.M)


def c_definitions(text):
    """[(name, line, params)] of function definitions in a .c file (name at the start of its
    line or after its type, followed by a '{' on the same or the next line)."""
    out = []
    text = strip_c_comments(text)
    for m in _C_DEF.finditer(text):
        name = m.group(1)
        if name in C_KEYWORDS or name.startswith("_"):
            continue
        after = text[m.end():m.end() + 3]
        if not (m.group(0).endswith("{") or after.lstrip(" \t\n").startswith("{")):
            continue
        out.append((name, text.count("\n", 0, m.start(1)) + 1, " ".join(m.group(2).split())))
    return out


def py_functions(text):
    """[(name, body line number, body line text)] of the functions of a Python file: the line a
    traceback frame would show (the first statement of the body after any docstring)."""
    lines = text.split("\n")
    out = []
    for m in _PY_DEF.finditer(text):
        j = text.count("\n", 0, m.start())          # index of the def line
        indent = len(m.group(1).expandtabs())
        while j < len(lines) and not lines[j].split("#", 1)[0].rstrip().endswith(":"):
            j += 1                                   # a parameter list over several lines
            if j - text.count("\n", 0, m.start()) > 15:
                break
        j += 1
        doc = None
        for j in range(j, min(len(lines), j + 60)):
            raw = lines[j].expandtabs()
            s = raw.strip()
            if doc:
                if doc in s:
                    doc = None
                continue
            if not s or s.startswith("#"):
                continue
            if len(raw) - len(raw.lstrip()) <= indent:
                break
            q = s.lstrip("rRbBuU")[:3]
            if q in ('"""', "'''"):
                if s.count(q) < 2 and not (len(s) > 3 and s.endswith(q)):
                    doc = q
                continue
            if s.startswith(("def ", "@", "class ")) or len(s) > 120:
                break
            out.append((m.group(2), j + 1, s))
            break
    return out


class Corpus:
    """Paths by kind, and (lazily, cached) each file's text and functions."""

    def __init__(self):
        t0 = time.perf_counter()
        self.headers = _walk(["/usr/include"], (".h",))
        self.python = _walk(sorted(glob.glob("/usr/lib/python3*")) + ["/usr/share"], (".py",))
        self.csrc = _walk(sorted(glob.glob("/usr/lib/python3*")) + ["/usr/share"], (".c",))
        self.changelogs = sorted(p for p in glob.glob("/usr/share/doc/*/changelog.Debian.gz")
                                 if not os.path.islink(p))
        self.scan_seconds = round(time.perf_counter() - t0, 2)
        self._text, self._funcs = {}, {}

    def counts(self):
        return {"headers": len(self.headers), "python": len(self.python), "c": len(self.csrc),
                "changelogs": len(self.changelogs)}

    def text(self, path):
        if path not in self._text:
            self._text[path] = read_text(path)
        return self._text[path]

    def funcs(self, path):
        """Functions of a file: C prototypes / definitions, Python defs; [] for changelogs."""
        if path not in self._funcs:
            t = self.text(path) or ""
            if path.endswith(".h"):
                self._funcs[path] = c_prototypes(t)
            elif path.endswith(".c"):
                self._funcs[path] = c_definitions(t)
            elif path.endswith(".py"):
                self._funcs[path] = py_functions(t)
            else:
                self._funcs[path] = []
        return self._funcs[path]


def lang_of(path):
    return {"h": "c", "c": "c", "py": "python"}.get(path.rsplit(".", 1)[-1], "text")


def kind_of(path):
    return {"h": "header", "c": "c", "py": "python"}.get(path.rsplit(".", 1)[-1], "changelog")


def package_of(path):
    return path.split("/")[4] if path.startswith("/usr/share/doc/") else os.path.basename(path)


# ----------------------------------------------------------------------------------------------
# Generator: sessions of 20-60 alternating user / assistant messages, each a list of exchanges
# (user first, assistant last). A message that carries a file has the file's path on its first
# line, so a passage of it (whose header repeats that line) still names the file.

class Msg:
    __slots__ = ("role", "content", "ts", "kind", "path")

    def __init__(self, role, content, ts, kind, path=None):
        self.role, self.content, self.ts, self.kind, self.path = role, content, ts, kind, path


class Generator:
    FILE_KINDS = (("header", 0.65), ("python", 0.20), ("changelog", 0.10), ("c", 0.05))
    EXCHANGES = (("file", 0.27), ("diff", 0.13), ("trace", 0.15), ("chat", 0.45))

    def __init__(self, corpus, seed):
        self.c = corpus
        self.rng = random.Random(seed)
        self.pools = {}
        for kind, paths in (("header", corpus.headers), ("python", corpus.python),
                            ("c", corpus.csrc), ("changelog", corpus.changelogs)):
            p = list(paths)
            self.rng.shuffle(p)
            self.pools[kind] = p
        self.used = set()          # files sent whole (each at most once)
        self.contents = set()      # every content sent (each unique)
        self.stats = {}            # kind -> [messages, bytes]

    # -- picking files
    def _weighted(self, table):
        x, acc = self.rng.random(), 0.0
        for k, w in table:
            acc += w
            if x < acc:
                return k
        return table[-1][0]

    def fresh_file(self, kind=None):
        """A file not yet sent whole (text readable), or None when the pools are exhausted."""
        kinds = [kind] if kind else []
        kinds += [self._weighted(self.FILE_KINDS)] + [k for k, _ in self.FILE_KINDS]
        for k in kinds:
            pool = self.pools.get(k) or []
            while pool:
                p = pool.pop()
                if p not in self.used and self.c.text(p):
                    return p
        return None

    def any_file(self, kind):
        paths = {"header": self.c.headers, "python": self.c.python, "c": self.c.csrc}[kind]
        for _ in range(20):
            if not paths:
                return None
            p = self.rng.choice(paths)
            if self.c.text(p) and self.c.funcs(p):
                return p
        return None

    # -- messages
    def _unique(self, text, tag):
        if text in self.contents:
            text = f"{text} (again, {tag})"
        self.contents.add(text)
        return text

    def _ident(self, path):
        f = self.c.funcs(path)
        if f:
            return self.rng.choice(f)[0]
        words = [w for w in IDENT.findall(self.c.text(path) or "")[:2000] if len(w) > 4]
        return self.rng.choice(words) if words else package_of(path)

    def ex_file(self, ctx):
        kind = self._weighted(self.FILE_KINDS)
        path = self.fresh_file(kind)
        if path is None:
            return self.ex_chat(ctx)
        self.used.add(path)
        ctx["files"].append(path)
        body = self.c.text(path)
        file_msg = f"File: {path}\n```{lang_of(path)}\n{body.rstrip(chr(10))}\n```"
        ident = self._ident(path)
        r = self.rng.random()
        if kind_of(path) == "changelog":
            ask = self.rng.choice([f"What changed recently in {package_of(path)}? Show me {path}.",
                                   f"Open {path}, I want to see when {ident} was touched."])
        else:
            ask = self.rng.choice([f"Can you open {path}? I need to check {ident}.",
                                   f"Show me {path}, I am looking for {ident}.",
                                   f"Please read {path} so we can talk about {ident}."])
        if r < 0.6:
            return [("user", ask, "chat", None), ("assistant", file_msg, "file", path)]
        note = self.rng.choice([f"{ident} is in there; {os.path.basename(path)} is "
                                f"{len(body.splitlines())} lines long.",
                                f"Got it. I'll keep {os.path.basename(path)} in mind, "
                                f"especially {ident}."])
        return [("user", file_msg, "file", path), ("assistant", note, "chat", None)]

    def ex_diff(self, ctx):
        path = None
        if ctx["files"] and self.rng.random() < 0.5:
            path = self.rng.choice(ctx["files"])
        if path is None or kind_of(path) == "changelog":
            path = self.any_file(self.rng.choice(["header", "header", "python", "c"]))
        if path is None:
            return self.ex_chat(ctx)
        old = self.c.text(path).split("\n")
        funcs = self.c.funcs(path)
        name = self.rng.choice(funcs)[0] if funcs else self._ident(path)
        new_name = name + self.rng.choice(["_checked", "_v2", "_impl", "_locked", "_r"])
        pat = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
        new = [pat.sub(new_name, line) for line in old]
        # delete a few lines somewhere else
        if len(new) > 10:
            at, k = self.rng.randrange(0, len(new) - 5), self.rng.randint(1, 4)
            del new[at:at + k]
        diff = "\n".join(difflib.unified_diff(old, new, "a" + path, "b" + path, lineterm="", n=3))
        if not diff:
            return self.ex_chat(ctx)
        if len(diff) > 24000:   # many renamed sites: keep the first hunks
            diff = diff[:diff.rfind("\n@@", 0, 24000)] if "\n@@" in diff[:24000] else diff[:24000]
        patch = (f"Patch for {path} (rename {name} to {new_name}, drop a few lines):\n"
                 f"```diff\n{diff}\n```")
        review = self.rng.choice([f"The rename looks complete in {os.path.basename(path)}, but "
                                  f"callers outside it still use {name}.",
                                  f"Looks fine. Did you mean to delete those lines too?",
                                  f"Please split the rename of {name} from the deletion."])
        if self.rng.random() < 0.5:
            return [("user", patch, "diff", path), ("assistant", review, "chat", None)]
        return [("user", f"Rename {name} to {new_name} in {path} and drop the dead lines.",
                 "chat", None), ("assistant", patch, "diff", path)]

    def _frames_py(self, n):
        frames = []
        for _ in range(n * 4):
            if len(frames) >= n:
                break
            p = self.any_file("python")
            if p:
                name, ln, src = self.rng.choice(self.c.funcs(p))
                frames.append((p, ln, name, src))
        return frames

    def _frames_c(self, n):
        frames = []
        for _ in range(n * 4):
            if len(frames) >= n:
                break
            p = self.any_file(self.rng.choice(["header", "c"]))
            if p:
                frames.append((p,) + self.rng.choice(self.c.funcs(p)))
        return frames

    def ex_trace(self, ctx):
        r = self.rng.random()
        if r < 0.45:
            frames = self._frames_py(self.rng.randint(2, 6))
            if not frames:
                return self.ex_chat(ctx)
            exc = self.rng.choice(["KeyError: 'encoding'", "ValueError: invalid literal for "
                                   "int() with base 10: 'x'", "TypeError: 'NoneType' object is not "
                                   "subscriptable", "AttributeError: 'str' object has no attribute "
                                   "'decode'", "OSError: [Errno 2] No such file or directory",
                                   "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff"])
            body = "Traceback (most recent call last):\n" + "".join(
                f'  File "{p}", line {ln}, in {name}\n    {src}\n' for p, ln, name, src in frames)
            body += exc
            first = f"Crash in {frames[-1][0]}:"
            fence = "pytb"
        elif r < 0.75:
            frames = self._frames_c(self.rng.randint(3, 8))
            if not frames:
                return self.ex_chat(ctx)
            sig = self.rng.choice(["SIGSEGV, Segmentation fault", "SIGABRT, Aborted",
                                   "SIGBUS, Bus error"])
            lines = [f"Program received signal {sig}."]
            for i, (p, name, ln, params) in enumerate(frames):
                args = []
                for part in params.split(",")[:4]:
                    ids = IDENT.findall(part)
                    if ids and ids[-1] not in ("void", "const", "char", "int"):
                        val = self.rng.choice(["0x0", "1", "0x55d0c0de", "-1"])
                        args.append(f"{ids[-1]}={val}")
                lines.append(f"#{i}  0x{self.rng.getrandbits(48):012x} in {name} "
                             f"({', '.join(args)}) at {p}:{ln}")
            body = "\n".join(lines)
            first = f"Backtrace from gdb, stopped in {frames[0][0]}:"
            fence = "text"
        else:
            frames = self._frames_c(self.rng.randint(1, 4))
            if not frames:
                return self.ex_chat(ctx)
            lines = []
            for p, name, ln, _ in frames:
                col = self.rng.randint(1, 30)
                lines.append(self.rng.choice([
                    f"{p}:{ln}:{col}: error: conflicting types for '{name}'",
                    f"{p}:{ln}:{col}: warning: implicit declaration of function '{name}'",
                    f"{p}:{ln}:{col}: note: previous declaration of '{name}' was here"]))
            lines.append(f"make: *** [Makefile:{self.rng.randint(20, 400)}: all] Error 1")
            body = "\n".join(lines)
            first = f"Build log, first error in {frames[0][0]}:"
            fence = "text"
        msg = f"{first}\n```{fence}\n{body}\n```\nWhat is going on here?"
        name = frames[-1][2] if fence == "pytb" else frames[0][1]
        ans = self.rng.choice([f"The innermost frame is {name}; look at what its caller passes in.",
                               f"Start at {name}: the arguments it got are already wrong.",
                               f"That comes from {name}. Check the return value one frame up."])
        return [("user", msg, "trace", frames[0][0]), ("assistant", ans, "chat", None)]

    def ex_chat(self, ctx):
        path = self.rng.choice(ctx["files"]) if ctx["files"] else None
        if path is None or not self.c.funcs(path):
            path = self.any_file(self.rng.choice(["header", "python"])) or path
        if path is None:
            f, g, base = "main", "exit", "main.c"
        else:
            fs = self.c.funcs(path) or [(package_of(path), 0, "")]
            fs = [f for f in fs if not f[0].startswith("_")] or fs   # public names, as people ask
            f, g = self.rng.choice(fs)[0], self.rng.choice(fs)[0]
            base = os.path.basename(path)
        q = self.rng.choice([
            f"Why does {f} need its own wrapper?",
            f"Is {f} safe to call from two threads at once?",
            f"What's the difference between {f} and {g}? They look alike in {base}.",
            f"Can {f} fail silently? I call it right after {g}.",
            f"Where would you put a breakpoint to catch {f}?",
            f"Should I replace {f} with {g} here?"])
        a = self.rng.choice([
            f"{f} is the entry point in {base}. Check what it returns before you go on.",
            f"Both live in {base}: {f} does the work and {g} cleans up. Call them in that order.",
            f"Put the breakpoint on {f}. The backtrace will show whether {g} ran first.",
            f"I would keep {f}. {g} does more than you need here.",
            f"It can fail. Wrap {f} and log the error instead of ignoring it."])
        return [("user", q, "chat", None), ("assistant", a, "chat", None)]

    # -- sessions
    def sessions(self, tokens):
        budget = tokens * 4
        total, out, ts = 0, [], BASE_MS
        while total < budget:
            n_target = self.rng.randint(20, 60)
            ctx = {"files": []}
            msgs = []
            sess = len(out)
            ts += self.rng.randint(2, 30) * 3_600_000
            while len(msgs) < n_target:
                kind = self._weighted(self.EXCHANGES)
                if total >= budget or len(msgs) + 2 > n_target:
                    kind = "chat"   # fill the session up with small turns
                ex = getattr(self, f"ex_{kind}")(ctx)
                for role, content, mkind, path in ex:
                    ts += self.rng.randint(3, 240) * 1000
                    content = self._unique(content, f"session {sess}, turn {len(msgs)}")
                    msgs.append(Msg(role, content, ts, mkind, path))
                    b = len(content.encode())
                    total += b
                    st = self.stats.setdefault(mkind, [0, 0])
                    st[0] += 1
                    st[1] += b
                if total >= budget and len(msgs) >= 20:
                    break
            out.append(msgs)
            if not any(self.pools.values()):
                log("corpus exhausted: every readable file was sent once")
                break
        return out, total


# ----------------------------------------------------------------------------------------------
# Questions: a prototype declared in exactly one sent header and named in no other message.

def make_questions(corpus, sessions, n, seed):
    msgs = [m for s in sessions for m in s]
    df = {}
    for i, m in enumerate(msgs):
        for w in set(IDENT.findall(m.content)):
            df[w] = df.get(w, 0) + 1
    by_file = {}
    for m in msgs:
        if m.kind != "file" or not m.path.endswith(".h"):
            continue
        cands = [(name, ln, params) for name, ln, params in corpus.funcs(m.path)
                 if df.get(name) == 1 and len(name) >= 4]
        if cands:
            by_file[m.path] = cands
    rng = random.Random(f"{seed}:questions")
    files = sorted(by_file)
    rng.shuffle(files)
    for f in files:
        rng.shuffle(by_file[f])
    templates = ["Which header declares {n}, and with which parameters?",
                 "Where is {n} declared and what arguments does it take?",
                 "What is the prototype of {n}? Which file has it?",
                 "Show me the declaration of {n}: its header and its parameter list."]
    out, i = [], 0
    while len(out) < n and any(by_file[f] for f in files):
        f = files[i % len(files)]
        i += 1
        if not by_file[f]:
            continue
        name, ln, params = by_file[f].pop()
        out.append({"qid": f"q{len(out)}", "name": name, "path": f, "line": ln,
                    "params": params, "query": rng.choice(templates).format(n=name)})
    return out, len(by_file), sum(1 for m in msgs if m.kind == "file" and m.path.endswith(".h"))


def latency_queries(corpus, sessions, n, seed):
    """n distinct queries about the sent code (identifiers, files, packages, errors)."""
    rng = random.Random(f"{seed}:latency")
    files = [m.path for s in sessions for m in s if m.kind in ("file", "diff") and m.path]
    names = sorted({f[0] for p in files for f in corpus.funcs(p)})
    if not files:
        return []
    out, seen, tries = [], set(), 0
    while len(out) < n and tries < n * 50:
        tries += 1
        p = rng.choice(files)
        w = rng.choice(names) if names else package_of(p)
        q = rng.choice([f"how is {w} declared",
                        f"what does {w} return on error",
                        f"where is {w} used in {os.path.basename(p)}",
                        f"show {p}",
                        f"traceback in {w}",
                        f"rename {w} patch",
                        f"changelog of {package_of(p)}",
                        f"{w} parameters and return type",
                        f"segfault in {w} backtrace"])
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


# ----------------------------------------------------------------------------------------------
# Server interaction

def vector_queue(client):
    """The server's count of memories waiting for a vector (engram_vector_queue), or None when
    /metrics does not report it."""
    return metric_sum(metrics_text(client), "engram_vector_queue")


def ingest(client, user_id, sessions, chunk, clients):
    """Posts every session (its chunks in order) on `clients` threads; a 429 is retried with the
    same request_id after 0.2 s. Returns the figures and the perf_counter of the last answer."""
    jobs = []
    for si, msgs in enumerate(sessions):
        sid = f"{user_id}:s{si}"
        bodies = []
        for j in range(0, len(msgs), chunk):
            bodies.append({"request_id": f"{sid}:chunk-{j // chunk}", "user_id": user_id,
                           "session_id": sid,
                           "messages": [{"role": m.role, "content": m.content, "timestamp": m.ts}
                                        for m in msgs[j:j + chunk]]})
        jobs.append(bodies)
    lock = threading.Lock()
    state = {"next": 0, "answer_ms": [], "chunk_ms": [], "throttled": 0, "errors": [],
             "last": None, "done": 0, "anomalies": {}}
    n_adds = sum(len(b) for b in jobs)

    def worker():
        while True:
            with lock:
                if state["next"] >= len(jobs):
                    return
                bodies = jobs[state["next"]]
                state["next"] += 1
            for body in bodies:
                t0 = time.perf_counter()
                deadline = t0 + 600
                while True:
                    try:
                        resp, dt = client.post_json("/leaderboard/add", body)
                        ok = isinstance(resp, dict) and resp.get("success") is True
                        with lock:
                            state["answer_ms"].append(dt * 1000)
                            state["chunk_ms"].append((time.perf_counter() - t0) * 1000)
                            state["last"] = time.perf_counter()
                            state["done"] += 1
                            if not ok:
                                a = state["anomalies"].setdefault("add: success is not true",
                                                                  [0, json.dumps(resp)[:200]])
                                a[0] += 1
                            if state["done"] % 100 == 0:
                                log(f"  {state['done']}/{n_adds} adds")
                        break
                    except HttpError as e:
                        if e.status == 429 and time.perf_counter() < deadline:
                            with lock:
                                state["throttled"] += 1
                            time.sleep(0.2)
                            continue
                        with lock:
                            state["errors"].append(f"{body['request_id']}: {e}")
                            state["last"] = time.perf_counter()
                        break
                    except OSError as e:
                        with lock:
                            state["errors"].append(f"{body['request_id']}: {e}")
                        break

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(max(1, clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    last = state["last"] or time.perf_counter()
    for e in state["errors"][:5]:
        log("add error:", e)
    a = state["answer_ms"]
    return {"adds": n_adds, "errors": len(state["errors"]), "throttled_429": state["throttled"],
            "seconds": round(last - t0, 2),
            "add_ms_p50": percentile(a, 50), "add_ms_p99": percentile(a, 99),
            "add_ms_max": max(a) if a else None,
            "chunk_ms_with_retries_p50": percentile(state["chunk_ms"], 50),
            "chunk_ms_with_retries_p99": percentile(state["chunk_ms"], 99),
            "anomalies": {k: {"count": v[0], "example": v[1]}
                          for k, v in state["anomalies"].items()}}, last


def wait_vectors(client, since, timeout_s):
    """Seconds from `since` (the last add's answer) until the vector queue is 0; the queue at the
    first poll. None when the server reports no queue, timeout_s when it did not drain."""
    first = vector_queue(client)
    if first is None:
        return None, None
    q = first
    deadline = time.perf_counter() + timeout_s
    last_log = time.perf_counter()
    while q and time.perf_counter() < deadline:
        time.sleep(0.1)
        q = vector_queue(client)
        if q is None:
            return None, first
        if time.perf_counter() - last_log > 15:
            log(f"  {q:.0f} memories still wait for a vector")
            last_log = time.perf_counter()
    if q:
        log(f"vector queue not empty after {timeout_s:.0f}s ({q:.0f} left)")
    return round(time.perf_counter() - since, 2), first


def search(client, user_id, query, top_k):
    """([(id, content)], ms); a 429 / 503 is retried after 0.2 s (for up to 60 s)."""
    deadline = time.perf_counter() + 60
    while True:
        try:
            resp, dt = client.post_json("/leaderboard/search",
                                        {"user_id": user_id, "query": query, "top_k": top_k})
            break
        except HttpError as e:
            if e.status in (429, 503) and time.perf_counter() < deadline:
                time.sleep(0.2)
                continue
            raise
    data = resp.get("data") if isinstance(resp, dict) else None
    if not isinstance(data, list):
        raise HttpError(200, f"'data' missing or not a list: {json.dumps(resp)[:200]}")
    out = []
    for x in data:
        c = x.get("content") if isinstance(x, dict) else None
        if isinstance(c, list):   # a ContentPart array: its text parts
            c = "\n".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
        out.append((x.get("id") if isinstance(x, dict) else None, c if isinstance(c, str) else ""))
    return out, dt * 1000


def search_latency(client, user_id, queries, top_k):
    ms, errors = [], 0
    for q in queries:
        try:
            _, dt = search(client, user_id, q, top_k)
            ms.append(dt)
        except (HttpError, OSError) as e:
            errors += 1
            if errors <= 3:
                log(f"search error: {e}")
    return {"searches": len(queries), "errors": errors, "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99), "max_ms": max(ms) if ms else None}


def path_re(path):
    """The path as a whole (not a prefix of a longer path; a sentence's final '.' allowed)."""
    return re.compile(re.escape(path) + r"(?![\w+-]|\.\w)")


def quality(client, user_id, questions):
    """Every question at top_k 100 (hits, bytes) and top_k 10 (bytes of that answer)."""
    rows, ms, errors = [], [], 0
    for q in questions:
        pr = path_re(q["path"])
        decl = re.compile(rf"(?<![\w]){re.escape(q['name'])}\s*\(")
        try:
            res100, dt = search(client, user_id, q["query"], 100)
            res10, _ = search(client, user_id, q["query"], 10)
        except (HttpError, OSError) as e:
            errors += 1
            if errors <= 3:
                log(f"search error: {e}")
            continue
        ms.append(dt)
        first_hit = first_file = None
        for i, (_id, c) in enumerate(res100):
            if pr.search(c):
                if first_file is None:
                    first_file = i
                if first_hit is None and decl.search(c):
                    first_hit = i
        sizes = [len(c.encode()) for _, c in res100]
        row = {"qid": q["qid"], "name": q["name"], "path": q["path"], "results": len(res100),
               "first_hit_rank": first_hit, "first_file_rank": first_file,
               "bytes_top10": sum(len(c.encode()) for _, c in res10),
               "bytes_top100": sum(sizes), "largest_result_bytes": max(sizes, default=0),
               "results_over_8k": sum(s > BIG_RESULT for s in sizes)}
        for k in KS:
            row[f"hit@{k}"] = int(first_hit is not None and first_hit < k)
        row["file@10"] = int(first_file is not None and first_file < 10)
        rows.append(row)
    n = len(rows)

    def mean(k):
        return sum(r[k] for r in rows) / n if n else None

    summary = {"questions": n, "errors": errors,
               **{f"hit@{k}": mean(f"hit@{k}") for k in KS}, "file@10": mean("file@10"),
               "mrr@100": (sum(1 / (r["first_hit_rank"] + 1) for r in rows
                               if r["first_hit_rank"] is not None) / n) if n else None,
               "search_top100_ms_p50": percentile(ms, 50),
               "search_top100_ms_p99": percentile(ms, 99)}
    for k in ("bytes_top10", "bytes_top100", "largest_result_bytes", "results_over_8k"):
        vals = [r[k] for r in rows]
        summary[f"{k}_mean"] = sum(vals) / n if n else None
        summary[f"{k}_p50"] = percentile(vals, 50)
        summary[f"{k}_max"] = max(vals) if vals else None
    return summary, rows


# ----------------------------------------------------------------------------------------------
# Output

def cpu_info():
    model, flags, order = None, set(), []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    order = line.split(":", 1)[1].split()
                    flags = set(order)
    except OSError:
        pass
    return {"model": model, "cores": os.cpu_count(), "avx2": "avx2" in flags,
            "avx512": [f for f in order if f.startswith("avx512")],
            "avx_vnni": "avx_vnni" in flags}


def mib(b):
    return None if b is None else b / 1048576


def markdown(res):
    g, ing, cpu = res["corpus"], res.get("ingest") or {}, res["cpu"]
    avx512 = ", ".join(f[len("avx512"):].lstrip("_").upper() for f in cpu["avx512"])
    lines = [f"### Coding-scale benchmark: {g['tokens']:,} tokens ({g['bytes'] / 1e6:.1f} MB) "
             f"in {g['sessions']} sessions, {g['messages']:,} messages, one user", "",
             f"CPU: {cpu['model']} ({cpu['cores']} cores); AVX2 {'yes' if cpu['avx2'] else 'no'}; "
             f"AVX-512: {avx512 or 'none'}"
             f"{'; AVX-VNNI' if cpu['avx_vnni'] else ''}",
             f"server: {res['engram'] or '(not run)'} {' '.join(res['server_args'])}", "",
             "Corpus sent: " + ", ".join(f"{k} {v['messages']} msgs / {v['bytes'] / 1e6:.2f} MB"
                                         for k, v in sorted(g["by_kind"].items())), ""]
    if ing:
        lines += ["| ingest | value |", "|---|---|",
                  f"| adds ({res['chunk']} messages, {res['clients']} client(s)) | {ing['adds']} "
                  f"({ing['errors']} errors) |",
                  f"| wall time | {ing['seconds']} s |",
                  f"| throughput | {_f(ing.get('tokens_per_s'), 0)} tokens/s, "
                  f"{_f(ing.get('mb_per_s'), 3)} MB/s |",
                  f"| add latency p50 / p99 / max | {_f(ing['add_ms_p50'], 1)} / "
                  f"{_f(ing['add_ms_p99'], 1)} / {_f(ing['add_ms_max'], 1)} ms |",
                  f"| 429 answers | {ing['throttled_429']} |",
                  f"| vectors caught up after the last add | "
                  f"{_f(ing.get('vectors_caught_up_s'))} s (queue "
                  f"{_f(ing.get('vector_queue_at_end'), 0)} at the last add) |",
                  f"| throughput incl. vectors | {_f(ing.get('tokens_per_s_with_vectors'), 0)} "
                  f"tokens/s |",
                  f"| server RSS after ingest | {_f(mib((ing.get('rss_kib') or 0) * 1024), 1)} "
                  f"MiB |",
                  f"| data dir after ingest / after the stop | "
                  f"{_f(mib(ing.get('disk_bytes')), 1)} / "
                  f"{_f(mib(ing.get('disk_bytes_after_stop')), 1)} MiB |"]
        c = res.get("cold")
        if c:
            lines += [f"| cold restart ({c['mode']}): to listening | "
                      f"{c['restart_to_listening_s']} s |",
                      f"| cold: first / second search (top_k 10) | {_f(c['first_search_ms'], 1)} / "
                      f"{_f(c['second_search_ms'], 1)} ms |",
                      f"| RSS after the first search | "
                      f"{_f(mib((c.get('rss_kib_after_first_search') or 0) * 1024), 1)} MiB |"]
        lines.append("")
    modes = res.get("modes") or {}
    if modes:
        head = ["mode", "top_k 10 p50 / p99 ms", "top_k 100 p50 / p99 ms", "questions",
                "hit@1", "hit@5", "hit@10", "file@10", "MRR", "top-10 bytes mean / max",
                "top-100 bytes mean", "largest result mean / max", ">8 KiB per answer"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, m in modes.items():
            s10, s100, qy = m["latency_top10"], m["latency_top100"], m["quality"]
            lines.append("| " + " | ".join([
                name, f"{_f(s10['p50_ms'], 1)} / {_f(s10['p99_ms'], 1)}",
                f"{_f(s100['p50_ms'], 1)} / {_f(s100['p99_ms'], 1)}", str(qy["questions"]),
                _f(qy["hit@1"], 3), _f(qy["hit@5"], 3), _f(qy["hit@10"], 3), _f(qy["file@10"], 3),
                _f(qy["mrr@100"], 3),
                f"{_f(qy['bytes_top10_mean'], 0)} / {_f(qy['bytes_top10_max'])}",
                _f(qy["bytes_top100_mean"], 0),
                f"{_f(qy['largest_result_bytes_mean'], 0)} / {_f(qy['largest_result_bytes_max'])}",
                _f(qy["results_over_8k_mean"], 1)]) + " |")
        lines += ["", f"hit@k: a result among the first k names the right header's path and holds "
                      f"`name (`; file@10: names the path only. Questions: {res['questions']} "
                      f"from {res['question_files']} of {res['headers_sent']} headers sent."]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", metavar="PATH",
                    help="the engram binary (started on a temp data dir)")
    ap.add_argument("--api-key")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `engram serve` (repeatable; use --server-arg=--flag)")
    ap.add_argument("--tokens", type=int, default=300000,
                    help="tokens to send, bytes / 4 (default 300000 = the CI smoke size; "
                         "6000000 = the Coding track's size of one user)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=20, help="messages per add (default 20)")
    ap.add_argument("--clients", type=int, default=1,
                    help="concurrent posters, each a whole session in order (default 1)")
    ap.add_argument("--queries", type=int, default=200,
                    help="sequential searches per top_k for the latency figures (default 200)")
    ap.add_argument("--questions", type=int, default=150, help="quality questions (default 150)")
    ap.add_argument("--modes", default="hybrid,bm25",
                    help="retrieval modes the questions run under, in order (default hybrid,bm25; "
                         "hybrid = the server's default, X = --retrieval=X on the same data dir)")
    ap.add_argument("--vector-timeout", type=float, default=3600.0,
                    help="seconds to wait for the vector queue after the adds (default 3600)")
    ap.add_argument("--generate-only", action="store_true",
                    help="generate the corpus and the questions, print their figures, no server")
    ap.add_argument("--json-out", metavar="FILE")
    ap.add_argument("--per-question", action="store_true",
                    help="every question's row in --json-out")
    ap.add_argument("--keep-data", action="store_true", help="keep the temp server data dir")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every add answered within 2 s, no request "
                         "failed and no search result exceeded 8 KiB (the CI smoke test)")
    args = ap.parse_args()
    modes = list(dict.fromkeys(m.strip() for m in args.modes.split(",") if m.strip()))
    if not modes:
        ap.error("--modes: at least one mode")
    if not (args.engram or args.generate_only):
        ap.error("--engram PATH is required (or --generate-only)")
    t_start = time.perf_counter()

    corpus = Corpus()
    log(f"corpus: {corpus.counts()} files of 1-80 KB (scanned in {corpus.scan_seconds}s)")
    if not corpus.headers:
        print("skipping: no C headers (*.h of 1-80 KB) under /usr/include")
        return 0
    gen = Generator(corpus, args.seed)
    t0 = time.perf_counter()
    sessions, total = gen.sessions(max(1, args.tokens))
    n_msgs = sum(len(s) for s in sessions)
    questions, q_files, headers_sent = make_questions(corpus, sessions, args.questions, args.seed)
    # two cold-load queries per mode, then the latency queries (the same ones in every mode: each
    # mode is a fresh server process, so none is in its query cache)
    lat_q = latency_queries(corpus, sessions, 2 * len(modes) + 2 * args.queries, args.seed)
    cold_q, lat_q = lat_q[:2 * len(modes)], lat_q[2 * len(modes):]
    gen_s = round(time.perf_counter() - t0, 2)
    sizes = [len(m.content.encode()) for s in sessions for m in s]
    log(f"generated {len(sessions)} sessions, {n_msgs} messages, {total / 1e6:.2f} MB "
        f"(~{total // 4} tokens) in {gen_s}s; {len(questions)} questions from {q_files} of "
        f"{headers_sent} headers sent")
    run_id = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    user_id = f"coding:{run_id}:user"
    res = {"engram": args.engram, "server_args": args.server_arg, "seed": args.seed,
           "run_id": run_id, "user_id": user_id, "chunk": args.chunk, "clients": args.clients,
           "cpu": cpu_info(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "corpus": {"files_available": corpus.counts(), "scan_seconds": corpus.scan_seconds,
                      "generate_seconds": gen_s, "sessions": len(sessions), "messages": n_msgs,
                      "bytes": total, "tokens": total // 4,
                      "message_bytes_p50": percentile(sizes, 50),
                      "message_bytes_max": max(sizes) if sizes else None,
                      "session_messages_min": min(len(s) for s in sessions),
                      "session_messages_max": max(len(s) for s in sessions),
                      "by_kind": {k: {"messages": v[0], "bytes": v[1]}
                                  for k, v in gen.stats.items()}},
           "questions": len(questions), "question_files": q_files, "headers_sent": headers_sent,
           "modes": {}}
    if len(questions) < args.questions:
        log(f"note: only {len(questions)} questions (prototypes named in exactly one message)")
    if args.generate_only:
        print(markdown(res))
        for q in questions[:5]:
            print(f"  {q['qid']}: {q['query']}  -> {q['path']}:{q['line']}")
        if args.json_out:
            res["question_list"] = questions
            write_json(args.json_out, res)
        return 0

    def mode_args(mode):
        return args.server_arg + ([] if mode == "hybrid" else [f"--retrieval={mode}"])

    server = None
    try:
        # -- 1. ingest (the server's default retrieval: the vectors are computed)
        server = EngramServer(args.engram, api_key=args.api_key, extra_args=args.server_arg,
                              keep_data=True)
        server.start()
        client = Client(server.url, args.api_key, timeout=300)
        log(f"ingest: {n_msgs} messages in adds of {args.chunk}, {args.clients} client(s)")
        t_ing = time.perf_counter()
        ing, last = ingest(client, user_id, sessions, max(1, args.chunk), args.clients)
        caught, q_end = wait_vectors(client, last, args.vector_timeout)
        ing_s = last - t_ing
        ing.update({"tokens_per_s": (total / 4) / ing_s if ing_s else None,
                    "mb_per_s": total / 1e6 / ing_s if ing_s else None,
                    "vectors_caught_up_s": caught, "vector_queue_at_end": q_end,
                    "tokens_per_s_with_vectors":
                        (total / 4) / (ing_s + caught) if caught is not None else None})
        time.sleep(0.5)
        ing["rss_kib"] = rss_kib(server.pid)
        ing["disk_bytes"] = dir_bytes(server.store_dir)
        res["ingest"] = ing
        log(f"ingest: {ing['seconds']}s, {ing['throttled_429']} x 429, vectors caught up "
            f"{caught}s after the last add")

        # -- 2..4 per mode: restart on the same data dir (the first one is the cold-load figure)
        for i, mode in enumerate(modes):
            server.stop(remove=False)
            if i == 0:   # the WAL is checkpointed on a clean stop
                ing["disk_bytes_after_stop"] = dir_bytes(server.store_dir)
            t0 = time.perf_counter()
            server = EngramServer(args.engram, api_key=args.api_key, extra_args=mode_args(mode),
                                  keep_data=True, data_dir=server.data_dir)
            server.start()
            restart_s = round(time.perf_counter() - t0, 2)
            client = Client(server.url, args.api_key, timeout=300)
            cold = {"mode": mode, "restart_to_listening_s": restart_s,
                    "rss_kib_after_restart": rss_kib(server.pid)}
            for j, key in enumerate(("first_search_ms", "second_search_ms")):
                try:
                    _, cold[key] = search(client, user_id, cold_q[(2 * i + j) % len(cold_q)], 10)
                except (HttpError, OSError) as e:
                    log(f"cold search error: {e}")
                    cold[key] = None
            cold["rss_kib_after_first_search"] = rss_kib(server.pid)
            if i == 0:
                res["cold"] = cold
            log(f"{mode}: restarted in {restart_s}s, first search {_f(cold['first_search_ms'], 1)} "
                f"ms, second {_f(cold['second_search_ms'], 1)} ms")
            m = {"server_args": mode_args(mode), "cold": cold}
            for k in (10, 100):
                qs = lat_q[:args.queries] if k == 10 else lat_q[args.queries:2 * args.queries]
                log(f"{mode}: {len(qs)} sequential searches at top_k {k}")
                m[f"latency_top{k}"] = search_latency(client, user_id, qs, k)
            log(f"{mode}: {len(questions)} questions")
            m["quality"], rows = quality(client, user_id, questions)
            m["rss_kib_end"] = rss_kib(server.pid)
            if args.per_question:
                m["per_question"] = rows
            res["modes"][mode] = m
    finally:
        if server:
            if server.proc and server.proc.poll() is not None:
                log(f"server exited early (code {server.proc.returncode}); log tail:\n"
                    f"{server.log_tail()}")
            server.keep_data = args.keep_data
            server.stop()

    res["seconds"] = round(time.perf_counter() - t_start, 1)
    print(markdown(res))
    print(f"\nrun time {res['seconds']}s")
    if args.json_out:
        res["question_list"] = questions
        write_json(args.json_out, res)
    if args.check:
        failures = check(res)
        for f in failures:
            print(f"check failed: {f}")
        return 1 if failures else 0
    return 0


def check(res):
    """What --check refuses: a slow or failed add, a failed search, a result over 8 KiB."""
    failures = []
    ing = res.get("ingest") or {}
    if ing.get("errors"):
        failures.append(f"{ing['errors']} adds failed")
    if ing.get("add_ms_max") is None or ing["add_ms_max"] > 2000:
        failures.append(f"the slowest add took {ing.get('add_ms_max')} ms (limit 2000)")
    for mode, m in res.get("modes", {}).items():
        q = m.get("quality") or {}
        if q.get("errors") or any((m.get(f"latency_top{k}") or {}).get("errors") for k in (10, 100)):
            failures.append(f"{mode}: searches failed")
        if (q.get("largest_result_bytes_max") or 0) > BIG_RESULT:
            failures.append(f"{mode}: a result of {q['largest_result_bytes_max']} bytes "
                            f"(limit {BIG_RESULT})")
    if not res.get("modes"):
        failures.append("no mode ran")
    return failures


if __name__ == "__main__":
    sys.exit(main())

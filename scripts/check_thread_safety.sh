#!/usr/bin/env bash
# Clang's thread-safety analysis over the sources (src/common/mutex.h explains the annotations):
# each translation unit of build/compile_commands.json under src/ is compiled by clang++-14 with
# -fsyntax-only (no code generated, so a pass costs a fraction of a build) and
# -Wthread-safety -Werror, two at a time. GCC stays the compiler the binary is built with.
#
# Needs a configured build/ (scripts/build.sh). Environment: JOBS (2), ONLY (a regular
# expression: check only the sources whose path matches it).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang++-14 >/dev/null 2>&1; then
  echo "thread-safety: clang++-14 is missing (scripts/setup.sh installs it)" >&2
  exit 1
fi
if [ ! -f build/compile_commands.json ]; then
  echo "thread-safety: build/compile_commands.json is missing; run scripts/build.sh first" >&2
  exit 1
fi

start=$(date +%s)
python3 - "${JOBS:-2}" "${ONLY:-}" <<'EOF'
import json, os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

root = os.getcwd()
jobs = int(sys.argv[1])
only = re.compile(sys.argv[2]) if sys.argv[2] else None
entries = [e for e in json.load(open("build/compile_commands.json"))
           if e["file"].startswith(os.path.join(root, "src") + os.sep)
           and (only is None or only.search(e["file"]))]

def command(entry):
    args = shlex.split(entry["command"])
    out = ["clang++-14", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        # Warnings other than the analysis's are GCC's business (the release build's -Werror).
        if a.startswith("-W") or a == "-c":
            continue
        out.append(a)
    return out, entry["directory"]

def check(entry):
    cmd, cwd = command(entry)
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return entry["file"], p.returncode, p.stderr

failed = 0
with ThreadPoolExecutor(jobs) as pool:
    for path, rc, err in pool.map(check, entries):
        if rc != 0:
            failed += 1
            sys.stderr.write(err)
print(f"thread-safety: {len(entries)} sources, {failed} failed")
sys.exit(1 if failed else 0)
EOF
echo "thread-safety: checked in $(($(date +%s) - start)) s"

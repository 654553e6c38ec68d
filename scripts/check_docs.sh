#!/usr/bin/env bash
# Checks the documentation: every relative Markdown link in README.md, CONTRIBUTING.md,
# CHANGELOG.md, bench/README.md, src/README.md and docs/**/*.md names a file or folder of the
# repository, and a "#fragment" into a Markdown file names one of its headings (GitHub's anchor
# rules). Links to URLs (http:, https:, mailto:) are not followed. And every path of the HTTP
# contract (src/api/openapi.json) is named somewhere in README.md or docs/ (the Agentic Memory
# prefixes may be written P3 / P4, a parameter under any name). Exits 1 and lists the broken
# links and undocumented paths, if any.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$@" <<'EOF'
import glob, os, re, sys

files = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "bench/README.md", "src/README.md"]
files += sorted(glob.glob("docs/**/*.md", recursive=True))
files = [f for f in files if os.path.isfile(f)]

link_re = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
fence_re = re.compile(r"^\s*(```|~~~)")


def anchors(path):
    """GitHub-style heading anchors of a Markdown file."""
    seen, out = {}, set()
    in_fence = False
    for line in open(path, encoding="utf-8"):
        if fence_re.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


broken = []
checked = 0
for f in files:
    in_fence = False
    for lineno, line in enumerate(open(f, encoding="utf-8"), 1):
        if fence_re.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in link_re.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            checked += 1
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(dest):
                broken.append(f"{f}:{lineno}: {target} (no such file: {dest})")
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                broken.append(f"{f}:{lineno}: {target} (no heading #{frag} in {dest})")

import json

text = "".join(open(f, encoding="utf-8").read() for f in files if f.startswith(("docs/", "README")))
prefixes = {"/v4/openapi/workspaces/{workspace_name}/memory/{service_id}": "P4",
            "/v3/openapi/workspaces/{workspace_name}/memory/{service_id}": "P3"}
paths = json.load(open("src/api/openapi.json", encoding="utf-8"))["paths"]
for path in paths:
    written = path
    for full, short in prefixes.items():
        written = written.replace(full, short)
    pattern = re.sub(r"\\\{[^}]*\\\}", r"\\{[^}]*\\}", re.escape(written))
    if not re.search(pattern, text):
        broken.append(f"src/api/openapi.json: {path} is named in no document")

for b in broken:
    print(b)
print(f"check_docs: {checked} relative links in {len(files)} files, {len(paths)} documented "
      f"paths, {len(broken)} broken")
sys.exit(1 if broken else 0)
EOF

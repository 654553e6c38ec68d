#!/usr/bin/env bash
# Checks that every C++ file of the repository is formatted as .clang-format says (clang-format
# 14, Debian's). Prints the files that are not and exits 1; `git clang-format` or
# `clang-format -i FILE` formats them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format not installed (apt-get install clang-format)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cc' '*.h')
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'check_format: not formatted: %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: $(git ls-files '*.cc' '*.h' | wc -l) files formatted"

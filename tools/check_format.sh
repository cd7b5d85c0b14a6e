#!/bin/sh
# check_format.sh [--fix] - checks every C source and header of the
# repository against .clang-format (exit 1 and the changed-line count per
# file when one differs); --fix rewrites them in place instead. Generated
# files (*_gen.h, made by the scripts under tools/) are left out: their
# generators own their layout.
#
# The result depends on the clang-format version; the configuration is
# tuned for Debian's clang-format 14 (package clang-format, installed by
# .ci/run). Without clang-format: "skipped", exit 77 (exit 1 under CI=true).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
fix=0
[ "${1:-}" = --fix ] && fix=1
cf=""
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then
        cf=$c
        break
    fi
done
if [ -z "$cf" ]; then
    if [ "${CI:-}" = true ]; then
        echo "check_format: FAILED: clang-format not found (CI=true: the check may not skip)"
        exit 1
    fi
    echo "check_format: skipped: clang-format not found"
    exit 77
fi
if [ -d .git ] || [ -f .git ]; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find src include tests fuzz bench examples python tools -name '*.[ch]' 2>/dev/null)
fi
files=$(printf '%s\n' "$files" | grep -v '_gen\.h$')
if [ $fix -eq 1 ]; then
    # shellcheck disable=SC2086 # one word per file
    printf '%s\n' $files | xargs "$cf" -i --style=file
    echo "check_format: formatted $(printf '%s\n' $files | wc -l) files with $($cf --version)"
    exit 0
fi
# One clang-format process over every file: --dry-run prints a warning per
# differing line, "file:line:col: ...", so the count per file comes from it.
# shellcheck disable=SC2086 # one word per file
out=$(printf '%s\n' $files | xargs "$cf" --style=file --dry-run 2>&1)
if [ -n "$out" ]; then
    printf '%s\n' "$out" | grep -E '^[^ :]+:[0-9]+:[0-9]+: (warning|error)' |
        cut -d: -f1 | sort | uniq -c | awk '{print $2 ": " $1 " lines differ from .clang-format"}'
    n=$(printf '%s\n' "$out" | grep -E '^[^ :]+:[0-9]+:[0-9]+: (warning|error)' | cut -d: -f1 | sort -u | wc -l)
    echo "check_format: $n files need formatting: run tools/check_format.sh --fix"
    exit 1
fi
echo "check_format: every C file matches .clang-format"

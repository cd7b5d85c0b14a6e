#!/bin/sh
# check_fuzz.sh [SECONDS] [BUILD_DIR] - builds every libFuzzer target of
# fuzz/ with clang (ASan + UBSan, as docs/security.md describes) and runs
# each for SECONDS (default 5) from its committed corpus and regressions.
# Fails on the first target that does not build or that finds a crash, a
# leak, a sanitizer report or a timeout; the input that failed is kept in
# BUILD_DIR/fuzz-artifacts. New inputs go to a scratch folder, never into
# fuzz/corpus. Needs clang (exit 77 "skipped" without it, exit 1 under
# CI=true). CI runs it from .ci/run.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
build=${2:-$here/build-fuzz}
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 2 ] && jobs=2
if ! command -v clang >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then
        echo "check_fuzz: FAILED: clang not found (CI=true: the check may not skip)"
        exit 1
    fi
    echo "check_fuzz: skipped: clang not found"
    exit 77
fi
cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER=clang -DCTOSA_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCTOSA_WERROR=ON -DCTOSA_BUILD_TESTS=OFF -DCTOSA_BUILD_BENCH=OFF >"$build.log" 2>&1 &&
    cmake --build "$build" -j "$jobs" >>"$build.log" 2>&1 || {
    tail -30 "$build.log"
    echo "check_fuzz: FAILED: the fuzz targets do not build (log: $build.log)"
    exit 1
}
art="$build/fuzz-artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ctosa-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$art"
status=0
n=0
for src in "$here"/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    [ "$name" = fuzz_scratch ] && continue
    target=${name#fuzz_}
    exe="$build/fuzz/$name"
    if [ ! -x "$exe" ]; then
        echo "check_fuzz: FAILED: $exe was not built"
        status=1
        continue
    fi
    dirs=""
    for d in "$here/fuzz/corpus/$target" "$here/fuzz/regressions/$target"; do
        [ -d "$d" ] && dirs="$dirs $d"
    done
    dict=""
    [ -f "$here/fuzz/$target.dict" ] && dict="-dict=$here/fuzz/$target.dict"
    mkdir -p "$scratch/$target"
    # shellcheck disable=SC2086 # dirs and dict are word lists on purpose
    # -seed=1: the same inputs on every run of the same build (a finding
    # can be replayed), not a new random walk each time.
    if "$exe" "$scratch/$target" $dirs $dict -seed=1 -max_total_time="$secs" -max_len=16384 -rss_limit_mb=2048 \
        -timeout=30 -artifact_prefix="$art/$target-" -print_final_stats=0 >"$scratch/$target.log" 2>&1; then
        runs=$(grep -o 'Done [0-9]* runs' "$scratch/$target.log" | tail -1)
        echo "check_fuzz: $name: ok (${runs:-no run count})"
        n=$((n + 1))
    else
        tail -40 "$scratch/$target.log"
        echo "check_fuzz: FAILED: $name (input kept in $art)"
        status=1
    fi
done
[ $status -eq 0 ] && echo "check_fuzz: $n targets ran ${secs}s each without a finding"
exit $status

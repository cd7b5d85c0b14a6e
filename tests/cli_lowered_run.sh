#!/usr/bin/env bash
# cli_lowered_run.sh CTOSA SRC_DIR BUILD_DIR - every graph the test suite
# lowers is also checked and run: a test that calls ctosa_lower_file must
# pass its results through lt_validate_all / lt_lower (tests/lower_testutil.h:
# validate as built and after a file round trip, then run the read-back
# graph), or say in a comment "lowered graphs not run: REASON".
set -u
src=$2
fail=0
for f in "$src"/tests/test_*.c; do
    grep -q 'ctosa_lower_file(' "$f" || continue
    grep -q 'lt_validate_all(\|lt_lower(' "$f" && continue
    grep -q 'lowered graphs not run: ' "$f" && continue
    echo "FAIL: $(basename "$f") lowers models but neither checks nor runs the partitions (lt_validate_all)"
    fail=1
done
[ -n "${CTOSA_LRUN_INNER:-}" ] && exit $fail
# the rule can fail: a fake test file that lowers without checking
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_lrun.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests"
printf 'int main(void) { return ctosa_lower_file(0, 0, 0, 0) != 0; }\n' >"$tmp/tests/test_fake.c"
if CTOSA_LRUN_INNER=1 bash "$0" x "$tmp" x >/dev/null 2>&1; then
    echo "FAIL: the rule accepted a test that lowers without checking"
    fail=1
fi
[ $fail = 0 ] && echo "every lowering test checks and runs its partitions"
exit $fail

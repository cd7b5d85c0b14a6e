#!/usr/bin/env bash
# cli_format.sh CTOSA SRC_DIR BUILD_DIR - every C source and header matches
# .clang-format (tools/check_format.sh), and the checker catches a file that
# does not (a small fake tree), so this test can fail. Skips (77) without
# clang-format, as the checker does.
set -u
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_fmt.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check="$src/tools/check_format.sh"
[ -f "$check" ] || fail "$check missing"

sh "$check" >"$tmp/real.out" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$tmp/real.out"; exit 77; }
[ $rc -eq 0 ] || { cat "$tmp/real.out"; fail "the tree does not match .clang-format"; }

# A fake tree (no git) with one file that is formatted and one that is not.
f=$tmp/fake
mkdir -p "$f/tools" "$f/src/util"
cp "$check" "$f/tools/" && cp "$src/.clang-format" "$f/"
printf 'int a(void) { return 1; }\n' >"$f/src/util/good.c"
printf 'int  b( void ){return 2;}\n' >"$f/src/util/bad.c"
sh "$f/tools/check_format.sh" >"$tmp/fake.out" 2>&1 && { cat "$tmp/fake.out"; fail "a badly formatted file passed"; }
grep -q 'src/util/bad.c' "$tmp/fake.out" || { cat "$tmp/fake.out"; fail "the report does not name the file"; }
grep -q 'good.c' "$tmp/fake.out" && { cat "$tmp/fake.out"; fail "a formatted file was reported"; }
sh "$f/tools/check_format.sh" --fix >/dev/null 2>&1 || fail "--fix failed"
sh "$f/tools/check_format.sh" >"$tmp/fixed.out" 2>&1 || { cat "$tmp/fixed.out"; fail "--fix left a difference"; }
echo "cli_format: the tree matches .clang-format; the checker catches and fixes a bad file"

#!/usr/bin/env bash
# cli_lower_families.sh CTOSA SRC_DIR BUILD_DIR - every operator-family table
# defined under src/lower (const lower_entry lower_table_<family>[]) is
# listed in the lowering registry (lower_registry.c), and every listed one is
# defined. The library is a static archive: a family file whose table the
# registry does not name would never be linked in, and its operators would
# silently fall back to the CPU. (A listed table without a definition also
# fails to link; this test says which one.)
set -u
src=$2
fail() { echo "FAIL: $*"; exit 1; }
reg=$(find "$src/src/lower" -name lower_registry.c | head -n1)
[ -n "$reg" ] || fail "lower_registry.c not found under $src/src/lower"
defined=$(grep -rhoE '^const lower_entry lower_table_[a-z0-9_]+\[\]' "$src/src/lower" --include='*.c' |
          sed -E 's/.*lower_table_([a-z0-9_]+).*/\1/' | sort)
listed=$(grep -oE '^[[:space:]]+lower_table_[a-z0-9_]+,' "$reg" | sed -E 's/.*lower_table_([a-z0-9_]+),/\1/' | sort)
[ -n "$defined" ] || fail "no family tables found"
missing=$(comm -23 <(echo "$defined") <(echo "$listed"))
extra=$(comm -13 <(echo "$defined") <(echo "$listed"))
[ -z "$missing" ] || fail "family tables not listed in $reg: $missing"
[ -z "$extra" ] || fail "listed in $reg but defined nowhere: $extra"
echo "lower families: $(echo "$defined" | wc -l) tables, all listed"

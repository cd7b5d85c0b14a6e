#!/usr/bin/env bash
# cli_include_rule.sh CTOSA SRC_DIR BUILD_DIR - the include rules of
# docs/architecture.md hold (tools/check_includes.sh): src/cli includes only
# include/ctosa/*.h, src/util/*.h and its own headers; python/ctosa/_ext
# only include/ctosa/*.h and its own; inside the library every include runs
# down the dependency order (pipeline -> lower -> tensorfile -> the ends ->
# util), so no two folders include each other. Also checks that the checker
# catches each kind of violation in a small fake tree, so this test can
# fail.
set -u
ctosa=$1 src=$2 build=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_incl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check="$src/tools/check_includes.sh"
[ -f "$check" ] || fail "$check missing"

# 1. The real tree follows the rule.
sh "$check" "$src" >"$tmp/real.out" 2>&1 || { cat "$tmp/real.out"; fail "the tree breaks the include rule"; }
grep -q 'files follow the include rule' "$tmp/real.out" || { cat "$tmp/real.out"; fail "unexpected checker output"; }

# 2. A fake tree with one violation of each kind, and allowed includes.
f=$tmp/fake
mkdir -p "$f/include/ctosa" "$f/src/util" "$f/src/lower" "$f/src/spec" "$f/src/cli/sub" \
         "$f/python/ctosa/_ext"
echo '#include "ctosa/common.h"' >"$f/include/ctosa/ctosa.h"
: >"$f/include/ctosa/common.h"
: >"$f/src/lower/lower_internal.h"
: >"$f/src/spec/compliance.h"
printf '#include <stdio.h>\n#include "ctosa/common.h"\n' >"$f/src/util/util.h"
printf '#include "util/util.h"\n#include "spec/compliance.h"\n' >"$f/src/util/leak.h"
: >"$f/src/cli/cli.h"
: >"$f/src/cli/sub/gen.h"
cat >"$f/src/cli/good.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "sub/gen.h"
#include "ctosa/ctosa.h"
#include "util/util.h"
EOF
cat >"$f/src/cli/bad.c" <<'EOF'
#include "cli.h"
#include "lower/lower_internal.h"
#  include <spec/compliance.h>
#include "../lower/lower_internal.h"
#include "ctosa/nonexistent.h"
EOF
mkdir -p "$f/src/interp" "$f/src/onnx" "$f/src/pipeline" "$f/src/lower/ops" "$f/src/lower/quant" \
         "$f/src/lower/core" "$f/src/newmod"
: >"$f/src/interp/kern.h"
: >"$f/src/pipeline/partition.h"
: >"$f/src/lower/core/core.h"
: >"$f/src/lower/quant/q.h"
printf '#include "util/util.h"\n#include "interp/kern.h"\n' >"$f/src/onnx/reader.c"
printf '#include "lower/lower_internal.h"\n#include "lower/quant/q.h"\n#include "pipeline/partition.h"\n' \
    >"$f/src/lower/ops/fam.c"
printf '#include "q.h"\n#include "lower/core/core.h"\n' >"$f/src/lower/quant/q.c"
printf '#include "lower/core/core.h"\n#include "lower/lower_internal.h"\n#include "spec/compliance.h"\n' \
    >"$f/src/pipeline/api.c"
printf '#include "util/util.h"\n' >"$f/src/newmod/x.c"
printf '#include <Python.h>\n#include "ext.h"\n#include "ctosa/ctosa.h"\n' >"$f/python/ctosa/_ext/ok.c"
: >"$f/python/ctosa/_ext/ext.h"
printf '#include "ext.h"\n#include "util/util.h"\n' >"$f/python/ctosa/_ext/bad.c"

sh "$check" "$f" >"$tmp/fake.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/fake.out"; fail "checker exit $rc on a tree with violations, expected 1"; }
expect() { grep -qF -- "$1" "$tmp/fake.out" || { cat "$tmp/fake.out"; fail "checker did not report '$1'"; }; }
expect "src/cli/bad.c:2: includes \"lower/lower_internal.h\""
expect "src/cli/bad.c:3: includes \"spec/compliance.h\""
expect "src/cli/bad.c:4: includes \"../lower/lower_internal.h\""
expect "src/cli/bad.c:5: includes \"ctosa/nonexistent.h\""
expect "python/ctosa/_ext/bad.c:2: includes \"util/util.h\""
expect "src/util/leak.h:2: includes \"spec/compliance.h\""
expect "src/onnx/reader.c:2: includes \"interp/kern.h\": src/onnx may not depend on src/interp"
expect "src/lower/ops/fam.c:3: includes \"pipeline/partition.h\": src/lower/ops may not depend on src/pipeline"
expect "src/lower/quant/q.c:2: includes \"lower/core/core.h\": src/lower/quant may not depend on src/lower/core"
expect "src/newmod/x.c:1: includes \"util/util.h\": folder src/newmod has no place"
expect "check_includes: 10 include(s) break the rule"
if grep -E 'good\.c|ok\.c|bad\.c:1:|python/ctosa/_ext/bad\.c:1:|util\.h:|reader\.c:1:|fam\.c:[12]:|q\.c:1:|api\.c' \
    "$tmp/fake.out"; then
    fail "checker flagged an allowed include"
fi

# 3. Removing the violations makes the fake tree pass.
rm "$f/src/cli/bad.c" "$f/python/ctosa/_ext/bad.c" "$f/src/util/leak.h" "$f/src/onnx/reader.c" \
   "$f/src/lower/ops/fam.c" "$f/src/lower/quant/q.c" "$f/src/newmod/x.c"
sh "$check" "$f" >"$tmp/fake2.out" 2>&1 || { cat "$tmp/fake2.out"; fail "clean fake tree rejected"; }
echo "cli_include_rule: ok"

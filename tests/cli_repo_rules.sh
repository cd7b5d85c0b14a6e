#!/usr/bin/env bash
# cli_repo_rules.sh CTOSA SRC_DIR BUILD_DIR - the project's written rules
# that a reader checks by eye, checked here on every tracked file:
# - no issue-tracker numbers in code, tests, tools or docs (a comment says
#   why, not which ticket asked);
# - source and header files under src/ and include/ at most 1500 lines;
# - docs/, README.md and bench/README.md name no file outside the
#   repository (no ../shared, no absolute home or work paths);
# - the library reads no environment variable: only src/cli maps them to
#   options;
# - the top level tracks only the project files (a test's leftover output
#   committed by accident shows up here).
# Skips outside a git checkout (the tracked-file list comes from git).
set -u
src=$2
cd "$src" || exit 1
command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "skipped: not a git checkout"; exit 77; }
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# Text files only (-I), the generated corpora excluded by extension.
hits=$(git grep -n -I -i -E '\bissues? ?#?[0-9]+\b|\bissue-[0-9]+\b' -- \
  src include docs tests tools python examples fuzz bench .ci README.md CMakeLists.txt ':!tests/cli_repo_rules.sh')
[ -z "$hits" ] || bad "issue numbers:"$'\n'"$hits"
n=0
while IFS= read -r f; do
  n=$((n + 1))
  lines=$(wc -l <"$f")
  [ "$lines" -le 1500 ] || bad "$f has $lines lines (at most 1500)"
done < <(git ls-files 'src/*.c' 'src/*.h' 'include/*.h')
paths=$(git grep -n -I -E '\.\./shared|/(work|root|home)/' -- docs README.md bench/README.md)
[ -z "$paths" ] || bad "paths outside the repository in the docs:"$'\n'"$paths"
env=$(git grep -n -E '\b(secure_)?getenv *\(' -- src include ':!src/cli')
[ -z "$env" ] || bad "the library reads the environment (map it to an option in src/cli):"$'\n'"$env"
top=$(git ls-files | grep -v / | grep -v -x -E '\.clang-format|\.gitignore|CMakeLists\.txt|LICENSE|README\.md')
[ -z "$top" ] || bad "unexpected files at the top level:"$'\n'"$top"
echo "$n source files checked, $fails rule(s) broken"
[ $fails -eq 0 ]

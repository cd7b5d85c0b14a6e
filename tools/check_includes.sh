#!/bin/sh
# check_includes.sh [ROOT] - enforces the include rule of docs/architecture.md
# ("Who may include what"): the command line (src/cli) and the Python
# extension (python/ctosa/_ext) are clients of the library and see only its
# public API.
#
#   src/cli/**/*.{c,h}          may include  ctosa/*.h (include/ctosa),
#                                            util/*.h (src/util, the private
#                                            support library), and headers
#                                            of src/cli itself
#   python/ctosa/_ext/*.{c,h}   may include  ctosa/*.h and its own headers
#   src/util/*.h                may include  only ctosa/*.h and util/*.h (so
#                                            the allowance above cannot
#                                            reach further)
#
# Angle-bracket includes are system headers unless they name a file under
# include/ or src/ (then the same rule applies). Prints every violation as
# FILE:LINE: and exits 1 when there is one, 0 otherwise.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
status=0

# check FILE ALLOW_UTIL: every #include of FILE resolves to an allowed header.
check() {
    f=$1
    allow_util=$2
    dir=$(dirname "$f")
    grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" |
    while IFS= read -r line; do
        n=${line%%:*}
        inc=$(printf '%s\n' "$line" | sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/')
        quoted=0
        printf '%s\n' "$line" | grep -q -E 'include[[:space:]]*"' && quoted=1
        ok=0
        case $inc in
        ctosa/*.h) [ -f "$root/include/$inc" ] && ok=1 ;;
        util/*.h) [ "$allow_util" = 1 ] && [ -f "$root/src/$inc" ] && ok=1 ;;
        *)
            if [ $quoted = 1 ]; then
                # A header of the client itself (next to the including file
                # or below it), never one reached through "..".
                case $inc in
                ../* | */../*) ;;
                *) [ -f "$dir/$inc" ] && ok=1 ;;
                esac
            elif [ ! -e "$root/src/$inc" ] && [ ! -e "$root/include/$inc" ]; then
                ok=1 # a system header
            fi
            ;;
        esac
        if [ $ok = 0 ]; then
            echo "$f:$n: includes \"$inc\": only include/ctosa/*.h${3:+, }${3:-} and its own headers are allowed here (docs/architecture.md)"
            echo x >>"$tmp"
        fi
    done
}

tmp=$(mktemp "${TMPDIR:-/tmp}/check_includes.XXXXXX") || exit 2
trap 'rm -f "$tmp"' EXIT
nfiles=0
for f in $(find "$root/src/cli" -name '*.c' -o -name '*.h' 2>/dev/null | sort); do
    check "$f" 1 "src/util/*.h"
    nfiles=$((nfiles + 1))
done
for f in $(find "$root/python/ctosa/_ext" -name '*.c' -o -name '*.h' 2>/dev/null | sort); do
    check "$f" 0 ""
    nfiles=$((nfiles + 1))
done
for f in "$root"/src/util/*.h; do
    [ -f "$f" ] || continue
    check "$f" 1 "src/util/*.h"
    nfiles=$((nfiles + 1))
done
if [ "$nfiles" = 0 ]; then
    echo "check_includes: no files found under $root/src/cli or $root/python/ctosa/_ext"
    exit 2
fi
if [ -s "$tmp" ]; then
    echo "check_includes: $(wc -l <"$tmp" | tr -d ' ') include(s) break the rule"
    exit 1
fi
echo "check_includes: $nfiles files follow the include rule"
exit 0

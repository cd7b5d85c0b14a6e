#!/bin/sh
# check_includes.sh [ROOT] - enforces the include rules of docs/architecture.md
# ("Who may include what").
#
# 1. Clients see only the public API: the command line (src/cli) and the
#    Python extension (python/ctosa/_ext) are clients of the library.
#
#   src/cli/**/*.{c,h}          may include  ctosa/*.h (include/ctosa),
#                                            util/*.h (src/util, the private
#                                            support library), and headers
#                                            of src/cli itself
#   python/ctosa/_ext/*.{c,h}   may include  ctosa/*.h and its own headers
#
# 2. Inside the library, dependencies run one way. Every folder of src/
#    (other than src/cli) has a place in this order, lowest first; a file
#    may include the public headers (ctosa/*.h), headers of its own folder,
#    and headers of folders strictly below its own; folders on the same
#    step do not include each other:
#
#   util                          support library
#   tosa  spec  onnx  interp      the ends: TOSA graphs, specification and
#                                 validator, ONNX reader, interpreter
#   tensorfile                    .npy / .pb tensor files
#   lower                         the lowering's shared headers (lower/*.h)
#   lower/opt                     TOSA graph passes
#   lower/quant                   quantized lowerings
#   lower/ops                     one file per operator family
#   lower/core                    the framework: driver, registry, shape
#                                 inference, custom operators
#   pipeline                      lower API, partitions, report, describe
#   runtime                       the partitioned-model runtime
#   quantize                      post-training quantization
#
#   A folder not in this list fails the check until it is given its place.
#
# Angle-bracket includes are system headers unless they name a file under
# include/ or src/ (then the same rules apply). Prints every violation as
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
trap 'rm -f "$tmp" "$tmp.files" "$tmp.lib"' EXIT
nfiles=0
for f in $(find "$root/src/cli" -name '*.c' -o -name '*.h' 2>/dev/null | sort); do
    check "$f" 1 "src/util/*.h"
    nfiles=$((nfiles + 1))
done
for f in $(find "$root/python/ctosa/_ext" -name '*.c' -o -name '*.h' 2>/dev/null | sort); do
    check "$f" 0 ""
    nfiles=$((nfiles + 1))
done

# Rule 2: one pass of awk over every include of the library's files.
find "$root/src" -type f \( -name '*.h' -o -name '*.c' \) 2>/dev/null | sed "s|^$root/src/||" | sort >"$tmp.files"
lib=$(grep -v '^cli/' "$tmp.files" | sed "s|^|$root/src/|")
nlib=0
if [ -n "$lib" ]; then
    nlib=$(printf '%s\n' "$lib" | wc -l | tr -d ' ')
    # shellcheck disable=SC2086
    grep -n -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' $lib /dev/null |
    awk -v root="$root/src/" -v list="$tmp.files" '
    BEGIN {
        split("util:0 tosa:1 spec:1 onnx:1 interp:1 tensorfile:2 lower:3 lower/opt:4 lower/quant:5 lower/ops:6 " \
              "lower/core:7 pipeline:8 runtime:9 quantize:10", kv, " ")
        for (i in kv) { split(kv[i], p, ":"); rank[p[1]] = p[2] }
        while ((getline l < list) > 0) have[l] = 1
    }
    # The folder of a path relative to src/: its first component, or the
    # first two below lower/ when there is a second folder.
    function folder(path,   n, c) {
        n = split(path, c, "/")
        if (c[1] == "lower" && n >= 3) return "lower/" c[2]
        return n >= 2 ? c[1] : ""
    }
    {
        file = $0; sub(/:.*/, "", file)
        rest = substr($0, length(file) + 2)
        line = rest; sub(/:.*/, "", line)
        inc = rest; sub(/^[^"<]*["<]/, "", inc); sub(/[">].*$/, "", inc)
        rel = substr(file, length(root) + 1)
        from = folder(rel)
        if (inc ~ /^ctosa\//) next
        if (!(inc in have)) {
            dir = rel; sub(/[^\/]*$/, "", dir)
            if ((dir inc) in have && inc !~ /\.\./) next  # a header next to the file
            if (inc !~ /\.\./) next                          # a system header
        }
        to = folder(inc)
        why = ""
        if (!(from in rank)) why = "folder src/" from " has no place in the dependency order"
        else if (!(to in rank)) why = "src/" to " has no place in the dependency order"
        else if (to != from && rank[to] >= rank[from])
            why = "src/" from " may not depend on src/" to " (dependencies run one way)"
        if (why != "") {
            printf "%s:%s: includes \"%s\": %s (docs/architecture.md)\n", file, line, inc, why
            bad++
        }
    }
    END { exit bad > 0 }' >"$tmp.lib" || true
    if [ -s "$tmp.lib" ]; then
        cat "$tmp.lib"
        sed 's/.*/x/' "$tmp.lib" >>"$tmp"
    fi
fi
nfiles=$((nfiles + nlib))
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

#!/usr/bin/env bash
# cli_html.sh CTOSA SRC_DIR BUILD_DIR - the HTML partition report in a real
# browser: `ctosa lower --html` on real models, opened in headless Debian
# Chromium; the rendered DOM is checked against the report JSON
# (tests/cli_html_dom.py: node count, every box's partition / fallback
# status, the fallback nodes present, collapsed chains at 5,000 nodes) and
# screenshots are kept in BUILD_DIR (report.png, report_5000.png; looked
# at, not compared pixel by pixel).
# Skips (77) when chromium or Debian's python3 is missing; the 5,000-node
# case also needs python3-onnx (it generates the model at test time).
set -u
ctosa=$1 src=$2 build=$3
py=/usr/bin/python3
chromium=${CTOSA_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ] || ! "$chromium" --version >/dev/null 2>&1; then
    echo "SKIP: chromium not installed (apt-get install chromium)"
    exit 77
fi
if [ ! -x "$py" ]; then
    echo "SKIP: $py not found"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_html.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Chromium with its own profile (tests may run in parallel), no network.
browse() { # browse WHAT OUT URL [extra flags...]
    local what=$1 out=$2 url=$3
    shift 3
    local args=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-dev-shm-usage
                --disable-component-update --no-first-run --user-data-dir="$tmp/profile"
                --virtual-time-budget="${VTB:-5000}" "$@")
    if [ "$what" = dom ]; then
        timeout 180 "$chromium" "${args[@]}" --dump-dom "$url" >"$out" 2>"$tmp/chromium.err" ||
            { tail -5 "$tmp/chromium.err"; fail "chromium --dump-dom $url"; }
    else
        timeout 180 "$chromium" "${args[@]}" --window-size=1400,900 --screenshot="$out" "$url" \
            >/dev/null 2>"$tmp/chromium.err" || { tail -5 "$tmp/chromium.err"; fail "chromium --screenshot $url"; }
    fi
}

check_png() { # a real 1400x900 PNG with some content
    "$py" - "$1" <<'EOF' || fail "screenshot $1"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (1400, 900), "size %dx%d" % (w, h)
assert len(b) > 20000, "only %d bytes: blank page?" % len(b)
EOF
}

no_network() { # the page must not load anything
    if grep -Eiq '(src|href)="(https?:)?//|url\((https?:)?//|@import' "$1"; then
        fail "$1 refers to an outside resource"
    fi
    grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$1" || fail "$1: no CSP"
}

dom_check() { "$py" "$src/tests/cli_html_dom.py" "$@" || exit 1; }

# 1. small_cnn, fully delegated (9 nodes, one partition).
"$ctosa" lower "$src/examples/models/small_cnn.onnx" --spec TOSA-1.0+FP -o "$tmp/fp" -q --html ||
    fail "lower small_cnn --html"
page=$tmp/fp/small_cnn.report.html
[ -s "$page" ] || fail "no $page"
no_network "$page"
browse dom "$tmp/fp.dom" "file://$page"
dom_check "$tmp/fp.dom" "$tmp/fp/small_cnn.report.json" --all-nodes --label small_cnn/FP
grep -q 'data-status="partition:0"' "$tmp/fp.dom" || fail "small_cnn: no partition:0 box"

# 2. small_cnn under INT: every node falls back (not_in_spec); --html=FILE.
"$ctosa" lower "$src/examples/models/small_cnn.onnx" --spec TOSA-1.0+INT -o "$tmp/int" -q \
    --html="$tmp/int.html" || fail "lower small_cnn --html=FILE"
browse dom "$tmp/int.dom" "file://$tmp/int.html"
dom_check "$tmp/int.dom" "$tmp/int/small_cnn.report.json" --all-nodes --fallback-visible --label small_cnn/INT
n=$(grep -o 'data-status="fallback:not_in_spec"' "$tmp/int.dom" | wc -l)
[ "$n" -eq 9 ] || fail "small_cnn/INT: $n of 9 boxes marked fallback:not_in_spec"

# 2b. An older report without the "graph" section: nodes without edges and
# a notice saying why.
cat >"$tmp/old.json" <<'EOF'
{"tool": "ctosa", "version": "0.0.9", "model": "old.onnx", "spec": "TOSA-1.0+INT",
 "nodes_total": 3, "nodes_delegated": 2,
 "partitions": [{"id": 0, "file": "old.part0.tosa", "nodes": ["conv1", "relu1"], "inputs": [], "outputs": [],
                 "tosa_ops": {"CONV2D": 1}}],
 "fallback": [{"node": "nms", "op_type": "NonMaxSuppression", "domain": "", "code": "unsupported_op",
               "reason": "NonMaxSuppression has no TOSA lowering"}]}
EOF
"$ctosa" report "$tmp/old.json" -q || fail "report old.json"
browse dom "$tmp/old.dom" "file://$tmp/old.html"
dom_check "$tmp/old.dom" "$tmp/old.json" --all-nodes --fallback-visible --label old-report
grep -q '<section id="notice">This report has no "graph" section' "$tmp/old.dom" || fail "old report: no notice"

# 3. A real network with fallbacks: quantized mobilenet_v2 under
# TOSA-1.0+INT (1135 nodes, boundary Q/DQ on the CPU). Collapsed by default;
# '#nocollapse' draws every node.
mb=$src/tests/models/mobilenet_v2_x0_25_qnnpack/model.onnx
"$ctosa" lower "$mb" --spec TOSA-1.0+INT -o "$tmp/mb" -q --html || fail "lower mobilenet --html"
page=$tmp/mb/model.report.html
browse dom "$tmp/mb.dom" "file://$page"
dom_check "$tmp/mb.dom" "$tmp/mb/model.report.json" --collapsed --label mobilenet/INT
browse dom "$tmp/mb_all.dom" "file://$page#nocollapse"
dom_check "$tmp/mb_all.dom" "$tmp/mb/model.report.json" --all-nodes --label mobilenet/INT/all
"$py" - "$tmp/mb/model.report.json" "$tmp/mb_all.dom" "$tmp/mb.dom" <<'EOF' || fail "mobilenet fallback nodes"
import html, json, sys
rep = json.load(open(sys.argv[1]))
dom, collapsed = open(sys.argv[2]).read(), open(sys.argv[3]).read()
fb = rep["fallback"]
assert fb, "expected fallback nodes (the boundary Q/DQ) under TOSA-1.0+INT"
for f in fb:  # every one with its own box and code
    want = 'data-node="%s" data-op="%s" data-u="' % (html.escape(f["node"]), html.escape(f["op_type"]))
    assert want in dom, "%s not in the DOM" % want
assert 'data-status="fallback:' in collapsed, "collapsed view shows no fallback box"
print("ok: all %d fallback nodes in the DOM:" % len(fb), ", ".join("%s (%s)" % (f["node"], f["code"]) for f in fb[:6]),
      "..." if len(fb) > 6 else "")
EOF
# Interaction: #selftest expands and collapses a chain, toggles collapsing,
# highlights a legend row, clicks a node box (real hit testing), follows a
# details link, zooms with the wheel and drags (src/cli/report_html/report.js).
browse dom "$tmp/mb_self.dom" "file://$page#selftest"
dom_check "$tmp/mb_self.dom" "$tmp/mb/model.report.json" --selftest --label mobilenet/INT/selftest
browse dom "$tmp/fp_self.dom" "file://$tmp/fp/small_cnn.report.html#selftest"
dom_check "$tmp/fp_self.dom" "$tmp/fp/small_cnn.report.json" --selftest --label small_cnn/FP/selftest

# Search from the URL (#search=NAME): the first node of a collapsed chain;
# its chain expands, the node gets its own selected box, the details panel
# shows it.
"$py" - "$tmp/mb.dom" >"$tmp/pick" <<'EOF' || fail "no collapsed chain to search in"
import re, sys, urllib.parse, html
dom = open(sys.argv[1]).read()
m = re.search(r'data-first="([^"]*)"', dom)
coll = re.search(r'data-collapsed="(\d+)"', dom)
name = html.unescape(m.group(1))
print(urllib.parse.quote(name, safe=""), coll.group(1), name)
EOF
read -r q coll name <"$tmp/pick"
browse dom "$tmp/mb_search.dom" "file://$page#search=$q"
"$py" - "$tmp/mb_search.dom" "$name" "$coll" <<'EOF' || fail "search for a node in a collapsed chain"
import re, sys, html
dom, name, coll = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
esc = html.escape(name, quote=True)
assert re.search(r'<g class="n[^"]*\bsel\b[^"]*" data-node="%s"' % re.escape(esc), dom), "no selected box for %s" % name
assert int(re.search(r'data-collapsed="(\d+)"', dom).group(1)) == coll - 1, "chain not expanded"
d = re.search(r'<section id="details"([^>]*)>(.*?)</section>', dom, re.S)
assert 'data-node="%s"' % esc in d.group(1), "details panel is not about %s" % name
assert "Attributes" in d.group(2) and "Inputs" in d.group(2) and ("partition " in d.group(2) or "CPU fallback" in d.group(2)), d.group(2)[:300]
print("ok: #search=%s expanded its chain, selected it and showed its details" % name)
EOF
rm -f "$build/report.png"
browse png "$build/report.png" "file://$page"
check_png "$build/report.png"
echo "screenshot: $build/report.png"

# 4. 5,000 nodes: a generated model (25 partitions split by custom-op
# fallbacks), collapsed chains; then every node drawn.
if "$py" -c "import onnx, numpy" 2>/dev/null; then
    "$py" "$src/tests/cli_html_model.py" "$tmp/big.onnx" 5000 || fail "generating the 5,000-node model"
    "$ctosa" lower "$tmp/big.onnx" --spec TOSA-1.0+FP -o "$tmp/big" -q --html || fail "lower big --html"
    page=$tmp/big/big.report.html
    echo "5,000-node page: $(wc -c <"$page") bytes (report JSON $(wc -c <"$tmp/big/big.report.json") bytes)"
    VTB=10000 browse dom "$tmp/big.dom" "file://$page"
    dom_check "$tmp/big.dom" "$tmp/big/big.report.json" --collapsed --fallback-visible --label big
    VTB=10000 browse dom "$tmp/big_all.dom" "file://$page#nocollapse"
    dom_check "$tmp/big_all.dom" "$tmp/big/big.report.json" --all-nodes --label big/all
    rm -f "$build/report_5000.png"
    browse png "$build/report_5000.png" "file://$page"
    check_png "$build/report_5000.png"
    echo "screenshot: $build/report_5000.png"
else
    echo "SKIP (part): python3-onnx missing, 5,000-node case not run"
fi
echo "cli_html: all checks passed"

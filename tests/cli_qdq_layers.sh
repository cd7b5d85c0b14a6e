#!/bin/bash
# cli_qdq_layers.sh CTOSA SRC_DIR BUILD_DIR - tools/models/qdq_layers.py, the
# per-layer accuracy check of a QDQ model against ONNX Runtime
# (docs/quantization.md, "Checking a quantized model layer by layer"), on
# the committed mobilenet_v2_x0_25_onednn and 4 of its stored inputs:
# - every layer fed ORT's own inputs is within one step of ORT's fused run
#   (exit 0), ORT on the cut model reproduces ORT on the whole model, every
#   quantized activation is listed, the whole-model line is printed;
# - the check can fail: with --tol 0 the one-step differences this model
#   is known to have make it exit 1 and name the layer;
# - a model without QuantizeLinear and a missing model are usage errors
#   (exit 2).
# Skips (77) without Debian's python3 with onnx and numpy, or without node
# and tools/ort installed.
set -u
ctosa=$1; src=$2
tool=$src/tools/models/qdq_layers.py
dir=$src/tests/models/mobilenet_v2_x0_25_onednn
py=/usr/bin/python3
[ -f "$dir/model.onnx" ] || { echo "skipped: $dir missing"; exit 77; }
"$py" -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
command -v node >/dev/null || { echo "skipped: node needed"; exit 77; }
[ -d "$src/tools/ort/node_modules/onnxruntime-node" ] || { echo "skipped: tools/ort not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

"$py" "$tool" "$ctosa" "$dir" -n 4 --whole --all --keep "$tmp/w" --json "$tmp/r.json" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc = 0 ] || bad "exit $rc (expected 0: every layer within one step)"
"$py" - "$tmp/r.json" "$dir/model.onnx" <<'PY' || fail=$((fail + 1))
import json, sys, onnx
r = json.load(open(sys.argv[1]))
m = onnx.load(sys.argv[2])
nq = sum(1 for n in m.graph.node if n.op_type == "QuantizeLinear")
s = r["summary"]
ok = True
def need(c, msg):
    global ok
    if not c:
        print("FAIL", msg)
        ok = False
need(len(r["layers"]) == nq, "%d layers listed, %d QuantizeLinear in the model" % (len(r["layers"]), nq))
need(r["sets"] == 4, "sets %s" % r["sets"])
need(s["cut_check"] == 0, "ORT on the cut model differs from ORT on the whole model: %d" % s["cut_check"])
need(s["max"] <= 1 and s["layers_over_tol"] == 0, "a layer beyond one step: %s" % s)
kinds = set(l["kind"] for l in r["layers"])
need({"Conv+Relu", "Conv", "Add", "GlobalAveragePool", "Gemm"} <= kinds, "kinds %s" % sorted(kinds))
w = r["whole"][0]
need(w["partitions"] == 1 and w["delegated"] == w["nodes"] - 4, "whole model: %s" % w)
need(0 < w["within3"] <= 100 and w["top1"] <= 4, "whole model figures %s" % w)
# ORT's unfused GlobalAveragePool sums in float32: a few means fall on the
# other side of a tie; ctosa rounds the exact mean as ORT's fused kernel
gap = [l for l in r["layers"] if l["kind"] == "GlobalAveragePool"][0]
need(gap["differ"] == 0 and gap["ort_unfused_differ"] > 0, "GlobalAveragePool %s" % gap)
sys.exit(0 if ok else 1)
PY
grep -q "^whole model, output output" "$tmp/out" || bad "no whole-model line"

# the check fails when a layer is beyond the tolerance (ORT outputs reused from --keep)
"$py" "$tool" "$ctosa" "$dir" -n 4 --tol 0 --keep "$tmp/w" >"$tmp/out0" 2>&1
rc=$?
[ $rc = 1 ] || bad "--tol 0: exit $rc (expected 1)"
grep -q "layer(s) beyond 0 step(s)" "$tmp/out0" || bad "--tol 0: no summary: $(tail -3 "$tmp/out0")"

# usage errors
"$py" - "$tmp/noq.onnx" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
"$py" -c 'import numpy as np, sys; np.save(sys.argv[1], np.zeros((2, 1, 4), np.float32))' "$tmp/x.npy"
out=$("$py" "$tool" "$ctosa" "$tmp/noq.onnx" --inputs "$tmp/x.npy" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "has no QuantizeLinear" <<<"$out" || bad "model without QuantizeLinear: exit $rc: $out"
out=$("$py" "$tool" "$ctosa" "$tmp/none.onnx" --inputs "$tmp/x.npy" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "no such model" <<<"$out" || bad "missing model: exit $rc: $out"
[ $fail = 0 ] && echo "cli_qdq_layers: ok"
exit $((fail > 0))

#!/usr/bin/python3
"""cli_runtime_ort.py CTOSA SRC_DIR TMP - the runtime against ONNX Runtime.

For every case: `ctosa lower` under the spec, `ctosa run
MODEL.partitioned.onnx` (partitions on the interpreter, CPU nodes on the
host executor, no glue code), and the original model on ONNX Runtime
(tools/ort/run_ort.js) or, for custom operators ORT has no kernel for, the
committed numpy reference. Tolerances: float outputs 1e-4 relative to the
output's magnitude; quantized outputs (the report gives the tensor, or the
input of the DequantizeLinear computing it, a scale) within 3 steps on 99%
of the elements; other integer outputs exactly. Prints one line per case
and exits 1 when one is off. A sample by default; every case with
CTOSA_LONG_TESTS=1."""
import glob
import json
import os
import subprocess
import sys

import numpy as np
from onnx import numpy_helper, TensorProto

ctosa, src, tmp = sys.argv[1:4]
ORT = os.path.join(src, "tools", "ort", "run_ort.js")
PLUGIN = os.environ.get("CTOSA_EXAMPLE_PLUGIN", "")


def npy_of(path, out):
    """.pb inputs as .npy (run_ort.js reads .npy)."""
    if path.endswith(".npy"):
        return path
    t = TensorProto()
    t.ParseFromString(open(path, "rb").read())
    np.save(out, numpy_helper.to_array(t))
    return out


def scales(report):
    q = {}
    for p in report["partitions"]:
        for t in p["inputs"] + p["outputs"]:
            if "scale" in t:
                q[t["name"]] = t["scale"]
    for t in report.get("graph", {}).get("tensors", []):
        if "scale" in t:
            q.setdefault(t["name"], t["scale"])
    for n in report.get("graph", {}).get("nodes", []):
        if n["op_type"] == "DequantizeLinear" and n["inputs"][0] in q:
            q.setdefault(n["outputs"][0], q[n["inputs"][0]])
    return q


def compare(name, got, ref, scale):
    if got.shape != ref.shape:
        return False, "%s: shape %s, expected %s" % (name, got.shape, ref.shape)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    if scale:
        steps = np.abs(g - r) / (scale if got.dtype.kind == "f" else 1.0)
        within = float((steps <= 3 + 1e-6).mean()) if steps.size else 1.0
        return within >= 0.99, "%s: quantized max %.3g steps, %.2f%% within 3" % (
            name, steps.max() if steps.size else 0, 100 * within)
    if got.dtype.kind == "f":
        d = np.abs(g - r)
        d[np.isnan(g) & np.isnan(r)] = 0
        m = np.abs(r[np.isfinite(r)]).max() if np.isfinite(r).any() else 0
        rel = (d.max() / m if m else d.max()) if d.size else 0.0
        return rel <= 1e-4, "%s: float rel %.3g" % (name, rel)
    same = np.array_equal(g, r)
    return same, "%s: %s %s" % (name, got.dtype, "exact" if same else "DIFFERS")


def case(label, model, spec, inputs, refs=None, plugin=None, lower_args=(), ort_opt="all", error=None):
    out = os.path.join(tmp, label)
    extra = ["--plugin", plugin] if plugin else []
    r = subprocess.run([ctosa, "lower", model, "--spec", spec, "-o", out, "-q"] + extra + list(lower_args),
                       capture_output=True, text=True)
    if r.returncode:
        return False, "lower exit %d: %s" % (r.returncode, r.stderr.strip())
    stem = os.path.basename(model)[:-5]
    rep = json.load(open(os.path.join(out, stem + ".report.json")))
    names = rep["graph"]["inputs"]
    feeds = [npy_of(f, os.path.join(out, "in%d.npy" % i)) for i, f in enumerate(inputs)]
    args = [ctosa, "run", os.path.join(out, stem + ".partitioned.onnx"), "-o", os.path.join(out, "rt"), "-q"] + extra
    for n, f in zip(names, feeds):
        args += ["--input", "%s=%s" % (n, f)]
    outs = rep["graph"]["outputs"]
    for i, n in enumerate(outs):
        args += ["--output", "%s=%s" % (n, os.path.join(out, "rt_%d.npy" % i))]
    r = subprocess.run(args, capture_output=True, text=True)
    if error:
        # a CPU node nothing can express: exit 2 at load, naming it, no output
        ok = r.returncode == 2 and error in r.stderr and not os.path.exists(os.path.join(out, "rt_0.npy"))
        return ok, "expected load error (exit %d): %s" % (r.returncode, r.stderr.strip())
    if r.returncode:
        return False, "run exit %d: %s" % (r.returncode, r.stderr.strip())
    if refs is None:
        r = subprocess.run(["node", ORT, model, "--out", os.path.join(out, "ort"), "--quiet", "--opt", ort_opt] + feeds,
                           capture_output=True, text=True)
        if r.returncode:
            return False, "ORT exit %d: %s" % (r.returncode, r.stderr.strip())
        refs = [os.path.join(out, "ort", "output_%d.npy" % i) for i in range(len(outs))]
    q = scales(rep)
    ok, notes = True, []
    for i, n in enumerate(outs):
        o, why = compare(n, np.load(os.path.join(out, "rt_%d.npy" % i)), np.load(refs[i]), q.get(n))
        ok &= o
        notes.append(why)
    cpu = len(rep["fallback"])
    return ok, "%d/%d nodes delegated, %d partitions, %d CPU nodes; %s" % (
        rep["nodes_delegated"], rep["nodes_total"], len(rep["partitions"]), cpu, "; ".join(notes))


def add(label, model, spec, inputs, refs=None, plugin=None, **kw):
    cases.append((label, model, spec, inputs, refs, plugin, kw))


cases = []
M = os.path.join(src, "tests", "models")
for net in ("mobilenet_v2_x0_25_qnnpack", "mobilenet_v2_x0_25_onednn", "llm_tiny_int8"):
    d = os.path.join(M, net)
    if os.path.exists(os.path.join(d, "model.onnx")):
        # The int8-weight LLM keeps float activations: ORT's "all" level
        # rewrites its DequantizeLinear -> MatMul into dynamically quantized
        # integer MatMuls (4e-2 off its own unoptimised run), so it is
        # compared with ORT at "basic".
        add(net, os.path.join(d, "model.onnx"), "TOSA-1.0+INT", [os.path.join(d, "input_0.npy")],
            ort_opt="basic" if net.startswith("llm") else "all")
Q = os.path.join(src, "tests", "data", "lower", "quant")
for d in sorted(glob.glob(os.path.join(Q, "*", "model.onnx"))):
    name = os.path.basename(os.path.dirname(d))
    add("quant/" + name, d, "TOSA-1.0+INT", sorted(glob.glob(os.path.join(os.path.dirname(d), "input_*.npy"))))
I = os.path.join(src, "tests", "data", "lower", "int64")
for d in sorted(glob.glob(os.path.join(I, "*", "model.onnx"))):
    name = os.path.basename(os.path.dirname(d))
    import onnx
    m = onnx.load(d)
    init = {t.name for t in m.graph.initializer}
    ins = [os.path.join(os.path.dirname(d), i.name + ".pb") for i in m.graph.input if i.name not in init]
    if not all(os.path.exists(f) for f in ins):
        continue
    kw = {}
    if name == "reduceprod":  # no TOSA graph has an i64 REDUCE_PRODUCT
        kw["error"] = "node 'rprod' (ReduceProd) cannot run on the host executor"
    if name == "symbolic":  # symbolic input dims: give the shape the data has
        t = TensorProto()
        t.ParseFromString(open(ins[0], "rb").read())
        kw["lower_args"] = ["--shape", "x=" + "x".join(str(v) for v in t.dims)]
    for spec in ("TOSA-1.0+INT", "TOSA-1.0+FP"):
        add("int64/%s %s" % (name, spec[9:]), d, spec, ins, **kw)
R = os.path.join(src, "tests", "data", "runtime")
for spec in ("TOSA-1.0+FP", "TOSA-1.0+INT"):
    add("float_mid " + spec[9:], os.path.join(R, "float_mid.onnx"), spec, [os.path.join(R, "float_mid_in.npy")])
# shapes that depend on the data: lowered on each run with its values
add("nonzero_mid FP", os.path.join(R, "nonzero_mid.onnx"), "TOSA-1.0+FP", [os.path.join(R, "float_mid_in.npy")])
for spec in ("TOSA-1.0+FP", "TOSA-1.0+INT"):
    for inp in ("detect", "detect_none"):
        add("%s %s" % (inp, spec[9:]), os.path.join(R, "detect_mid.onnx"), spec, [os.path.join(R, inp + "_in.npy")])
add("topk_big FP", os.path.join(R, "topk_big.onnx"), "TOSA-1.0+FP", [os.path.join(R, "float_mid_in.npy")])
add("unique_mid FP", os.path.join(R, "unique_mid.onnx"), "TOSA-1.0+FP", [os.path.join(R, "float_mid_in.npy")],
    error="node 'unique' (Unique) cannot run on the host executor: unsupported_op")
C = os.path.join(src, "tests", "data", "lower", "custom")
if PLUGIN and os.path.exists(PLUGIN):
    # ORT has no kernels for these operators: the generator's numpy results
    add("custom/swish_split", os.path.join(C, "swish_split.onnx"), "TOSA-1.0+FP", [os.path.join(C, "swish_split_in.npy")],
        [os.path.join(C, "swish_split_out0.npy"), os.path.join(C, "swish_split_out1.npy")], PLUGIN)

# The default suite runs a sample; CTOSA_LONG_TESTS=1 runs every case.
if not os.environ.get("CTOSA_LONG_TESTS"):
    keep = ("mobilenet_v2_x0_25_qnnpack", "llm_tiny_int8", "quant/a16w8_conv_gemm", "quant/a16_split", "quant/cascade_grouped_conv",
            "quant/tables_u8", "int64/const_expand INT", "int64/reduceprod INT", "int64/shape_reshape INT",
            "int64/symbolic FP", "int64/where_const INT", "float_mid FP", "float_mid INT", "nonzero_mid FP",
            "detect FP", "detect_none FP", "detect INT", "topk_big FP", "unique_mid FP",
            "custom/swish_split")
    cases = [c for c in cases if c[0] in keep]
failed = 0
for label, model, spec, ins, refs, plugin, kw in cases:
    ok, why = case(label.replace(" ", "_").replace("/", "_"), model, spec, ins, refs, plugin, **kw)
    print("%-4s %-34s %s" % ("ok" if ok else "FAIL", label, why))
    failed += not ok
print("%d of %d cases within tolerance" % (len(cases) - failed, len(cases)))
sys.exit(1 if failed else 0)

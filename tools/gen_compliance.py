#!/usr/bin/python3
"""Generates src/spec/compliance_gen.h: the TOSA specification as C tables.

Inputs (read-only, from the shared reference directory):
  reference/tosa/spec/tosa-1.0.0.xml       operators, arguments, 389 type rows,
                                           levels, enum extension rules (TOSA 1.0)
  reference/tosa/tosa-1.1-rows-added.tsv   type rows added in the 1.1 draft

The 1.1 draft's new operators are not in the XML; their argument lists come
from the table NEW_OPS_11 below (transcribed from NOTES.md Appendix C).

Usage: tools/gen_compliance.py [--shared DIR] [-o FILE]
  --shared DIR  the shared directory (default: <repo>/../shared)
  -o FILE       output file (default: <repo>/src/spec/compliance_gen.h; "-" = stdout)

Runs with the stdlib only (xml.etree). The XML has a DOCTYPE naming a DTD
that does not exist; ElementTree never fetches external DTDs. Output is a
pure function of the inputs (no dates, sorted where order is not given).
"""
import hashlib
import os
import sys
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XML_REL = "reference/tosa/spec/tosa-1.0.0.xml"
TSV_REL = "reference/tosa/tosa-1.1-rows-added.tsv"

MAX_SYMS = 6

# spec type name -> ctosa dtype enum suffix
DTYPES = {
    "bool_t": "BOOL", "i4_t": "INT4", "i8_t": "INT8", "i16_t": "INT16",
    "i32_t": "INT32", "i48_t": "INT48", "i64_t": "INT64", "fp16_t": "FP16",
    "bf16_t": "BF16", "fp32_t": "FP32", "fp8e4m3_t": "FP8E4M3",
    "fp8e5m2_t": "FP8E5M2", "shape_t": "SHAPE", "fp6e2m3_t": "FP6E2M3",
    "fp6e3m2_t": "FP6E3M2", "fp4e2m1_t": "FP4E2M1", "fp8ue8m0_t": "FP8UE8M0",
    "mxint8_t": "MXINT8", "tensor_size_t": "SHAPE",
}
# The block-scaled composite (data + fp8ue8m0 scale pairs) has no single
# DType in the flatbuffer schema; rows using it are left out (counted).
COMPOSITE = "bs32_fp8ue8m0_set_t"

# DEDUCE-EXT: extension implied by a concrete type (NOTES.md section 6).
DEDUCE = {
    "INT16": "INT16", "INT4": "INT4", "INT64": "INT64", "BF16": "BF16",
    "FP8E4M3": "FP8E4M3", "FP8E5M2": "FP8E5M2", "FP8UE8M0": "MX_COMMON",
    "FP4E2M1": "MX_FP4E2M1", "FP6E2M3": "MX_FP6E2M3", "FP6E3M2": "MX_FP6E3M2",
    "MXINT8": "MX_INT8",
}
FLOATS = {"FP16", "FP32", "BF16", "FP8E4M3", "FP8E5M2"}

PROFILES = {"PRO-INT": "CTOSA_PRO_INT", "PRO-FP": "CTOSA_PRO_FP"}
EXTS = {
    "EXT-INT16": "INT16", "EXT-INT4": "INT4", "EXT-BF16": "BF16",
    "EXT-FP8E4M3": "FP8E4M3", "EXT-FP8E5M2": "FP8E5M2", "EXT-FFT": "FFT",
    "EXT-VARIABLE": "VARIABLE", "EXT-CONTROLFLOW": "CONTROLFLOW",
    "EXT-DOUBLEROUND": "DOUBLEROUND", "EXT-INEXACTROUND": "INEXACTROUND",
    "EXT-DYNAMIC": "DYNAMIC", "EXT-INT64": "INT64", "EXT-SHAPE": "SHAPE",
    "EXT-MX-COMMON": "MX_COMMON", "EXT-MX-FP4E2M1": "MX_FP4E2M1",
    "EXT-MX-FP6E2M3": "MX_FP6E2M3", "EXT-MX-FP6E3M2": "MX_FP6E3M2",
    "EXT-MX-FP8E4M3": "MX_FP8E4M3", "EXT-MX-FP8E5M2": "MX_FP8E5M2",
    "EXT-MX-INT8": "MX_INT8", "EXT-MXFP-CONV": "MXFP_CONV",
}
EXT_ORDER = list(EXTS.values())  # == CTOSA_EXT_LIST order

LIMITS = {
    "MAX_RANK": "SPEC_LIMIT_RANK", "MAX_KERNEL": "SPEC_LIMIT_KERNEL",
    "MAX_STRIDE": "SPEC_LIMIT_STRIDE", "MAX_SCALE": "SPEC_LIMIT_SCALE",
    "MAX_LOG2_SIZE": "SPEC_LIMIT_LOG2_SIZE", "MAX_NESTING": "SPEC_LIMIT_NESTING",
    "MAX_TENSOR_LIST_SIZE": "SPEC_LIMIT_TENSOR_LIST_SIZE",
    "MAX_SHAPE_LEN": "SPEC_LIMIT_SHAPE_LEN",
}
LEVEL_ATTRS = ["max_rank", "max_kernel", "max_stride", "max_scale", "max_log2_size",
               "max_nesting", "max_tensor_list_size"]
# MAX_SHAPE_LEN exists only in 1.1 (NOTES.md section 8).
SHAPE_LEN = {"none": 64, "8K": 16}

# Op enum values of the 1.1-draft schema (common.h); operators of the 1.1
# spec without a schema value cannot appear in a file and are skipped.
OPS_11_WITHOUT_SCHEMA_VALUE = {"MATMUL_T", "ROW_GATHER", "ROW_GATHER_BLOCK_SCALED",
                               "RESHAPE_BLOCK_SCALED"}

# In 1.1 rows, zero-point symbols are bound like their tensor (every
# concrete row has in_zp_t == in_t; sets are assumed same_as); RESIZE's fp8
# rows bind out_t through the same set as in_t (type preserved, as in every
# 1.0 floating-point RESIZE row). This is our reading; the TSV does not
# carry same_as.
SAME_AS = {"in_zp_t": "in_t", "weight_zp_t": "weight_t", "A_zp_t": "A_t", "B_zp_t": "B_t"}
SAME_AS_OP = {("RESIZE", "out_t"): "in_t"}

# 1.1 splits MATMUL's in_t into A_t and B_t (mixed fp8 rows); the 1.0 data is
# rewritten to the 1.1 symbols (every 1.0 row binds both to the same type).
SPLIT_SYMS = {"MATMUL": {"in_t": {"A": "A_t", "A_zp": "A_t", "B": "B_t", "B_zp": "B_t"}}}

CTC_ALL = (["PRO-INT", "PRO-FP"], ["EXT-DYNAMIC"])


def A(cat, name, kind="tensor", ety="-", ctc=None):
    """An argument of a 1.1-draft operator: kind tensor|shape|list|other."""
    return {"cat": cat, "name": name, "kind": kind, "ety": ety, "rank": None,
            "ctc": ctc, "limits": [], "optional": False}


def shape_bin(name):
    return (name, (["shape_t"], [A("input", "input1", "shape", "shape_t", CTC_ALL),
                                 A("input", "input2", "shape", "shape_t", CTC_ALL),
                                 A("output", "output", "shape", "shape_t")]))


def shape_un(name):
    return (name, (["shape_t"], [A("input", "input", "shape", "shape_t", CTC_ALL),
                                 A("output", "output", "shape", "shape_t")]))


# name -> (symbols, arguments); NOTES.md Appendix C. Element types of
# inputs follow the analogous 1.0 operator; SLICE_SHAPE's start/size have
# no element type there and are left unchecked.
NEW_OPS_11 = dict(
    [
        ("AVG_POOL2D_ADAPTIVE", (["in_out_t", "acc_t"], [
            A("input", "input", ety="in_out_t"),
            A("input", "input_zp", ety="in_out_t", ctc=CTC_ALL),
            A("input", "output_zp", ety="in_out_t", ctc=CTC_ALL),
            A("input", "kernel", "shape", "shape_t", CTC_ALL),
            A("input", "stride", "shape", "shape_t", CTC_ALL),
            A("input", "pad", "shape", "shape_t", CTC_ALL),
            A("attribute", "acc_type", "other", "acc_t"),
            A("output", "output", ety="in_out_t")])),
        ("CONV2D_BLOCK_SCALED", (["in_t", "weight_t", "scale_t", "out_t"], [
            A("input", "input_data", ety="in_t"),
            A("input", "input_scale", ety="scale_t"),
            A("input", "weight_data", ety="weight_t"),
            A("input", "weight_scale", ety="scale_t"),
            A("input", "bias", ety="out_t"),
            A("input", "pad", "shape", "shape_t", CTC_ALL),
            A("input", "stride", "shape", "shape_t", CTC_ALL),
            A("input", "dilation", "shape", "shape_t", CTC_ALL),
            A("attribute", "block_size", "other"),
            A("output", "output", ety="out_t")])),
        ("MATMUL_T_BLOCK_SCALED", (["A_t", "B_t", "scale_t", "out_t"], [
            A("input", "A_data", ety="A_t"),
            A("input", "A_scale", ety="scale_t"),
            A("input", "B_data", ety="B_t"),
            A("input", "B_scale", ety="scale_t"),
            A("attribute", "block_size", "other"),
            A("output", "output_data", ety="out_t")])),
        ("MAX_POOL2D_ADAPTIVE", (["in_out_t"], [
            A("input", "input", ety="in_out_t"),
            A("input", "kernel", "shape", "shape_t", CTC_ALL),
            A("input", "stride", "shape", "shape_t", CTC_ALL),
            A("input", "pad", "shape", "shape_t", CTC_ALL),
            A("attribute", "nan_mode", "other"),
            A("output", "output", ety="in_out_t")])),
        ("CAST_FROM_BLOCK_SCALED", (["in_t", "scale_t", "out_t"], [
            A("input", "input_data", ety="in_t"),
            A("input", "input_scale", ety="scale_t"),
            A("attribute", "block_size", "other"),
            A("output", "output_data", ety="out_t")])),
        ("CAST_TO_BLOCK_SCALED", (["in_t", "scale_t", "out_t"], [
            A("input", "input_data", ety="in_t"),
            A("attribute", "block_size", "other"),
            A("output", "output_data", ety="out_t"),
            A("output", "output_scale", ety="scale_t")])),
        ("DIM", (["in_t"], [
            A("input", "input1", ety="in_t", ctc=CTC_ALL),
            A("attribute", "axis", "other"),
            A("output", "output", "shape", "shape_t")])),
        ("CONCAT_SHAPE", ([], [
            A("input", "input", "list", "shape_t", CTC_ALL),
            A("output", "output", "shape", "shape_t")])),
        ("SLICE_SHAPE", ([], [
            A("input", "input", "shape", "shape_t", CTC_ALL),
            A("input", "start", ctc=CTC_ALL),
            A("input", "size", ctc=CTC_ALL),
            A("output", "output", "shape", "shape_t")])),
        ("ASSERT_EQUAL_SHAPE", ([], [
            A("input", "input1", "shape", "shape_t", CTC_ALL),
            A("input", "input2", "shape", "shape_t", CTC_ALL),
            A("attribute", "allow_broadcast", "other")])),
    ]
    + [shape_bin(n) for n in ("ADD_SHAPE", "SUB_SHAPE", "MUL_SHAPE", "MAX_SHAPE", "MIN_SHAPE",
                              "MOD_SHAPE", "DIV_CEIL_SHAPE", "DIV_FLOOR_SHAPE")]
    + [shape_un(n) for n in ("EXP2_SHAPE", "LOG2_CEIL_SHAPE", "LOG2_FLOOR_SHAPE")]
)
# Shape operators bind one symbol, shape_t, which the TSV rows name.
for _n, (_s, _a) in list(NEW_OPS_11.items()):
    if _n.endswith("_SHAPE"):
        NEW_OPS_11[_n] = (["shape_t"], _a)


def die(msg):
    sys.stderr.write("gen_compliance.py: %s\n" % msg)
    sys.exit(1)


def rank_val(s):
    s = s.replace(" ", "")
    if s == "MAX_RANK":
        return -1
    if s.startswith("MAX_RANK-"):
        return -1 - int(s[len("MAX_RANK-"):])
    return int(s)


def parse_xml(path):
    root = ET.parse(path).getroot()
    ver = root.find("version")
    if (ver.get("major"), ver.get("minor")) != ("1", "0"):
        die("%s: expected TOSA 1.0, found %s.%s" % (path, ver.get("major"), ver.get("minor")))
    ops = []
    for op in root.iter("operator"):
        name = op.find("name").text.strip()
        syms = [t.get("name") for t in op.iter("type") if t.get("name") != "TABLE_SIZE"]
        args = []
        for a in op.find("arguments"):
            t = a.get("type")
            kind = {"tensor_t": "tensor", "shape_t": "shape", "tensor_list_t": "list"}.get(t, "other")
            cat = a.get("category")
            ety = a.get("tensor-element-type")
            if t == "shape_t":
                ety = "shape_t"
            if cat == "attribute" and kind == "tensor":
                kind = "other"  # attribute vectors (pad, stride...) live in the union table
            if cat == "attribute" and t in syms:
                ety = t  # CLAMP min_val/max_val: in_out_t
            if name in ("AVG_POOL2D", "CONV2D", "CONV3D", "DEPTHWISE_CONV2D",
                        "TRANSPOSE_CONV2D") and a.get("name") == "acc_type":
                ety = "acc_t"
            r = a.find("rank")
            ctc = None
            c = a.find("ctc")
            if c is not None:
                cr = a.find("ctc_remove")
                ctc = ([p.get("name") for p in c],
                       [p.get("name") for p in cr] if cr is not None else [])
            args.append({
                "cat": cat, "name": a.get("name"), "kind": kind, "ety": ety,
                "rank": (rank_val(r.get("min")), rank_val(r.get("max"))) if r is not None else None,
                "ctc": ctc, "optional": a.get("optional") == "true",
                "limits": [(l.get("limit"), " ".join(l.get("value").split()))
                           for l in a.findall("levellimit")],
            })
        rows = []
        for ts in op.findall("typesupport"):
            binds = {k: v for k, v in ts.attrib.items() if k not in ("mode", "version_added")}
            param = int(binds.pop("TABLE_SIZE", "0"))
            terms = []
            for p in ts.findall("op_profile"):
                terms.append([p.get(k) for k in ("name", "and_name", "and_name2") if p.get(k)])
            rows.append({"mode": ts.get("mode"), "binds": binds, "param": param,
                         "version": ts.get("version_added"), "terms": terms})
        ops.append({"name": name, "syms": syms, "args": args, "rows": rows, "version": 10})
    for o in ops:
        for old, per_arg in SPLIT_SYMS.get(o["name"], {}).items():
            new_syms = []
            for sname in o["syms"]:
                if sname == old:
                    new_syms.extend(sorted(set(per_arg.values())))
                else:
                    new_syms.append(sname)
            o["syms"] = new_syms
            for a in o["args"]:
                if a["ety"] == old:
                    a["ety"] = per_arg[a["name"]]
            for r in o["rows"]:
                v = r["binds"].pop(old)
                for ns in set(per_arg.values()):
                    r["binds"][ns] = v
    levels = [dict(l.attrib) for l in root.iter("level")]
    enum_ext = []
    for e in root.iter("enum"):
        for v in e:
            if v.get("extension"):
                enum_ext.append((e.get("name"), v.get("name"), int(v.get("value")),
                                 v.get("extension")))
    return ops, levels, enum_ext


def parse_tsv(path):
    rows, sets = [], {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# ") and " = " in line and not line.startswith("# columns"):
                k, v = line[2:].split(" = ", 1)
                sets[k.strip()] = v.split()
                continue
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 4:
                die("%s: bad line %r" % (path, line))
            op, mode, binds, prof = cols
            b = {}
            for kv in binds.split():
                k, v = kv.split("=", 1)
                b[k] = v
            terms = [[x.strip() for x in t.split("&")] for t in prof.split("|")]
            rows.append({"op": op, "mode": mode, "binds": b, "terms": terms})
    return rows, sets


def deduce(types):
    """Term for DEDUCE-EXT from the concrete dtypes of one row."""
    exts = sorted({DEDUCE[t] for t in types if t in DEDUCE}, key=EXT_ORDER.index)
    return exts


def expand_tsv_row(op, row, sets, stats):
    """Yields (binds: sym->DTYPE, terms) for one TSV row."""
    syms = op["syms"]
    free = []  # (sym, values)
    fixed = {}
    for k, v in sorted(row["binds"].items()):
        if v == "-":
            continue
        if k in SAME_AS and SAME_AS[k] in row["binds"]:
            base = row["binds"][SAME_AS[k]]
            if base != v:
                die("%s %r: %s=%s differs from %s=%s" % (op["name"], row["mode"], k, v,
                                                           SAME_AS[k], base))
            continue
        if (op["name"], k) in SAME_AS_OP and row["binds"].get(SAME_AS_OP[(op["name"], k)]) == v:
            continue
        if k not in syms:
            die("%s: row %r binds unknown symbol %s" % (op["name"], row["mode"], k))
        if v.startswith("set:"):
            free.append((k, sets[v[4:]]))
        else:
            fixed[k] = v
    combos = [dict(fixed)]
    for k, vals in free:
        combos = [dict(c, **{k: v}) for c in combos for v in vals]
    for c in combos:
        for k, src in list(SAME_AS_OP.items()):
            if k[0] == op["name"] and src in c and k[1] not in c:
                c[k[1]] = c[src]
        if COMPOSITE in c.values():
            stats["composite"] += 1
            continue
        for k, v in c.items():
            if v not in DTYPES:
                die("%s: unknown type %s" % (op["name"], v))
        binds = {k: DTYPES[v] for k, v in c.items()}
        terms = []
        for t in row["terms"]:
            if "DEDUCE-EXT" in t:
                rest = [x for x in t if x != "DEDUCE-EXT"]
                ded = ["EXT-" + x.replace("_", "-") for x in deduce(binds.values())]
                if not rest and not ded:
                    rest = ["PRO-FP" if FLOATS & set(binds.values()) else "PRO-INT"]
                t = rest + ded
            terms.append(t)
        yield binds, terms


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def term_c(t):
    pro = [PROFILES[x] for x in t if x in PROFILES]
    ext = [x for x in t if x not in PROFILES]
    for x in ext:
        if x not in EXTS:
            die("unknown profile/extension %s" % x)
    ext = sorted(set(EXTS[x] for x in ext), key=EXT_ORDER.index)
    return "{%s, %s}" % (" | ".join(sorted(set(pro))) or "0",
                         " | ".join("CTOSA_EXT_BIT(%s)" % e for e in ext) or "0")


def main(argv):
    shared = os.path.join(os.path.dirname(REPO), "shared")
    out = os.path.join(REPO, "src", "spec", "compliance_gen.h")
    i = 0
    while i < len(argv):
        if argv[i] == "--shared" and i + 1 < len(argv):
            shared = argv[i + 1]
            i += 2
        elif argv[i] == "-o" and i + 1 < len(argv):
            out = argv[i + 1]
            i += 2
        else:
            die("usage: gen_compliance.py [--shared DIR] [-o FILE]")
    xml_path = os.path.join(shared, XML_REL)
    tsv_path = os.path.join(shared, TSV_REL)
    for p in (xml_path, tsv_path):
        if not os.path.isfile(p):
            die("missing input %s" % p)
    ops, levels, enum_ext = parse_xml(xml_path)
    tsv_rows, sets = parse_tsv(tsv_path)
    by_name = {o["name"]: o for o in ops}
    n10 = sum(len(o["rows"]) for o in ops)
    if len(ops) != 75 or n10 != 389:
        die("expected 75 operators / 389 rows in the 1.0 XML, found %d / %d" % (len(ops), n10))

    for name, (syms, args) in NEW_OPS_11.items():
        by_name[name] = {"name": name, "syms": syms, "args": args, "rows": [], "version": 11}

    # Final rows: (binds, terms, version, mode, param) per op.
    final = {n: [] for n in by_name}
    for o in ops:
        for r in o["rows"]:
            if r["version"] != "1.0":
                die("%s: unexpected version_added %s" % (o["name"], r["version"]))
            binds = {k: DTYPES[v] for k, v in r["binds"].items()}
            final[o["name"]].append((binds, r["terms"], 10, r["mode"], r["param"]))
    stats = {"composite": 0, "skipped_ops": 0, "tsv": 0}
    for r in tsv_rows:
        stats["tsv"] += 1
        if r["op"] in OPS_11_WITHOUT_SCHEMA_VALUE:
            stats["skipped_ops"] += 1
            continue
        if r["op"] not in by_name:
            die("TSV names unknown operator %s" % r["op"])
        op = by_name[r["op"]]
        for binds, terms in expand_tsv_row(op, r, sets, stats):
            final[r["op"]].append((binds, terms, 11, r["mode"], 0))

    # Order operators by the ctosa op enum (common.h): 1.0 order of the XML
    # matches the enum 1..75; 1.1 ops follow in enum order.
    enum_order = [o["name"] for o in ops] + [
        "MATMUL_T_BLOCK_SCALED", "CAST_FROM_BLOCK_SCALED", "CAST_TO_BLOCK_SCALED", "DIM",
        "CONCAT_SHAPE", "ADD_SHAPE", "SUB_SHAPE", "MUL_SHAPE", "SLICE_SHAPE", "EXP2_SHAPE",
        "LOG2_CEIL_SHAPE", "LOG2_FLOOR_SHAPE", "MAX_SHAPE", "MIN_SHAPE", "MOD_SHAPE",
        "DIV_CEIL_SHAPE", "DIV_FLOOR_SHAPE", "ASSERT_EQUAL_SHAPE", "CONV2D_BLOCK_SCALED",
        "MAX_POOL2D_ADAPTIVE", "AVG_POOL2D_ADAPTIVE"]
    if sorted(enum_order) != sorted(by_name):
        die("operator set mismatch: %s" % sorted(set(enum_order) ^ set(by_name)))

    L = []
    w = L.append
    h = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    w("/* compliance_gen.h - GENERATED by tools/gen_compliance.py; do not edit.")
    w(" *")
    w(" * Inputs (paths relative to the shared directory):")
    w(" *   %s" % XML_REL)
    w(" *     sha256 %s" % h(xml_path))
    w(" *   %s" % TSV_REL)
    w(" *     sha256 %s" % h(tsv_path))
    w(" *   plus the 1.1-draft argument lists in the generator.")
    w(" *")
    # Identical rows (a set expansion repeating a row) are kept once.
    for n in final:
        seen, kept = set(), []
        for binds, terms, ver, mode, param in final[n]:
            key = (tuple(sorted(binds.items())), tuple(tuple(sorted(t)) for t in terms), ver)
            if key not in seen:
                seen.add(key)
                kept.append((binds, terms, ver, mode, param))
        final[n] = kept
    n11 = sum(1 for n in final for r in final[n] if r[2] == 11)
    w(" * %d operators; %d rows from TOSA 1.0; %d rows added in 1.1, from %d TSV lines" %
      (len(enum_order), n10, n11, stats["tsv"]))
    w(" * (type sets expanded, repeated rows kept once). Left out: %d set combinations" %
      stats["composite"])
    w(" * using the block-scaled composite type, and %d lines of operators that have" %
      stats["skipped_ops"])
    w(" * no Op value in the schema.")
    w(" * Included only by compliance.c. */")
    w("")
    w("#define SPEC_GEN_ROWS_10 %d" % n10)
    w("#define SPEC_GEN_ROWS_11 %d" % n11)
    w("")
    # levels
    w("static const spec_level_values spec_gen_levels[] = {")
    for lv in levels:
        vals = [lv[k] for k in LEVEL_ATTRS] + [str(SHAPE_LEN[lv["name"]])]
        w("    {%s, {%s}}," % (c_str(lv["name"]), ", ".join(vals)))
    w("};")
    w("")
    # enum extension rules
    w("/* Enum values that need an extension (spec <enumval extension=...>). */")
    w("static const struct { const char *enum_type, *value_name; uint32_t value; uint64_t ext; }")
    w("    spec_gen_enum_ext[] = {")
    for et, vn, vv, ext in enum_ext:
        w("    {%s, %s, %d, CTOSA_EXT_BIT(%s)}," % (c_str(et), c_str(vn), vv, EXTS[ext]))
    w("};")
    w("")
    limits, args_c, terms_c, rows_c, ops_c = [], [], [], [], []
    term_index = {}
    for name in enum_order:
        o = by_name[name]
        syms = o["syms"]
        if len(syms) > MAX_SYMS:
            die("%s: too many symbols" % name)
        first_arg = len(args_c)
        for a in o["args"]:
            first_limit = len(limits)
            for lim, expr in a["limits"]:
                limits.append("{%s, %s}" % (LIMITS[lim], c_str(expr)))
            ety = a["ety"]
            sym = syms.index(ety) if ety in syms else -1
            dt = "0"
            if sym < 0 and ety in DTYPES:
                dt = "CTOSA_DTYPE_" + DTYPES[ety]
            if a["kind"] == "shape":
                dt = "CTOSA_DTYPE_SHAPE"
            cat = {"input": "SPEC_ARG_INPUT", "output": "SPEC_ARG_OUTPUT",
                   "attribute": "SPEC_ARG_ATTR"}[a["cat"]]
            kind = {"tensor": "SPEC_KIND_TENSOR", "shape": "SPEC_KIND_SHAPE",
                    "list": "SPEC_KIND_LIST", "other": "SPEC_KIND_OTHER"}[a["kind"]]
            rk = a["rank"]
            ctc_p, ctc_x = "0", "0"
            if a["ctc"]:
                ctc_p = " | ".join(sorted(PROFILES[p] for p in a["ctc"][0]))
                ctc_x = " | ".join("CTOSA_EXT_BIT(%s)" % EXTS[x] for x in a["ctc"][1]) or "0"
            args_c.append("    {%s, %s, %s, %d, %s, %s, %d, %d, %s, %s, %s, %d, %d}, /* %s */" % (
                c_str(a["name"]), cat, kind, sym, dt, "true" if rk else "false",
                rk[0] if rk else 0, rk[1] if rk else 0, "true" if a["optional"] else "false",
                ctc_p, ctc_x, first_limit, len(limits) - first_limit, name))
        first_row = len(rows_c)
        for binds, terms, ver, mode, param in final[name]:
            for k in binds:
                if k not in syms:
                    die("%s: row binds %s" % (name, k))
            types = ["CTOSA_DTYPE_" + binds[s] if s in binds else "0" for s in syms]
            types += ["0"] * (MAX_SYMS - len(types))
            # Rows share identical term lists (most need just "PRO-INT" or
            # "PRO-FP"): each distinct list is stored once.
            key = tuple(term_c(t) for t in terms)
            first_term = term_index.get(key)
            if first_term is None:
                first_term = len(terms_c)
                term_index[key] = first_term
                terms_c.extend("    " + x + "," for x in key)
            rows_c.append("    {{%s}, %d, %d, %d, %d, %s}, /* %s */" % (
                ", ".join(types), ver, len(terms), first_term, param, c_str(mode), name))
        acc = syms.index("acc_t") if ("acc_t" in syms and any(
            a["name"] == "acc_type" for a in o["args"])) else -1
        sym_c = ", ".join(c_str(s) for s in syms) or "NULL"
        ops_c.append("    {CTOSA_OP_%s, %s, %d, %d, {%s}, %d, %d, %d, %d, %d}," % (
            name, c_str(name), o["version"], len(syms), sym_c, acc, first_arg,
            len(args_c) - first_arg, first_row, len(rows_c) - first_row))

    w("static const spec_level_limit spec_gen_limits[] = {")
    for x in limits:
        w("    " + x + ",")
    w("};")
    w("")
    w("/* name, category, kind, symbol, fixed dtype, has_rank, rank_min, rank_max,")
    w(" * optional, CTC profiles, CTC lifted by, first limit, limits */")
    w("static const spec_arg spec_gen_args[] = {")
    L.extend(args_c)
    w("};")
    w("")
    w("static const spec_term spec_gen_terms[] = {")
    L.extend(terms_c)
    w("};")
    w("")
    w("/* types per symbol, version, terms, first term, TABLE_SIZE, mode */")
    w("static const spec_row spec_gen_rows[] = {")
    L.extend(rows_c)
    w("};")
    w("")
    w("/* kind, name, version, symbols, acc symbol, args, rows */")
    w("static const spec_op_info spec_gen_ops[] = {")
    L.extend(ops_c)
    w("};")
    text = "\n".join(L) + "\n"
    if out == "-":
        sys.stdout.write(text)
    else:
        tmp = out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1:])

"""ctosa: ONNX -> TOSA partitioning and lowering, TOSA flatbuffers, reference
interpreter -- Python bindings of the ctosa C library.

    import ctosa, numpy as np
    spec = ctosa.Spec("TOSA-1.0+INT+int16")
    res = ctosa.lower("model.onnx", spec)           # partitions, fallback, report
    out = ctosa.run(res.partitions[0].graph, {"x": np.zeros((1, 8), np.float32)})

    g = ctosa.TosaGraph()                            # the builder
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "fp32", (1, 16)); b.add_input("x")
    b.add_const("w", np.ones((1, 16), np.float32))  # borrowed, not copied
    b.add_tensor("y", "fp32", (1, 16)); b.add_op("ADD", ["x", "w"], ["y"]); b.add_output("y")
    data = g.serialize()                             # bytes; g.write(path) writes atomically
    g2 = ctosa.read(path)                            # constants are numpy views of the mapping
    problems = ctosa.check(g, spec)                  # [] when conformant

See docs/python.md in the repository for the whole API.
"""
import collections
import json
import os
import re
import tempfile

from . import _ctosa
from ._ctosa import Block, DataView, Operator, Region, Tensor, TosaGraph

__version__ = "0.1.0"
__all__ = [
    "Spec", "TosaGraph", "Region", "Block", "Tensor", "Operator", "DataView", "CustomOps",
    "lower", "quantize", "QuantizeResult", "read", "run", "check", "Interpreter", "LowerResult", "Partition", "Fallback", "BoundaryTensor",
    "Violation", "CustomNode", "CustomInput", "Error", "UsageError", "SpecError", "FileError", "ParseError",
    "UnsupportedError", "LimitError", "OutOfMemoryError", "InvalidError", "InternalError",
    "OPERATORS", "DTYPES", "pack_int4", "unpack_int4", "Model", "ModelTensor", "verify", "VerifyResult",
]

# ------------------------------------------------------------------ errors


class Error(Exception):
    """A ctosa error. `message` is the C library's diagnostic (it names the
    file and the place: byte offset, operator, node, tensor); `code` is the
    ctosa_code value and `code_name` its name; `file` is the file the call
    was working on (None when not known); `offset`, `node` and `op_index`
    are taken from the message when it has them."""

    default_code = 8

    def __init__(self, message, code=None, file=None):
        super().__init__(message)
        self.message = message
        self.code = self.default_code if code is None else code
        self.file = file
        m = re.search(r": byte (\d+)", message)
        self.offset = int(m.group(1)) if m else None
        m = re.search(r"node '([^']*)'", message)
        self.node = m.group(1) if m else None
        m = re.search(r"op #(\d+)", message)
        self.op_index = int(m.group(1)) if m else None

    @property
    def code_name(self):
        return _CODE_NAMES.get(self.code, str(self.code))

    @property
    def lines(self):
        """The message split into lines (calls that report every problem
        put one per line)."""
        return self.message.splitlines()


class UsageError(Error):
    """A bad argument (ctosa_code USAGE)."""
    default_code = 1


class SpecError(UsageError):
    """A spec string or target name that does not parse."""


class FileError(Error):
    """A file could not be opened, read or written (IO)."""
    default_code = 2


class ParseError(Error):
    """Malformed input: a TOSA flatbuffer, ONNX model or JSON file (FORMAT)."""
    default_code = 3


class UnsupportedError(Error):
    """Valid input that ctosa does not handle (UNSUPPORTED)."""
    default_code = 4


class LimitError(Error):
    """A resource limit was hit (LIMIT)."""
    default_code = 5


class OutOfMemoryError(Error, MemoryError):
    """Allocation failed (NOMEM)."""
    default_code = 6


class InvalidError(Error):
    """The graph breaks the spec: ERROR_IF / REQUIRE at run time, or
    validation (INVALID)."""
    default_code = 7


class InternalError(Error):
    """A bug in ctosa (INTERNAL)."""
    default_code = 8


_CODE_NAMES = {0: "OK", 1: "USAGE", 2: "IO", 3: "FORMAT", 4: "UNSUPPORTED", 5: "LIMIT",
               6: "NOMEM", 7: "INVALID", 8: "INTERNAL"}
_ctosa._set_error_types({1: UsageError, 2: FileError, 3: ParseError, 4: UnsupportedError,
                         5: LimitError, 6: OutOfMemoryError, 7: InvalidError, 8: InternalError})

#: {operator name: (file value, attribute field names)}
OPERATORS = _ctosa.op_table()
#: {dtype: (file value, bits, host numpy dtype or None, host element size)}
DTYPES = _ctosa.dtype_table()

# -------------------------------------------------------------------- spec


class Spec:
    """A TOSA target: Spec("TOSA-1.0+INT+int16"), or Spec.from_target("ethos-u55-128").

    str(spec) and .canonical give the canonical string; .version is
    "1.0"/"1.1", .profiles e.g. ("INT",), .extensions e.g. ("int16",),
    .level "none"/"8K", .u55 a bool. A bad string raises SpecError with the
    C library's message (what was expected, the closest valid token)."""

    __slots__ = ("_info",)

    def __init__(self, text):
        if isinstance(text, Spec):
            self._info = text._info
            return
        if not isinstance(text, str):
            raise TypeError("Spec() takes a spec string such as 'TOSA-1.0+INT'")
        try:
            self._info = _ctosa.spec_parse(text)
        except UsageError as e:
            raise SpecError(e.message, code=e.code) from None

    @classmethod
    def from_target(cls, name):
        s = cls.__new__(cls)
        try:
            s._info = _ctosa.spec_from_target(name)
        except UsageError as e:
            raise SpecError(e.message, code=e.code) from None
        return s

    canonical = property(lambda self: self._info["canonical"])
    profiles = property(lambda self: tuple(self._info["profiles"]))
    extensions = property(lambda self: tuple(self._info["extensions"]))
    level = property(lambda self: self._info["level"])
    u55 = property(lambda self: self._info["u55"])

    @property
    def version(self):
        v = self._info["version"]
        return "%d.%d" % (v[0], v[1])

    @property
    def version_tuple(self):
        """(major, minor, patch, draft)"""
        return self._info["version"]

    def __str__(self):
        return self.canonical

    def __repr__(self):
        return "ctosa.Spec(%r)" % self.canonical

    def __eq__(self, other):
        return isinstance(other, Spec) and other.canonical == self.canonical

    def __hash__(self):
        return hash(self.canonical)


def _spec(spec):
    return spec if isinstance(spec, Spec) else Spec(spec)

# ------------------------------------------------------------------ graphs


def read(source, require_identifier=False):
    """Reads a TOSA flatbuffer: a path (str / os.PathLike) or a buffer
    (bytes, bytearray, memoryview, numpy array) holding the file. The file
    is mapped and verified completely; constant tensors' .data are
    read-only numpy views of the mapping (or of the buffer), which stay
    valid as long as any view or the graph is alive."""
    if isinstance(source, (str, os.PathLike)):
        return _ctosa.read(source, require_identifier)
    return _ctosa.read(source, require_identifier, "<memory>")


def _graph(graph):
    if isinstance(graph, TosaGraph):
        return graph
    if isinstance(graph, Partition):
        return graph.graph
    if isinstance(graph, (str, os.PathLike, bytes, bytearray, memoryview)):
        return read(graph)
    raise TypeError("expected a ctosa.TosaGraph, a Partition, a path or the bytes of a .tosa "
                    "file, not %s" % type(graph).__name__)


def pack_int4(values):
    """Packs int values in [-8, 7] into the INT4 file encoding (two per
    byte, element 2i in the low nibble); returns a uint8 array."""
    import numpy as np
    v = np.asarray(values).astype(np.int8, copy=False).ravel()
    if v.size and (v.min() < -8 or v.max() > 7):
        raise UsageError("pack_int4: values must be in [-8, 7]")
    if v.size % 2:
        v = np.concatenate([v, np.zeros(1, np.int8)])
    u = (v.view(np.uint8) & 0x0F)
    return (u[0::2] | (u[1::2] << 4)).astype(np.uint8)


def unpack_int4(packed, count):
    """Inverse of pack_int4: count int8 values."""
    import numpy as np
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty(p.size * 2, np.int8)
    lo, hi = (p & 0x0F).astype(np.int8), (p >> 4).astype(np.int8)
    out[0::2] = np.where(lo > 7, lo - 16, lo)
    out[1::2] = np.where(hi > 7, hi - 16, hi)
    return out[:count]

# -------------------------------------------------------------------- check

Violation = collections.namedtuple("Violation", "op_index op name message text")
Violation.__doc__ = ("One violation found by check(): op_index / op / name (the operator's "
                     "first output) when the line names an operator, else None; message is the "
                     "rest of the line; text the whole line as the C library wrote it.")
_VIOLATION = re.compile(r"^(?:.*?: )?op #(\d+) (\S+)(?: '([^']*)')?: (.*)$")


def check(graph, spec, max_problems=0):
    """Validates a graph (TosaGraph, Partition, path or bytes) against a
    spec: returns the list of Violation (empty when conformant). Files that
    do not parse raise ParseError; bad specs raise SpecError."""
    g = _graph(graph)
    text = _ctosa.validate(g, str(_spec(spec)), max_problems)
    if text is None:
        return []
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _VIOLATION.match(line)
        if m:
            out.append(Violation(int(m.group(1)), m.group(2), m.group(3), m.group(4), line))
        else:
            out.append(Violation(None, None, None, line, line))
    return out

# ---------------------------------------------------------------------- run


def _bf16_bits(a):
    import numpy as np
    f = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    # round to nearest even; NaN stays NaN
    r = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if np.any(nan):
        r = np.where(nan, np.uint16(0x7FC0), r)
    return r


def _to_host(arr, dtype, name):
    import numpy as np
    host = DTYPES[dtype][2]
    if host is None:
        raise UnsupportedError("input '%s': dtype %s has no host encoding" % (name, dtype))
    target = np.dtype(host)
    a = np.asarray(arr)
    if dtype == "bf16" and a.dtype.kind == "f":
        return _bf16_bits(a)
    if a.dtype == target:
        return np.ascontiguousarray(a)
    if dtype == "bool" and a.dtype.kind in "iu":
        return np.ascontiguousarray(a != 0)
    if not np.can_cast(a.dtype, target, casting="same_kind") and \
            not (a.dtype.kind in "iub" and target.kind in "iu"):
        raise UsageError("input '%s': a %s array cannot be passed as %s (expected numpy %s)"
                         % (name, a.dtype, dtype, target))
    return np.ascontiguousarray(a.astype(target))


CustomNode = collections.namedtuple("CustomNode", "name domain op_type opset attrs")
CustomNode.__doc__ = ("The ONNX node a custom operator's infer() sees: attrs is {name: value} "
                      "(int, float, bytes for strings, lists of those; None for tensors/graphs).")
CustomInput = collections.namedtuple("CustomInput", "dtype shape present value")
CustomInput.__doc__ = ("An input of a custom node at lowering time: TOSA dtype name, shape, "
                       "present (False for an omitted optional input), value: the constant's "
                       "bytes (dense little-endian, ONNX natural width) when known, else None.")


class CustomOps(_ctosa.CustomOps):
    """A custom-operator registry (ctosa/custom.h): C plugins
    (load_plugin), --custom-ops JSON (load_json / load_json_text), and
    operators written in Python (add). Pass it as custom_ops= to lower(),
    run() and Interpreter()."""

    def add(self, domain, op_type, infer, kernel=None, *, tosa_domain=None, tosa_operator=None,
            since_opset=0, until_opset=0):
        """Registers ONNX (domain, op_type) as one TOSA CUSTOM operator.

        infer(node: CustomNode, inputs: [CustomInput]) -> [(dtype, shape)] gives
        every output's TOSA dtype and static shape; raising refuses the node
        (it falls back with code custom_op_rejected and the exception's text).
        kernel(inputs: [ndarray], attrs) -> [array-like], optional, runs the
        operator in the interpreter: inputs in the host encoding, attrs the
        operator's implementation_attrs (the node's attributes as a dict when
        they are the default JSON, else bytes); each result is converted to
        the output's dtype and shape. Callbacks run with the GIL held (taken
        back while lowering/running) and must not use the graph being run."""
        import numpy as np

        def raw_infer(node, inputs, n_outputs):
            res = infer(CustomNode(**node), [CustomInput(*i) for i in inputs])
            res = list(res)
            if len(res) != n_outputs:
                raise ValueError("infer returned %d outputs, the node has %d" % (len(res), n_outputs))
            return res

        def raw_kernel(inputs, outputs, attrs):
            arrs = [np.frombuffer(b, DTYPES[dt][2]).reshape(shape) for dt, shape, b in inputs]
            try:
                a = json.loads(attrs.decode()) if attrs else {}
            except ValueError:
                a = attrs
            res = list(kernel(arrs, a))
            if len(res) != len(outputs):
                raise ValueError("kernel returned %d outputs, expected %d" % (len(res), len(outputs)))
            out = []
            for r, (dt, shape, nbytes) in zip(res, outputs):
                arr = np.asarray(r)
                if tuple(arr.shape) != tuple(shape):
                    raise ValueError("kernel output of shape %s, expected %s" % (arr.shape, tuple(shape)))
                out.append(np.ascontiguousarray(arr, dtype=DTYPES[dt][2]))
            return out

        self.register(domain, op_type, raw_infer, raw_kernel if kernel else None,
                      tosa_domain=tosa_domain, tosa_operator=tosa_operator,
                      since_opset=since_opset, until_opset=until_opset)
        return self


def _registry(plugins=(), custom_ops=None):
    """A CustomOps from a CustomOps, a JSON path, JSON text or a dict, plus
    plugin paths; None when nothing is given."""
    if custom_ops is None and not plugins:
        return None
    if isinstance(custom_ops, CustomOps):
        reg = custom_ops
    else:
        reg = CustomOps()
        if isinstance(custom_ops, (dict, list)):
            reg.load_json_text(json.dumps(custom_ops), "<custom_ops>")
        elif isinstance(custom_ops, str) and custom_ops.lstrip().startswith(("{", "[")):
            reg.load_json_text(custom_ops, "<custom_ops>")
        elif custom_ops is not None:
            reg.load_json(custom_ops)
    for p in plugins or ():
        reg.load_plugin(p)
    return reg


def _convert_inputs(declared, inputs):
    conv = []
    for name, arr in (inputs or {}).items():
        if name not in declared:
            raise UsageError("'%s' is not an input of the graph (inputs: %s)"
                             % (name, ", ".join(declared) or "none"))
        conv.append((name, _to_host(arr, declared[name], name)))
    missing = [n for n in declared if n not in (inputs or {})]
    if missing:
        raise UsageError("no value given for input(s) %s" % ", ".join(missing))
    return conv


def _outputs(outs):
    import numpy as np
    return {name: np.frombuffer(buf, dtype=DTYPES[dt][2]).reshape(shape)
            for name, dt, shape, buf in outs}


def run(graph, inputs=None, *, threads=0, max_memory=0, max_iterations=10_000_000,
        custom_ops=None, plugins=(), reference=False):
    """Runs a graph (TosaGraph, Partition, path or .tosa bytes) on the
    reference interpreter: {input name: array} -> {output name: ndarray}.
    Inputs are converted to the declared dtype's host encoding (bf16 and fp8
    are carried as uint16 / uint8 bits; a float array given for a bf16
    input is rounded to bf16). The GIL is released while the graph runs.
    One call plans and frees one interpreter; see Interpreter for
    repeated runs. max_iterations bounds each WHILE_LOOP (0 = unlimited).
    reference=True runs the plain loops instead of the fast kernels (to
    check the fast kernels on your own graph: the results must agree)."""
    g = _graph(graph)
    regions = g.regions
    if not regions or not regions[0].blocks:
        raise UsageError("the graph has no main region/block")
    main = regions[0].blocks[0]
    conv = _convert_inputs({n: main.tensor(n).dtype for n in main.inputs}, inputs)
    reg = _registry(plugins, custom_ops)
    return _outputs(_ctosa.run(g, conv, threads=threads, max_memory=max_memory, custom_ops=reg,
                               max_iterations=max_iterations, reference=reference))


class Interpreter:
    """A planned interpreter for repeated runs of one graph:

        it = ctosa.Interpreter(graph, threads=1)
        for x in batch:
            y = it.run({"input": x})["output"]

    Variables (EXT-VARIABLE) keep their values across runs. .inputs and
    .outputs list (name, dtype, shape). One Interpreter runs in one thread
    at a time (a concurrent run raises UsageError); the GIL is released
    while it runs. reference=True: the plain loops, as in run()."""

    def __init__(self, graph, *, threads=0, max_memory=0, max_iterations=10_000_000,
                 custom_ops=None, plugins=(), reference=False):
        self.graph = _graph(graph)
        self._reg = _registry(plugins, custom_ops)
        self._c = _ctosa.Interpreter(self.graph, threads=threads, max_memory=max_memory,
                                     custom_ops=self._reg, max_iterations=max_iterations,
                                     reference=reference)
        self.inputs = self._c.inputs
        self.outputs = self._c.outputs
        self._declared = {n: dt for n, dt, _ in self.inputs}

    def run(self, inputs):
        return _outputs(self._c.run(_convert_inputs(self._declared, inputs)))

# -------------------------------------------------------------------- lower

BoundaryTensor = collections.namedtuple("BoundaryTensor", "name dtype shape scale zero_point")
BoundaryTensor.__doc__ = ("A partition input or output: ONNX name, numpy dtype name, shape; "
                          "scale / zero_point for quantized tensors, else None.")
Fallback = collections.namedtuple("Fallback", "node op_type domain code reason input")
Fallback.__doc__ = ("A node left on the CPU: stable reason code (docs/errors.md), human "
                    "reason, and for needs_constant the input to bind.")


class Partition:
    """One delegated partition: .graph (read-only TosaGraph view), .tosa
    (the serialized flatbuffer, bytes), .inputs / .outputs (BoundaryTensor),
    .nodes (ONNX node names), .op_counts ({TOSA op: count}), .file (its
    file name in output_dir)."""

    def __init__(self, d, keep):
        # keep: what the result borrows (registry, temporary folder); no
        # reference to the LowerResult itself, so no cycle keeps a large
        # result alive until the cyclic GC runs
        self._keep = keep
        self.id = d["id"]
        self.file = d["file"]
        self.nodes = list(d["nodes"])
        self.inputs = [BoundaryTensor(**x) for x in d["inputs"]]
        self.outputs = [BoundaryTensor(**x) for x in d["outputs"]]
        self.op_counts = dict(d["op_counts"])
        self.graph = d["graph"]
        self._tosa = None

    @property
    def tosa(self):
        if self._tosa is None:
            self._tosa = self.graph.serialize()
        return self._tosa

    def run(self, inputs, **kw):
        return run(self.graph, inputs, **kw)

    def __repr__(self):
        return "<ctosa.Partition %d: %d nodes, %d inputs, %d outputs>" % (
            self.id, len(self.nodes), len(self.inputs), len(self.outputs))


class LowerResult:
    """What lower() returns: .partitions, .fallback, .report (dict, the
    content of <stem>.report.json), .report_json (its text), .custom_ops,
    .model, .spec, .nodes_total, .nodes_delegated, .output_dir."""

    def __init__(self, c, keep):
        self._c = c
        self._keep = keep  # registry and temporary folder the result borrows
        s = c.summary()
        self.model = s["model"]
        self.spec = s["spec"]
        self.nodes_total = s["nodes_total"]
        self.nodes_delegated = s["nodes_delegated"]
        self.partitions = [Partition(p, keep) for p in s["partitions"]]
        self.fallback = [Fallback(**f) for f in s["fallback"]]
        self.custom_ops = s["custom_ops"]
        self.report_json = s["report_json"]
        self.report = json.loads(self.report_json) if self.report_json else None
        self.output_dir = None

    def __repr__(self):
        return "<ctosa.LowerResult %s: %d/%d nodes delegated, %d partition(s), %d fallback>" % (
            self.spec, self.nodes_delegated, self.nodes_total, len(self.partitions),
            len(self.fallback))


def lower(model, spec, binds=None, shapes=None, plugins=(), custom_ops=None, output_dir=None,
          stem=None, partitioned_onnx=True, report=True, max_problems=0, max_memory=0,
          requant="rescale"):
    """Partitions an ONNX model (path, or the model's bytes) against spec
    and lowers the delegated partitions to TOSA.

    binds: {graph input: array or .npy/.pb path} freezes inputs to
    constants; shapes: {graph input: dims} fixes symbolic dimensions;
    plugins: custom-operator plugin paths; custom_ops: a CustomOps, a
    --custom-ops JSON path, JSON text or dict. With output_dir the files of
    `ctosa lower -o` are written too (<stem>.part<N>.tosa,
    <stem>.partitioned.onnx, <stem>.report.json). requant: "rescale"
    (default, one RESCALE per quantized output) or "ort" (emulate ONNX
    Runtime's float32 requantization rounding, for verification; see
    `ctosa lower --requant`). The GIL is released while lowering."""
    import numpy as np
    spec = _spec(spec)
    if requant not in ("rescale", "ort"):
        raise UsageError("requant must be 'rescale' or 'ort', got %r" % (requant,))
    tmp = tempfile.TemporaryDirectory(prefix="ctosa-py-")
    from_bytes = isinstance(model, (bytes, bytearray, memoryview))
    # bytes with no output folder are lowered from memory; with one, the
    # files are named after a model file, so the bytes go through one
    in_memory = from_bytes and output_dir is None
    if in_memory:
        path = "<model bytes>"
    elif from_bytes:
        path = os.path.join(tmp.name, (stem or "model") + ".onnx")
        with open(path, "wb") as f:
            f.write(model)
    else:
        path = os.fspath(model)
    bind_list = []
    for i, (name, value) in enumerate((binds or {}).items()):
        if isinstance(value, (str, os.PathLike)):
            bind_list.append((name, os.fspath(value)))
        else:
            p = os.path.join(tmp.name, "bind%d.npy" % i)
            np.save(p, np.asarray(value))
            bind_list.append((name, p))
    shape_list = [(name, tuple(int(d) for d in dims)) for name, dims in (shapes or {}).items()]
    reg = _registry(plugins, custom_ops)
    try:
        c = _ctosa.lower(path, str(spec), binds=bind_list, shapes=shape_list, custom_ops=reg,
                         output_dir=None if output_dir is None else os.fspath(output_dir), stem=stem,
                         partitioned_onnx=partitioned_onnx, report=report,
                         max_problems=max_problems, max_memory=max_memory,
                         requant_ort=requant == "ort", data=model if in_memory else None)
    except Error as e:
        if from_bytes and not in_memory:
            # the bytes went through a temporary file: name what the caller gave
            e.message = e.message.replace(path, "<model bytes>")
            e.args = (e.message,)
            if e.file == path:
                e.file = "<model bytes>"
        raise
    r = LowerResult(c, (reg, tmp))
    r.output_dir = output_dir
    return r


# ---------------------------------------------------------------- quantize

class QuantizeResult:
    """What quantize() returns: .qdq_path (the QDQ ONNX model written),
    .report_path and .report (the JSON report as a dict), .sqnr
    ({output: SQNR in dB against the float model on the calibration
    samples}), .float_nodes (nodes left in float, with the reason),
    .equalized_path (with equalize=True: the equalized float model, None
    when no pair was found)."""

    def __init__(self, d):
        import json
        self.qdq_path = d["qdq_path"]
        self.equalized_path = d.get("equalized_path")
        self.report_path = d["report_path"]
        self.report = json.loads(d["report"])
        self.sqnr = {o["name"]: o["sqnr_db"] for o in self.report["outputs"]}
        self.float_nodes = self.report["float_nodes"]

    def __repr__(self):
        return "<ctosa.QuantizeResult %s: %s>" % (
            self.qdq_path, ", ".join("%s %.2f dB" % kv for kv in self.sqnr.items()))


def _int16_arg(v):
    """quantize()'s int16 for the extension: a count, -1 (not given) or -2 (auto)."""
    if v is None:
        return -1
    if v == "auto":
        return -2
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UsageError("int16 must be 'auto', None or a tensor count, got %r" % (v,))
    return v


def quantize(model, calibration, output_dir, *, spec=None, target=None, activations="int8", method=None,
             percentile=None, bias_correction=True, range_search=False, int16=None, int16_budget=None,
             equalize=False, max_samples=0, stem=None):
    """Post-training quantization (`ctosa quantize`, docs/quantize.md):
    writes <output_dir>/<stem>.qdq.onnx and <stem>.quant.json.

    calibration: {graph input: array of samples stacked on axis 0, or a
    .npy path, or a folder of .npy files (one sample each)}. spec / target:
    the TOSA target (default TOSA-1.0+INT, +int16 for int16 activations).
    activations: "int8" or "int16". method: "mse" (default for int8),
    "minmax" (default for int16) or "percentile" (with percentile, default
    99.99). bias_correction: "float" (default, also True), "sequential" or
    "off" (also False). range_search: adjust each activation range to lower
    the error at the model's outputs on the calibration samples (slower).
    int16: mixed precision in an int8 model. None: the command line's
    default; "auto" (`--int16 auto`): tensors get int16 activations by
    output-error gain per MAC run twice, within int16_budget percent of the
    model's MACs (default CTOSA_QUANT_INT16_BUDGET, 25); N (`--int16 N`):
    the N tensors whose int16 lowers the output error most, 0 for pure
    int8. int16_budget=P (`--int16-budget P`): the budget mode with P
    percent (with int16=N, at most N tensors). result.report["int16"] names
    the tensors and the MACs they cost. equalize: cross-layer equalization
    of Conv -> (Relu) -> Conv pairs first (`--equalize`; the equalized float
    model is written too, result.equalized_path). The GIL is released while
    quantizing."""
    import numpy as np
    if activations not in ("int8", "int16"):
        raise UsageError("activations must be 'int8' or 'int16', got %r" % (activations,))
    if bias_correction is True:
        bias_correction = "float"
    elif bias_correction is False:
        bias_correction = "off"
    tmp = tempfile.TemporaryDirectory(prefix="ctosa-py-")
    with tmp:
        cal = []
        for i, (name, value) in enumerate(calibration.items()):
            if isinstance(value, (str, os.PathLike)):
                cal.append((name, os.fspath(value)))
            else:
                p = os.path.join(tmp.name, "calibration%d.npy" % i)
                np.save(p, np.ascontiguousarray(value, dtype=np.float32))
                cal.append((name, p))
        d = _ctosa.quantize(os.fspath(model), os.fspath(output_dir), cal,
                            spec=None if spec is None else str(spec), target=target,
                            activation_bits=16 if activations == "int16" else 8, method=method,
                            percentile=float(percentile or 0), bias_correction=bias_correction,
                            max_samples=int(max_samples), stem=stem, range_search=bool(range_search),
                            int16=_int16_arg(int16), equalize=bool(equalize),
                            int16_budget=float(int16_budget or 0))
    return QuantizeResult(d)


# ------------------------------------------------------- partitioned models

ModelTensor = collections.namedtuple("ModelTensor", "name dtype shape scale zero_point")
ModelTensor.__doc__ = """An input or output of a partitioned model: numpy dtype name, shape,
and the report's scale / zero point (None when not quantized)."""

# numpy dtypes of the runtime's dtype names (bfloat16: its bits)
_RT_NP = {"bfloat16": "uint16"}


class Model:
    """A partitioned model run end to end (docs/runtime.md): the
    <stem>.partitioned.onnx that `ctosa lower` (or lower(output_dir=...))
    wrote, its .tosa partitions and report beside it. Partitions run on the
    interpreter, CPU nodes on the host executor; a CPU node that no TOSA
    graph can express raises UnsupportedError here, naming it.

        m = ctosa.Model("out/model.partitioned.onnx")
        y = m.run({"x": x})["y"]          # arrays with the model's ONNX types

    Inputs are converted to the declared dtype when every value fits (uint8
    inputs take uint8 arrays). The GIL is released while the model runs.
    reference=True runs the partitions on the interpreter's plain loops."""

    def __init__(self, path, *, plugins=(), custom_ops=None, threads=0, max_memory=0,
                 max_iterations=10_000_000, report=None, reference=False):
        self._reg = _registry(plugins, custom_ops)
        self.path = os.fspath(path)
        self._rt = _ctosa.Runtime(self.path, threads=threads, max_memory=max_memory,
                                  max_iterations=max_iterations, custom_ops=self._reg,
                                  report=None if report is None else os.fspath(report),
                                  reference=reference)

    @staticmethod
    def _tensors(lst):
        return [ModelTensor(n, d, tuple(s), q[0] if q else None, q[1] if q else None) for n, d, s, q in lst]

    @property
    def inputs(self):
        return self._tensors(self._rt.inputs)

    @property
    def outputs(self):
        return self._tensors(self._rt.outputs)

    @property
    def steps(self):
        """[(is_partition, name, op_type, tosa_ops)] in execution order."""
        return self._rt.steps

    def run(self, inputs):
        """{input name: array} -> {output name: ndarray}."""
        import numpy as np
        declared = {t.name: t for t in self.inputs}
        given = dict(inputs or {})
        for name in given:
            if name not in declared:
                raise UsageError("'%s' is not an input of the model (inputs: %s)"
                                 % (name, ", ".join(declared) or "none"))
        missing = [n for n in declared if n not in given]
        if missing:
            raise UsageError("no value given for input(s) %s" % ", ".join(missing))
        feed = []
        for name, t in declared.items():
            want = np.dtype(_RT_NP.get(t.dtype, t.dtype))
            a = np.asarray(given[name])
            if a.dtype != want:
                c = a.astype(want)
                if a.dtype.kind in "iub" and not np.array_equal(c.astype(a.dtype), a):
                    raise UsageError("input '%s': values of %s do not fit %s" % (name, a.dtype, t.dtype))
                if a.dtype.kind == "f" and want.kind != "f":
                    raise UsageError("input '%s': expected %s, got %s" % (name, t.dtype, a.dtype))
                a = c
            feed.append((name, t.dtype, tuple(int(d) for d in a.shape), np.ascontiguousarray(a)))
        out = self._rt.run(feed)
        return {n: np.frombuffer(buf, dtype=_RT_NP.get(d, d)).reshape(shape) for n, d, shape, buf in out}

    def __repr__(self):
        return "<ctosa.Model %s: %d steps>" % (self.path, len(self.steps))


VerifyResult = collections.namedtuple("VerifyResult", "passed outputs lowered model")
VerifyResult.__doc__ = """passed: every compared output within tolerance; outputs: one dict per
output (name, kind, count, max_abs, rel, within, top1, topk, rows, pass,
why); lowered: the LowerResult; model: the Model that ran."""


def verify(model, spec, inputs, expected, *, output_dir=None, rtol=1e-4, max_steps=3, step_fraction=0.99,
           top_k=5, min_topk=1.0, plugins=(), custom_ops=None, threads=0):
    """`ctosa verify` in Python: lowers model under spec (into output_dir,
    a temporary folder when None), runs the partitioned model on inputs and
    compares each output named in expected ({name: array}, e.g. ONNX
    Runtime's results): float error relative to the output's magnitude
    (rtol), quantized outputs in quantization steps (step_fraction of the
    elements within max_steps), integers exactly, top-k agreement for
    [N, C] outputs. Returns a VerifyResult; raises on bad input."""
    import numpy as np
    reg = _registry(plugins, custom_ops)
    tmp = None
    if output_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ctosa-verify-")
        output_dir = tmp.name
    stem = "model" if isinstance(model, (bytes, bytearray, memoryview)) else \
        re.sub(r"\.onnx$", "", os.path.basename(os.fspath(model))) or "model"
    res = lower(model, spec, custom_ops=reg, output_dir=output_dir, stem=stem)
    m = Model(os.path.join(os.fspath(output_dir), stem + ".partitioned.onnx"), custom_ops=reg, threads=threads)
    m._tmp = tmp  # the files live as long as the Model
    outs = m.run(inputs)
    info = {t.name: t for t in m.outputs}
    results = []
    for name, exp in expected.items():
        if name not in outs:
            raise UsageError("'%s' is not an output of the model (outputs: %s)" % (name, ", ".join(outs)))
        a, t = np.ascontiguousarray(outs[name]), info[name]
        x = np.ascontiguousarray(np.asarray(exp))
        q = None if t.scale is None else (float(t.scale), int(t.zero_point))
        results.append(_ctosa.verify_compare(name, t.dtype, a.shape, a, q, x.dtype.kind, x.dtype.itemsize,
                                             x.dtype.name, x.shape, x, float(rtol), float(max_steps),
                                             float(step_fraction), int(top_k), float(min_topk)))
    return VerifyResult(all(r["pass"] for r in results), results, res, m)

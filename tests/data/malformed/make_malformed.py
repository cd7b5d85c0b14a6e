#!/usr/bin/python3
"""Regenerates the malformed-input corpus in this folder (tosa/, onnx/,
npy/, pb/, spec/, json/) from small valid inputs of the repository.

Usage: make_malformed.py CTOSA_BIN
Every candidate is run through the CLI command it is meant for; candidates
the CLI does not refuse with exit 2 are dropped (they are not malformed),
and a signal or any other exit aborts the script (a bug to fix first). The
surviving cases go to index.tsv: id, command template ({F} = the file, {O}
= a fresh output folder, {M} = tests/data/malformed), expected exit code,
and key words of the message ('|'-separated, all must appear), taken from
the first error line: the file name plus the leading words of the reason.
tests/cli_malformed.sh replays the index.
"""
import os, random, re, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
ctosa = os.path.abspath(sys.argv[1])
rnd = random.Random(20261129)

cases = []  # (id, bytes-or-None, command template)

def add(rel, data, cmd):
    cases.append((rel, data, cmd))

# ------------------------------------------------------------------ TOSA
small = open(os.path.join(ROOT, 'tests/data/tosa/small.tosa'), 'rb').read()
abs_tosa = open(os.path.join(HERE, 'abs_f32.tosa'), 'rb').read()
for n in (0, 1, 3, 4, 7, 8, 12, 16, 24, 40, 100, 300, 600, 900, len(small) - 1):
    add('tosa/small_trunc_%04d.tosa' % n, small[:n], 'dump {F}')
for n in (20, 64, 200, 400):
    add('tosa/abs_trunc_%04d.tosa' % n, abs_tosa[:n], 'check {F} --spec TOSA-1.0+FP')
def patch(buf, off, val):
    b = bytearray(buf); b[off:off + 4] = struct.pack('<I', val & 0xffffffff); return bytes(b)
add('tosa/root_past_end.tosa', patch(small, 0, 0x7ffffff0), 'dump {F}')
add('tosa/root_zero.tosa', patch(small, 0, 0), 'dump {F}')
add('tosa/root_unaligned.tosa', patch(small, 0, 3), 'dump {F}')
# Random 32-bit overwrites at 4-aligned places, kept when refused.
for k in range(40):
    off = rnd.randrange(0, len(small) - 4) & ~3
    val = rnd.choice([0xffffffff, 0x80000000, 0x7fffffff, 0xfffffff0, 0x10000, 0xffff, 3])
    add('tosa/small_w32_%02d_at%04d.tosa' % (k, off), patch(small, off, val), 'dump {F}')
for k in range(12):
    off = rnd.randrange(0, len(abs_tosa) - 4) & ~3
    val = rnd.choice([0xffffffff, 0x80000000, 0x7fffffff, 0x1000, 0xffff])
    add('tosa/abs_w32_%02d_at%04d.tosa' % (k, off), patch(abs_tosa, off, val),
        'run {F} --input x={M}/x_f32_3x4.npy -o {O} -q')
add('tosa/text.tosa', b'this is not a flatbuffer\n' * 4, 'info {F}')
add('tosa/v080.tosa', open(os.path.join(ROOT, 'tests/data/tosa/v080.tosa'), 'rb').read(), 'dump {F}')
add('tosa/oldnum_yield.tosa', open(os.path.join(ROOT, 'tests/data/tosa/oldnum_yield.tosa'), 'rb').read(),
    'check {F} --spec TOSA-1.1+INT+FP')

# ------------------------------------------------------------------ ONNX
absm = open(os.path.join(ROOT, 'tests/data/lower/ewise/abs_f32/model.onnx'), 'rb').read()
for n in (1, 2, 5, 10, 20, 40, 60, 80, len(absm) - 1):
    add('onnx/abs_trunc_%03d.onnx' % n, absm[:n], 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
def varint(v):
    out = b''
    while True:
        b = v & 0x7f; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])
add('onnx/varint_11_bytes.onnx', b'\x08' + b'\xff' * 10 + b'\x01', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/wire_type_7.onnx', b'\x0f\x01', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/field_zero.onnx', b'\x00\x01', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/len_past_end.onnx', b'\x3a' + varint(1 << 20) + b'abc', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/graph_bad_wire.onnx', b'\x08\x08\x39' + b'\x00' * 8, 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/empty.onnx', b'', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
add('onnx/text.onnx', b'ir_version: 8\ngraph { }\n', 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
for k in range(14):
    b = bytearray(absm)
    off = rnd.randrange(0, len(b))
    b[off] = rnd.choice([0xff, 0x80, 0x7f, 0x00, 0x0f, 0x1a])
    add('onnx/abs_byte_%02d_at%03d.onnx' % (k, off), bytes(b), 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
try:
    import onnx
    from onnx import helper, TensorProto
    def model(nodes, inits, name):
        g = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
        m.ir_version = 8
        add('onnx/%s.onnx' % name, m.SerializeToString(), 'lower {F} --spec TOSA-1.0+FP -o {O} -q')
    add_node = [helper.make_node('Add', ['x', 'w'], ['y'])]
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data'); t.raw_data = b'\0' * 5
    model(add_node, [t], 'raw_data_wrong_size')
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data'); t.raw_data = b'\0' * 8
    t.dims[:] = [-3]
    model(add_node, [t], 'negative_dim')
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data'); t.raw_data = b'\0' * 8
    t.dims[:] = [1 << 40, 1 << 40]
    model(add_node, [t], 'dims_overflow')
    for loc, nm in (('/etc/passwd', 'ext_absolute'), ('../../../etc/passwd', 'ext_dotdot'),
                    ('missing.bin', 'ext_missing'), ('', 'ext_empty_location')):
        t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data')
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add(); e.key = 'location'; e.value = loc
        model(add_node, [t], nm)
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data')
    t.data_location = TensorProto.EXTERNAL
    for k, v in (('location', 'ext_weights.bin'), ('offset', '4096'), ('length', '8')):
        e = t.external_data.add(); e.key = k; e.value = v
    model(add_node, [t], 'ext_offset_past_end')
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data')
    t.data_location = TensorProto.EXTERNAL
    for k, v in (('location', 'ext_weights.bin'), ('offset', '-1')):
        e = t.external_data.add(); e.key = k; e.value = v
    model(add_node, [t], 'ext_offset_negative')
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0]); t.ClearField('float_data')
    t.float_data[:] = [1.0]
    model(add_node, [t], 'typed_too_few')
    t = helper.make_tensor('w', TensorProto.FLOAT, [2], [1.0, 2.0])
    t.data_type = 99
    model(add_node, [t], 'unknown_dtype')
    # Deeply nested If subgraphs beyond the depth limit.
    inner = helper.make_graph([helper.make_node('Identity', ['x'], ['y'])], 'b', [],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2])])
    for i in range(300):
        inner = helper.make_graph([helper.make_node('If', ['c'], ['y'], then_branch=inner, else_branch=inner)
                                   if False else helper.make_node('If', ['c'], ['y'], then_branch=inner)],
                                  'b%d' % i, [], [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2])])
    model([helper.make_node('If', ['c'], ['y'], then_branch=inner)], [], 'nesting_too_deep')
except ImportError:
    print('onnx python package missing: ONNX builder cases skipped', file=sys.stderr)

# ------------------------------------------------------------------ .npy
def npy(header, data=b'', magic=b'\x93NUMPY', ver=b'\x01\x00', hlen=None):
    h = header.encode('latin1')
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    h = h + b' ' * pad + b'\n'
    n = len(h) if hlen is None else hlen
    return magic + ver + struct.pack('<H', n) + h + data
good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"
open(os.path.join(HERE, 'x_f32_3x4.npy'), 'wb').write(npy(good, b'\0' * 48))
run_npy = 'run {M}/abs_f32.tosa --input x={F} -o {O} -q'
add('npy/bad_magic.npy', npy(good, b'\0' * 48, magic=b'\x93NUMPX'), run_npy)
add('npy/bad_version.npy', npy(good, b'\0' * 48, ver=b'\x09\x00'), run_npy)
add('npy/header_past_end.npy', npy(good, b'', hlen=60000), run_npy)
add('npy/short_data.npy', npy(good, b'\0' * 47), run_npy)
add('npy/fortran.npy', npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", b'\0' * 48), run_npy)
add('npy/object.npy', npy("{'descr': '|O', 'fortran_order': False, 'shape': (3, 4), }", b'\0' * 96), run_npy)
add('npy/wrong_shape.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", b'\0' * 48), run_npy)
add('npy/negative_dim.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }", b'\0' * 48), run_npy)
add('npy/shape_overflow.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }"), run_npy)
add('npy/no_descr.npy', npy("{'fortran_order': False, 'shape': (3, 4), }", b'\0' * 48), run_npy)
add('npy/not_dict.npy', npy("[1, 2, 3]", b'\0' * 48), run_npy)
add('npy/unterminated.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4", b'\0' * 48), run_npy)
add('npy/bad_descr.npy', npy("{'descr': '<q7', 'fortran_order': False, 'shape': (3, 4), }", b'\0' * 48), run_npy)
add('npy/empty.npy', b'', run_npy)
add('npy/magic_only.npy', b'\x93NUMPY', run_npy)
add('npy/rank_17.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ('1, ' * 17), b'\0' * 4), run_npy)
# A valid input that an output would overwrite (refused before running).
add('npy/overwrite_input.npy', npy(good, b'\0' * 48), 'run {M}/abs_f32.tosa --input x={F} --output y={F} -o {O} -q')
add('npy/int_to_f32.npy', npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }", b'\0' * 96), run_npy)

# ------------------------------------------------------------------ TensorProto .pb
run_pb = 'run {M}/abs_f32.tosa --input x={F} -o {O} -q'
def pbf(field, wire, payload):
    return varint(field << 3 | wire) + payload
def ld(field, b):
    return pbf(field, 2, varint(len(b)) + b)
dims = pbf(1, 0, varint(3)) + pbf(1, 0, varint(4))
dt = pbf(2, 0, varint(1))
add('pb/raw_short.pb', dims + dt + ld(9, b'\0' * 47), run_pb)
add('pb/truncated.pb', (dims + dt + ld(9, b'\0' * 48))[:20], run_pb)
add('pb/bad_wire.pb', dims + pbf(2, 5, b'\1\0\0\0') + ld(9, b'\0' * 48), run_pb)
add('pb/typed_short.pb', dims + dt + ld(4, b'\0' * 40), run_pb)
add('pb/dtype_string.pb', dims + pbf(2, 0, varint(8)), run_pb)
add('pb/dtype_unknown.pb', dims + pbf(2, 0, varint(77)) + ld(9, b'\0' * 48), run_pb)
add('pb/neg_dim.pb', pbf(1, 0, varint((1 << 64) - 3)) + pbf(1, 0, varint(4)) + dt + ld(9, b'\0' * 48), run_pb)
add('pb/ext_escape.pb', dims + dt + ld(13, ld(1, b'location') + ld(2, b'../../x.bin')) + pbf(14, 0, varint(1)), run_pb)
add('pb/ext_absolute.pb', dims + dt + ld(13, ld(1, b'location') + ld(2, b'/etc/passwd')) + pbf(14, 0, varint(1)), run_pb)
add('pb/empty_len.pb', b'\x4a', run_pb)
add('pb/wrong_shape.pb', pbf(1, 0, varint(12)) + dt + ld(9, b'\0' * 48), run_pb)

# ------------------------------------------------------------------ spec strings
specs = ['', 'TOSA', 'TOSA-', 'TOSA-1', 'TOSA-1.0', 'TOSA-9.0+INT', 'TOSA-0.80+INT', 'TOSA-1.0+',
         'TOSA-1.0++INT', 'TOSA-1.0+INT+INT', 'TOSA-1.0+int', 'TOSA-1.0+BOGUS', 'TOSA-1.0+INT+mx',
         'TOSA-1.0+INT+16k', 'TOSA-1.0+INT+int16+int16', 'TOSA-1.x+INT', 'TOSA-1.0.0.0+INT',
         'tosa-1.0+INT ', ' TOSA-1.0+INT', 'TOSA-1.0+INT+' + 'x' * 300, 'TOSA-1.0+FP+EXT-BF16',
         'TOSA-99999999999999999999.0+INT']
for i, s in enumerate(specs):
    add('spec/spec_%02d.txt' % i, s.encode(), 'spec "$(cat {F})"')

# ------------------------------------------------------------------ write, run, index
tmp = tempfile.mkdtemp()
rows = []
for rel, data, cmd in cases:
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, 'wb').write(data)
    out = tempfile.mkdtemp(dir=tmp)
    shcmd = '"%s" %s' % (ctosa, cmd.replace('{F}', path).replace('{O}', out).replace('{M}', HERE))
    p = subprocess.run(['bash', '-c', shcmd], capture_output=True)
    if p.returncode < 0 or p.returncode > 2:
        sys.exit('%s: %s ended with %d\n%s' % (rel, cmd, p.returncode, p.stderr.decode(errors='replace')))
    if p.returncode != 2:
        os.remove(path)
        continue
    msg = p.stderr.decode(errors='replace').strip().splitlines()
    line = msg[0] if msg else ''
    keys = []
    base = os.path.basename(path)
    if base in line and not rel.startswith('spec/'):
        keys.append(base)
    # The reason: the text after the file name / "byte N:" (quoted names
    # dropped); key words are its first two significant words and the first
    # two of its last ': '-separated segment (the innermost cause).
    reason = re.split(r'(?:byte \d+: |%s: )' % re.escape(base), line)[-1]
    reason = re.sub(r"'[^']*'", ' ', re.sub(r'^ctosa \w+: ', '', reason))
    reason = re.sub(r'\S*/\S*', ' ', reason)  # paths depend on the checkout
    stop = {'the', 'than', 'has', 'does', 'with', 'and', 'for', 'from', 'was', 'are', 'did',
            'you', 'mean', 'ctosa', 'its', 'but', 'this', 'that', 'file'}
    def sig(text):
        return [w for w in re.findall(r"[A-Za-z][A-Za-z_-]{2,}", text) if w.lower() not in stop]
    for w in sig(reason)[:2] + sig(reason.split(': ')[-1])[:2]:
        if w not in keys:
            keys.append(w)
    rows.append((rel, cmd, 2, '|'.join(keys)))
shutil.rmtree(tmp)
with open(os.path.join(HERE, 'index.tsv'), 'w') as f:
    f.write('# file\tcommand ({F} file, {O} fresh output folder, {M} this folder)\texit\tkey words (all must appear)\n')
    for r in rows:
        f.write('%s\t%s\t%d\t%s\n' % r)
print('%d cases of %d candidates' % (len(rows), len(cases)))

"""The GIL is released around lowering, serialization, reading and
interpretation: a Python thread keeps running while a long C call runs in
another thread. The main thread spins and notes the times at which it ran;
had the C call kept the GIL, the main thread could not run at all inside
the call. Counting its runs inside the call (not timing its longest
pause) keeps the check independent of how loaded the machine is."""
import threading
import time

import numpy as np
import pytest

import ctosa
from conftest import model_path


def main_runs_during(fn, repeats=2):
    """Runs fn() `repeats` times in a worker; returns (shortest call
    seconds, how many times the main thread ran Python code in the middle
    80% of a call, sampled at most once per 0.2 ms)."""
    calls = []

    def worker():
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            calls.append((t0, time.perf_counter()))

    t = threading.Thread(target=worker)
    seen = []
    last = 0.0
    t.start()
    while t.is_alive():
        now = time.perf_counter()
        if now - last > 0.0002:
            seen.append(now)
            last = now
    t.join()
    inside = sum(1 for a, b in calls for s in seen if a + 0.1 * (b - a) < s < b - 0.1 * (b - a))
    return min(b - a for a, b in calls), inside


def assert_runs_concurrently(fn, min_call=0.005, attempts=3):
    seen = []
    for _ in range(attempts):
        call, inside = main_runs_during(fn)
        seen.append((round(call, 3), inside))
        assert call >= min_call, "the call is too short to tell (%.3f s)" % call
        if inside > 0:
            return
    pytest.fail("the main thread never ran while the C call ran: (call s, main thread runs) = %s" % seen)


def chain_graph(n_ops=16, shape=(2048, 2048)):
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("t0", "fp32", shape)
    b.add_input("t0")
    for i in range(n_ops):
        b.add_tensor("t%d" % (i + 1), "fp32", shape)
        b.add_op("ADD", ["t%d" % i, "t%d" % i], ["t%d" % (i + 1)])
    b.add_output("t%d" % n_ops)
    return g


def test_run_releases_the_gil():
    g = chain_graph()
    x = np.ones((2048, 2048), np.float32)
    out = ctosa.run(g, {"t0": x}, threads=1)
    assert out["t16"][0, 0] == 65536.0
    assert_runs_concurrently(lambda: ctosa.run(g, {"t0": x}, threads=1))


def test_serialize_and_write_release_the_gil(tmp_path):
    w = np.ones(192 << 20, np.int8)
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_const("w", w)
    b.add_output("w")
    assert_runs_concurrently(lambda: g.serialize())
    p = tmp_path / "big.tosa"
    assert_runs_concurrently(lambda: g.write(p))
    # (reading maps and verifies without touching the constants: too quick
    # to time; it releases the GIL the same way)
    assert ctosa.read(p).regions[0].blocks[0].tensor("w").nbytes == w.nbytes


def test_lower_releases_the_gil():
    model = model_path("tests", "models", "mobilenet_v2_x0_25_qnnpack", "model.onnx")
    assert_runs_concurrently(lambda: ctosa.lower(model, "TOSA-1.0+INT"))


def test_two_lowerings_in_threads_give_the_same_result():
    model = model_path("tests", "models", "mobilenet_v2_x0_25_op13", "model.onnx")
    results = [None] * 4

    def work(i):
        results[i] = ctosa.lower(model, "TOSA-1.0+FP")

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    first = results[0].partitions[0].tosa
    assert all(r.partitions[0].tosa == first for r in results)
    assert all(r.report == results[0].report for r in results)

#!/usr/bin/python3
"""QDQ models with operators the Ethos-U55 subset (`+u55`) refuses, for
tests/test_quant_u55.c. Each is integer in / integer out:
  gather.onnx      DQ -> Gather(axis 1, constant indices) -> Q  (GATHER)
  maxpool_s4.onnx  DQ -> MaxPool 4x4 stride 4 -> Q              (stride > 3)
  chain.onnx       Conv -> Relu -> MaxPool 4x4 s4 -> Conv (QDQ groups): the
                   pool stays on the CPU under u55, the convolutions are
                   delegated in two partitions
Deterministic. Run: /usr/bin/python3 tests/data/lower/quant_u55/make_models.py
"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(55)


class G:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def c(self, arr):
        self.k += 1
        nm = "c%d" % self.k
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def n(self, op, ins, name=None, **kw):
        self.k += 1
        out = "t%d" % self.k
        self.nodes.append(helper.make_node(op, ins, [out], name=name or "%s_%d" % (op, self.k), **kw))
        return out

    def dq(self, x, s, zp):
        return self.n("DequantizeLinear", [x, self.c(np.array(s, np.float32)), self.c(np.array(zp, np.int8))])

    def q(self, x, s, zp):
        return self.n("QuantizeLinear", [x, self.c(np.array(s, np.float32)), self.c(np.array(zp, np.int8))])

    def conv(self, x, cin, cout, name):
        w = self.n("DequantizeLinear", [self.c(rng.integers(-127, 128, (cout, cin, 3, 3)).astype(np.int8)),
                                        self.c(np.array(0.01, np.float32)), self.c(np.array(0, np.int8))])
        b = self.n("DequantizeLinear", [self.c(rng.integers(-100, 100, cout).astype(np.int32)),
                                        self.c(np.array(0.05 * 0.01, np.float32)), self.c(np.array(0, np.int32))])
        return self.n("Conv", [x, w, b], name=name, pads=[1, 1, 1, 1])

    def save(self, fname, xshape, y, yshape):
        g = helper.make_graph(self.nodes, fname, [helper.make_tensor_value_info("x", TensorProto.INT8, xshape)],
                              [helper.make_tensor_value_info(y, TensorProto.INT8, yshape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-u55-gen")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, os.path.join(OUT, fname + ".onnx"))


g = G()
t = g.dq("x", 0.05, 3)
t = g.n("Gather", [t, g.c(np.array([2, 0, 1], np.int64))], name="gather", axis=1)
g.save("gather", [1, 4, 5], g.q(t, 0.05, 3), [1, 3, 5])

g = G()
t = g.dq("x", 0.05, 3)
t = g.n("MaxPool", [t], name="pool", kernel_shape=[4, 4], strides=[4, 4])
g.save("maxpool_s4", [1, 2, 16, 16], g.q(t, 0.05, 3), [1, 2, 4, 4])

g = G()
t = g.dq("x", 0.05, 3)
t = g.conv(t, 2, 4, "conv1")
t = g.n("Relu", [t], name="relu1")
t = g.q(t, 0.04, -128)
t = g.dq(t, 0.04, -128)
t = g.n("MaxPool", [t], name="pool", kernel_shape=[4, 4], strides=[4, 4])
t = g.q(t, 0.04, -128)
t = g.dq(t, 0.04, -128)
t = g.conv(t, 4, 3, "conv2")
g.save("chain", [1, 2, 16, 16], g.q(t, 0.1, 0), [1, 3, 4, 4])

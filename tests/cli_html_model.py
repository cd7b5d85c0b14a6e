#!/usr/bin/env python3
"""cli_html_model.py - writes a synthetic ONNX model with about N nodes for
tests/cli_html.sh (the 5,000-node case of the HTML report).

    cli_html_model.py OUT.onnx [N]

Blocks of Add -> Relu -> Mul -> Sigmoid -> Add(residual) on a [1, 16] float
tensor, each with its own constants; every 40th block ends in a node with
no TOSA lowering (a custom-domain op, so it falls back with a stable code),
which splits the model into many partitions. Needs python3-onnx."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    n_target = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    nodes, inits, infos = [], [], []
    x = "x"
    b = 0
    rng = np.random.default_rng(7)
    while len(nodes) < n_target - 6:
        c = "c%d" % b
        d = "d%d" % b
        inits.append(numpy_helper.from_array(rng.standard_normal((1, 16)).astype(np.float32), c))
        inits.append(numpy_helper.from_array(rng.standard_normal((1, 16)).astype(np.float32), d))
        p = "b%d_" % b
        nodes += [
            helper.make_node("Add", [x, c], [p + "add"], name=p + "add"),
            helper.make_node("Relu", [p + "add"], [p + "relu"], name=p + "relu"),
            helper.make_node("Mul", [p + "relu", d], [p + "mul"], name=p + "mul"),
            helper.make_node("Sigmoid", [p + "mul"], [p + "sig"], name=p + "sig"),
            helper.make_node("Add", [p + "sig", x], [p + "res"], name=p + "res"),
        ]
        x = p + "res"
        if b % 40 == 39:
            nodes.append(helper.make_node("Mystery", [x], [p + "mystery"], name=p + "mystery",
                                          domain="com.example"))
            x = p + "mystery"
            # Declared, so what follows can be delegated again.
            infos.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16]))
        b += 1
    nodes.append(helper.make_node("Relu", [x], ["y"], name="final_relu"))
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits,
                          value_info=infos)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    m.ir_version = 8
    onnx.save(m, out)
    print("%s: %d nodes" % (out, len(nodes)))


if __name__ == "__main__":
    main()

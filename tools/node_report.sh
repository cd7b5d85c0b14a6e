#!/bin/sh
# node_report.sh - per-operator table of the ONNX node-test acceptance run:
# for every operator, how many libonnx-testdata node tests are
# fully delegated and matching under TOSA-1.0+FP (pass_FP) and
# TOSA-1.0+INT+FP (pass_IF), how many fall back cleanly, how many fail, and
# the first reason.
#
#   sh tools/node_report.sh [BUILD_DIR] [SUBSTRING...]
#
# BUILD_DIR defaults to ./build; SUBSTRINGs keep only matching test names
# (e.g. `sh tools/node_report.sh build conv pool`). Needs the built
# tests/test_onnx_nodes; the exit status is that test's (0 = acceptance ok).
set -u
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then
    build=$1
    shift
fi
bin=$build/tests/test_onnx_nodes
if [ ! -x "$bin" ]; then
    echo "node_report.sh: $bin not found (build first: cmake --build $build)" >&2
    exit 2
fi
exec "$bin" --table -q "$@"

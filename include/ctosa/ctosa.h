/*
 * ctosa/ctosa.h - the whole public API of the ctosa library.
 *
 * ctosa takes neural-network models, partitions them against a TOSA
 * specification, lowers what the target supports to TOSA, writes TOSA
 * flatbuffers and runs them on a reference interpreter.
 */
#ifndef CTOSA_CTOSA_H
#define CTOSA_CTOSA_H

#include "ctosa/common.h"
#include "ctosa/graph.h"
#include "ctosa/tosa_io.h"
#include "ctosa/mlir.h"
#include "ctosa/spec.h"
#include "ctosa/onnx.h"
#include "ctosa/interp.h"
#include "ctosa/tensor_file.h"
#include "ctosa/lower.h"
#include "ctosa/custom.h"
#include "ctosa/quantize.h"

#endif

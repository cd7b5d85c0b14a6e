#!/bin/sh
# Regenerate the small models committed under tests/models/ (each file < 2 MB).
# Every generator is deterministic, so a re-run with the same Debian packages
# reproduces the files byte for byte (ORT outputs need tools/ort installed).
#   sh tools/models/update_committed.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dst=$here/../../tests/models
py=/usr/bin/python3
$py "$here/make_models.py" --out "$dst" --models transformer_encoder,mobilenet_v2_x0_25
$py "$here/make_quantized.py" --out "$dst" --models mobilenet_v2_x0_25
$py "$here/make_llm.py" --preset tiny --out "$dst/llm_tiny_fp32" --check
$py "$here/make_llm.py" --preset tiny --int8 --out "$dst/llm_tiny_int8" --check
$py "$here/make_quantize_corpus.py" --small   # tests/models/quantize/
$py "$here/make_rnn.py"   # tests/models/{kws_gru,seq_lstm}_* and tests/data/lower/rnn/
find "$dst" -type f -size +2000k -exec echo "update_committed: too big to commit: {}" \; >&2

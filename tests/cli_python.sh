#!/bin/bash
# cli_python.sh CTOSA SRC_DIR BUILD_DIR - builds the Python package
# (python/setup.py: the C library + the CPython extension, with the system
# compiler and no sanitizer flags) into the build folder and runs its
# pytest suite (python/tests) against the same tree's CLI.
# Skips (77) when /usr/bin/python3, numpy, pytest, setuptools or Python.h
# are missing, and in sanitizer builds: the extension is not built with
# ASan (it would need the ASan runtime preloaded into python3), so that
# run would test nothing new.
set -u
ctosa=$(realpath "$1"); src=$(realpath "$2"); build_tests=$(realpath "$3")
build=$(dirname "$build_tests")   # ctest passes BUILD/tests
py=/usr/bin/python3
skip() { echo "skipped: $*"; exit 77; }

[ -x "$py" ] || skip "$py not found"
"$py" -c "import numpy" 2>/dev/null || skip "numpy is not installed for $py (python3-numpy)"
"$py" -c "import pytest" 2>/dev/null || skip "pytest is not installed for $py (python3-pytest)"
"$py" -c "import setuptools" 2>/dev/null || skip "setuptools is not installed for $py (python3-setuptools)"
inc=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
[ -f "$inc/Python.h" ] || skip "Python.h not found in $inc (python3-dev)"
if grep -q "^CTOSA_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null || [ -n "${CTOSA_SANITIZED:-}" ]; then
  skip "sanitizer build: the Python extension is tested by the plain build"
fi

lib=$build/python-lib
tmp=$build/python-temp
mkdir -p "$lib" "$tmp"
# No inherited flags (a sanitizer or -Werror in CFLAGS would break the
# module); -O1 keeps the compile short, the tests do not time kernels.
t0=$(date +%s)
(cd "$src/python" && env -u CFLAGS -u CPPFLAGS -u LDFLAGS CTOSA_OPT=-O1 CTOSA_SOURCE_DIR="$src" \
   "$py" setup.py -q build --build-lib "$lib" --build-temp "$tmp" >"$build/python-build.log" 2>&1) || {
  echo "FAIL: building the Python package (log: $build/python-build.log)"
  tail -30 "$build/python-build.log"
  exit 1
}
echo "python package built in $(( $(date +%s) - t0 )) s into $lib"

cd "$build" || exit 1
PYTHONPATH="$lib" PYTHONDONTWRITEBYTECODE=1 CTOSA_BIN="$ctosa" CTOSA_SOURCE_DIR="$src" \
  CTOSA_BUILD_DIR="$build" "$py" -m pytest -q -p no:cacheprovider --rootdir "$src/python" \
  "$src/python/tests"

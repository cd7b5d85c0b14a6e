"""Build of the ctosa Python package.

The C library (src/util, src/tosa, src/spec, src/interp, src/onnx,
src/tensorfile, src/lower, src/pipeline, src/runtime, src/quantize of the
repository, subfolders included) is compiled together with the
CPython extension (ctosa/_ext/*.c) into one module, ctosa._ctosa. Only
setuptools and a C compiler are needed: no network, no numpy headers.

    /usr/bin/python3 -m pip install ./python        (from the repository root)
    cd python && python3 setup.py build_ext --inplace

Environment:
    CTOSA_SOURCE_DIR   the repository root (default: the folder above this file)
    CTOSA_BUILD_JOBS   parallel compiler processes (default: number of CPUs)
    CTOSA_OPT          optimisation flag for the C library (default -O2)
"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
os.chdir(HERE)  # extension sources are given relative to this folder
MODULES = ["util", "tosa", "spec", "interp", "onnx", "tensorfile", "lower", "pipeline", "runtime", "quantize"]


def repo_root():
    """The ctosa checkout whose src/ and include/ are compiled in."""
    candidates = [os.environ.get("CTOSA_SOURCE_DIR"), os.path.join(HERE, os.pardir)]
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "include", "ctosa", "ctosa.h")) and \
                os.path.isdir(os.path.join(c, "src", "tosa")):
            return os.path.abspath(c)
    sys.exit("ctosa setup.py: cannot find the ctosa sources (include/ctosa/ctosa.h and src/) in %s. "
             "Build from a repository checkout (pip >= 21.3 builds in place: "
             "'python3 -m pip install ./python'), or set CTOSA_SOURCE_DIR to the repository root."
             % " or ".join(os.path.abspath(c) for c in candidates if c))


def files_below(d, ext):
    """Files ending in ext in folder d and its subfolders, sorted."""
    out = []
    for base, dirs, files in os.walk(d):
        dirs.sort()
        out += sorted(os.path.join(base, f) for f in files if f.endswith(ext))
    return out


def library_sources(root):
    out = []
    for m in MODULES:
        out += files_below(os.path.join(root, "src", m), ".c")
    return out


def library_headers(root):
    out = []
    for base in (os.path.join(root, "include", "ctosa"),) + tuple(os.path.join(root, "src", m) for m in MODULES):
        out += files_below(base, ".h")
    return out


class BuildExt(build_ext):
    """build_ext that compiles the many C files in parallel and drops flags
    the library does not want (Python's -g costs build time; -Wsign-compare
    is noise for this code base; sanitizer flags would break the module)."""

    def build_extensions(self):
        cc = self.compiler
        drop = {"-g", "-Wsign-compare", "-O2", "-O3"}
        for attr in ("compiler_so", "compiler", "linker_so"):
            if hasattr(cc, attr):
                setattr(cc, attr, [f for f in getattr(cc, attr)
                                   if f not in drop and "sanitize" not in f])
        jobs = int(os.environ.get("CTOSA_BUILD_JOBS", "0") or 0) or os.cpu_count() or 2
        orig_compile = cc.compile

        def parallel_compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                             extra_preargs=None, extra_postargs=None, depends=None):
            def one(src):
                return orig_compile([src], output_dir=output_dir, macros=macros,
                                    include_dirs=include_dirs, debug=debug,
                                    extra_preargs=extra_preargs, extra_postargs=extra_postargs,
                                    depends=depends)
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                objs = list(pool.map(one, sources))
            return [o for group in objs for o in group]

        cc.compile = parallel_compile
        super().build_extensions()


ROOT = repo_root()
OPT = os.environ.get("CTOSA_OPT", "-O2")
ext = Extension(
    "ctosa._ctosa",
    sources=sorted(os.path.join("ctosa", "_ext", f) for f in os.listdir(os.path.join(HERE, "ctosa", "_ext"))
                   if f.endswith(".c")) + library_sources(ROOT),
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=["-std=gnu11", OPT, "-fvisibility=hidden", "-Wno-unused-parameter"],
    libraries=["m", "dl"],
    extra_link_args=["-pthread"],
    # any header change rebuilds (setuptools compares times with the module)
    depends=[os.path.join("ctosa", "_ext", "ext.h")] + library_headers(ROOT),
)

setup(
    name="ctosa",
    version="0.1.0",
    description="ONNX to TOSA partitioning and lowering, TOSA flatbuffers and a reference "
                "interpreter (Python bindings of the ctosa C library)",
    packages=["ctosa"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.8",
    install_requires=[],  # numpy is needed at run time for arrays; not fetched here
    zip_safe=False,
)

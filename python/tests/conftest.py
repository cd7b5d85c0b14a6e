"""Shared fixtures. Locations come from the environment set by
tests/cli_python.sh (CTOSA_BIN, CTOSA_SOURCE_DIR, CTOSA_BUILD_DIR), with
fallbacks for running pytest by hand from a checkout."""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.environ.get("CTOSA_SOURCE_DIR") or os.path.join(HERE, os.pardir, os.pardir))


def _build_dir():
    b = os.environ.get("CTOSA_BUILD_DIR")
    if b:
        # ctest hands the tests/ folder of the build; the root is above it
        return os.path.dirname(b) if os.path.basename(b) == "tests" else b
    return os.path.join(REPO, "build")


BUILD = _build_dir()


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def ctosa_bin():
    b = os.environ.get("CTOSA_BIN") or os.path.join(BUILD, "ctosa")
    if not os.access(b, os.X_OK):
        pytest.skip("the ctosa CLI is not built (%s)" % b)
    return b


@pytest.fixture(scope="session")
def example_plugin():
    p = os.path.join(BUILD, "examples", "plugins", "libctosa_example_plugin.so")
    if not os.path.exists(p):
        pytest.skip("example plugin not built (%s)" % p)
    return p


def model_path(*parts):
    p = os.path.join(REPO, *parts)
    if not os.path.exists(p):
        pytest.skip("missing %s" % p)
    return p


def run_cli(ctosa_bin, *args, check=True):
    r = subprocess.run([ctosa_bin] + [str(a) for a in args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("ctosa %s failed (%d): %s%s" % (" ".join(map(str, args)), r.returncode,
                                                             r.stdout, r.stderr))
    return r

"""Shared fixtures of the Python tests: the C++ reference program and the repository's data.

CTest (python/CMakeLists.txt) sets PYTHONPATH to the built package, EBLA_PY_REFERENCE to the
program python/tests/reference.cpp and EBLA_SOURCE_DIR to the repository.
"""

import os
import pathlib
import subprocess

import numpy as np
import pytest


def _required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through CTest (test python.pytest)")
    return value


@pytest.fixture(scope="session")
def source_dir():
    return pathlib.Path(_required("EBLA_SOURCE_DIR"))


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """reference(command, *args, numbers=...) runs the C++ reference program with `numbers`
    written as hex floats to a file (the last argument) and returns its output lines."""
    program = _required("EBLA_PY_REFERENCE")
    directory = tmp_path_factory.mktemp("reference")
    count = [0]

    def run(command, *args, numbers=None):
        argv = [program, command, *map(str, args)]
        if numbers is not None:
            count[0] += 1
            path = directory / f"input{count[0]}.txt"
            path.write_text("\n".join(float(v).hex() for v in np.asarray(numbers, dtype=np.float64).ravel()))
            argv.append(str(path))
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    return run


def hex_floats(lines):
    """Hex-float lines as float64 values."""
    return np.array([float.fromhex(s) for s in lines], dtype=np.float64)


def same_bits(a, b):
    """Whether two float64 arrays hold the same bits (NaN included)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))

"""Kokkos's lifetime: initialised on import, finalised at exit without a complaint, with
results, plans and every kernel's caches still alive when the interpreter ends."""

import subprocess
import sys


def test_import_initialises_and_exit_finalises_cleanly():
    code = (
        "import numpy as np, ebla\n"
        "assert ebla._ebla.kokkos_owned() and ebla._ebla.concurrency() >= 1\n"
        "A, b = ebla.hpccg_problem(6, 6, 6)\n"
        "r = ebla.cg(A, b, qdot_tol=1e-3)\n"
        "p = ebla.qdot_select(b, b, 1e-4)\n"
        "g = ebla.gemm(np.eye(4), np.ones((4, 3)), tolerance=1e-3)\n"
        "s = ebla.round(b, 'binary16', 'stochastic', rng=3)\n"
        "e = ebla.power_method(ebla.graph_laplacian(200, 4.0, 1), qdot_tol=1e-6)\n"
        "print(r.iterations, p.bins, g.meets_tolerance, e.status)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.split()[2:] == ["True", "converged"]


def test_a_python_without_numpy_is_told_which_python_to_run():
    # numpy made unimportable, as in an interpreter that does not have it
    code = "import sys\nsys.modules['numpy'] = None\nimport ebla\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "ImportError: ebla needs NumPy, which this Python (" + sys.executable in done.stderr
    assert "Python3_EXECUTABLE" in done.stderr


def test_a_python_of_the_same_version_without_numpy_borrows_the_built_for_one():
    # -S: no site directories, so numpy is not on the path, as in another Python 3.x of the
    # user without NumPy (ebla itself comes through PYTHONPATH)
    from ebla import _built_for
    code = (
        "import sys\n"
        "import importlib.util\n"
        "assert importlib.util.find_spec('numpy') is None\n"
        "import ebla, numpy\n"
        "r = ebla.qdot(numpy.arange(1.0, 5.0), numpy.ones(4), 1e-8)\n"
        "print(numpy.__file__)\n"
        "print(r.value, sys.path[-1])\n"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    numpy_file, last = done.stdout.splitlines()
    assert numpy_file.startswith(_built_for.NUMPY_DIR + "/numpy/")
    assert last.split() == ["10.0", _built_for.NUMPY_DIR]

"""What the PETSc benchmarks (bench_petsc.py, bench_petsc_pc.py) share: one thread for every
library, PETSc's import with its message where it is missing, a matrix from SciPy's CSR, and
CG stopping on the unpreconditioned residual.

Import this module before NumPy, SciPy or PETSc: it sets the thread counts at import.
"""

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("OMP_PROC_BIND", "false")


def fail(script, message):
    """The message on stderr, prefixed with the script's name; exit status 2."""
    print(f"{script}: {message}", file=sys.stderr)
    sys.exit(2)


def import_petsc(script):
    """petsc4py's PETSc, initialised; without petsc4py, fail() says how to get it."""
    try:
        import petsc4py
    except ImportError:
        fail(script, f"petsc4py is not installed for this Python ({sys.executable}); PETSc is a benchmark-only "
             "dependency: on Debian, apt-get install python3-petsc4py, then run the script with the Python "
             "that package is for (/usr/bin/python3)")
    petsc4py.init(sys.argv[:1])
    from petsc4py import PETSc
    return PETSc


def ebla_module(script, where, root):
    """(ebla's Python module, None), or (None, the ImportError) where it does not import: from
    `where` (--ebla-python), else from the checkout `root`'s first build/*/python that holds
    it, else whichever `import ebla` finds (an installed one). fail() where `where` holds none."""
    import glob
    candidates = [where] if where else sorted(glob.glob(os.path.join(root, "build", "*", "python")))
    for path in candidates:
        if glob.glob(os.path.join(path, "ebla", "_ebla*.so")):
            sys.path.insert(0, path)
            break
    else:
        if where:
            fail(script, f"no ebla module (ebla/_ebla*.so) under --ebla-python {where}")
    try:
        import ebla
        return ebla, None
    except ImportError as e:
        return None, e


def petsc_matrix(PETSc, A):
    """A SciPy CSR matrix as a sequential PETSc AIJ matrix of the same arrays."""
    n = A.shape[0]
    M = PETSc.Mat().createAIJ(size=(n, n), csr=(A.indptr.astype(PETSc.IntType), A.indices.astype(PETSc.IntType),
                                                A.data), comm=PETSc.COMM_SELF)
    M.assemble()
    return M


def cg_ksp(PETSc, A, rtol, P=None, prefix=None):
    """KSPCG on A (the preconditioner built from P, default A), one process, x0 = 0, stopping
    on the unpreconditioned residual ||r_k|| <= rtol ||b|| (atol 0, no divergence test), and
    reading PETSc's options under prefix where one is given. Not set up."""
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    if prefix:
        ksp.setOptionsPrefix(prefix)
    ksp.setOperators(A, A if P is None else P)
    ksp.setType(PETSc.KSP.Type.CG)
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=rtol, atol=0.0, divtol=PETSc.DEFAULT, max_it=100000)
    ksp.setInitialGuessNonzero(False)
    return ksp


def timed_solve(ksp, b, x):
    """ksp's solve of b from x = 0, timed: its iterations, a copy of x, the seconds
    KSPSolve took and PETSc's converged reason (> 0: converged)."""
    import time
    x.set(0.0)
    start = time.perf_counter()
    ksp.solve(b, x)
    seconds = time.perf_counter() - start
    return ksp.getIterationNumber(), x.getArray().copy(), seconds, ksp.getConvergedReason()

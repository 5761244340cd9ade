#!/usr/bin/env python3
"""ebla's CG, exact and with --storage auto, against PETSc's KSPCG, on one thread.

    python3 apps/bench/bench_petsc.py [--problem hpccg|diffusion] [--n 100] [--reps 5] [--rtol 1e-10]
                                      [--ebla-python DIR]

ebla's Python module is taken from DIR, else from this checkout's build/*/python, else from
wherever `import ebla` finds one.

The problem: HPCCG's 27-point matrix on an n x n x n grid (ebla.hpccg_problem: scipy CSR,
27 on the diagonal, -1 for every neighbour; without and with Jacobi), or the variable-
coefficient diffusion problem (ebla.diffusion_problem, seed 1: 7 points, k over six decades;
with Jacobi only, which it needs), b = A 1, x0 = 0. Both solvers get the same CSR arrays and
the same b, and stop on the same rule: the (unpreconditioned) residual ||r_k|| <= rtol ||b||
(ebla's exact CG on its recursive residual; its stored solves on the recursive residual plus
the certified gap, confirmed by the double-double true residual).

- PETSc: KSPCG, one process, KSP norm type UNPRECONDITIONED, PCNONE and then PCJACOBI,
  atol 0, dtol off; the time is KSPSolve's (KSPSetUp, and with it Jacobi's diagonal, is done
  once before the first timed solve).
- ebla: ebla.cg(A, b, tol=rtol, norm="relative", dot="exact") (exact binary64 CG), and
  ebla.cg(..., dot="auto", storage="auto") (`ebla cg --storage auto --qdot-tol auto`: the
  Krylov vectors and the matrix in the formats the rule chooses), each with the problem's
  preconditioners; the time is CgResult.seconds, the whole ebla::cg call (its input checks,
  the stored solve's copy of A in its narrow words, and the double-double true residual at
  exit, included; the copy of NumPy's arrays into Kokkos Views before it is not).

The solvers run in turn, --reps times (interleaved, so that a slow spell of a shared
machine falls on all of them); the table gives each one's iterations, its true relative
residual ||b - A x|| / ||b|| (computed here for both in binary64 by SciPy, the same way), the
median time and, on ebla's rows, ebla's median over PETSc's with the same preconditioner, and
the same for ebla's iterations alone (CgResult.iteration_seconds).

OMP_NUM_THREADS (and the BLAS libraries' thread counts) are set to 1 before anything is
imported: PETSc runs as one process, and ebla's Kokkos gets one thread. PETSc is a benchmark
dependency only (Debian: apt-get install python3-petsc4py); without petsc4py the script says
so and exits with status 2.
"""

import os

from petsc_common import cg_ksp, ebla_module, fail as fail_as, import_petsc, petsc_matrix, timed_solve  # first: one thread

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def fail(message):
    fail_as("bench_petsc.py", message)


def import_ebla(where):
    """ebla's module (petsc_common.ebla_module), or fail() saying how to build it."""
    ebla, error = ebla_module("bench_petsc.py", where, ROOT)
    if ebla is None:
        fail(f"cannot import ebla's Python module ({error}): build it (cmake --build <build dir> --target "
             "ebla_python) and pass --ebla-python <build dir>/python")
    return ebla


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=("hpccg", "diffusion"), default="hpccg",
                        help="hpccg (default; without and with Jacobi) or diffusion (seed 1, with Jacobi)")
    parser.add_argument("--n", type=int, default=100, help="grid points per dimension (default 100: n = 1e6 rows)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of every solver (default 5)")
    parser.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance (default 1e-10)")
    parser.add_argument("--ebla-python", default=None, help="the directory holding ebla's Python package")
    args = parser.parse_args()
    if args.n < 1 or args.reps < 1 or not args.rtol > 0:
        parser.error("--n and --reps must be at least 1, --rtol positive")

    PETSc = import_petsc("bench_petsc.py")
    ebla = import_ebla(args.ebla_python)
    import numpy as np

    t0 = time.perf_counter()
    if args.problem == "hpccg":
        title = f"HPCCG {args.n}^3"
        A, b = ebla.hpccg_problem(args.n, args.n, args.n)
    else:
        title = f"diffusion {args.n}^3 (seed 1)"
        A, b = ebla.diffusion_problem(args.n, args.n, args.n, 1)
    A = A.tocsr()
    b = np.ascontiguousarray(b, dtype=np.float64)
    n = A.shape[0]
    b_norm = float(np.linalg.norm(b))
    print(f"{title}: n = {n}, nonzeros = {A.nnz}, ||b|| = {b_norm:.6e} "
          f"(built in {time.perf_counter() - t0:.1f} s)")
    print(f"PETSc {'.'.join(map(str, PETSc.Sys.getVersion()))}, ebla from {os.path.dirname(ebla.__file__)}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")

    # PETSc's matrix and vectors, from the same arrays
    M = petsc_matrix(PETSc, A)
    bv = M.createVecLeft()
    bv.setArray(b)
    xv = M.createVecRight()

    def petsc_solver(pc):
        ksp = cg_ksp(PETSc, M, args.rtol)
        ksp.getPC().setType(pc)
        ksp.setUp()

        def run():
            its, x, seconds, reason = timed_solve(ksp, bv, xv)
            if reason <= 0:
                print(f"warning: PETSc KSPCG ({pc}) did not converge: reason {reason}", file=sys.stderr)
            return its, x, seconds
        return run

    loop_seconds = {}  # ebla's rows: CgResult.iteration_seconds, the iterations alone

    def ebla_solver(row, jacobi, auto):
        loop_seconds[row] = []
        mode = dict(dot="auto", storage="auto") if auto else dict(dot="exact")

        def run():
            r = ebla.cg(A, b, tol=args.rtol, norm="relative", jacobi=jacobi, max_iterations=100000,
                        check_symmetry=False, **mode)
            if r.status != "converged":
                print(f"warning: ebla.cg (jacobi={jacobi}, {mode}): {r.status}: {r.stop_reason}", file=sys.stderr)
            loop_seconds[row].append(r.iteration_seconds)
            return r.iterations, r.x, r.seconds
        return run

    solvers, baseline = [], {}  # baseline: ebla's rows' PETSc row (the same preconditioner)
    for jacobi in ((False, True) if args.problem == "hpccg" else (True,)):
        pc, flag = (PETSc.PC.Type.JACOBI, " --jacobi") if jacobi else (PETSc.PC.Type.NONE, "")
        petsc_row = len(solvers)
        solvers.append((f"PETSc KSPCG, PC{pc.upper()}", petsc_solver(pc)))
        for auto, name in ((False, "--dot exact"), (True, "--storage auto --qdot-tol auto")):
            baseline[len(solvers)] = petsc_row
            solvers.append((f"ebla cg {name}{flag}", ebla_solver(len(solvers), jacobi, auto)))
    times = [[] for _ in solvers]
    iterations = [0] * len(solvers)
    residual = [0.0] * len(solvers)
    for rep in range(args.reps):
        for k, (name, run) in enumerate(solvers):
            its, x, seconds = run()
            times[k].append(seconds)
            iterations[k] = its
            residual[k] = float(np.linalg.norm(b - A @ x)) / b_norm
        print(f"repetition {rep + 1}/{args.reps}: " +
              ", ".join(f"{solvers[k][0]} {times[k][-1]:.3f} s" for k in range(len(solvers))), flush=True)

    medians = [statistics.median(t) for t in times]
    print(f"\n{title}, b = A 1, x0 = 0, ||r_k|| <= {args.rtol:g} ||b||, one thread, "
          f"medians of {args.reps}")
    print(f"{'solver':<48} {'iterations':>10} {'true rel. residual':>19} {'median s':>10} {'ms/iter':>9} "
          f"{'ebla/PETSc':>11} {'loop s':>8} {'loop ratio':>11}")
    for k, (name, _) in enumerate(solvers):
        ratio = f"{medians[k] / medians[baseline[k]]:.2f}" if k in baseline else "-"
        per_iteration = 1e3 * medians[k] / iterations[k] if iterations[k] else float("nan")
        loop = statistics.median(loop_seconds[k]) if k in loop_seconds else None
        loop_text = f"{loop:.3f}" if loop is not None else "-"
        loop_ratio = f"{loop / medians[baseline[k]]:.2f}" if loop is not None else "-"
        print(f"{name:<48} {iterations[k]:>10} {residual[k]:>19.3e} {medians[k]:>10.3f} {per_iteration:>9.2f} "
              f"{ratio:>11} {loop_text:>8} {loop_ratio:>11}")
    print("(ebla's time: the whole ebla::cg call, with its input checks and the double-double true residual "
          "at exit; loop s: its iterations alone, CgResult.iteration_seconds; PETSc's: KSPSolve)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

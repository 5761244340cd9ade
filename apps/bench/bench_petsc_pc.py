#!/usr/bin/env python3
"""CG iterations with SGS and IC(0) preconditioners: ebla against PETSc, on one thread.

    /usr/bin/python3 apps/bench/bench_petsc_pc.py [--ebla BUILD/apps/ebla] [--reps 3] [--rtol 1e-8]
                                                   [MATRIX.mtx ...]

The matrices: data/matrices' 1138_bus, bcsstk13 and gr_30_30 unless others are named. Each
gets b = A 1 (computed here by SciPy and written to a Matrix Market file, so that both
solvers read the same b), x0 = 0, and both stop on the same rule: the recursive
(unpreconditioned) residual ||r_k|| <= rtol ||b||.

- PETSc (petsc4py): KSPCG, one process, KSP norm type UNPRECONDITIONED, atol 0, with
  PCJACOBI; PCSOR, symmetric sweeps, omega 1, one iteration (SSOR in natural row order, the
  M of ebla's SGS in another ordering); PCICC, level 0, natural ordering, once with PETSc's
  default shift for ICC (positive_definite, a Manteuffel shift) and once with shift type
  none, and where ebla's IC(0) needed a shift alpha, once more on A + alpha diag(A) (ICC of
  that matrix, no shift, as the preconditioner of CG on A: ebla's M). The time is
  KSPSolve's (KSPSetUp, and with it the factorisation, is done before).
- ebla: `ebla cg --matrix A.mtx --rhs b.mtx --norm relative --tol rtol --pc P --json` for
  P = jacobi, sgs, ic0; the time is the JSON's `seconds` (the iterations and the true
  residual at exit; the colouring or factorisation before the iterations is not in it).

Each solver runs --reps times and the median time is shown. OMP_NUM_THREADS is set to 1 before
anything is imported. Without petsc4py the script says so and exits with status 2.
"""

import os

from petsc_common import cg_ksp, fail as fail_as, import_petsc, petsc_matrix, timed_solve  # first: one thread

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MATRICES = [os.path.join(ROOT, "data", "matrices", name + ".mtx") for name in ("1138_bus", "bcsstk13", "gr_30_30")]


def fail(message):
    fail_as("bench_petsc_pc.py", message)


def find_ebla(given):
    """The ebla command: --ebla, else this checkout's first build/*/apps/ebla."""
    candidates = [given] if given else sorted(glob.glob(os.path.join(ROOT, "build", "*", "apps", "ebla")))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    fail("no ebla command: build it (cmake --build <build dir> --target ebla_cli) or pass --ebla")


def petsc_runs(PETSc, A, b, rtol, alpha):
    """(name, run) for each PETSc solver; run() returns (iterations, x, seconds, note). alpha:
    ebla's IC(0) shift, for a PCICC of A + alpha diag(A) (where alpha > 0)."""
    import scipy.sparse
    M = petsc_matrix(PETSc, A)
    shifted = petsc_matrix(PETSc, scipy.sparse.csr_matrix(A + alpha * scipy.sparse.diags(A.diagonal())))
    bv = M.createVecLeft()
    bv.setArray(b)
    xv = M.createVecRight()

    options = PETSc.Options()

    def solver(prefix, settings, P=M):
        for key, value in settings.items():
            options[prefix + key] = value
        ksp = cg_ksp(PETSc, M, rtol, P=P, prefix=prefix)  # CG on A, the preconditioner built from P
        ksp.setFromOptions()
        try:
            ksp.setUp()
        except PETSc.Error as e:
            message = f"set-up failed ({e})"
            return lambda: (None, None, None, message)

        def run():
            its, x, seconds, reason = timed_solve(ksp, bv, xv)
            return its, x, seconds, "" if reason > 0 else f"not converged (reason {reason})"
        return run

    # SSOR: one symmetric sweep, omega 1 (symmetric Gauss-Seidel in natural row order)
    sor = {"pc_type": "sor", "pc_sor_symmetric": "", "pc_sor_omega": 1.0, "pc_sor_its": 1, "pc_sor_lits": 1}

    def icc(shift):  # IC(0) in natural order
        return {"pc_type": "icc", "pc_factor_levels": 0, "pc_factor_mat_ordering_type": "natural",
                "pc_factor_shift_type": shift}

    return [("PETSc PCJACOBI", solver("jac_", {"pc_type": "jacobi"})),
            ("PETSc PCSOR (SSOR, natural order)", solver("sor_", sor)),
            ("PETSc PCICC(0), positive_definite shift", solver("iccpd_", icc("positive_definite"))),
            ("PETSc PCICC(0), no shift", solver("iccnone_", icc("none")))] + \
        ([(f"PETSc PCICC(0) of A + {alpha:g} diag(A)", solver("iccalpha_", icc("none"), shifted))] if alpha > 0 else [])


def ebla_cg(ebla, matrix, rhs, rtol, pc):
    return subprocess.run([ebla, "cg", "--matrix", matrix, "--rhs", rhs, "--norm", "relative", "--tol", repr(rtol),
                           "--pc", pc, "--max-iter", "100000", "--progress", "0", "--json"],
                          capture_output=True, text=True)


def ebla_shift(ebla, matrix, rhs, rtol):
    """The alpha of ebla's IC(0) on the matrix (0 where it needs no shift)."""
    out = ebla_cg(ebla, matrix, rhs, rtol, "ic0")
    if out.returncode not in (0, 1):
        fail(f"ebla cg --pc ic0 on {matrix}: exit {out.returncode}: {out.stderr.strip()}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["pc_shift"])


def ebla_runs(ebla, matrix, rhs, rtol):
    def solver(pc):
        def run():
            out = ebla_cg(ebla, matrix, rhs, rtol, pc)
            if out.returncode not in (0, 1):
                return None, None, None, f"exit {out.returncode}: {out.stderr.strip()}"
            r = json.loads(out.stdout.strip().splitlines()[-1])
            note = {"sgs": lambda: f"{int(r['pc_colours'])} colours",
                    "ic0": lambda: f"shift {r['pc_shift']:g} after {int(r['pc_restarts'])} restarts, "
                                   f"{int(r['pc_levels'])} levels",
                    "jacobi": lambda: ""}[pc]()
            if r["status"] != "converged":
                note += f"; {r['status']}"
            return int(r["iterations"]), None, float(r["seconds"]), note
        return run
    return [(f"ebla --pc {pc}", solver(pc)) for pc in ("jacobi", "sgs", "ic0")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("matrices", nargs="*", default=MATRICES, help="Matrix Market files (default: data/matrices')")
    parser.add_argument("--ebla", default=None, help="the ebla command (default: build/*/apps/ebla)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of every solver (default 3)")
    parser.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance (default 1e-8)")
    args = parser.parse_args()
    if args.reps < 1 or not args.rtol > 0:
        parser.error("--reps must be at least 1, --rtol positive")
    PETSc = import_petsc("bench_petsc_pc.py")
    ebla = find_ebla(args.ebla)
    import numpy as np
    import scipy.io
    import scipy.sparse

    print(f"PETSc {'.'.join(map(str, PETSc.Sys.getVersion()))}, ebla {ebla}, OMP_NUM_THREADS=1, "
          f"||r_k|| <= {args.rtol:g} ||b||, b = A 1, x0 = 0, medians of {args.reps}")
    print(f"{'matrix':<10} {'solver':<42} {'iterations':>10} {'true rel. res.':>17} {'seconds':>9} {'ms/iter':>8}  note")
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.matrices:
            name = os.path.splitext(os.path.basename(path))[0]
            A = scipy.sparse.csr_matrix(scipy.io.mmread(path), dtype=np.float64)
            A.sort_indices()
            b = np.ascontiguousarray(A @ np.ones(A.shape[0]))
            rhs = os.path.join(tmp, name + "_b.mtx")
            scipy.io.mmwrite(rhs, b.reshape(-1, 1), precision=17)
            b_norm = float(np.linalg.norm(b))
            alpha = ebla_shift(ebla, path, rhs, args.rtol)
            for label, run in petsc_runs(PETSc, A, b, args.rtol, alpha) + ebla_runs(ebla, path, rhs, args.rtol):
                seconds = []
                for _ in range(args.reps):
                    its, x, s, note = run()
                    if its is None:
                        break
                    seconds.append(s)
                if its is None:
                    print(f"{name:<10} {label:<42} {'-':>10} {'-':>17} {'-':>9} {'-':>8}  {note}")
                    continue
                res = f"{float(np.linalg.norm(b - A @ x)) / b_norm:.2e}" if x is not None else "(ebla: certified)"
                median = statistics.median(seconds)
                per_iteration = f"{1e3 * median / its:.4f}" if its else "-"
                print(f"{name:<10} {label:<42} {its:>10} {res:>17} {median:>9.4f} {per_iteration:>8}  {note}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

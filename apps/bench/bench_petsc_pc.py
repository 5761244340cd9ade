#!/usr/bin/env python3
"""CG with each preconditioner, exact and automatic: ebla against PETSc, on the SuiteSparse set.

    /usr/bin/python3 apps/bench/bench_petsc_pc.py [--ebla BUILD/apps/ebla] [--ebla-python BUILD/python]
                                                   [--reps 3] [--rtol 1e-8] [--threads 1,2]
                                                   [--json-out FILE] [--markdown] [MATRIX.mtx ...]

The problems: the twelve SPD matrices of data/matrices (the set of `ebla cg --experiment
preconditioners`, data/README.md cites each), and with ebla's Python module (--ebla-python, else
this checkout's build/*/python) HPCCG's 27-point matrix and the diffusion problem on 20^3 grids;
or the Matrix Market files named. Each gets b = A 1 (computed here by SciPy and written to a
Matrix Market file, so that both solvers read the same b), x0 = 0, and both stop on the same
rule: the recursive (unpreconditioned) residual ||r_k|| <= rtol ||b||.

- PETSc (petsc4py): KSPCG, one process, KSP norm type UNPRECONDITIONED, atol 0, with PCNONE;
  PCJACOBI; PCBJACOBI with as many blocks as ebla's block-Jacobi has, each factorised by
  Cholesky (PETSc cuts the rows into equal runs, ebla follows the matrix's pattern: the same
  count, not the same blocks); PCSOR, symmetric sweeps, omega 1, one iteration (SSOR in
  natural row order, the M of ebla's SGS in another ordering); PCICC, level 0, natural
  ordering, once with PETSc's default shift for ICC (positive_definite, a Manteuffel shift)
  and once with shift type none, and where ebla's IC(0) needed a shift alpha, once more on
  A + alpha diag(A) (ICC of that matrix, no shift, as the preconditioner of CG on A: ebla's M).
  The time is KSPSolve's (KSPSetUp, and with it the factorisation, is done before).
- ebla: `ebla cg --matrix A.mtx --rhs b.mtx --norm relative --tol rtol --pc P --json` for P =
  none, jacobi, block-jacobi, sgs, ic0, each exact (binary64 dot products and storage) and
  auto (`--qdot-tol auto`, with `--storage auto` for none and jacobi and `--pc-storage auto`
  for block-jacobi), at each thread count of --threads, with `--repeat` --reps: the time is the
  median of the JSON's `repeat_iteration_seconds` (the iterations alone: as KSPSolve's, without
  the colouring or the factorisation; ebla's `seconds`, with them and the double-double true
  residual, is in the JSON file).

Every solver runs --reps times in one process, PETSc's KSPSolve on its set-up KSP and ebla's
solves under `--repeat`, so that each library's first solve finds its code and memory cold and
the others warm, and the median is shown. OMP_NUM_THREADS is 1 for this process and PETSc; ebla gets each
count of --threads. --json-out writes every row (for apps/plot_preconditioners.py);
--markdown prints the tables of docs/solvers.md. Without petsc4py the script says so and exits
with status 2.
"""

import os

from petsc_common import cg_ksp, ebla_module, fail as fail_as, import_petsc, petsc_matrix, timed_solve  # first: one thread

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SET = ("LFAT5", "bcsstk01", "bcsstk02", "nos4", "494_bus", "662_bus", "gr_30_30", "nos3", "1138_bus", "mesh2e1",
       "bcsstk16", "bcsstk13")
MATRICES = [os.path.join(ROOT, "data", "matrices", name + ".mtx") for name in SET]
PCS = ("none", "jacobi", "block-jacobi", "sgs", "ic0")
# ebla's preconditioner and PETSc's that builds the same M (block-Jacobi: the same count of blocks)
PETSC_MATCH = {"none": "PCNONE", "jacobi": "PCJACOBI", "block-jacobi": "PCBJACOBI", "sgs": "PCSOR",
               "ic0": "PCICC"}


def fail(message):
    fail_as("bench_petsc_pc.py", message)


def find_ebla(given):
    """The ebla command: --ebla, else this checkout's first build/*/apps/ebla."""
    candidates = [given] if given else sorted(glob.glob(os.path.join(ROOT, "build", "*", "apps", "ebla")))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    fail("no ebla command: build it (cmake --build <build dir> --target ebla_cli) or pass --ebla")


def generated_problems(where):
    """(name, A) of HPCCG 20^3 and diffusion 20^3 from ebla's Python module, or [] without it."""
    ebla, error = ebla_module("bench_petsc_pc.py", where, ROOT)
    if ebla is None:
        print(f"(HPCCG and diffusion left out: ebla's Python module does not import: {error})", file=sys.stderr)
        return []
    return [("HPCCG 20^3", ebla.hpccg_problem(20, 20, 20)[0].tocsr()),
            ("diffusion 20^3", ebla.diffusion_problem(20, 20, 20, 1)[0].tocsr())]


def petsc_runs(PETSc, A, b, rtol, alpha, blocks):
    """(pc, label, run) for each PETSc solver; run() returns (iterations, x, seconds, note).
    alpha: ebla's IC(0) shift, for a PCICC of A + alpha diag(A) (where alpha > 0); blocks:
    ebla's block-Jacobi's count."""
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
    bjacobi = {"pc_type": "bjacobi", "pc_bjacobi_blocks": blocks, "sub_ksp_type": "preonly",
               "sub_pc_type": "cholesky"}

    def icc(shift):  # IC(0) in natural order
        return {"pc_type": "icc", "pc_factor_levels": 0, "pc_factor_mat_ordering_type": "natural",
                "pc_factor_shift_type": shift}

    return [("none", "PETSc PCNONE", solver("none_", {"pc_type": "none"})),
            ("jacobi", "PETSc PCJACOBI", solver("jac_", {"pc_type": "jacobi"})),
            ("block-jacobi", f"PETSc PCBJACOBI ({blocks} blocks, Cholesky)", solver("bjac_", bjacobi)),
            ("sgs", "PETSc PCSOR (SSOR, natural order)", solver("sor_", sor)),
            ("ic0", "PETSc PCICC(0), positive_definite shift", solver("iccpd_", icc("positive_definite"))),
            ("ic0 no shift", "PETSc PCICC(0), no shift", solver("iccnone_", icc("none")))] + \
        ([("ic0 of A + alpha diag(A)", f"PETSc PCICC(0) of A + {alpha:g} diag(A)",
           solver("iccalpha_", icc("none"), shifted))] if alpha > 0 else [])


def ebla_cg(ebla, matrix, rhs, rtol, pc, auto, threads, repeat=1):
    extra = []
    if auto:
        extra = ["--qdot-tol", "auto"] + (["--storage", "auto"] if pc in ("none", "jacobi") else []) + \
            (["--pc-storage", "auto"] if pc == "block-jacobi" else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    return subprocess.run([ebla, "cg", "--matrix", matrix, "--rhs", rhs, "--norm", "relative", "--tol", repr(rtol),
                           "--pc", pc, "--max-iter", "100000", "--progress", "0", "--repeat", str(repeat), "--json"] +
                          extra,
                          capture_output=True, text=True, env=env)


def ebla_json(ebla, matrix, rhs, rtol, pc):
    out = ebla_cg(ebla, matrix, rhs, rtol, pc, False, 1)
    if out.returncode not in (0, 1):
        fail(f"ebla cg --pc {pc} on {matrix}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ebla_runs(ebla, matrix, rhs, rtol, threads, reps):
    def solver(pc, auto, t):
        def run():
            out = ebla_cg(ebla, matrix, rhs, rtol, pc, auto, t, reps)
            if out.returncode not in (0, 1):
                return None, None, None, f"exit {out.returncode}: {out.stderr.strip()}"
            r = json.loads(out.stdout.strip().splitlines()[-1])
            note = {"sgs": lambda: f"{int(r['pc_colours'])} colours",
                    "ic0": lambda: f"shift {r['pc_shift']:g} after {int(r['pc_restarts'])} restarts, "
                                   f"{int(r['pc_levels'])} levels",
                    "block-jacobi": lambda: f"{int(r['pc_blocks'])} blocks, {r['pc_bytes']:.0f} of "
                                            f"{r['pc_binary64_bytes']:.0f} bytes",
                    "jacobi": lambda: "", "none": lambda: ""}[pc]()
            if r["status"] != "converged":
                note += f"; {r['status']}"
            # ebla certifies its own true residual (double-double); relative to ||b|| here
            seconds = r.get("repeat_iteration_seconds", [r["iteration_seconds"]])
            return int(r["iterations"]), r["true_residual"], statistics.median(seconds), note
        return run
    return [(pc, "auto" if auto else "exact", t, f"ebla --pc {pc}{' auto' if auto else ''}, {t} thread{'s' * (t > 1)}",
             solver(pc, auto, t)) for pc in PCS for auto in (False, True) for t in threads]


def measure(run, reps):
    """The median over reps of run()'s seconds, with its last iterations, x (or ebla's true
    residual) and note; None for the iterations where it failed."""
    seconds = []
    for _ in range(reps):
        its, x, s, note = run()
        if its is None:
            return None, None, None, note
        seconds.append(s)
    return its, x, statistics.median(seconds), note


def markdown(rows, threads):
    """The tables of docs/solvers.md: iterations of every solver, and seconds of the matching
    pairs at one thread (ebla at each thread count beside PETSc's one process)."""
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    get = {(r["problem"], r["solver"], r["pc"], r["mode"], r["threads"]): r for r in rows}

    def its(p, solver, pc, mode="exact", t=1):
        r = get.get((p, solver, pc, mode, t))
        if r is None or r["iterations"] is None:
            return "-"
        return f"{r['iterations']}" + ("" if r["converged"] else " (nc)")

    n = {r["problem"]: r["n"] for r in rows}
    print("| matrix | n | " + " | ".join(PCS) + " | auto: " + " | ".join(PCS) + " | PETSc: " +
          " | ".join(PETSC_MATCH[pc] for pc in PCS) + " |")
    print("|---" * (2 + 3 * len(PCS)) + "|")
    for p in problems:
        print(f"| {p} | {n[p]} | " + " | ".join(its(p, "ebla", pc) for pc in PCS) + " | " +
              " | ".join(its(p, "ebla", pc, "auto") for pc in PCS) + " | " +
              " | ".join(its(p, "petsc", pc) for pc in PCS) + " |")
    print()

    def seconds(p, solver, pc, mode="exact", t=1):
        r = get.get((p, solver, pc, mode, t))
        return r["seconds"] if r is not None and r["seconds"] is not None else None

    header = "| matrix | " + " | ".join(f"{pc}: PETSc s, ebla/PETSc speed" +
                                          "".join(f", {t} thr." for t in threads) for pc in PCS) + " |"
    print(header)
    print("|---" * (1 + len(PCS)) + "|")
    for p in problems:
        cells = []
        for pc in PCS:
            base = seconds(p, "petsc", pc)
            if base is None:
                cells.append("-")
                continue
            speeds = []
            for t in threads:
                s = seconds(p, "ebla", pc, "exact", t)
                speeds.append(f"{base / s:.2f}x" if s else "-")
            cells.append(f"{base:.2g}: " + ", ".join(speeds))
        print(f"| {p} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("matrices", nargs="*", help="Matrix Market files (default: the set of data/matrices)")
    parser.add_argument("--ebla", default=None, help="the ebla command (default: build/*/apps/ebla)")
    parser.add_argument("--ebla-python", default=None, help="the directory of ebla's Python package (HPCCG, diffusion)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of every solver (default 3)")
    parser.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance (default 1e-8)")
    parser.add_argument("--threads", default="1,2", help="ebla's thread counts (default 1,2)")
    parser.add_argument("--json-out", default=None, help="write every row to this JSON file")
    parser.add_argument("--markdown", action="store_true", help="print the tables of docs/solvers.md at the end")
    args = parser.parse_args()
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads {args.threads}: not a list of thread counts")
    if args.reps < 1 or not args.rtol > 0 or min(threads) < 1:
        parser.error("--reps and every thread count must be at least 1, --rtol positive")
    PETSc = import_petsc("bench_petsc_pc.py")
    ebla = find_ebla(args.ebla)
    import numpy as np
    import scipy.io
    import scipy.sparse

    def read(path):
        A = scipy.sparse.csr_matrix(scipy.io.mmread(path), dtype=np.float64)
        A.sort_indices()
        return A

    problems = [(os.path.splitext(os.path.basename(p))[0], p, None) for p in (args.matrices or MATRICES)]
    if not args.matrices:
        problems += [(name, None, A) for name, A in generated_problems(args.ebla_python)]

    print(f"PETSc {'.'.join(map(str, PETSc.Sys.getVersion()))}, ebla {ebla}, ||r_k|| <= {args.rtol:g} ||b||, "
          f"b = A 1, x0 = 0, medians of {args.reps}; PETSc one process, ebla {args.threads} threads")
    print(f"{'matrix':<15} {'solver':<48} {'iterations':>10} {'true rel. res.':>15} {'seconds':>9} {'ms/iter':>8}  note")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, A in problems:
            if A is None:
                A = read(path)
            else:
                path = os.path.join(tmp, name.replace(" ", "_").replace("^", "") + ".mtx")
                scipy.io.mmwrite(path, A, precision=17, symmetry="symmetric")
            b = np.ascontiguousarray(A @ np.ones(A.shape[0]))
            rhs = os.path.join(tmp, "b.mtx")
            scipy.io.mmwrite(rhs, b.reshape(-1, 1), precision=17)
            b_norm = float(np.linalg.norm(b))
            alpha = float(ebla_json(ebla, path, rhs, args.rtol, "ic0")["pc_shift"])
            blocks = int(ebla_json(ebla, path, rhs, args.rtol, "block-jacobi")["pc_blocks"])
            solvers = [("petsc", pc, "exact", 1, label, run)
                       for pc, label, run in petsc_runs(PETSc, A, b, args.rtol, alpha, blocks)]
            solvers += [("ebla",) + s for s in ebla_runs(ebla, path, rhs, args.rtol, threads, args.reps)]
            for solver, pc, mode, t, label, run in solvers:
                # ebla's run is one process with --repeat reps
                its, x, median, note = measure(run, args.reps if solver == "petsc" else 1)
                if its is None:
                    res = None
                elif solver == "petsc":
                    res = float(np.linalg.norm(b - A @ x)) / b_norm
                else:
                    res = x / b_norm
                converged = its is not None and not note.endswith(("unconfirmed", "max_iterations", "breakdown")) \
                    and "not converged" not in note
                rows.append({"problem": name, "n": A.shape[0], "nnz": A.nnz, "solver": solver, "pc": pc,
                             "mode": mode, "threads": t, "label": label, "iterations": its, "converged": converged,
                             "relative_true_residual": res, "seconds": median, "note": note})
                if its is None:
                    print(f"{name:<15} {label:<48} {'-':>10} {'-':>15} {'-':>9} {'-':>8}  {note}")
                    continue
                per_iteration = f"{1e3 * median / its:.4f}" if its else "-"
                print(f"{name:<15} {label:<48} {its:>10} {res:>15.2e} {median:>9.4f} {per_iteration:>8}  {note}",
                      flush=True)
    if args.json_out:
        with open(args.json_out + ".tmp", "w") as f:
            json.dump({"rtol": args.rtol, "reps": args.reps, "threads": threads, "rows": rows}, f, indent=1)
        os.replace(args.json_out + ".tmp", args.json_out)
    if args.markdown:
        print()
        markdown(rows, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())

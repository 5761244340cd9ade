#!/usr/bin/env python3
"""Draws iterations and time per preconditioner, ebla against PETSc, from bench_petsc_pc.py's JSON.

    /usr/bin/python3 apps/bench/bench_petsc_pc.py --json-out pc.json
    /usr/bin/python3 apps/plot_preconditioners.py pc.json --out preconditioners.png

Left: each problem and preconditioner is a point at (PETSc's iterations with the matching
preconditioner, ebla's iterations), filled for ebla's exact run and hollow for its automatic
one; on the diagonal both take as many. Right: each pair at (PETSc's seconds, PETSc's seconds
over ebla's exact run's), one colour per thread count of ebla: above 1, ebla is faster.
Needs matplotlib (Debian: python3-matplotlib); run with /usr/bin/python3.
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
except ImportError as e:  # the usual cause: a Python without the Debian packages
    sys.exit(f"plot_preconditioners.py: {e}; install python3-matplotlib and run with /usr/bin/python3")

PCS = ("none", "jacobi", "block-jacobi", "sgs", "ic0")
MARKERS = {"none": "o", "jacobi": "s", "block-jacobi": "D", "sgs": "^", "ic0": "v"}
PETSC_NAMES = {"none": "PCNONE", "jacobi": "PCJACOBI", "block-jacobi": "PCBJACOBI", "sgs": "PCSOR (SSOR)",
               "ic0": "PCICC(0)"}
COLORS = ["#1f3b73", "#e67e22", "#27ae60", "#8e44ad"]


class PlotError(Exception):
    """A file that lacks what the figure needs: reported without a traceback."""


def read_rows(path):
    """The rows of one bench_petsc_pc.py --json-out file, keyed (problem, solver, pc, mode, threads)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise PlotError(f"{path}: {e}")
    if not isinstance(data, dict) or "rows" not in data:
        raise PlotError(f"{path}: no 'rows' list (not bench_petsc_pc.py --json-out output)")
    rows = {}
    for r in data["rows"]:
        try:
            rows[(r["problem"], r["solver"], r["pc"], r["mode"], int(r["threads"]))] = r
        except (KeyError, TypeError, ValueError) as e:
            raise PlotError(f"{path}: a row without {e}: {r}")
    return rows


def usable(r):
    return r is not None and r.get("iterations") and r.get("converged") and r.get("seconds")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="bench_petsc_pc.py --json-out file")
    parser.add_argument("--out", default="preconditioners.png")
    args = parser.parse_args()
    try:
        rows = read_rows(args.file)
    except PlotError as e:
        sys.exit(f"plot_preconditioners.py: {e}")
    problems = list(dict.fromkeys(key[0] for key in rows))
    threads = sorted({key[4] for key in rows if key[1] == "ebla"})
    fig, (its_ax, time_ax) = plt.subplots(1, 2, figsize=(11, 4.6))
    drawn, low, high = 0, float("inf"), 0
    for pc in PCS:
        for mode, face in (("exact", None), ("auto", "none")):
            points = [(rows[(p, "petsc", pc, "exact", 1)]["iterations"], rows[(p, "ebla", pc, mode, 1)]["iterations"])
                      for p in problems
                      if usable(rows.get((p, "petsc", pc, "exact", 1))) and usable(rows.get((p, "ebla", pc, mode, 1)))]
            if not points:
                continue
            x, y = zip(*points)
            low, high = min(low, *x, *y), max(high, *x, *y)
            its_ax.scatter(x, y, marker=MARKERS[pc], s=34, color=COLORS[PCS.index(pc) % len(COLORS)]
                           if face is None else "none", edgecolors=COLORS[PCS.index(pc) % len(COLORS)],
                           label=f"{pc} ({mode}) vs {PETSC_NAMES[pc]}")
            drawn += len(points)
        for t, color in zip(threads, COLORS):
            points = [(rows[(p, "petsc", pc, "exact", 1)]["seconds"],
                       rows[(p, "petsc", pc, "exact", 1)]["seconds"] / rows[(p, "ebla", pc, "exact", t)]["seconds"])
                      for p in problems
                      if usable(rows.get((p, "petsc", pc, "exact", 1))) and usable(rows.get((p, "ebla", pc, "exact", t)))]
            if points:
                x, y = zip(*points)
                time_ax.scatter(x, y, marker=MARKERS[pc], s=34, color=color,
                                label=f"{pc}, {t} thread{'s' * (t > 1)}")
    if drawn == 0:
        sys.exit(f"plot_preconditioners.py: {args.file}: no problem has a converged run of ebla and of PETSc "
                 "with the same preconditioner")
    its_ax.plot([low, high], [low, high], color="grey", linewidth=0.8, linestyle="--")
    its_ax.set(xscale="log", yscale="log", xlabel="PETSc KSPCG iterations", ylabel="ebla cg iterations",
               title="Iterations to ||r|| <= rtol ||b|| (filled: exact, hollow: auto)")
    its_ax.legend(fontsize=6.5, ncol=2)
    time_ax.axhline(1, color="grey", linewidth=0.8, linestyle="--")
    time_ax.set(xscale="log", yscale="log", xlabel="PETSc seconds (KSPSolve, one process)",
                ylabel="PETSc seconds / ebla seconds (exact)", title="Speed against PETSc, same preconditioner")
    time_ax.legend(fontsize=6.5, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out + ".tmp.png", dpi=110)
    os.replace(args.out + ".tmp.png", args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

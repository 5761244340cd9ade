#!/usr/bin/env python3
"""Draws the solver figures of Diffenderfer et al. (sections 4.2-4.3) from `ebla cg` and `ebla power` HDF5 files.

    ebla cg --nx 100 --ny 100 --nz 1 --sweep-qdot-tol 1e-16:1e3 -o cg_sweep.h5
    plot_solvers.py cg cg_sweep.h5 --out cg_fig4.png          # Fig. 4: precision per iteration
    ebla cg --nx 100 --ny 100 --nz 1 --qdot-tol 1 --levels -o cg_levels.h5
    plot_solvers.py levels cg_levels.h5 --out cg_fig5.png     # Fig. 5: maps on the mesh
    ebla power --n 1e4 --sweep-qdot-tol 1e-16:1e3 -o power_sweep.h5
    plot_solvers.py power power_sweep.h5 --out power_fig6.png # Figs. 6-7
    ebla cg --experiment auto -o cg_auto.h5
    plot_solvers.py auto cg_auto.h5 --out cg_auto.png         # auto against fixed tolerances

cg      the percentage of components at each rung of the ladder, per iteration, for r^T r and
        p^T q (stacked bars). A single-run file, or a sweep file: the run of --tol, by default
        the largest tolerance that kept exact CG's iteration count (as in the seed).
levels  the rung of every component of r^T r and p^T q on the nx x ny mesh (a z-slice of it)
        at a few iterations: an `ebla cg --levels` file of an hpccg or diffusion problem.
auto    an `ebla cg|power --experiment auto` file: per problem, the residual histories (power
        method: |lambda_k - lambda_PM,k|) of exact, the best fixed tolerance and auto, and the
        qdot tolerance auto chose for each dot product per iteration.
power   a power sweep file: (a) APM iterations vs qdot tolerance, PM's as a line; (b)
        |lambda - lambda_PM| vs tolerance with tau; (c, d) the rungs of y^T y and x^T y per
        iteration at the largest tolerance whose eigenvalue is within tau of PM's (or --tol).

Needs h5py and matplotlib (Debian: python3-h5py, python3-matplotlib). The file layout is in
docs/solver-output.md.
"""
import argparse
import sys

try:
    import h5py
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap, BoundaryNorm
    from matplotlib.patches import Patch
    import numpy as np
except ImportError as e:  # the usual cause: a Python without the Debian packages
    sys.exit(f"plot_solvers.py: {e}; install python3-h5py and python3-matplotlib "
             f"(scripts/setup.sh) and run with /usr/bin/python3")

# One colour per rung name, the same in every figure; formats not listed get grey shades.
RUNG_COLORS = {"binary64": "#1f3b73", "binary32": "#2e86c1", "tf32": "#48c9b0", "bfloat16": "#f5b041",
               "binary16": "#f39c12", "fp8_e4m3": "#e74c3c", "fp8_e5m2": "#c0392b", "perforate": "#bdbdbd"}
ZERO_COLOR = "#ffffff"  # zero products (no bin), and "no dot product"


class PlotError(Exception):
    """A file that lacks what the figure needs: reported without a traceback."""


def text(value):
    """An HDF5 string attribute as str (h5py may return bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def rung_names(obj):
    return text(obj.attrs["rungs"]).split(",")


def rung_color(name, index):
    return RUNG_COLORS.get(name, str(0.25 + 0.15 * (index % 4)))


def save(fig, path):
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path}")


def require(group, names, path):
    missing = [n for n in names if n not in group]
    if missing:
        raise PlotError(f"{path}: {group.name} has no {', '.join(missing)} "
                        f"(is this an `ebla cg`/`ebla power` --output file of the right kind?)")


def run_group(f, path, tol, default_attr):
    """The group holding one run: the root of a single-run file, or a sweep's group for `tol`
    (default: the tolerance in the root attribute `default_attr`)."""
    if text(f.attrs.get("mode", "run")) != "sweep":
        return f, None
    if tol is None:
        tol = float(f.attrs.get(default_attr, float("nan")))
        if not np.isfinite(tol):
            tol = float(f["tolerance"][()].min())
    for name in text(f.attrs["groups"]).split(","):
        if np.isclose(float(f[name].attrs["qdot_tolerance"]), tol, rtol=1e-9, atol=0):
            return f[name], tol
    raise PlotError(f"{path}: no run at qdot tolerance {tol:g} (tolerances: "
                    f"{', '.join(f'{t:g}' for t in f['tolerance'][()])})")


def stacked_percentages(ax, fractions, zero, rungs, first_iteration, title):
    """Stacked bars: percentage of components per rung at each iteration (Fig. 4)."""
    percent = 100 * np.nan_to_num(fractions, nan=0.0)
    iterations = np.arange(first_iteration, first_iteration + len(percent))
    bottom = np.zeros(len(percent))
    for j, name in enumerate(rungs):
        ax.bar(iterations, percent[:, j], width=1.0, bottom=bottom, color=rung_color(name, j),
               label=name, linewidth=0)
        bottom += percent[:, j]
    zero_percent = 100 * np.nan_to_num(zero, nan=0.0)
    if zero_percent.any():
        ax.bar(iterations, zero_percent, width=1.0, bottom=bottom, color=ZERO_COLOR, edgecolor="#888888",
               linewidth=0.3, label="zero product")
    ax.set_xlim(iterations[0] - 0.5 if len(iterations) else 0, iterations[-1] + 0.5 if len(iterations) else 1)
    ax.set_ylim(0, 100)
    ax.set_xlabel("iteration")
    ax.set_ylabel("% of components")
    ax.set_title(title)


def describe(root, group):
    a = root.attrs
    return (f"{text(a['problem_description'])}, n = {int(a['n'])}; dots {text(group.attrs['dot_policy'])}; "
            f"{int(group.attrs['iterations'])} iterations, {text(group.attrs['status'])}; "
            f"ebla {text(a['ebla_version'])}")


# ---- cg: Fig. 4 ------------------------------------------------------------------------

def plot_cg(path, out, tol):
    with h5py.File(path, "r") as f:
        if text(f.attrs.get("creator", "")) != "ebla cg":
            raise PlotError(f"{path}: not an `ebla cg` file")
        g, chosen = run_group(f, path, tol, "largest_tolerance_same_iterations")
        require(g, ["rr_fraction", "pq_fraction"], path)
        rungs = rung_names(g["rr_fraction"])
        rr_label = "r^T z" if int(f.attrs["jacobi"]) else "r^T r"
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True, constrained_layout=True)
        stacked_percentages(axes[0], g["rr_fraction"][()], g["rr_zero_fraction"][()], rungs, 1,
                            f"qdot({rr_label}), line 10 of Algorithm 4.1")
        stacked_percentages(axes[1], g["pq_fraction"][()], g["pq_zero_fraction"][()], rungs, 1,
                            "qdot(p^T A p), line 7 of Algorithm 4.1")
        axes[1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
        how = ""
        if chosen is not None:
            how = (f"\ntolerance {chosen:g}: the largest that kept exact CG's "
                   f"{int(f.attrs['reference_iterations'])} iterations" if tol is None else f"\ntolerance {chosen:g}")
        fig.suptitle(f"Rungs used by qdot at each iteration of ACG (Diffenderfer et al., Fig. 4){how}\n{describe(f, g)}",
                     fontsize=10)
        save(fig, out)


# ---- levels: Fig. 5 ----------------------------------------------------------------------

def pick_iterations(count, wanted, how_many):
    if wanted:
        bad = [k for k in wanted if not 1 <= k <= count]
        if bad:
            raise PlotError(f"iterations {bad} are outside 1..{count}")
        return wanted
    return sorted(set(np.linspace(1, count, num=min(how_many, count)).round().astype(int).tolist()))


def level_colormap(rungs):
    """Codes 0..len(rungs)-1 in rung colours, 255 (zero product) white."""
    colors = [rung_color(name, j) for j, name in enumerate(rungs)] + [ZERO_COLOR]
    codes = list(range(len(rungs))) + [255]
    bounds = [c - 0.5 for c in codes] + [255.5]
    return ListedColormap(colors), BoundaryNorm(bounds, len(colors)), codes


def plot_levels(path, out, tol, iterations, columns, z):
    with h5py.File(path, "r") as f:
        g, chosen = run_group(f, path, tol, "largest_tolerance_same_iterations")
        require(g, ["rr_levels", "pq_levels"], path)
        if text(f.attrs.get("problem", "")) not in ("hpccg", "diffusion"):
            raise PlotError(f"{path}: the maps need the mesh of an hpccg or diffusion problem (this is "
                            f"{text(f.attrs.get('problem', '?'))})")
        nx, ny, nz = (int(f.attrs[k]) for k in ("nx", "ny", "nz"))
        if not 0 <= z < nz:
            raise PlotError(f"--z {z} is outside 0..{nz - 1}")
        rungs = rung_names(g["rr_levels"])
        cmap, norm, codes = level_colormap(rungs)
        rr, pq = g["rr_levels"], g["pq_levels"]
        if rr.shape[0] == 0:
            raise PlotError(f"{path}: the run has no iterations")
        ks = pick_iterations(rr.shape[0], iterations, columns)
        rr_label = "r^T z" if int(f.attrs["jacobi"]) else "r^T r"
        fig, axes = plt.subplots(2, len(ks), figsize=(2.6 * len(ks) + 1.5, 5.6), squeeze=False,
                                 constrained_layout=True)
        for row, (maps, label) in enumerate(((rr, rr_label), (pq, "p^T A p"))):
            for col, k in enumerate(ks):
                ax = axes[row][col]
                mesh = maps[k - 1].reshape(nz, ny, nx)[z]
                ax.imshow(mesh, cmap=cmap, norm=norm, origin="lower", interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"{label}, iteration {k}", fontsize=9)
        handles = [Patch(facecolor=cmap.colors[i], edgecolor="#888888", label=name)
                   for i, name in enumerate(rungs + ["zero product"])]
        axes[0][-1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.05, 1.0), fontsize=9)
        where = f"z = {z} of a {nx} x {ny} x {nz} mesh" if nz > 1 else f"the {nx} x {ny} mesh"
        fig.suptitle(f"Rung of each component of the qdot calls of ACG on {where} (Diffenderfer et al., Fig. 5)"
                     f"{'' if chosen is None else f', tolerance {chosen:g}'}\n{describe(f, g)}", fontsize=10)
        save(fig, out)


# ---- power: Figs. 6-7 --------------------------------------------------------------------

def plot_power(path, out, tol):
    with h5py.File(path, "r") as f:
        if text(f.attrs.get("creator", "")) != "ebla power" or text(f.attrs.get("mode", "")) != "sweep":
            raise PlotError(f"{path}: not an `ebla power --sweep-qdot-tol` file")
        require(f, ["tolerance", "iterations", "eigenvalue_error", "status"], path)
        a = f.attrs
        tolerances, iterations = f["tolerance"][()], f["iterations"][()]
        error, status = f["eigenvalue_error"][()], f["status"][()]
        tau = float(a["tolerance"])
        fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), constrained_layout=True)
        ax = axes[0][0]
        converged = status == 0
        ax.plot(tolerances, iterations, "-", color="#2e86c1", lw=1)
        ax.plot(tolerances[converged], iterations[converged], "o", color="#2e86c1", label="APM, converged")
        ax.plot(tolerances[~converged], iterations[~converged], "x", color="#c0392b", ms=8,
                label="APM, not converged (max iterations or breakdown)")
        ax.axhline(int(a["reference_iterations"]), color="k", ls="--", lw=1, label="PM (double)")
        ax.set_xscale("log")
        ax.set_xlabel("qdot tolerance")
        ax.set_ylabel("iterations")
        ax.set_title("(a) iterations")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)

        ax = axes[0][1]
        floor = np.where(error > 0, error, np.nan)
        ax.plot(tolerances, floor, "-o", color="#2e86c1", label="|lambda_APM - lambda_PM|")
        if (error == 0).any():
            ax.plot(tolerances[error == 0], np.full((error == 0).sum(), np.nanmin(floor) if np.isfinite(floor).any()
                                                    else tau), "v", color="#1f3b73", label="0 (same value)")
        ax.axhline(tau, color="k", ls="--", lw=1, label=f"tau = {tau:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("qdot tolerance")
        ax.set_ylabel("|lambda - lambda_PM|")
        ax.set_title("(b) eigenvalue difference from PM")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)

        g, chosen = run_group(f, path, tol, "largest_tolerance_within_tau")
        rungs = rung_names(g["xy_fraction"])
        stacked_percentages(axes[1][0], g["yy_fraction"][()][1:], g["yy_zero_fraction"][()][1:], rungs, 1,
                            f"(c) qdot(y^T y) at tolerance {chosen:g}")
        stacked_percentages(axes[1][1], g["xy_fraction"][()], g["xy_zero_fraction"][()], rungs, 0,
                            f"(d) qdot(x^T y) at tolerance {chosen:g}")
        axes[1][1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
        fig.suptitle(f"Approximate power method vs double-precision PM (Diffenderfer et al., Figs. 6-7): "
                     f"{text(a['problem_description'])}, n = {int(a['n'])}\n"
                     f"PM: {int(a['reference_iterations'])} iterations, "
                     f"lambda = {float(a['reference_eigenvalue']):.12g}; "
                     f"tau = {tau:g}, qdot policy {text(a['qdot_policy'])}; ebla {text(a['ebla_version'])}",
                     fontsize=10)
        save(fig, out)


def best_fixed(g):
    """The sweep group to compare auto with: the best fixed tolerance with the reference's
    iteration count, else the one with at most auto's iterations, else None."""
    for key in ("best_fixed_same_iterations", "best_fixed_within_auto_iterations"):
        tol = float(g.attrs.get(key, float("nan")))
        if np.isfinite(tol):
            for name in text(g.attrs["groups"]).split(","):  # qdot_tol_1e-06 and the like
                if name.startswith("qdot_tol_") and abs(float(name[len("qdot_tol_"):]) - tol) <= 1e-9 * tol:
                    return name, tol, key
    return None, None, None


def tolerance_panel(ax, series, fixed_tol, title):
    """The qdot tolerance of each dot product per iteration (exact calls drawn at the bottom)."""
    positive = [t[np.isfinite(t) & (t > 0)] for _, t in series]
    floor = min([p.min() for p in positive if p.size] + [fixed_tol or 1.0]) / 10
    for (label, t), marker in zip(series, ("o", "s")):
        k = np.arange(len(t))
        ok = np.isfinite(t)
        shown = np.where(t > 0, t, floor)
        ax.plot(k[ok], shown[ok], marker, ms=2.5, label=label)
    if fixed_tol:
        ax.axhline(fixed_tol, color="k", ls="--", lw=1, label=f"best fixed tolerance {fixed_tol:g}")
    ax.axhline(floor, color="#999999", ls=":", lw=1, label="exact dot product")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("qdot tolerance")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def plot_auto(path, out):
    with h5py.File(path, "r") as f:
        if text(f.attrs.get("mode", "")) != "experiment_auto":
            raise PlotError(f"{path}: not an `ebla cg|power --experiment auto` file")
        groups = [n for n in text(f.attrs["groups"]).split(",") if n]
        creator = text(f[groups[0]].attrs.get("creator", "")) if groups else ""
        power = creator == "ebla power"
        fig, axes = plt.subplots(len(groups), 2, figsize=(12, 3.2 * len(groups)), constrained_layout=True,
                                 squeeze=False)
        for row, name in enumerate(groups):
            g = f[name]
            require(g, ["exact", "auto"], path)
            fixed_name, fixed_tol, how = best_fixed(g)
            title = text(g.attrs["name"])
            ax = axes[row][0]
            runs = [("exact", g["exact"]), ("auto", g["auto"])]
            if fixed_name:
                runs.insert(1, (f"fixed {fixed_tol:g}" + (" (same count)" if how.endswith("same_iterations") else ""),
                                g[fixed_name]))
            if power:
                reference = g["exact"]["eigenvalue"][()]
                for label, run in runs[1:]:
                    lam = run["eigenvalue"][()]
                    m = min(len(lam), len(reference))
                    diff = np.abs(lam[:m] - reference[:m])
                    ax.plot(np.arange(m), np.where(diff > 0, diff, np.nan), lw=1,  # equal values: no point
                            label=f"{label}: {int(run.attrs['iterations'])} iterations")
                tau = float(g.attrs["tolerance"])
                ax.axhline(tau, color="k", ls="--", lw=1, label=f"tau = {tau:g}")
                ax.set_ylabel("|lambda_k - lambda_PM,k|")
                ax.set_title(f"{title}: eigenvalue estimate against PM's "
                             f"({int(g['exact'].attrs['iterations'])} iterations)", fontsize=9)
            else:
                for label, run in runs:
                    ax.plot(run["residual"][()], lw=1, label=f"{label}: {int(run.attrs['iterations'])} iterations")
                ax.axhline(float(g["exact"].attrs["tolerance_used"]), color="k", ls="--", lw=1, label="tau")
                ax.set_ylabel("||r_k||")
                ax.set_title(f"{title}: residual histories", fontsize=9)
            ax.set_yscale("log")
            ax.set_xlabel("iteration")
            ax.legend(fontsize=7)
            ax.grid(True, which="both", alpha=0.3)
            a = g["auto"]
            series = ([("y^T y", a["yy_tolerance"][()]), ("x^T A x", a["xy_tolerance"][()])] if power else
                      [("r^T z" if int(g.attrs["jacobi"]) else "r^T r", a["rr_tolerance"][()]),
                       ("p^T q", a["pq_tolerance"][()])])
            tolerance_panel(axes[row][1], series, fixed_tol, f"{title}: the tolerance auto chose")
        version = text(f[groups[0]].attrs.get("ebla_version", "")) if groups else ""
        fig.suptitle(f"`{creator} --experiment auto`: exact, the best fixed tolerance and auto; ebla {version}",
                     fontsize=10)
        save(fig, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="figure", required=True)
    for name, what in (("cg", "Fig. 4"), ("levels", "Fig. 5"), ("power", "Figs. 6-7")):
        p = sub.add_parser(name, help=f"Diffenderfer et al. {what}")
        p.add_argument("file", help="HDF5 file written by ebla cg / ebla power --output")
        p.add_argument("--out", "-o", required=True, help="the PNG file to write")
        p.add_argument("--tol", type=float, help="in a sweep file: the run at this qdot tolerance")
        if name == "levels":
            p.add_argument("--iterations", type=int, nargs="+", help="iterations to show (default: 6, evenly spaced)")
            p.add_argument("--columns", type=int, default=6, help="number of iterations shown by default")
            p.add_argument("--z", type=int, default=0, help="the z-slice of a 3-D mesh")
    p = sub.add_parser("auto", help="--experiment auto: residual (or eigenvalue) histories and the chosen tolerances")
    p.add_argument("file", help="HDF5 file written by ebla cg|power --experiment auto --output")
    p.add_argument("--out", "-o", required=True, help="the PNG file to write")
    args = parser.parse_args()
    try:
        if args.figure == "cg":
            plot_cg(args.file, args.out, args.tol)
        elif args.figure == "auto":
            plot_auto(args.file, args.out)
        elif args.figure == "levels":
            plot_levels(args.file, args.out, args.tol, args.iterations, args.columns, args.z)
        else:
            plot_power(args.file, args.out, args.tol)
    except (PlotError, OSError, KeyError) as e:
        sys.exit(f"plot_solvers.py: {e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws the qdot figures of Diffenderfer et al. (section 4.1) from `ebla qdot --output` HDF5 files.

    ebla qdot --experiment tightness -o tightness.h5
    ebla qdot --experiment effectiveness -o effectiveness.h5
    ebla qdot --experiment speedup -o speedup.h5
    python3 apps/plot_qdot.py tightness.h5 effectiveness.h5 speedup.h5 -o figures/

Writes, for each experiment found in the files:
  qdot_fig1_tightness.png      box plots of bound/|x^T y| - relerr per n (A and B)
  qdot_fig2_effectiveness.png  relerr vs tolerance: mean line, min..max shading, tolerance dashed
  qdot_fig3_speedup.png        speedup t_dot / t_compute vs tolerance (mean, min..max)
  qdot_efficiency.png          efficiency t_dot / (t_select + t_dot) vs tolerance

Needs h5py and matplotlib (Debian: python3-h5py, python3-matplotlib).
"""
import argparse
import os
import sys

try:
    import h5py
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as e:  # the usual cause: a Python without the Debian packages
    sys.exit(f"plot_qdot.py: {e}; install python3-h5py and python3-matplotlib "
             f"(scripts/setup.sh) and run with /usr/bin/python3")


def text(value):
    """An HDF5 string attribute as str (h5py may return bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def distributions(group):
    """The distribution subgroups (A, B) of an experiment group, in order."""
    return [(name, group[name]) for name in sorted(group) if isinstance(group[name], h5py.Group)]


def describe(group):
    """One line of the run's parameters for figure titles."""
    a = group.attrs
    return (f"policy {text(a['policy'])}, {text(a['input'])} input, "
            f"{int(a['samples'])} samples per point, ebla {text(a['ebla_version'])}")


def save(fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path}")


def plot_tightness(group, outdir):
    """Fig. 1: box plots of the gap bound/|x^T y| - relerr over all t and samples, per n."""
    dists = distributions(group)
    fig, axes = plt.subplots(1, len(dists), figsize=(5.5 * len(dists), 4.4), squeeze=False,
                             constrained_layout=True)
    for ax, (name, g) in zip(axes[0], dists):
        n = g["n"][()]
        gap = g["gap_samples"][()]
        sizes = sorted(set(n.tolist()))
        data = [gap[n == size].ravel() for size in sizes]
        ax.boxplot(data, whis=(0, 100))  # whiskers at min and max: every sample is shown
        ax.set_xticks(range(1, len(sizes) + 1))
        ax.set_xticklabels([f"1e{int(round(np.log10(s)))}" if s > 0 and np.log10(s).is_integer()
                            else str(s) for s in sizes])
        low, high = min(d.min() for d in data), max(d.max() for d in data)
        if low > 0 and high / low > 30:  # a log axis only where the gaps span decades
            ax.set_yscale("log")
        ts = g.attrs["t_values"]
        ax.set_title(f"distribution {name}, t = {ts.min():g}..{ts.max():g} ({len(ts)} values)")
        ax.set_xlabel("n")
        ax.set_ylabel("bound/|x^T y| - relerr")
        ax.grid(True, which="both", alpha=0.3)
    tol = ", ".join(f"{t:g}" for t in group.attrs["tolerances"])
    fig.suptitle(f"qdot bound tightness (Diffenderfer et al., Fig. 1): tolerance {tol}; "
                 f"boxes: quartiles, whiskers: min..max\n{describe(group)}")
    save(fig, outdir, "qdot_fig1_tightness.png")


def by_t_and_n(g):
    """Yields (t, n, row mask) for every (t, n) in the group, sorted."""
    t, n = g["t"][()], g["n"][()]
    for tv in sorted(set(t.tolist())):
        for nv in sorted(set(n.tolist())):
            mask = (t == tv) & (n == nv)
            if mask.any():
                yield tv, nv, mask


def plot_series(group, outdir, series, ylabel, title, filename, log_y, tolerance_line=False, ones_line=False):
    """One panel per (distribution, t): series mean vs tolerance per n, min..max shaded."""
    dists = distributions(group)
    ts = sorted({tv for _, g in dists for tv in g["t"][()].tolist()})
    fig, axes = plt.subplots(len(dists), len(ts), figsize=(4.6 * len(ts), 3.8 * len(dists)),
                             squeeze=False, sharex=True, sharey=True, constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, (name, g) in enumerate(dists):
        sizes = sorted(set(g["n"][()].tolist()))
        for tv, nv, mask in by_t_and_n(g):
            ax = axes[row][ts.index(tv)]
            tol = g["tolerance"][()][mask]
            order = np.argsort(tol)
            tol = tol[order]
            color = colors[sizes.index(nv) % len(colors)]
            mean, low, high = (g[f"{series}_{s}"][()][mask][order] for s in ("mean", "min", "max"))
            ax.plot(tol, mean, "-o", ms=3, color=color, label=f"n = {nv:.0e}")
            ax.fill_between(tol, low, high, color=color, alpha=0.2, linewidth=0)
        for tv in ts:
            ax = axes[row][ts.index(tv)]
            ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
            if tolerance_line:
                lims = np.array(sorted(set(g["tolerance"][()].tolist())))
                ax.plot(lims, lims, "k--", lw=1, label="tolerance")
            if ones_line:
                ax.axhline(1.0, color="k", ls="--", lw=1)
            ax.set_title(f"distribution {name}, t = {tv:g}")
            ax.grid(True, which="both", alpha=0.3)
            if row == len(dists) - 1:
                ax.set_xlabel("qdot tolerance")
            if tv == ts[0]:
                ax.set_ylabel(ylabel)
    axes[0][0].legend(fontsize=8, loc="best")
    fig.suptitle(f"{title}\n{describe(group)}")
    save(fig, outdir, filename)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="HDF5 files written by `ebla qdot --output`")
    parser.add_argument("-o", "--outdir", default=".", help="directory for the PNG files")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    drawn = 0
    for path in args.files:
        with h5py.File(path, "r") as f:
            if "tightness" in f:
                plot_tightness(f["tightness"], args.outdir)
                drawn += 1
            if "effectiveness" in f:
                plot_series(f["effectiveness"], args.outdir, "relerr", "relative error |qdot - x^T y| / |x^T y|",
                            "qdot effectiveness (Diffenderfer et al., Fig. 2): relative error vs tolerance",
                            "qdot_fig2_effectiveness.png", log_y=True, tolerance_line=True)
                drawn += 1
            if "speedup" in f:
                plot_series(f["speedup"], args.outdir, "speedup", "speedup t_dot / t_compute",
                            "qdot speedup (Diffenderfer et al., Fig. 3)", "qdot_fig3_speedup.png",
                            log_y=False, ones_line=True)
                plot_series(f["speedup"], args.outdir, "efficiency", "efficiency t_dot / (t_select + t_dot)",
                            "qdot efficiency (Diffenderfer et al., Definition 2.1)", "qdot_efficiency.png",
                            log_y=False)
                drawn += 1
    if drawn == 0:
        sys.exit("plot_qdot.py: no tightness, effectiveness or speedup group in " + ", ".join(args.files))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws Bhola & Duraisamy's Fig. 5 (section 4.1, the MAC unit) from `ebla mac --output` HDF5 files.

    ebla mac -o mac.h5
    ebla mac --input-format binary32 -o mac_fp32.h5
    python3 apps/plot_mac.py mac.h5 mac_fp32.h5 --out docs/figures/mac_fig5.png

One panel per file: the empirical distribution function F(t) = #{samples <= t} / n of the
relative forward error |d_hat - d| / |d| of each operation (solid), of its deterministic bound
DBEA (dashed) and of its probabilistic bound VIBEA (dash-dot), one colour per operation, on a
log t axis. Where the two bounds are equal on every sample (FMA with inputs in its format,
directed rounding) the legend says VIBEA = DBEA and the two lines overlap. Errors that are exactly 0 cannot be drawn on a log axis: an error curve starts at
the fraction of exact results (given in the legend). For each operation a line on stdout gives
the number of samples, the largest error and bounds, and how often the error exceeds each bound.

Needs h5py and matplotlib (Debian: python3-h5py, python3-matplotlib).
"""
import argparse
import sys

try:
    import h5py
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as e:  # the usual cause: a Python without the Debian packages
    sys.exit(f"plot_mac.py: {e}; install python3-h5py and python3-matplotlib "
             f"(scripts/setup.sh) and run with /usr/bin/python3")

OPERATIONS = ("mac", "fma", "mpfma")  # the groups ebla mac writes, in the order of Fig. 5
COLORS = {"mac": "#1f77b4", "fma": "#2ca02c", "mpfma": "#d62728"}
CURVES = (("error", "-", "error"), ("dbea", "--", "DBEA"), ("vibea", "-.", "VIBEA"))


class PlotError(Exception):
    """A file that lacks what the figure needs: reported without a traceback."""


def text(value):
    """An HDF5 string attribute as str (h5py may return bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def edf(values):
    """The points (x, F(x)) of the empirical distribution function, x > 0 only."""
    x = np.sort(values)
    f = np.arange(1, x.size + 1) / x.size
    positive = x > 0
    return x[positive], f[positive], 1 - positive.mean()


def check(path, op, g, samples):
    """Checks that the group holds one value per sample, and prints what the data say."""
    error, dbea, vibea = (g[name][()] for name in ("error", "dbea", "vibea"))
    if not error.size == dbea.size == vibea.size == samples:
        raise PlotError(f"{path}: /{op}: error, dbea, vibea have {error.size}, {dbea.size}, {vibea.size} "
                        f"values, not samples = {samples}")
    print(f"{path}: {op}: {samples} samples, max error {error.max():.3e}, max DBEA {dbea.max():.3e}, "
          f"max VIBEA {vibea.max():.3e}, error > DBEA on {np.count_nonzero(error > dbea)}, "
          f"error > VIBEA on {np.count_nonzero(error > vibea)}")


def panel(ax, path):
    with h5py.File(path, "r") as f:
        if f.attrs.get("creator") is None or text(f.attrs["creator"]) != "ebla mac" or "mac" not in f:
            raise PlotError(f"{path}: not an `ebla mac --output` file")
        a = f.attrs
        for op in OPERATIONS:
            g = f[op]
            label = text(g.attrs["label"])
            check(path, op, g, int(a["samples"]))
            same = np.array_equal(g["dbea"][()], g["vibea"][()])  # no random rounding to count on
            for dataset, style, what in CURVES:
                x, y, zeros = edf(g[dataset][()])
                name = f"{what}{' = DBEA' if same and dataset == 'vibea' else ''}: {label}"
                if dataset == "error" and zeros > 0:
                    name += f" ({100 * zeros:.1f}% exact)"
                ax.step(x, y, where="post", ls=style, color=COLORS[op], lw=1.4, label=name)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("relative forward error |d_hat - d| / |d|, and its bounds")
        ax.set_ylabel("empirical distribution function")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"a, b, c ~ U[1,2] given in {text(a['input_format'])}, {int(a['samples'])} samples\n"
                     f"rounding {text(a['rounding'])}, VIBEA failure {float(a['failure']):g} per element, "
                     f"seed {int(a['seed'])}", fontsize=10)
        ax.legend(fontsize=7, loc="upper left")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("files", nargs="+", help="HDF5 files written by `ebla mac --output` (one panel each)")
    parser.add_argument("--out", "-o", default="mac_fig5.png", help="the PNG file to write")
    args = parser.parse_args()
    fig, axes = plt.subplots(1, len(args.files), figsize=(7.5 * len(args.files), 5.6), squeeze=False,
                             sharex=True, sharey=True, constrained_layout=True)
    try:
        for ax, path in zip(axes[0], args.files):
            panel(ax, path)
    except (PlotError, OSError, KeyError) as e:
        sys.exit(f"plot_mac.py: {e}")
    fig.suptitle("d = a*b + c: MAC without FMA, FMA and MPFMA (Bhola & Duraisamy, section 4.1, Fig. 5)")
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

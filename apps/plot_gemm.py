#!/usr/bin/env python3
"""Draws the GEMM figures of Mary & Mikaitis (Figs. 5.1, 5.2) and Bhola & Duraisamy (Fig. 6) from `ebla gemm --output` files.

    ebla gemm --experiment narrow-range -o narrow.h5
    ebla gemm --experiment tensor-core -o tc.h5
    ebla gemm --experiment tensor-core --given binary16 -o tc_fp16.h5
    python3 apps/plot_gemm.py narrow.h5 tc.h5 tc_fp16.h5 --out-dir docs/figures

Figs. 5.1 and 5.2 (gemm_fig5_1.png, gemm_fig5_2.png): one panel per input format (rows) and
subnormals off (left) and on (right), as in Mary & Mikaitis; x = k (log), y = the normwise relative
error ||C - AB||_inf / (||A||_inf ||B||_inf) (log); one colour per p = 1, 2, 3, solid for the
formats' own (narrow) range and dashed for the unbounded range, and the certified bound of the
narrow-range run as a thin dotted line of the same colour (where it is finite: an infinite
bound, from the a priori overflow check, is not drawn and the panel says so).

Fig. 6 (gemm_fig6.png): one panel per tensor-core file; the empirical distribution functions
F(t) = #{entries <= t} / count of the relative forward error |C - AB| / |AB| (solid) and of the
certified bound, the probable bound, DBEA and VIBEA relative to |AB|, on a log t axis.

For every figure a line on stdout summarises what the file says (runs, largest errors, how
often an error exceeds each bound), then `wrote PATH`.

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
    sys.exit(f"plot_gemm.py: {e}; install python3-h5py and python3-matplotlib "
             f"(scripts/setup.sh) and run with /usr/bin/python3")

P_COLORS = {1: "#1f77b4", 2: "#d62728", 3: "#2ca02c"}
FIGURES = {"fig5_1": ("5.1", "gemm_fig5_1.png"), "fig5_2": ("5.2", "gemm_fig5_2.png")}
# Fig. 6: (dataset, line style, colour, label)
CURVES = (("error", "-", "black", "forward error |C - AB| / |AB|"),
          ("certified", "--", "#2ca02c", "certified bound"),
          ("probable", ":", "#17becf", "probable bound"),
          ("dbea", "--", "#d62728", "DBEA (Bhola & Duraisamy, Thm 3.8; 3.7 for binary16 entries)"),
          ("vibea", "-.", "#1f77b4", "VIBEA (Bhola & Duraisamy, Thm 3.10; 3.9), failure per entry"))


class PlotError(Exception):
    """A file that lacks what the figures need: reported without a traceback."""


def text(value):
    """An HDF5 string attribute as str (h5py may return bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def open_gemm(path):
    f = h5py.File(path, "r")
    if f.attrs.get("creator") is None or text(f.attrs["creator"]) != "ebla gemm":
        f.close()
        raise PlotError(f"{path}: not an `ebla gemm --output` file")
    if "narrow_range" not in f and "tensor_core" not in f:
        f.close()
        raise PlotError(f"{path}: no experiment to draw (write it with --experiment narrow-range or tensor-core)")
    return f


# ---- Figs. 5.1 and 5.2 ------------------------------------------------------------------------

def narrow_lines(path, fg):
    """The configs of one figure: {(input, subnormals): {(p, range): group}}, panel order."""
    panels = {}
    for name in fg:
        g = fg[name]
        a = g.attrs
        key = (text(a["input"]), int(a["subnormals"]))
        panels.setdefault(key, {})[(int(a["words"]), text(a["range"]))] = g
        if not g["k"].shape == g["error"].shape == g["certified"].shape:
            raise PlotError(f"{path}: {g.name}: k, error and certified differ in length")
    return panels


def summarise_narrow(path, fig, fg):
    runs = violations = 0
    worst = 0.0
    for name in fg:
        g = fg[name]
        error, certified = g["error"][()], g["certified"][()]
        runs += error.size
        violations += int(np.count_nonzero(error > certified))
        finite = np.isfinite(certified)
        if finite.any():
            worst = max(worst, float(np.max(error[finite] / certified[finite])))
    print(f"{path}: Fig. {fig}: {len(fg)} configs x {fg.attrs['k_list'].size} k, error > certified in "
          f"{violations} of {runs} runs, largest error / certified {worst:.3f}")


def draw_narrow(path, fg, out):
    fig_name = text(fg.attrs["figure"])
    panels = narrow_lines(path, fg)
    inputs = []
    for (inp, _) in panels:  # the file lists groups by name: keep the seed's row order
        if inp not in inputs:
            inputs.append(inp)
    order = {"binary16": 0, "fp8_e5m2": 1, "fp8_e4m3": 2}
    inputs.sort(key=lambda s: order.get(s, 3))
    acc = text(fg.attrs["accumulation"])
    fig, axes = plt.subplots(len(inputs), 2, figsize=(11, 3.6 * len(inputs) + 0.8), squeeze=False, sharex=True)
    for row, inp in enumerate(inputs):
        for col, sub in enumerate((0, 1)):
            ax = axes[row][col]
            lines = panels.get((inp, sub), {})
            infinite = []  # k where a certified bound is +inf
            for (p, rng), g in sorted(lines.items()):
                k, error = g["k"][()], g["error"][()]
                style = "-" if rng == "narrow" else "--"
                ax.plot(k, error, style, color=P_COLORS[p], marker="o" if rng == "narrow" else "x", ms=4, lw=1.5,
                        label=f"p = {p}, {rng} range")
                if rng == "narrow":
                    certified = np.where(np.isfinite(g["certified"][()]), g["certified"][()], np.nan)
                    infinite.extend(k[np.isnan(certified)])
                    ax.plot(k, certified, ":", color=P_COLORS[p], lw=1, label=f"p = {p}, certified bound")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            title = f"{inp} input, {acc} accumulation, subnormals {'on' if sub else 'off'}"
            if infinite:
                title += f"\n(certified bound = inf from k = {min(infinite):g}: the a priori overflow check)"
            ax.set_title(title, fontsize=9)
            if row == len(inputs) - 1:
                ax.set_xlabel("inner dimension k")
            if col == 0:
                ax.set_ylabel("||C - AB|| / (||A|| ||B||)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    a = fg.parent.attrs
    fig.suptitle(f"Fig. {fig_name} (Mary & Mikaitis): Model 1, FMA chain in {acc}; m = {int(a['m'])}, n = {int(a['n'])}, "
                 f"entries +-10^phi, phi ~ U[-{float(a['range']):g}, {float(a['range']):g}], seed {int(a['seed'])}",
                 fontsize=11)
    legend_height = 0.8 / fig.get_figheight()  # the legend below the panels, clear of the curves
    fig.tight_layout(rect=(0, legend_height, 1, 0.97))
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.savefig(out, dpi=110)
    plt.close(fig)


# ---- Fig. 6 -----------------------------------------------------------------------------------

def edf(values):
    """The points (x, F(x)) of the empirical distribution function, x > 0 only."""
    x = np.sort(values)
    f = np.arange(1, x.size + 1) / x.size
    positive = x > 0
    return x[positive], f[positive], 1 - positive.mean()


def summarise_tensor_core(path, g):
    error = g["error"][()]
    sizes = {name: g[name].size for name, *_ in CURVES}
    if len(set(sizes.values())) != 1:
        raise PlotError(f"{path}: /tensor_core: the datasets differ in length: {sizes}")
    above = {name: int(np.count_nonzero(error > g[name][()])) for name, *_ in CURVES[1:]}
    print(f"{path}: tensor_core: {error.size} entries, max error {error.max():.3e}, max certified "
          f"{g['certified'][()].max():.3e}, max DBEA {g['dbea'][()].max():.3e}, max VIBEA {g['vibea'][()].max():.3e}, "
          f"error > certified on {above['certified']}, > probable on {above['probable']}, > DBEA on {above['dbea']}, "
          f"> VIBEA on {above['vibea']}")


def panel_tensor_core(ax, path, g):
    a = g.attrs
    same = np.array_equal(g["certified"][()], g["probable"][()])
    for name, style, color, label in CURVES:
        if name == "probable" and same:
            label += " = certified (biased unit)"
        x, y, zeros = edf(g[name][()])
        if name == "error" and zeros > 0:
            label += f" ({100 * zeros:.1f}% exact)"
        ax.step(x, y, where="post", ls=style, color=color, lw=1.5, label=label)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel("relative forward error |C - AB| / |AB|, and its bounds / |AB|")
    ax.set_ylabel("empirical distribution function")
    ax.set_title(f"{text(a['description'])}, entries U(-1, 1) given in {text(a['given'])}\n"
                 f"m = {int(a['m'])}, k = {int(a['k'])}, n = {int(a['n'])}, failure {float(a['failure']):g}, "
                 f"seed {int(a['seed'])}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("files", nargs="+", help="HDF5 files written by `ebla gemm --experiment ... --output`")
    parser.add_argument("--out-dir", "-o", default=".", help="directory of the PNG files (default: .)")
    args = parser.parse_args()
    written = []
    try:
        if not os.path.isdir(args.out_dir):
            raise PlotError(f"--out-dir {args.out_dir}: not a directory")
        files = [open_gemm(path) for path in args.files]
        seen = set()
        for path, f in zip(args.files, files):
            if "narrow_range" not in f:
                continue
            for key, (fig, png) in FIGURES.items():
                if key not in f["narrow_range"]:
                    continue
                if key in seen:
                    raise PlotError(f"{path}: a second file with Fig. {fig}")
                seen.add(key)
                fg = f["narrow_range"][key]
                summarise_narrow(path, fig, fg)
                out = os.path.join(args.out_dir, png)
                draw_narrow(path, fg, out)
                written.append(out)
        tc = [(path, f["tensor_core"]) for path, f in zip(args.files, files) if "tensor_core" in f]
        if tc:
            fig, axes = plt.subplots(1, len(tc), figsize=(7.5 * len(tc), 5.6), squeeze=False, sharey=True,
                                     constrained_layout=True)
            for ax, (path, g) in zip(axes[0], tc):
                summarise_tensor_core(path, g)
                panel_tensor_core(ax, path, g)
            fig.suptitle("Fig. 6 (Bhola & Duraisamy, section 4.2): GEMM on a tensor-core-like unit,\n"
                         "forward error and bounds per entry", fontsize=11)
            out = os.path.join(args.out_dir, "gemm_fig6.png")
            fig.savefig(out, dpi=110)
            plt.close(fig)
            written.append(out)
    except (PlotError, OSError, KeyError) as e:
        sys.exit(f"plot_gemm.py: {e}")
    for out in written:
        print(f"wrote {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws time per iteration against bytes per iteration from bench_storage's JSON output.

    OMP_NUM_THREADS=1 bench_storage --benchmark_out=storage_1.json --benchmark_out_format=json
    OMP_NUM_THREADS=2 bench_storage --benchmark_out=storage_2.json --benchmark_out_format=json
    plot_storage.py storage_1.json storage_2.json --out storage_time_bytes.png

One panel per problem. Each solve is a point at (MB per iteration, ms per iteration), the
median of its repetitions, one colour per thread count; the dashed line of a thread count is
the triad's time to move those bytes (bytes / the median triad bandwidth at the problem's n,
measured in the same run): a solve on its line moves its bytes as fast as STREAM's triad, and
the vertical distance above it is time spent computing rather than moving bytes.
Needs matplotlib (Debian: python3-matplotlib); run with /usr/bin/python3.
"""
import argparse
import json
import statistics
import sys

try:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
except ImportError as e:  # the usual cause: a Python without the Debian packages
    sys.exit(f"plot_storage.py: {e}; install python3-matplotlib and run with /usr/bin/python3")

MARKERS = {"exact": "o", "qdot_auto": "s", "auto": "*", "binary32": "^", "block16": "v", "ir32": "D"}
COLORS = ["#1f3b73", "#e67e22", "#27ae60", "#8e44ad"]


class PlotError(Exception):
    """A file that lacks what the figure needs: reported without a traceback."""


def read_runs(path):
    """{(threads, problem): {solve: {"ms": [...], "mb": x, "gbps": [...]}}} of one JSON file."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise PlotError(f"{path}: {e}")
    if "benchmarks" not in data:
        raise PlotError(f"{path}: no 'benchmarks' list (not Google Benchmark JSON output)")
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or "threads" not in b:
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        problem, solve = name.split("/")[:2]
        entry = runs.setdefault((int(b["threads"]), problem), {}).setdefault(solve, {"ms": [], "mb": 0, "gbps": []})
        if solve == "triad":
            entry["gbps"].append(b["GBps"])
        else:
            entry["ms"].append(1e3 * b["seconds_per_iteration"])
            entry["mb"] = 1e-6 * b["bytes_per_iteration"]
    if not runs:
        raise PlotError(f"{path}: no bench_storage rows (with a 'threads' counter)")
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="bench_storage --benchmark_out JSON files")
    parser.add_argument("--out", default="storage_time_bytes.png")
    args = parser.parse_args()
    try:
        runs = {}
        for path in args.files:
            runs.update(read_runs(path))
    except PlotError as e:
        sys.exit(f"plot_storage.py: {e}")
    problems = sorted({p for _, p in runs}, key=lambda p: ("stencil" not in p, "csr" not in p, p))
    threads = sorted({t for t, _ in runs})
    fig, axes = plt.subplots(1, len(problems), figsize=(4.6 * len(problems), 4.2), squeeze=False)
    for ax, problem in zip(axes[0], problems):
        top = 0
        for t, color in zip(threads, COLORS):
            solves = runs.get((t, problem), {})
            for solve, entry in solves.items():
                if solve == "triad" or not entry["ms"]:
                    continue
                ms = statistics.median(entry["ms"])
                top = max(top, entry["mb"])
                ax.plot(entry["mb"], ms, MARKERS.get(solve, "x"), color=color, markersize=8,
                        label=f"{solve}, {t} thread{'s' if t > 1 else ''}")
            if solves.get("triad", {}).get("gbps"):
                gbps = statistics.median(solves["triad"]["gbps"])
                xs = [0, 1.1 * top]
                ax.plot(xs, [x / gbps for x in xs], "--", color=color, linewidth=1,
                        label=f"triad {gbps:.0f} GB/s, {t} thread{'s' if t > 1 else ''}")
        ax.set_title(problem)
        ax.set_xlabel("MB per iteration (model)")
        ax.set_ylabel("ms per iteration (median)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

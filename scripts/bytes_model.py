#!/usr/bin/env python3
"""What stored Krylov vectors would save on a GPU bound by memory bandwidth, from ebla's own
model of the bytes each solve moves (docs/solvers.md, "When approximation pays").

Runs `ebla cg --json` on each problem with exact dot products, in binary64 and in each storage
format, and prints a Markdown table: iterations, replacements, bytes per row and iteration,
and, for a GPU that moves B bytes per second (default 4.8e12, an H200), the predicted time per
iteration (bytes / B) and the predicted speedup over binary64 CG,

    (iterations_64 * bytes_64) / (iterations_S * bytes_S),

which assumes every pass runs at the memory's bandwidth (no launch latency, conversions free,
vectors larger than the GPU's last-level cache). The binary64 loop's bytes are its model in
apps/bench/bench_cg.cpp: the matrix once, 104 bytes per row (13 vector passes of 8 bytes), and
with Jacobi 40 more
(z = D^-1 r: read 2, write 1; r^T z: read 2).

    python3 scripts/bytes_model.py build/release/apps/ebla [--bandwidth 4.8e12] [--small]
"""
import argparse
import json
import subprocess
import sys


def grid(problem, size, *more):
    """The arguments of a problem on a size^3 grid."""
    return ["--problem", problem, "--nx", str(size), "--ny", str(size), "--nz", str(size), *more]


def problems(small):
    """name -> arguments: HPCCG matrix-free and in CSR, the diffusion problem with Jacobi."""
    s, c = (24, 24) if small else (160, 128)
    return {f"HPCCG {s}^3, stencil": grid("hpccg", s, "--operator", "stencil"),
            f"HPCCG {c}^3, CSR": grid("hpccg", c, "--operator", "csr"),
            f"diffusion {c}^3, CSR, Jacobi": grid("diffusion", c, "--jacobi")}


FORMATS = ["auto", "p=binary32,r=binary64", "p=block16,r=binary64", "binary32", "block16", "bfloat16"]


def solve(ebla, args, storage):
    command = [ebla, "cg", *args, "--norm", "relative", "--tol", "1e-10", "--dot", "exact", "--json", "--progress", "0"]
    if storage:
        command += ["--storage", storage]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bytes_model.py: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def binary64_bytes(run):
    """The binary64 loop's bytes per iteration (apps/bench/bench_cg.cpp's model)."""
    n, nnz = run["n"], run["nnz"]
    matrix = 0 if run["operator"] == "stencil" else 12.0 * nnz + 8.0 * (n + 1)
    return matrix + 104.0 * n + (40.0 * n if run["jacobi"] else 0)


def table(ebla, runs, bandwidth):
    print("| problem | storage | iterations (replacements) | bytes per row | GPU µs / iteration | predicted speedup |")
    print("|---|---|---|---|---|---|")
    for name, args in runs.items():
        exact = solve(ebla, args, None)
        b64, k64 = binary64_bytes(exact), exact["iterations"]
        n = exact["n"]
        print(f"| {name} | binary64 | {k64} | {b64 / n:.0f} | {b64 / bandwidth * 1e6:.1f} | 1 |")
        for storage in FORMATS:
            run = solve(ebla, args, storage)
            if run["status"] != "converged":
                print(f"| {name} | {storage} | {run['status']} | | | |")
                continue
            b, k = run["bytes_per_iteration"], run["iterations"]
            replaced = f" ({run['replacements']:.0f})" if run.get("replacements") else ""
            print(f"| {name} | {storage} | {k}{replaced} | {b / n:.0f} | {b / bandwidth * 1e6:.1f} | "
                  f"{k64 * b64 / (k * b):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ebla", help="the ebla program")
    parser.add_argument("--bandwidth", type=float, default=4.8e12, help="bytes per second (default 4.8e12)")
    parser.add_argument("--small", action="store_true", help="24^3 grids, a check in seconds")
    a = parser.parse_args()
    if not a.bandwidth > 0:
        parser.error(f"--bandwidth must be positive, not {a.bandwidth}")
    table(a.ebla, problems(a.small), a.bandwidth)


if __name__ == "__main__":
    main()

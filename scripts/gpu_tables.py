#!/usr/bin/env python3
"""Tables of docs/benchmarks.md from the JSON of bench_qdot and bench_cg (scripts/test_gpu.sh).

    python3 scripts/gpu_tables.py DEVICE QDOT_JSON CG_JSON

Each JSON is Google Benchmark's --benchmark_out with --benchmark_repetitions; the tables take
the medians, and the ratios are those of medians measured in the same run.
"""
import json
import sys


def medians(path):
    """{run name: (median real time in ms, counters)} of one benchmark output."""
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    out = {}
    for r in runs:
        if r.get("aggregate_name") != "median":
            continue
        counters = {k: v for k, v in r.items() if isinstance(v, (int, float))}
        # "dot/100000/real_time", "cg_csr_exact/iterations:1/real_time": the name and its argument
        key = "/".join(p for p in r["run_name"].split("/") if p != "real_time" and ":" not in p)
        out[key] = (r["real_time"] * scale[r["time_unit"]], counters)
    return out


def qdot_table(m):
    lines = ["| n | dot | select / dot | compute / dot | qdot / dot (one pass) | qdot / dot (select, then compute) |",
             "|---|---|---|---|---|---|"]
    sizes = sorted({int(name.split("/")[1]) for name in m if name.startswith("dot/")})
    for n in sizes:
        dot = m[f"dot/{n}"][0]
        ratio = lambda kind: f"{m[f'{kind}/{n}'][0] / dot:.2f}"
        size = f"{n:.0e}".replace("e+0", "e").replace("e+", "e")
        lines.append(f"| {size} | {dot:.3f} ms | {ratio('select')} | {ratio('compute')} | "
                     f"{ratio('full')} | {ratio('full_two_pass')} |")
    return lines


def cg_table(m):
    lines = ["| operator | exact CG | iterations | ACG (qdot) | iterations | ACG / CG per iteration |",
             "|---|---|---|---|---|---|"]
    for op in ("csr", "stencil"):
        cg, cgc = m[f"cg_{op}_exact"]
        acg, acgc = m[f"acg_{op}_qdot"]
        per = (acg / acgc["iterations"]) / (cg / cgc["iterations"])
        lines.append(f"| {op} | {cg:.1f} ms | {cgc['iterations']:.0f} | {acg:.1f} ms | "
                     f"{acgc['iterations']:.0f} | {per:.2f} |")
    return lines


def main():
    device, qdot_json, cg_json = sys.argv[1:4]
    print(f"Measured on {device} by scripts/test_gpu.sh (medians; ratios within one run).\n")
    print("`bench_qdot`, distribution B, t = 9, tolerance 1e-8, budget policy, device Views:\n")
    print("\n".join(qdot_table(medians(qdot_json))))
    print("\n`bench_cg`, HPCCG, ACG against exact CG on the device:\n")
    print("\n".join(cg_table(medians(cg_json))))


if __name__ == "__main__":
    main()

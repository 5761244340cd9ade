"""A sweep's rows and single runs: each row of `ebla cg|power --sweep-qdot-tol A:B --json` is
what a single run at its tolerance gives with the plan margin the sweep prints (iterations,
status, residual and the whole dot policy, bit for bit), and the text output names that
margin.

Usage: sweep_rows.py EBLA
"""
import json
import re
import subprocess
import sys

ebla = sys.argv[1]
failures = 0


def run(*args):
    out = subprocess.run([ebla, *args, "--progress", "0"], capture_output=True, text=True)
    return out.returncode, out.stdout


def compare(command, problem, fields):
    global failures
    code, text = run(command, *problem, "--sweep-qdot-tol", "1e-6:1e-2")
    margin = re.search(r"plan margin (\d+) \(a single run with --qdot-margin \1 gives a row\)", text)
    if not margin:
        print(f"FAILED: {command}: the sweep does not name its plan margin:\n{text}")
        failures += 1
        return
    code, text = run(command, *problem, "--sweep-qdot-tol", "1e-6:1e-2", "--json")
    rows = [r for r in map(json.loads, text.splitlines()) if r.get("run") == "sweep"]
    if len(rows) != 5:
        print(f"FAILED: {command}: {len(rows)} sweep rows, not 5")
        failures += 1
    for row in rows:
        tol = repr(row["qdot_tolerance"])
        _, single = run(command, *problem, "--qdot-tol", tol, "--qdot-margin", margin.group(1), "--json")
        one = json.loads(single.splitlines()[0])
        for field in fields:
            if one[field] != row[field]:
                print(f"FAILED: {command} at {tol}: {field} {one[field]!r} in a single run, {row[field]!r} in the sweep")
                failures += 1
    print(f"{command}: {len(rows)} rows compared with single runs at plan margin {margin.group(1)}")


compare("cg", ["--nx", "8", "--ny", "8", "--nz", "8"], ["iterations", "status", "true_residual", "dot_policy"])
compare("power", ["--n", "400", "--degree", "6"], ["iterations", "status", "eigenvalue", "dot_policy"])
print("sweep_rows.py: all passed" if failures == 0 else f"sweep_rows.py: {failures} failure(s)")
sys.exit(1 if failures else 0)

"""Checks --repeat: runs an ebla solver command once and with --repeat 3 (both with --json)
and checks that the repeated run reports the single run's solve (iterations, status,
residual or eigenvalue, bit for bit: the same problem solved again gives the same bits) and
three positive times per timed quantity. Arguments: the ebla program, then the command and
its options. Prints "repeat checked" when all holds."""
import json
import subprocess
import sys

command = sys.argv[1:]


def run(extra):
    out = subprocess.run(command + ["--json", "--progress", "0"] + extra, capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr}"
    return json.loads(out.stdout)


once, thrice = run([]), run(["--repeat", "3"])
assert "repeat" not in once, "a single run reports no repeats"
for key in ("iterations", "status", "true_residual", "eigenvalue"):
    if key in once:
        assert thrice[key] == once[key], f"{key}: {thrice[key]} repeated, {once[key]} once"
assert thrice["repeat"] == 3, thrice["repeat"]
timed = ["repeat_seconds"] + (["repeat_iteration_seconds"] if command[1] == "cg" else [])
for key in timed:
    assert len(thrice[key]) == 3 and all(s > 0 for s in thrice[key]), f"{key}: {thrice[key]}"
assert ("repeat_iteration_seconds" in thrice) == (command[1] == "cg"), sorted(thrice)
# the last solve is the one reported
assert thrice["repeat_seconds"][-1] == thrice["seconds"], (thrice["repeat_seconds"], thrice["seconds"])
print("repeat checked")

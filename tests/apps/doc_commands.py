"""The commands shown in the docs, run: every `$ ebla ...` line of a fenced block that is
followed by output lines is run with the ebla binary given, and the lines shown must appear in
its output in the order shown ("..." stands for any lines, a line ending in " ..." for any line
that starts with what comes before; trailing blanks are ignored). Lines
of timings (first word `time` or `times`) are skipped, and so are commands that write files
(`-o`), read files the docs do not ship, or run under mpirun: their output is checked by the
CLI tests. Commands run in the directory of the first page given (README.md: the top of the
source tree), so that the paths they name (data/...) are found. Prints one line per command
and `N passed, M failed`; exits 1 on any failure.

    python3 doc_commands.py EBLA DOC.md [DOC.md ...]
"""
import os
import shlex
import subprocess
import sys

SKIPPED_WORDS = ("-o", "--output", "mpirun", "mpiexec")


def shown_commands(path):
    """(line number, command, shown output lines) of every shown command with output."""
    lines = open(path, encoding="utf-8").read().split("\n")
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
            i += 1
            continue
        if not (fenced and line.startswith("$ ebla ")):
            i += 1
            continue
        number, command = i + 1, line[2:].split("#", 1)[0].strip()
        shown = []
        i += 1
        while i < len(lines) and not lines[i].startswith("$ ") and not lines[i].startswith("```"):
            if not lines[i].lstrip().startswith("#"):  # a comment going on from the command
                shown.append(lines[i].rstrip())
            i += 1
        while shown and not shown[-1]:
            shown.pop()
        if shown:
            yield number, command, shown


def runnable(command):
    words = shlex.split(command)
    return not any(w in SKIPPED_WORDS or w.endswith((".mtx", ".h5")) for w in words)


def timing(line):
    first = line.split()[0] if line.split() else ""
    return first in ("time", "times")


def matches(shown, printed):
    """A shown line ending in " ..." stands for the lines that start with what precedes it."""
    if shown.endswith(" ..."):
        return printed.startswith(shown[:-4].rstrip())
    return printed == shown


def first_mismatch(shown, output):
    """The first shown line not found, in order, in the output (None if all are)."""
    at = 0
    for line in shown:
        if line.strip() in ("", "...") or timing(line):
            continue
        while at < len(output) and not matches(line, output[at]):
            at += 1
        if at == len(output):
            return line
        at += 1
    return None


def main():
    ebla, docs = sys.argv[1], sys.argv[2:]
    top = os.path.dirname(os.path.abspath(docs[0]))
    passed = failed = 0
    for path in docs:
        for number, command, shown in shown_commands(path):
            if not runnable(command):
                continue
            run = subprocess.run([ebla] + shlex.split(command)[1:], capture_output=True, text=True, cwd=top)
            output = [line.rstrip() for line in run.stdout.split("\n")]
            missing = first_mismatch(shown, output)
            where = f"{path}:{number}: {command}"
            if missing is None:
                passed += 1
                print(f"ok      {where}")
            else:
                failed += 1
                print(f"FAILED  {where}\n        shown, not printed: {missing!r}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())

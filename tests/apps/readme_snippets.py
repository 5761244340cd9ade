"""README.md's C and C++ examples are parts of whole programs: every ```c++ and ```c block of
the README must be, line for line, the part between "README: begin" and "README: end" of one
of the programs given (built and run by the test consumer.find_package), and every such part
must be shown in the README. Prints one line per block and `N passed, M failed`.

    python3 readme_snippets.py README.md PROGRAM...
"""
import re
import sys
import textwrap


def blocks(readme):
    text = open(readme, encoding="utf-8").read()
    return [b.rstrip("\n") for b in re.findall(r"^```(?:c\+\+|c)\n(.*?)^```$", text, flags=re.S | re.M)]


def parts(program):
    text = open(program, encoding="utf-8").read()
    found = re.findall(r"^[ \t]*(?://|/\*) README: begin(?: \*/)?\n(.*?)^[ \t]*(?://|/\*) README: end", text,
                       flags=re.S | re.M)
    return [textwrap.dedent(p).rstrip("\n") for p in found]


readme, programs = sys.argv[1], sys.argv[2:]
shown = blocks(readme)
whole = [(program, part) for program in programs for part in parts(program)]
passed = failed = 0
for i, block in enumerate(shown):
    owners = [program for program, part in whole if part == block]
    if owners:
        passed += 1
        print(f"block {i + 1} ({block.splitlines()[0]}): in {owners[0]}")
    else:
        failed += 1
        print(f"FAILED: block {i + 1} ({block.splitlines()[0]}) is part of no program")
for program, part in whole:
    if part not in shown:
        failed += 1
        print(f"FAILED: the part of {program} beginning {part.splitlines()[0]!r} is not shown in the README")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not shown else 0)

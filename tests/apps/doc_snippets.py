"""The C, C++ and Fortran examples of README.md and docs/*.md are parts of whole programs: every
```c, ```c++, ```cpp and ```fortran block of a page must be, line for line, the part between
"PAGE: begin" and "PAGE: end" comments of one of the programs given (PAGE: "README" for
README.md, "docs/NAME.md" for a page of docs/), and every such part must be shown on its page.
The programs are built and run by their own tests (consumer.find_package, fortran.docs_qdot).
Prints one line per block and `N passed, M failed`.

    python3 doc_snippets.py SOURCE_DIR PROGRAM...
"""
import pathlib
import re
import sys
import textwrap

LANGUAGES = r"(?:c\+\+|cpp|c|fortran)"
COMMENT = r"(?://|/\*|!)"


def blocks(page):
    text = page.read_text(encoding="utf-8")
    found = re.findall(r"^```" + LANGUAGES + r"\n(.*?)^```$", text, flags=re.S | re.M)
    return [b.rstrip("\n") for b in found]


def parts(program, marker):
    text = pathlib.Path(program).read_text(encoding="utf-8")
    m = re.escape(marker)
    found = re.findall(r"^[ \t]*" + COMMENT + " " + m + r": begin(?: \*/)?\n(.*?)^[ \t]*" + COMMENT + " " + m +
                       r": end", text, flags=re.S | re.M)
    return [textwrap.dedent(p).rstrip("\n") for p in found]


def marker_of(page, source):
    return "README" if page.name == "README.md" else page.relative_to(source).as_posix()


def check_page(page, source, programs):
    """(passed, failed) for one page, printing a line per block and per unshown part."""
    marker = marker_of(page, source)
    shown = blocks(page)
    whole = [(program, part) for program in programs for part in parts(program, marker)]
    passed = failed = 0
    for i, block in enumerate(shown):
        owners = [program for program, part in whole if part == block]
        if owners:
            passed += 1
            print(f"{marker} block {i + 1} ({block.splitlines()[0]}): in {owners[0]}")
        else:
            failed += 1
            print(f"FAILED: {marker} block {i + 1} ({block.splitlines()[0]}) is part of no program")
    for program, part in whole:
        if part not in shown:
            failed += 1
            print(f"FAILED: the part of {program} beginning {part.splitlines()[0]!r} is not shown in {marker}")
    return passed, failed


source, programs = pathlib.Path(sys.argv[1]), sys.argv[2:]
pages = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
passed = failed = 0
for page in pages:
    p, f = check_page(page, source, programs)
    passed, failed = passed + p, failed + f
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)

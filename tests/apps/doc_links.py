"""Checks the links between README.md and docs/*.md: every relative link names a file that
exists, and every #anchor names a heading of its page (GitHub's anchors: the heading in lower
case, punctuation other than '-' and '_' dropped, spaces as '-').

Usage: doc_links.py PAGE...   Prints each broken link, then "N links, M broken"."""
import os
import re
import sys


def anchors(page):
    with open(page, encoding="utf-8") as f:
        headings = [line.lstrip("#").strip() for line in f if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def links(page):
    with open(page, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)  # not inside code blocks
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if not re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            yield target


def main(pages):
    checked = broken = 0
    for page in pages:
        for target in links(page):
            checked += 1
            path, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(file):
                problem = "no such file"
            elif anchor and file.endswith(".md") and anchor not in anchors(file):
                problem = "no such heading"
            else:
                continue
            broken += 1
            print(f"{page}: ({target}): {problem}")
    print(f"{checked} links, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

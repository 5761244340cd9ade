"""Reads JSON lines on stdin (the --json output of an ebla command) and checks them.

Every line must parse with json.loads. Arguments: LINES, the number of lines expected, then
checks on the lines: I:KEY (line I has KEY), I:KEY=null (KEY is null on line I), I negative
counting from the end. Prints "N JSON lines parsed" when all hold.
"""
import json
import sys

rows = [json.loads(line) for line in sys.stdin]
expected = int(sys.argv[1])
assert len(rows) == expected, f"{len(rows)} lines, not {expected}"
for check in sys.argv[2:]:
    index, key = check.split(":", 1)
    key, _, value = key.partition("=")
    row = rows[int(index)]
    assert key in row, f"line {index} has no {key}: {row}"
    if value == "null":
        assert row[key] is None, f"line {index}: {key} is {row[key]}, not null"
print(len(rows), "JSON lines parsed")

"""ebla.mma: many dot products through a matrix unit, against the ebla command's `mma --cases`
on the same rows and against the devices' results in data/tensor-cores, and its errors."""

import os
import subprocess

import numpy as np
import pytest

import ebla


def _patterns(column, digits):
    """A column of packed hex patterns (`digits` each) as an array of shape (rows, k)."""
    return np.array([[int(s[i:i + digits], 16) for i in range(0, len(s), digits)] for s in column], dtype=np.uint64)


def _decode(codes, input_format):
    """Bit patterns of binary16, bfloat16 or tf32 (the top 19 bits of binary32) as values."""
    if input_format == "binary16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    shift = 16 if input_format == "bfloat16" else 13
    return (codes << shift).astype(np.uint32).view(np.float32).astype(np.float64)


def _read(path, input_format):
    """a, b, c (values) and the device's d (binary32 patterns) of a file of data/tensor-cores."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    digits = {"binary16": 4, "bfloat16": 4, "tf32": 5}[input_format]
    A = _decode(_patterns([r[0] for r in rows], digits), input_format)
    B = _decode(_patterns([r[1] for r in rows], digits), input_format)
    c = np.array([int(r[2], 16) for r in rows], dtype=np.uint32).view(np.float32).astype(np.float64)
    d = np.array([int(r[3], 16) for r in rows], dtype=np.uint32)
    return A, B, c, d


def _cli(*args):
    program = os.environ.get("EBLA_CLI")
    if not program:
        raise RuntimeError("EBLA_CLI is not set: run these tests through CTest (test python.pytest)")
    done = subprocess.run([program, *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [int(line.split()[0], 16) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("unit, input_format", [("h100_fp16", "binary16"), ("a100_bf16", "bfloat16"),
                                                ("b200_tf32", "tf32")])
def test_agrees_with_the_command_and_the_device(source_dir, unit, input_format):
    path = source_dir / "data" / "tensor-cores" / f"{unit}_fp32.txt"
    A, B, c, device = _read(path, input_format)
    bits = ebla.mma(unit, A, B, c, bits=True)
    assert bits.dtype == np.uint32 and bits.shape == (500,)
    assert np.array_equal(bits, np.array(_cli("mma", "--unit", unit, "--cases", str(path)), dtype=np.uint32))
    assert np.array_equal(bits, device)
    d = ebla.mma(unit, A, B, c)
    assert np.array_equal(d.astype(np.float32).view(np.uint32), bits)


def test_binary16_results(source_dir):
    path = source_dir / "data" / "tensor-cores" / "a100_fp16_out16.txt"
    A, B, c, device = _read(path, "binary16")
    bits = ebla.mma("a100_fp16_out16", A, B, c, bits=True)  # c read rounded to binary16
    assert bits.dtype == np.uint16
    assert np.array_equal(bits, np.array(_cli("mma", "--unit", "a100_fp16_out16", "--cases", str(path)), dtype=np.uint16))
    widened = bits.view(np.float16).astype(np.float32).view(np.uint32)
    assert np.array_equal(widened, device)


def test_values_are_read_rounded_as_the_unit_reads_them():
    rng = np.random.default_rng(5)
    A, B, c = rng.uniform(-1, 1, (50, 16)), rng.uniform(-1, 1, (50, 16)), rng.uniform(-1, 1, 50)
    rounded = [x.astype(np.float16).astype(np.float64) for x in (A, B)]
    d = ebla.mma("h100_fp16", A, B, c)
    assert np.array_equal(d, ebla.mma("h100_fp16", *rounded, c.astype(np.float32)))
    # k = 16 in one operation of 16 products: a one-row call is the same row
    assert ebla.mma("h100_fp16", A[3:4], B[3:4], c[3:4])[0] == d[3]


def test_errors():
    A = np.ones((3, 4))
    with pytest.raises(ValueError, match="ebla.mma: unit: .*unknown matrix unit 'v200_fp16'"):
        ebla.mma("v200_fp16", A, A, np.zeros(3))
    with pytest.raises(ValueError, match="ebla.mma: A is 3 x 4, B 3 x 3, C has 3 elements"):
        ebla.mma("v100_fp16", A, np.ones((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="C has 2 dimensions, not 1"):
        ebla.mma("v100_fp16", A, A, np.zeros((3, 1)))
    assert ebla.mma("v100_fp16", np.ones((0, 4)), np.ones((0, 4)), np.zeros(0)).shape == (0,)

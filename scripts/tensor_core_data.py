#!/usr/bin/python3
"""Writes data/tensor-cores/: the first cases of each published tensor-core result set.

The source is a git directory of the repository north-numerical-computing/MATLAB-tensor-core
(Khattak & Mikaitis, BSD-2-Clause), read with `git show`, so no work tree is needed:

    scripts/tensor_core_data.py GIT_DIR [--cases 500] [--out data/tensor-cores]

For each folder model_validation/<GPU>/<input>/ that has a binary32 result file, one file
<gpu>_<input>_fp32.txt is written, and for fp16 inputs with binary16 results also
<gpu>_fp16_out16.txt (the preset <gpu>_fp16_out16), one case per line:

    a b c d

a and b: the k inputs of the case, each as its bit pattern in the input format (fp8: 2 hex
digits, binary16 and bfloat16: 4, tf32: 5 = the top 19 bits of its binary32 pattern), written
one after the other without separators; c and d: binary32 bit patterns, 8 hex digits (for
binary16 results, d is the binary16 value widened, and c the published binary32 c, which the
unit reads rounded to nearest binary16 as the authors' models do).

H100 and H200 ran their fp8 cases as D = A B + 0 (WGMMA), as the repository's validation
script says: their c is written as 0, not the c file of the folder.
"""
ZERO_C = {("H100", "E4M3"), ("H100", "E5M2"), ("H200", "E4M3"), ("H200", "E5M2")}
import argparse
import os
import struct
import subprocess
import sys

INPUTS = {  # folder name -> (ebla name, hex digits per value)
    "fp16": ("fp16", 4),
    "bf16": ("bf16", 4),
    "tf32": ("tf32", 5),
    "E4M3": ("fp8_e4m3", 2),
    "E5M2": ("fp8_e5m2", 2),
}


def f32(bits):
    return struct.unpack(">f", struct.pack(">I", bits))[0]


def fp8_codes(exponent_bits, mantissa_bits, bias):
    """Value -> code for the finite fp8 values (both zeros kept apart by the sign)."""
    codes = {}
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        field = (code >> mantissa_bits) & ((1 << exponent_bits) - 1)
        frac = code & ((1 << mantissa_bits) - 1)
        if field == 0:
            value = frac * 2.0 ** (1 - bias - mantissa_bits)
        else:
            value = (frac + 2**mantissa_bits) * 2.0 ** (field - bias - mantissa_bits)
        codes.setdefault((sign < 0, value), code)
    return codes


E4M3 = fp8_codes(4, 3, 7)  # (S.1111.111, NaN, is never an input here)
E5M2 = fp8_codes(5, 2, 15)


def fp16_code(bits):
    import numpy

    value = numpy.float32(f32(bits))
    half = numpy.float16(value)
    if numpy.float32(half) != value or not numpy.isfinite(half):
        raise ValueError(f"{bits:08x} is not a finite binary16 value")
    return int(half.view(numpy.uint16))


def encode(folder, bits):
    """The input-format bit pattern of a binary32 pattern holding a value of that format."""
    if folder == "fp16":
        return f"{fp16_code(bits):04x}"
    if folder == "bf16":
        if bits & 0xFFFF:
            raise ValueError(f"{bits:08x} is not a bfloat16 value")
        return f"{bits >> 16:04x}"
    if folder == "tf32":
        if bits & 0x1FFF:
            raise ValueError(f"{bits:08x} is not a tf32 value")
        return f"{bits >> 13:05x}"
    table = E4M3 if folder == "E4M3" else E5M2
    value = f32(bits)
    key = (bits >> 31 == 1, abs(value))
    if key not in table:
        raise ValueError(f"{bits:08x} is not a finite {folder} value")
    return f"{table[key]:02x}"


def show(git_dir, path):
    return subprocess.run(["git", "-C", git_dir, "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout.split("\n")


def hex_row(line):
    return [int(word, 16) for word in line.split()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("git_dir")
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data",
                                                      "tensor-cores"))
    args = parser.parse_args()
    files = subprocess.run(
        ["git", "-C", args.git_dir, "ls-tree", "-r", "--name-only", "HEAD", "model_validation"],
        check=True, capture_output=True, text=True).stdout.split()
    os.makedirs(args.out, exist_ok=True)
    results = [p for p in files if "/d_" in p and (p.endswith("_fp32.txt") or "/fp16/d_" in p)]
    for d_path in sorted(results):
        folder = os.path.dirname(d_path)
        gpu, fmt = folder.split("/")[1:3]
        name, _ = INPUTS[fmt]
        if d_path.endswith("_fp16.txt"):
            name = "fp16_out16"
        a = show(args.git_dir, f"{folder}/a_{gpu}_{fmt}.txt")
        b = show(args.git_dir, f"{folder}/b_{gpu}_{fmt}.txt")
        c = show(args.git_dir, f"{folder}/c_{gpu}_fp32.txt")
        d = show(args.git_dir, d_path)
        out = os.path.join(args.out, f"{gpu.lower()}_{name}" +
                           ("" if name.endswith("out16") else "_fp32") + ".txt")
        with open(out, "w") as f:
            for i in range(args.cases):
                ra, rb = hex_row(a[i]), hex_row(b[i])
                if len(ra) != len(rb) or not ra:
                    raise ValueError(f"{folder}: case {i + 1}: a has {len(ra)}, b {len(rb)} values")
                f.write("".join(encode(fmt, x) for x in ra) + " " +
                        "".join(encode(fmt, x) for x in rb) + " " +
                        f"{0 if (gpu, fmt) in ZERO_C else int(c[i].strip(), 2):08x} "
                        f"{int(d[i].strip(), 2):08x}\n")
        print(f"{out}: {args.cases} cases, k = {len(ra)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

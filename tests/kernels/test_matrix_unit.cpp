// Tests of the matrix-multiply unit model (ebla/kernels/matrix_unit.hpp).
//
//  1. Hand-computed probes, one behaviour each: seed 003's probes and those of its test suite
//     (exact products, small addends lost without extra alignment bits, round toward zero,
//     normalisation at the end, carry-out bits, non-monotonicity), on the V100/A100 presets,
//     the x86 BF16 instructions' order, DAZ and FTZ, and the MI210's pairwise tree and flushes.
//  2. The integer emulation against an independent oracle: __float128 arithmetic, each term
//     truncated explicitly to the grid below the largest exponent (truncq), the exact sum checked
//     exact with TwoSum, and rounding by searching the value table of the output format (small
//     formats, every input combination of fp4 and random fp8) or by the __float128 -> float
//     conversion of libgcc (binary32 accumulation); pairwise units too. The MI210 / MI250
//     presets also against Khattak & Mikaitis's CDNA 2 model rewritten in float arithmetic.
//  3. The binary64 / binary32 FMA-chain presets against std::fma / std::fmaf, bit for bit.
//  4. The AVX-512 BF16 preset against this CPU's VDPBF16PS, bit for bit (skipped, saying why,
//     on a CPU without it).
//  5. unit_gemm against unit_dot, and the validation of bad input.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define EBLA_TEST_X86 1
#else
#define EBLA_TEST_X86 0
#endif

#include "checks.hpp"
#include "../quad_vector.hpp"

namespace {
using ebla_test::bits_of;
using ebla_test::hex;
using ebla_test::same;

using ebla_test::Tally;
using ebla_test::expect_invalid;

using ebla::AddendJoin;
using ebla::Format;
using ebla::MatrixUnit;
using ebla::Normalisation;
using ebla::ProductOrder;
using ebla::Rounding;
namespace units = ebla::units;

using quad = __float128;
using ebla_test::QuadVector;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

float float_of(std::uint32_t b) { return ebla::bit_cast<float>(b); }
double bf16_value(std::uint16_t b) { return static_cast<double>(float_of(std::uint32_t{b} << 16)); }


std::string list(const std::vector<double>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + hex(v[i]);
  return s + "}";
}

double dot(const MatrixUnit& u, const std::vector<double>& a, const std::vector<double>& b,
           double c = 0.0) {
  return ebla::unit_dot(u, a, b, c);
}

/// Expects the unit's result, bit for bit (printed in hex on failure).
void expect_dot(const MatrixUnit& u, const std::vector<double>& a, const std::vector<double>& b,
                double c, double expected, const std::string& what) {
  const double got = dot(u, a, b, c);
  EXPECT_TRUE(same(got, expected))
      << what << ": a = " << list(a) << ", b = " << list(b) << ", c = " << hex(c) << ": got "
      << hex(got) << ", expected " << hex(expected);
}

// ===========================================================================================
// 1. Hand-computed probes

const double u24 = std::ldexp(1.0, -24);  // binary32's unit roundoff

TEST(MatrixUnitProbes, ProductsAreExact) {
  // seed 003: (1 - 2^-11)^2 = 1 - 2^-10 + 2^-22 is kept, not rounded back to binary16
  const double x = 1 - std::ldexp(1, -11);
  const double p = 1 - std::ldexp(1, -10) + std::ldexp(1, -22);
  expect_dot(units::v100_fp16(), {x, 0, 0, 0}, {x, 0, 0, 0}, 0, p, "one product");
  expect_dot(units::v100_fp16(), {x, x, x, x}, {x, x, x, x}, 0, 4 * p, "four products");
  MatrixUnit rounded = units::v100_fp16();
  rounded.exact_products = false;
  rounded.product = ebla::formats::binary16();
  expect_dot(rounded, {x, 0, 0, 0}, {x, 0, 0, 0}, 0, 1 - std::ldexp(1, -10), "rounded products");
}

TEST(MatrixUnitProbes, SmallAddendsAreLostWithoutExtraBitsButNotWithThree) {
  // seed 003: four addends 2^-24 and one 1, in every position: the V100 returns 1 (its adder
  // keeps no bit below binary32's last one), an adder with 3 extra bits keeps 4 * 2^-24
  for (int pos = 0; pos <= 4; ++pos) {
    std::vector<double> b(4, u24);
    double c = u24;
    if (pos < 4)
      b[pos] = 1;
    else
      c = 1;
    expect_dot(units::v100_fp16(), {1, 1, 1, 1}, b, c, 1.0, "V100, 1 at " + std::to_string(pos));
    MatrixUnit three = units::v100_fp16();
    three.extra_bits = 3;
    expect_dot(three, {1, 1, 1, 1}, b, c, 1 + std::ldexp(1, -22), "3 extra bits");
  }
  // the test suite's probe: c = -(1 - 2^-24), a1 b1 = 1. With no extra bit, c's last bit
  // (2^-24) is truncated from its magnitude: 1 - (1 - 2^-23) = 2^-23; with 1 or 3: 2^-24.
  MatrixUnit one = units::v100_fp16();
  one.extra_bits = 1;
  expect_dot(units::v100_fp16(), {1, 0, 0, 0}, {1, 0, 0, 0}, -(1 - u24), 2 * u24, "0 extra bits");
  expect_dot(one, {1, 0, 0, 0}, {1, 0, 0, 0}, -(1 - u24), u24, "1 extra bit");
  expect_dot(units::a100_fp16(), {1, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 0}, -(1 - u24),
             u24, "A100: 3 extra bits");
}

TEST(MatrixUnitProbes, RoundsTowardZeroNotToNearest) {
  // seed 003: 2 + (2^-23 + 2^-24) is 2 + 2^-22 rounded to nearest (or up), 2 toward zero;
  // and -2 - (2^-23 + 2^-24) gives -2 toward zero, -2 - 2^-22 rounded down or to nearest
  const double small = std::ldexp(1, -23) + u24;
  MatrixUnit nearest = units::v100_fp16();
  nearest.rounding = Rounding::nearest_even;
  nearest.extra_bits = 3;  // with 0 extra bits the 2^-24 would be truncated before rounding
  for (const MatrixUnit& rz : {units::v100_fp16(), units::a100_fp16()}) {
    std::vector<double> a(rz.block, 1.0), b(rz.block, 0.0), nb(rz.block, 0.0);
    b[0] = 2, b[1] = small, nb[0] = -2, nb[1] = -small;
    expect_dot(rz, a, b, 0, 2.0, "toward zero, positive");
    expect_dot(rz, a, nb, 0, -2.0, "toward zero, negative");
  }
  expect_dot(nearest, {1, 1, 1, 1}, {2, small, 0, 0}, 0, 2 + std::ldexp(1, -22), "nearest");
  expect_dot(nearest, {1, 1, 1, 1}, {-2, -small, 0, 0}, 0, -2 - std::ldexp(1, -22), "nearest, neg");
}

TEST(MatrixUnitProbes, NormalisesAtTheEndNotAfterEachAddition) {
  // test suite probe: c = 1 - 2^-24 (exponent -1 sets the grid at 2^-24) plus 4 * 2^-24 is
  // 1 + 3 2^-24, rounded toward zero at the end: 1 + 2^-23. Normalised after each addition
  // the first sum is 1, which moves the grid to 2^-23, and the other addends are lost.
  MatrixUnit each = units::v100_fp16();
  each.normalisation = Normalisation::each_addition;
  expect_dot(units::v100_fp16(), {1, 1, 1, 1}, {u24, u24, u24, u24}, 1 - u24, 1 + 2 * u24,
             "at end");
  expect_dot(each, {1, 1, 1, 1}, {u24, u24, u24, u24}, 1 - u24, 1.0, "after each addition");
  // 1 - 1 + 2^-30: at the end the 2^-30 is below the grid of the largest term; normalised
  // after each addition, 1 - 1 = 0 first and 2^-30 survives
  const double t15 = std::ldexp(1, -15);  // a binary16 subnormal; its square is 2^-30
  expect_dot(units::v100_fp16(), {-1, t15, 0, 0}, {1, t15, 0, 0}, 1, 0.0, "at end: lost");
  expect_dot(each, {-1, t15, 0, 0}, {1, t15, 0, 0}, 1, std::ldexp(1, -30), "each: kept");
}

TEST(MatrixUnitProbes, KeepsCarryOutBits) {
  // test suite probes: 1 + 1.5 + 1.75 + 1.875 + 1.875 = 8 needs three carry bits above 2^0;
  // 4 + (1 + 2^-22 + 2^-23) = 5 + 3 2^-23 rounds toward zero at exponent 2 to 5 (-5 if negated)
  const MatrixUnit v100 = units::v100_fp16();
  expect_dot(v100, {1, 1, 1, 1}, {1, 1.5, 1.75, 1.875}, 1.875, 8.0, "three carries");
  const double c = 1 + std::ldexp(1, -22) + std::ldexp(1, -23);
  expect_dot(v100, {1, 1, 1, 1}, {1, 1, 1, 1}, c, 5.0, "rounds toward zero");
  expect_dot(v100, {1, 1, 1, 1}, {-1, -1, -1, -1}, -c, -5.0, "negative");
  MatrixUnit nearest = v100;
  nearest.rounding = Rounding::nearest_even;
  expect_dot(nearest, {1, 1, 1, 1}, {1, 1, 1, 1}, c, 5 + std::ldexp(1, -21), "to nearest");
}

TEST(MatrixUnitProbes, IsNotMonotonicWithoutNormalisation) {
  // raising c from 1 - 2^-24 to 1 lowers the result (1 + 2^-23 down to 1)
  const MatrixUnit v100 = units::v100_fp16();
  const std::vector<double> a = {1, 1, 1, 1}, b = {u24, u24, u24, u24};
  EXPECT_LT(dot(v100, a, b, 1.0), dot(v100, a, b, 1 - u24));
}

TEST(MatrixUnitProbes, Avx512Bf16DotAddsTheOddElementFirst) {
  const MatrixUnit u = units::avx512_bf16_dot();
  // 1 + 1.5 2^-24 = 1 + 2^-23 (nearest), then + 2^-24 is a tie that goes to the even 1 + 2^-22;
  // the even element first would give 1 + 2^-24 -> 1, then 1 + 2^-23
  expect_dot(u, {u24, 1.5 * u24}, {1, 1}, 1, 1 + std::ldexp(1, -22), "odd first");
  // 1 + 2^-30 -> 1, then - 1 -> 0 (at the end: 2^-30)
  expect_dot(u, {-1, std::ldexp(1, -30)}, {1, 1}, 1, 0.0, "rounded after each FMA");
  expect_dot(u, {1, 1}, {u24, u24}, 1, 1.0, "two ties to even");
}

TEST(MatrixUnitProbes, Avx512Bf16DotFlushesSubnormals) {
  const MatrixUnit u = units::avx512_bf16_dot();
  const double fmin = std::ldexp(1, -126);
  // a subnormal c reads as zero: 2^-127 + 2^-126 = 2^-126, not 1.5 2^-126
  expect_dot(u, {0, std::ldexp(1, -63)}, {0, std::ldexp(1, -63)}, fmin / 2, fmin, "DAZ on c");
  // subnormal bf16 inputs read as zero
  expect_dot(u, {0, std::ldexp(1, -127)}, {0, 1}, fmin, fmin, "DAZ on a");
  // 2^-126 - 2^-150 is a binary32 number with an unbounded exponent, below fmin: flushed
  // (x86 decides tininess after rounding); 2^-126 - 2^-151 rounds to 2^-126: kept
  expect_dot(u, {0, -std::ldexp(1, -75)}, {0, std::ldexp(1, -75)}, fmin, 0.0, "FTZ");
  expect_dot(u, {0, -std::ldexp(1, -75)}, {0, std::ldexp(1, -76)}, fmin, fmin, "not tiny");
  // the even element (added last) is the product, so that no +0 follows the flushed -0
  expect_dot(u, {std::ldexp(1, -64), 0}, {std::ldexp(1, -63), 0}, -fmin, -0.0, "FTZ keeps sign");
}

TEST(MatrixUnitProbes, AmxBf16AccumulatesEvenAndOddElementsApart) {
  // TDPBF16PS: even chain 1 (+ 0 ...), odd chain 2^-24 + 2^-24 = 2^-23, then 1 + 2^-23;
  // one chain would lose both 2^-24 (ties to the even 1)
  std::vector<double> a(32, 0.0), b(32, 0.0);
  a[0] = 1, a[1] = u24, a[3] = u24;
  b[0] = b[1] = b[3] = 1;
  expect_dot(units::amx_bf16(), a, b, 0, 1 + 2 * u24, "two chains");
  MatrixUnit one_chain = units::amx_bf16();
  one_chain.chains = 1;
  expect_dot(one_chain, a, b, 0, 1.0, "one chain");
  // c joins after: 1 + (2^-24 + 2^-24) = 1 + 2^-23 (joining first it would be lost)
  std::vector<double> a2(32, 0.0), b2(32, 0.0);
  a2[0] = a2[2] = u24;
  b2[0] = b2[2] = 1;
  expect_dot(units::amx_bf16(), a2, b2, 1, 1 + 2 * u24, "c after the products");
  MatrixUnit c_first = units::amx_bf16();
  c_first.addend = AddendJoin::with_products;
  expect_dot(c_first, a2, b2, 1, 1.0, "c joining the even chain");
}

TEST(MatrixUnitProbes, ZeroSignsFollowIeee) {
  const MatrixUnit f = units::fma_binary64();
  expect_dot(f, {-0.0}, {1}, -0.0, -0.0, "-0 + -0");
  expect_dot(f, {-0.0}, {1}, 0.0, 0.0, "-0 + +0");
  expect_dot(f, {1}, {-1}, 1, 0.0, "exact cancellation");
  expect_dot(f, {-std::ldexp(1, -600)}, {std::ldexp(1, -600)}, 0, -0.0, "underflow keeps sign");
  expect_dot(units::v100_fp16(), {-0.0, -0.0, 0.0, 0.0}, {1, 1, -1, -1}, -0.0, -0.0, "all -0");
  expect_dot(units::v100_fp16(), {1, 1, 0, 0}, {1, -1, 0, 0}, -0.0, 0.0, "cancellation: +0");
}

TEST(MatrixUnitProbes, OverflowAndSpecials) {
  const double fmax = FLT_MAX, big = std::ldexp(1, 52);  // 2^52 2^52 = 2^104: FLT_MAX + it = 2^128
  std::vector<double> a(8, 0.0), b(8, 0.0);
  a[0] = big, b[0] = big;
  expect_dot(units::a100_bf16(), a, b, fmax, fmax, "toward zero: fmax");
  MatrixUnit nearest = units::a100_bf16();
  nearest.rounding = Rounding::nearest_even;
  expect_dot(nearest, a, b, fmax, inf, "nearest: inf");
  expect_dot(units::avx512_bf16_dot(), {0, big}, {0, big}, fmax, inf, "vdpbf16ps: tie to 2^128");
  const MatrixUnit f = units::fma_binary32();
  EXPECT_TRUE(std::isnan(dot(f, {nan_value}, {1}, 1)));
  EXPECT_TRUE(std::isnan(dot(f, {inf}, {0}, 1)));
  EXPECT_TRUE(std::isnan(dot(f, {inf}, {1}, -inf)));
  expect_dot(f, {inf}, {-2}, 1e30, -inf, "inf product");
  expect_dot(f, {1e300}, {1}, 0, inf, "input rounded to binary32 overflows");
}

TEST(MatrixUnitProbes, RoundsInputsToTheInputFormat) {
  // 1 + 2^-11 is a tie in binary16: to the even 1; 1/3 rounds to 0x1.554p-2
  expect_dot(units::v100_fp16(), {1 + std::ldexp(1, -11), 0, 0, 0}, {1, 0, 0, 0}, 0, 1.0, "tie");
  expect_dot(units::v100_fp16(), {1.0 / 3, 0, 0, 0}, {1, 0, 0, 0}, 0, 0x1.554p-2, "1/3");
  // c is rounded to binary32 first
  expect_dot(units::v100_fp16(), {0, 0, 0, 0}, {0, 0, 0, 0}, 1.0 / 3, 0x1.555556p-2, "c");
}

TEST(MatrixUnitProbes, BlocksFollowAlgorithmOne) {
  // k = 6 on a block-4 unit: blocks {1..4} then {5, 6, 0, 0}; c = 1 joins the first block.
  // 1 + 4 2^-24 -> 1 (lost in one unit operation); 1 + 2 2^-24 -> 1.
  const std::vector<double> a(6, 1.0), b(6, u24);
  expect_dot(units::v100_fp16(), a, b, 1, 1.0, "blocks of 4");
  // the FMA chain keeps each: 1 + 2^-24 ties to 1 each time as well
  expect_dot(units::fma_binary32(), a, b, 1, 1.0, "FMA chain");
  // with c = 0 the first block sums 4 2^-24 exactly, the second adds 2 2^-24
  expect_dot(units::v100_fp16(), a, b, 0, 6 * u24, "from zero");
}

TEST(MatrixUnitProbes, Mi210AddsItsProductsAsABalancedTreeThenC) {
  // binary16 inputs, products 1, 1.5 2^-24, 2^-24, -1 (each exact in binary32). The tree:
  // 1 + 1.5 2^-24 -> 1 + 2^-23, 2^-24 - 1 exact, their sum 1.5 2^-23. In order, one chain:
  // 1 + 2^-23, then + 2^-24 ties to 1 + 2^-22, then - 1: 2^-22. Two chains (p1 + p3) + (p2 + p4):
  // 1 + 2^-24 ties to 1, -1 + 1.5 2^-24 ties to -1 + 2^-23, their sum 2^-23. One rounding at
  // the end: the exact 1.25 2^-23.
  const double h = std::ldexp(1.0, -12);
  const std::vector<double> a = {1, 1.5 * h, h, -1}, b = {1, h, h, 1};
  const MatrixUnit tree = units::mi210_fp16();
  expect_dot(tree, a, b, 0, 1.5 * std::ldexp(1.0, -23), "(p1 + p2) + (p3 + p4)");
  MatrixUnit mirrored = tree;  // (p4 + p3) + (p2 + p1): the same pairs
  mirrored.order = ProductOrder::backward;
  expect_dot(mirrored, a, b, 0, 1.5 * std::ldexp(1.0, -23), "order has no effect");
  MatrixUnit in_order = tree;
  in_order.pairwise = false;
  expect_dot(in_order, a, b, 0, std::ldexp(1.0, -22), "((p1 + p2) + p3) + p4");
  MatrixUnit two_chains = in_order;
  two_chains.chains = 2;
  expect_dot(two_chains, a, b, 0, std::ldexp(1.0, -23), "(p1 + p3) + (p2 + p4)");
  MatrixUnit at_end = in_order;
  at_end.normalisation = Normalisation::at_end;
  expect_dot(at_end, a, b, 0, 1.25 * std::ldexp(1.0, -23), "one rounding");
  // the second half of the block pairs its own neighbours: the same products in places 5..8
  // of a block of 8, after four zeros, give the same tree sum
  MatrixUnit eight = tree;
  eight.block = 8;
  std::vector<double> a8(4, 0.0), b8(4, 0.0);
  a8.insert(a8.end(), a.begin(), a.end());
  b8.insert(b8.end(), b.begin(), b.end());
  expect_dot(eight, a8, b8, 0, 1.5 * std::ldexp(1.0, -23), "b = 8, second half");
  // c after the tree: 1 + (2^-24 + 2^-24) = 1 + 2^-23; c joining first would lose both
  expect_dot(tree, {h, h, 0, 0}, {h, h, 0, 0}, 1, 1 + std::ldexp(1.0, -23), "c after");
  // one operation per 4 products, the running sum as c: 1 + 2^-24 (ties to 1) four times
  // in blocks of one product each is 1; in one block of four the tree keeps 4 2^-24 = 2^-22
  expect_dot(tree, {h, h, h, h}, {h, h, h, h}, 1, 1 + std::ldexp(1.0, -22), "one block");
  expect_dot(tree, {h, 0, 0, 0, h, 0, 0, 0, h, 0, 0, 0, h}, {h, 0, 0, 0, h, 0, 0, 0, h, 0, 0, 0, h},
             1, 1.0, "four blocks, k = 13 (the last one short)");
  EXPECT_EQ(ebla::to_string(tree),
            "block 4, input binary16 (subnormals read as zero), products rounded to binary32, "
            "accumulation binary32 nearest_even (subnormals flushed), extra bits unbounded, "
            "normalisation each_addition, addend after_products, pairwise tree");
}

TEST(MatrixUnitProbes, Mi210FlushesInputsProductsAndSumsAndOverflowsInBinary32) {
  const MatrixUnit u = units::mi210_bf16();
  const double fmin = std::ldexp(1.0, -126);
  const auto p2 = [](int e) { return std::ldexp(1.0, e); };
  // a product below 2^-126 enters the tree as 0: 2^-126 + 2^-127 is 2^-126 (exactly added,
  // 1.5 2^-126), and 2^-127 + 2^-127 is 0 (not 2^-126)
  expect_dot(u, {p2(-63), p2(-63), 0, 0}, {p2(-63), p2(-64), 0, 0}, 0, fmin, "product flushed");
  expect_dot(u, {p2(-63), p2(-63), 0, 0}, {p2(-64), p2(-64), 0, 0}, 0, 0.0, "both flushed");
  MatrixUnit gradual = u;
  gradual.output_subnormals = true;
  expect_dot(gradual, {p2(-63), p2(-63), 0, 0}, {p2(-63), p2(-64), 0, 0}, 0, 1.5 * fmin,
             "kept with subnormal outputs");
  // a sum below 2^-126 is flushed, keeping its sign: 1.5 2^-126 - 2^-126 = 2^-127 -> 0
  expect_dot(u, {1.5 * p2(-63), -p2(-63), 0, 0}, {p2(-63), p2(-63), 0, 0}, 0, 0.0, "sum flushed");
  // c + the tree's sum: -1.5 2^-126 + 2^-126 = -2^-127 -> -0
  expect_dot(u, {p2(-63), 0, 0, 0}, {p2(-63), 0, 0, 0}, -1.5 * fmin, -0.0, "sign kept");
  // subnormal inputs and c read as zero: 2^-127 * 2^10 would be 2^-117
  expect_dot(u, {p2(-127), 0, 0, 0}, {p2(10), 0, 0, 0}, fmin, fmin, "DAZ on a");
  expect_dot(u, {p2(-60), 0, 0, 0}, {p2(-60), 0, 0, 0}, fmin / 2, p2(-120), "DAZ on c");
  // products are binary32 numbers: 2^64 * 2^64 = 2^128 overflows to inf before the tree
  // (exact products would give 2^128 - 2^127 = 2^127), and inf - inf is NaN
  expect_dot(u, {p2(64), -p2(64), 0, 0}, {p2(64), p2(63), 0, 0}, 0, inf, "product overflow");
  expect_dot(u, {-p2(64), p2(63), 0, 0}, {p2(64), p2(64), 0, 0}, 0, -inf, "negative overflow");
  EXPECT_TRUE(std::isnan(dot(u, {p2(64), -p2(64), 0, 0}, {p2(64), p2(64), 0, 0})))
      << "inf - inf";
  MatrixUnit exact = u;
  exact.exact_products = true;
  expect_dot(exact, {p2(64), -p2(64), 0, 0}, {p2(64), p2(63), 0, 0}, 0, p2(127), "exact products");
  // the sum of the tree overflows like any binary32 addition
  expect_dot(u, {p2(63), p2(63), 0, 0}, {p2(64), p2(64), 0, 0}, 0, inf, "sum overflow");
}

// ===========================================================================================
// 2. The integer emulation against an independent oracle

/// Rounds an exact value to a format: to nearest even or toward zero, with gradual underflow
/// or flush to zero decided after rounding (as with an unbounded exponent).
using QuadRounder = std::function<quad(quad x, bool nearest, bool gradual)>;

quad signed_zero(quad x) { return signbitq(x) ? -static_cast<quad>(0) : static_cast<quad>(0); }

/// Rounding by searching the sorted table of a small format's values: every encoding decoded
/// by ebla::decode; for flush to zero, the normal numbers of eight more binades below fmin
/// (what an unbounded exponent would have) replace the subnormals.
class TableRounder {
 public:
  explicit TableRounder(const Format& f) : f_(f) {
    const int width = ebla::encoding_bits(f);
    for (std::uint32_t e = 0; e < (1u << (width - 1)); ++e) {  // sign bit clear
      const double v = ebla::decode(e, f);
      if (std::isfinite(v)) gradual_.push_back({v, (e & 1u) != 0});
    }
    flush_.push_back({0.0, false});
    for (int e = f.emin - 8; e < f.emin; ++e)
      for (int m = 1 << (f.t - 1); m < (1 << f.t); ++m)
        flush_.push_back({std::ldexp(m, e - f.t + 1), (m & 1) != 0});
    for (const Entry& x : gradual_)
      if (x.value >= f.fmin()) flush_.push_back(x);
  }

  quad operator()(quad x, bool nearest, bool gradual) const {
    if (x == 0) return x;
    const quad ax = fabsq(x);
    quad r;
    if (gradual) {
      r = magnitude(ax, gradual_, nearest);
    } else {
      r = ax < std::ldexp(1.0, f_.emin - 8) ? 0 : magnitude(ax, flush_, nearest);
      if (r < f_.fmin()) r = 0;  // tiny after rounding: flushed
    }
    return signbitq(x) ? -r : r;
  }

 private:
  struct Entry {
    double value;  ///< exact (the format has at most 53 bits); compared in __float128 (a double
                   ///< here: nvcc compiles no std::vector of a type holding __float128)
    bool odd;      ///< last significand bit of the encoding (ties go to even)
  };

  quad magnitude(quad ax, const std::vector<Entry>& t, bool nearest) const {
    const quad fmax = t.back().value;
    const quad top_ulp = std::ldexp(1.0, f_.emax - f_.t + 1);
    if (ax > fmax)  // fmax's last bit is odd: a tie at fmax + ulp/2 overflows
      return !nearest ? fmax : ax >= fmax + top_ulp / 2 ? static_cast<quad>(inf) : fmax;
    const auto it = std::lower_bound(t.begin(), t.end(), ax,
                                     [](const Entry& e, quad v) { return static_cast<quad>(e.value) < v; });
    if (it->value == ax) return ax;
    const Entry lo = *(it - 1), hi = *it;
    if (!nearest) return lo.value;
    const quad mid = (static_cast<quad>(lo.value) + hi.value) / 2;
    if (ax != mid) return ax < mid ? lo.value : hi.value;
    return lo.odd ? hi.value : lo.value;
  }

  Format f_;
  std::vector<Entry> gradual_, flush_;
};

/// Rounding to binary32 by libgcc's __float128 -> float conversion (to nearest even), moved
/// toward zero when it went away from it; flush to zero rounds 2^200 x and scales back.
quad round_binary32(quad x, bool nearest, bool gradual) {
  const quad fmin = std::ldexp(1.0, -126);
  if (x == 0) return x;
  if (!gradual && fabsq(x) < static_cast<quad>(std::ldexp(1.0, -300))) return signed_zero(x);
  const int scale = !gradual && fabsq(x) < fmin ? 200 : 0;
  const quad y = scalbnq(x, scale);
  float r = static_cast<float>(y);
  if (!nearest && fabsq(static_cast<quad>(r)) > fabsq(y)) r = std::nextafter(r, 0.0f);
  const quad v = scalbnq(static_cast<quad>(r), -scale);
  return !gradual && fabsq(v) < fmin ? signed_zero(x) : v;
}

/// The unit written out from its specification in __float128 arithmetic. (Pass table
/// rounders by std::cref: a copy per case would copy their tables.)
struct Oracle {
  MatrixUnit u;
  QuadRounder accumulation, product;
  mutable std::uint64_t inexact = 0;  ///< sums the oracle could not hold exactly (must stay 0)

  /// s + y, checked exact with TwoSum.
  quad exact_add(quad s, quad y) const {
    const quad r = s + y, bv = r - s, av = r - bv;
    if ((s - av) + (y - bv) != 0) ++inexact;
    return r;
  }

  /// The sum precision t (sum_precision, or the accumulation format's).
  int sum_t() const { return u.sum_precision != 0 ? u.sum_precision : u.accumulation.t; }

  /// x (nonzero, finite) rounded to sum_t() bits in the accumulation format's range when the
  /// unit's sums are narrower than that format; the accumulation rounder then only checks the
  /// range (under- and overflow).
  quad narrow(quad x) const {
    if (sum_t() == u.accumulation.t) return x;
    int e = ilogbq(x);
    if (u.output_subnormals) e = std::max(e, u.accumulation.emin);
    const quad scaled = scalbnq(x, sum_t() - 1 - e);
    const quad r = u.rounding == Rounding::nearest_even ? rintq(scaled) : truncq(scaled);
    return scalbnq(r, e - sum_t() + 1);
  }

  /// The reference exponent of a nonzero term: its leading bit, or for exponent_sum units the
  /// one given (e_a + e_b of a product, c's exponent clamped to emin).
  /// max(floor(log2 |x|), emin) for a finite nonzero x; 0 for infinities and NaN (whose sums
  /// are not aligned; ilogbq would give INT_MAX).
  static int clamped_exponent(quad x, int emin) {
    return isinfq(x) || isnanq(x) ? 0 : std::max(ilogbq(x), emin);
  }

  /// One multi-operand addition of the terms [first, last), aligned on refs (null: leading
  /// bits), E at least `floor` (at_end's addition of c and the products only).
  quad add(const quad* first, const quad* last, const int* refs = nullptr,
           int floor = MatrixUnit::no_floor) const {
    bool nan = false, plus = false, minus = false, all_zero = true, all_negative = true;
    int top = std::numeric_limits<int>::min();
    for (const quad* x = first; x != last; ++x) {
      nan = nan || isnanq(*x);
      plus = plus || (isinfq(*x) && *x > 0);
      minus = minus || (isinfq(*x) && *x < 0);
      all_negative = all_negative && signbitq(*x);
      if (*x != 0 && !isnanq(*x) && !isinfq(*x)) {
        all_zero = false;
        // the exponent E of the largest term (or the largest reference exponent)
        top = std::max(top, refs != nullptr ? refs[x - first] : ilogbq(*x));
      }
    }
    if (nan || (plus && minus)) return nanq("");
    if (plus || minus) return static_cast<quad>(plus ? inf : -inf);  // (nvcc has no HUGE_VALQ)
    if (all_zero) return all_negative ? -static_cast<quad>(0) : static_cast<quad>(0);
    top = std::max(top, floor);
    const int grid = top - (sum_t() - 1) - u.extra_bits;
    quad sum = 0;
    for (const quad* t = first; t != last; ++t) {
      const quad x = *t;
      // drop every bit below 2^grid from the magnitude
      const quad y =
          u.extra_bits == MatrixUnit::unbounded ? x : scalbnq(truncq(scalbnq(x, -grid)), grid);
      sum = exact_add(sum, y);
    }
    if (sum == 0) return 0;
    return accumulation(narrow(sum), u.rounding == Rounding::nearest_even, u.output_subnormals);
  }
  /// The addition of two terms.
  quad add(quad a, quad b) const {
    const quad terms[] = {a, b};
    return add(terms, terms + 2);
  }

  quad daz(quad x, const Format& f) const {
    return !u.input_subnormals && fabsq(x) < f.fmin() ? signed_zero(x) : x;
  }

  quad operation(const QuadVector& a, const QuadVector& b, quad c) const {
    QuadVector p(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      p[i] = a[i] * b[i];  // exact: at most 2 x 53 bits
      if (!u.exact_products && !isnanq(p[i]) && !isinfq(p[i])) p[i] = product(p[i], true, true);
    }
    const bool with = u.addend == AddendJoin::with_products;
    quad s;
    if (u.normalisation == Normalisation::at_end) {
      QuadVector terms;
      std::vector<int> refs;
      if (with) {
        terms.push_back(c);
        refs.push_back(c != 0 ? clamped_exponent(c, u.accumulation.emin) : 0);
      }
      for (std::size_t i = 0; i < p.size(); ++i) {
        terms.push_back(p[i]);
        const bool zero = a[i] == 0 || b[i] == 0;
        refs.push_back(zero ? 0
                            : clamped_exponent(a[i], u.input.emin) +
                                  clamped_exponent(b[i], u.input.emin));
      }
      const bool sums = u.alignment == ebla::Alignment::exponent_sum;
      s = add(terms.begin(), terms.end(), sums ? refs.data() : nullptr, u.alignment_floor);
    } else if (u.pairwise) {  // a balanced tree, neighbours first; c after (validate)
      QuadVector level(p);
      for (quad& x : level)  // without subnormal outputs a product below fmin enters as +-0
        if (!u.output_subnormals && !isnanq(x) && !isinfq(x) && fabsq(x) < u.accumulation.fmin())
          x = signed_zero(x);
      for (std::size_t width = level.size(); width > 1; width /= 2)
        for (std::size_t i = 0; i < width / 2; ++i) level[i] = add(level[2 * i], level[2 * i + 1]);
      s = level[0];
    } else {
      QuadVector chain(u.chains, 0);
      if (with) chain[0] = c;
      for (int step = 0; step < u.block; ++step) {
        const int i = u.order == ProductOrder::forward ? step : u.block - 1 - step;
        chain[step % u.chains] = add(chain[step % u.chains], p[i]);
      }
      s = chain[0];
      for (int j = 1; j < u.chains; ++j) s = add(s, chain[j]);
    }
    return with ? s : add(c, s);
  }

  /// Algorithm 1 on one row and column; a, b in the input format, c in the accumulation format.
  double dot(const std::vector<double>& a, const std::vector<double>& b, double c) const {
    quad s = daz(c, u.accumulation);
    for (std::size_t k0 = 0; k0 < a.size(); k0 += u.block) {
      QuadVector ab(u.block, 0), bb(u.block, 0);
      for (std::size_t l = 0; l < static_cast<std::size_t>(u.block) && k0 + l < a.size(); ++l) {
        ab[l] = daz(a[k0 + l], u.input);
        bb[l] = daz(b[k0 + l], u.input);
      }
      s = operation(ab, bb, s);
    }
    return static_cast<double>(s);
  }
};

/// Compares unit_dot with the oracle on one case.
void compare_with_oracle(const Oracle& oracle, const std::vector<double>& a,
                         const std::vector<double>& b, double c, Tally& tally) {
  const double expected = oracle.dot(a, b, c);
  const double got = ebla::unit_dot(oracle.u, a, b, c);
  ++tally.cases;
  if (!same(got, expected))
    tally.mismatch(ebla::to_string(oracle.u) + ": a = " + list(a) + ", b = " + list(b) +
                   ", c = " + hex(c) + ": unit_dot " + hex(got) + ", oracle " + hex(expected));
}

/// The adders to try on a base unit: extra bits 0, 1, 3 and unbounded; nearest and toward zero;
/// six shapes (at the end with c joining or after; each addition forward, backward, with c
/// after, and in two chains); subnormal support varying with the index.
std::vector<MatrixUnit> adder_variants(const MatrixUnit& base) {
  std::vector<MatrixUnit> out;
  for (int extra : {0, 1, 3, MatrixUnit::unbounded})
    for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero})
      for (int shape = 0; shape < 6; ++shape) {
        MatrixUnit u = base;
        u.extra_bits = extra;
        u.rounding = r;
        u.normalisation = shape < 2 ? Normalisation::at_end : Normalisation::each_addition;
        u.addend =
            shape == 1 || shape >= 4 ? AddendJoin::after_products : AddendJoin::with_products;
        u.order = shape == 3 ? ProductOrder::backward : ProductOrder::forward;
        u.chains = shape == 5 ? std::min(2, u.block) : 1;
        const std::size_t i = out.size();
        u.output_subnormals = i % 2 == 0;
        u.input_subnormals = i % 3 != 0;
        out.push_back(u);
      }
  return out;
}

/// The values of every encoding of a format of at most 16 bits (NaNs and infinities included).
std::vector<double> all_values(const Format& f) {
  std::vector<double> v;
  for (std::uint32_t e = 0; e < (1u << ebla::encoding_bits(f)); ++e)
    v.push_back(ebla::decode(e, f));
  return v;
}

// Small formats: fp4 inputs, a 6-bit accumulation format, products rounded to 3 bits.
const Format small_accumulation = ebla::make_format(6, -6, 7);
const Format small_product = ebla::make_format(3, -6, 7);

TEST(MatrixUnitOracle, MatchesOnEveryFp4InputPairInEveryAdder) {
  // b = 2: every (a1, a2, b1, b2) of fp4_e2m1 (16^4 = 65536), c cycling through accumulation
  // values (zeros, subnormals, ties, fmax), in 48 adders x exact or rounded products.
  const std::vector<double> in = all_values(ebla::formats::fp4_e2m1());
  const std::vector<double> cs = {0.0,    -0.0, 0x1p-11, -0x1p-8, 1.0,     -1.0, 0x1.08p0,
                                  -3.875, 12.5, 100.0,   -252.0,  0x1.fp5, 0.75, -0x1.2p-3};
  MatrixUnit base;
  base.block = 2;
  base.input = ebla::formats::fp4_e2m1();
  base.accumulation = small_accumulation;
  base.product = small_product;
  const TableRounder acc(small_accumulation), prod(small_product);
  Tally tally;
  std::uint64_t inexact = 0;
  for (bool exact : {true, false}) {
    base.exact_products = exact;
    for (const MatrixUnit& u : adder_variants(base)) {
      const Oracle oracle{u, std::cref(acc), std::cref(prod)};
      for (std::size_t n = 0; n < 65536; ++n) {
        const std::vector<double> a = {in[n & 15], in[(n >> 4) & 15]};
        const std::vector<double> b = {in[(n >> 8) & 15], in[n >> 12]};
        compare_with_oracle(oracle, a, b, cs[n % cs.size()], tally);
      }
      inexact += oracle.inexact;
    }
  }
  EXPECT_EQ(inexact, 0u) << "the oracle's sums must be exact";
  tally.report("fp4_exhaustive");
}

/// A random unit on the given formats: every parameter drawn.
MatrixUnit random_unit(std::mt19937_64& rng, MatrixUnit u) {
  const int blocks[] = {1, 2, 3, 4, 8, 16};
  const int extras[] = {0, 1, 2, 3, 5, MatrixUnit::unbounded};
  u.block = blocks[rng() % 6];
  u.extra_bits = extras[rng() % 6];
  u.rounding = rng() % 2 ? Rounding::nearest_even : Rounding::toward_zero;
  u.normalisation = rng() % 2 ? Normalisation::at_end : Normalisation::each_addition;
  u.addend = rng() % 2 ? AddendJoin::with_products : AddendJoin::after_products;
  u.order = rng() % 2 ? ProductOrder::forward : ProductOrder::backward;
  u.chains = u.normalisation == Normalisation::at_end
                 ? 1
                 : 1 + static_cast<int>(rng() % std::min(u.block, 4));
  u.exact_products = rng() % 3 != 0;
  u.input_subnormals = rng() % 2;
  u.output_subnormals = rng() % 2;
  u.alignment = rng() % 2 ? ebla::Alignment::exponent_sum : ebla::Alignment::leading_bit;
  const int floors[] = {MatrixUnit::no_floor, -132, -20, 0};
  u.alignment_floor = floors[rng() % 4];
  if (u.accumulation.t == 24) u.sum_precision = rng() % 3 == 0 ? 8 + rng() % 17 : 0;
  return u;
}

TEST(MatrixUnitOracle, MatchesOnRandomFp8DotProducts) {
  // fp8 inputs (NaN and infinity included), an 8-bit accumulation format, products rounded to
  // 5 bits when not exact; random units, dot products of up to three blocks
  const Format acc = ebla::make_format(8, -14, 15), prod = ebla::make_format(5, -14, 15);
  const TableRounder acc_round(acc), prod_round(prod);
  const std::vector<double> cs = all_values(acc);
  std::mt19937_64 rng(7);
  Tally tally;
  std::uint64_t inexact = 0;
  for (const Format& input : {ebla::formats::fp8_e4m3(), ebla::formats::fp8_e5m2()}) {
    const std::vector<double> in = all_values(input);
    for (int n = 0; n < 120000; ++n) {
      MatrixUnit base;
      base.input = input;
      base.accumulation = acc;
      base.product = prod;
      const Oracle oracle{random_unit(rng, base), std::cref(acc_round), std::cref(prod_round)};
      const std::size_t k = rng() % (3 * oracle.u.block + 1);
      std::vector<double> a(k), b(k);
      for (std::size_t l = 0; l < k; ++l)
        a[l] = in[rng() % in.size()], b[l] = in[rng() % in.size()];
      compare_with_oracle(oracle, a, b, cs[rng() % cs.size()], tally);
      inexact += oracle.inexact;
    }
  }
  EXPECT_EQ(inexact, 0u) << "the oracle's sums must be exact";
  tally.report("fp8_random");
}

/// A random value of f: sign, t-bit significand, exponent in [lo, hi]; sometimes zero or
/// (when f has them within the range) subnormal.
double random_value(std::mt19937_64& rng, const Format& f, int lo, int hi) {
  const int kind = static_cast<int>(rng() % 20);
  const double sign = rng() % 2 ? -1.0 : 1.0;
  if (kind == 0) return sign * 0.0;
  const int e = lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  const std::uint64_t m =
      (std::uint64_t{1} << (f.t - 1)) | (rng() & ((std::uint64_t{1} << (f.t - 1)) - 1));
  const double x = sign * std::ldexp(static_cast<double>(m), e - f.t + 1);
  return ebla::round_to(x, f, Rounding::nearest_even);  // subnormal range: onto the format's grid
}

TEST(MatrixUnitOracle, MatchesOnBinary32AccumulationPresetsAndVariants) {
  // the tensor-core, AVX-512 BF16, AMX and binary32 FMA presets, and random adders on their
  // formats, against the oracle rounding with libgcc's __float128 -> float conversion.
  // Exponents are kept within a span the oracle's 113 bits hold exactly.
  const std::vector<MatrixUnit> presets = {
      units::v100_fp16(),       units::a100_fp16(), units::a100_bf16(),
      units::a100_tf32(),       units::h100_fp16(), units::h100_bf16(),
      units::h100_tf32(),       units::b200_fp16(), units::h100_fp8_e5m2(),
      units::ada_fp8_e5m2(),    units::b200_fp8_e5m2(),
      units::avx512_bf16_dot(), units::amx_bf16(),  units::fma_binary32()};
  const TableRounder bf16_products(ebla::formats::bfloat16());
  std::mt19937_64 rng(11);
  Tally tally;
  std::uint64_t inexact = 0;
  for (int n = 0; n < 150000; ++n) {
    MatrixUnit u = presets[n % presets.size()];
    if (n % 2 == 1) {  // a random adder on the preset's formats
      u = random_unit(rng, u);
      u.product = ebla::formats::bfloat16();
    }
    const Oracle oracle{u, round_binary32, std::cref(bf16_products)};
    const std::size_t k = 1 + rng() % (3 * u.block);
    // exponent ranges: binary16 reaches its subnormals; binary32 inputs (48-bit products)
    // get a narrower range
    const bool wide = u.input.t > 11;
    const int lo = wide ? -10 : u.input.emax == 15 ? -24 : -20, hi = wide ? 10 : 15;
    std::vector<double> a(k), b(k);
    for (std::size_t l = 0; l < k; ++l)
      a[l] = random_value(rng, u.input, lo, hi), b[l] = random_value(rng, u.input, lo, hi);
    const double c = random_value(rng, ebla::formats::binary32(), wide ? -20 : -40, wide ? 20 : 40);
    compare_with_oracle(oracle, a, b, c, tally);
    inexact += oracle.inexact;
  }
  EXPECT_EQ(inexact, 0u) << "the oracle's sums must be exact";
  tally.report("binary32_accumulation");
}

/// A random pairwise unit on the given formats: random_unit's adder, subnormal support and
/// products, with a power-of-two block, one chain and c after the tree.
MatrixUnit random_pairwise_unit(std::mt19937_64& rng, const MatrixUnit& base) {
  MatrixUnit u = random_unit(rng, base);
  const int blocks[] = {1, 2, 4, 8, 16, 32};
  u.block = blocks[rng() % 6];
  u.normalisation = Normalisation::each_addition;
  u.addend = AddendJoin::after_products;
  u.chains = 1;
  u.pairwise = true;
  return u;
}

TEST(MatrixUnitOracle, MatchesOnRandomPairwiseUnits) {
  // the oracle's tree (level by level over a vector of __float128) on random pairwise units:
  // fp8 inputs (NaN and infinities included) into an 8-bit accumulation format, and binary16
  // and bfloat16 inputs into binary32, near 1 or near binary32's underflow threshold
  std::mt19937_64 rng(2210);
  Tally tally;
  std::uint64_t inexact = 0;
  const Format acc = ebla::make_format(8, -14, 15), prod = ebla::make_format(5, -14, 15);
  const TableRounder acc_round(acc), prod_round(prod);
  const std::vector<double> cs = all_values(acc);
  for (const Format& input : {ebla::formats::fp8_e4m3(), ebla::formats::fp8_e5m2()}) {
    const std::vector<double> in = all_values(input);
    for (int n = 0; n < 60000; ++n) {
      MatrixUnit base;
      base.input = input;
      base.accumulation = acc;
      base.product = prod;
      const Oracle oracle{random_pairwise_unit(rng, base), std::cref(acc_round),
                          std::cref(prod_round)};
      const std::size_t k = rng() % (3 * oracle.u.block + 1);
      std::vector<double> a(k), b(k);
      for (std::size_t l = 0; l < k; ++l)
        a[l] = in[rng() % in.size()], b[l] = in[rng() % in.size()];
      compare_with_oracle(oracle, a, b, cs[rng() % cs.size()], tally);
      inexact += oracle.inexact;
    }
  }
  for (int n = 0; n < 60000; ++n) {
    MatrixUnit base = n % 2 ? units::mi210_fp16() : units::mi210_bf16();
    const MatrixUnit u = n % 4 < 2 ? base : random_pairwise_unit(rng, base);
    const Oracle oracle{u, round_binary32, round_binary32};  // products: binary32
    const std::size_t k = 1 + rng() % (3 * u.block);
    const bool tiny = u.input.emax == 127 && rng() % 3 == 0;  // products near 2^-126
    const int lo = tiny ? -66 : u.input.emax == 15 ? -24 : -20, hi = tiny ? -60 : 15;
    std::vector<double> a(k), b(k);
    for (std::size_t l = 0; l < k; ++l)
      a[l] = random_value(rng, u.input, lo, hi), b[l] = random_value(rng, u.input, lo, hi);
    const double c =
        random_value(rng, ebla::formats::binary32(), tiny ? -130 : -40, tiny ? -120 : 40);
    compare_with_oracle(oracle, a, b, c, tally);
    inexact += oracle.inexact;
  }
  EXPECT_EQ(inexact, 0u) << "the oracle's sums must be exact";
  tally.report("pairwise_random");
}

/// Khattak & Mikaitis's CDNA 2 model (models/MI210MC.m; pws_main and pws_fma of
/// tools/Generic_BFMA_TC.m) written again with this CPU's binary32 arithmetic: a float addition
/// rounds to nearest even with gradual underflow, and DAZ and FTZ are applied by hand to every
/// input, product and sum (a subnormal sum of two binary32 numbers is exact, so flushing after
/// gradual underflow is flushing after rounding with an unbounded exponent).
float flush32(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }

/// A binary64 number rounded to binary32 to nearest even, overflowing to inf.
float to_binary32(double x) {
  constexpr float infinity = std::numeric_limits<float>::infinity();
  if (std::fabs(x) >= 0x1.ffffffp127)  // fmax + half an ulp: a tie goes to the even inf
    return x > 0 ? infinity : -infinity;
  return static_cast<float>(x);
}

double cdna2_reference(const Format& input, const std::vector<double>& a,
                       const std::vector<double>& b, double c) {
  const auto daz = [&input](double x) {
    return std::fabs(x) < input.fmin() ? std::copysign(0.0, x) : x;
  };
  float s = flush32(static_cast<float>(c));  // c is a binary32 number
  for (std::size_t k0 = 0; k0 < a.size(); k0 += 4) {
    float p[4];
    for (std::size_t l = 0; l < 4; ++l)  // x y is exact in binary64 for 16-bit inputs
      p[l] = k0 + l < a.size() ? flush32(to_binary32(daz(a[k0 + l]) * daz(b[k0 + l]))) : 0.0f;
    const float left = flush32(p[0] + p[1]), right = flush32(p[2] + p[3]);
    s = flush32(s + flush32(left + right));
  }
  return s;
}

TEST(MatrixUnitOracle, Mi210MatchesABinary32ReferenceOfTheModel) {
  // binary16 and bfloat16 inputs over their whole range (subnormals, which read as zero,
  // included), near 1, near underflow of the products and sums, near overflow, with
  // cancelling pairs and with a c that cancels the products; k = 1..70, multiples of 4 or not
  std::mt19937_64 rng(210250);
  const std::size_t lengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32, 64, 70};
  for (const char* name : {"mi210_fp16", "mi210_bf16", "mi250_fp16", "mi250_bf16"}) {
    const MatrixUnit u = ebla::matrix_unit_by_name(name);
    const Format& f = u.input;
    const bool bf16 = f.emax == 127;
    Tally tally;
    for (int n = 0; n < 50000; ++n) {
      const std::size_t k = lengths[rng() % (sizeof lengths / sizeof lengths[0])];
      const int kind = static_cast<int>(rng() % 5);
      int lo = f.emin - f.t + 1, hi = f.emax;                // 0: anywhere, subnormals included
      if (kind == 1) lo = -8, hi = 8;                        // near 1
      if (kind == 2) lo = bf16 ? -66 : -16, hi = bf16 ? -60 : -10;  // products near fmin
      if (kind == 3) lo = bf16 ? 60 : 12, hi = f.emax;       // products near or above fmax
      std::vector<double> a(k), b(k);
      for (std::size_t l = 0; l < k; ++l) {
        a[l] = random_value(rng, f, lo, hi);
        b[l] = random_value(rng, f, lo, hi);
        if (kind == 4 && l % 2 == 1) {  // cancelling neighbours: a_l b_l close to -a_(l-1) b_(l-1)
          a[l] = -a[l - 1];
          b[l] = ebla::round_to(b[l - 1] * (1 + std::ldexp(static_cast<double>(rng() % 64), -9)),
                                f, Rounding::nearest_even);
        }
        if (rng() % 500 == 0) a[l] = rng() % 2 ? inf : -inf;
      }
      double c = random_value(rng, ebla::formats::binary32(), kind == 2 ? -130 : -149,
                              kind == 2 ? -120 : 127);
      if (rng() % 4 == 0) {  // c cancelling the products
        double exact = 0;
        for (std::size_t l = 0; l < k; ++l) exact += a[l] * b[l];
        c = std::isfinite(exact) ? -static_cast<double>(to_binary32(exact)) : 0.0;
      }
      const double expected = cdna2_reference(f, a, b, c), got = ebla::unit_dot(u, a, b, c);
      ++tally.cases;
      if (!same(got, expected))
        tally.mismatch(std::string(name) + ": a = " + list(a) + ", b = " + list(b) + ", c = " +
                       hex(c) + ": unit_dot " + hex(got) + ", reference " + hex(expected));
    }
    tally.report(std::string(name) + "_reference");
  }
}

/// The binary64 shortcut of FMA-chain units (detail::fma_step) against the integer emulation
/// (detail::unit_operation) on random and edge operands: every accumulation format of t <= 24,
/// both roundings, gradual underflow and FTZ, inputs of several formats.
TEST(MatrixUnitOracle, FmaStepMatchesTheIntegerEmulation) {
  std::mt19937_64 rng(20261123);
  const std::vector<Format> accumulations = {
      ebla::formats::binary32(), ebla::formats::binary16(), ebla::formats::bfloat16(),
      ebla::formats::tf32(), ebla::make_format(12, -20, 20), ebla::unbounded_range(ebla::formats::binary16())};
  long compared = 0, shortcut = 0;
  for (const Format& acc : accumulations)
    for (Rounding mode : {Rounding::nearest_even, Rounding::toward_zero})
      for (bool gradual : {true, false}) {
        MatrixUnit u;
        u.input = ebla::formats::fp8_e5m2().t <= acc.t && acc.emin <= -14 && acc.emax >= 15
                      ? ebla::formats::fp8_e5m2()
                      : ebla::make_format(3, acc.emin, acc.emax);
        u.accumulation = acc;
        u.rounding = mode;
        u.output_subnormals = gradual;
        if (!ebla::detail::is_fma_chain(u)) {  // FTZ needs room below emin to round first
          EXPECT_TRUE(!gradual && acc.emin - 64 < -1022) << ebla::to_string(u);
          continue;
        }
        const ebla::detail::PreparedUnit p = ebla::detail::prepare(u);
        for (int trial = 0; trial < 100000; ++trial) {
          const int span = std::min(acc.emax, 40);
          const double a = random_value(rng, u.input, u.input.emin - 2, u.input.emax);
          const double b = random_value(rng, u.input, u.input.emin - 2, u.input.emax);
          // addends near the product (cancellation), tiny, huge, or zero
          double c = random_value(rng, acc, std::max(acc.emin - 24, -1000), span);
          if (trial % 4 == 0) c = ebla::round_to(-a * b * (1 + std::ldexp(1.0, -20)), acc, Rounding::toward_zero);
          if (trial % 13 == 0) c = -a * b;
          const double slow = ebla::detail::unit_operation(p, &a, &b, c);
          double fast = c;
          if (!ebla::detail::fma_step(p, a, b, fast)) continue;
          ++shortcut;
          ++compared;
          ASSERT_TRUE(same(fast, slow))
              << ebla::to_string(u) << ": a = " << hex(a) << ", b = " << hex(b) << ", c = " << hex(c)
              << ": shortcut " << hex(fast) << ", emulation " << hex(slow);
        }
      }
  std::cout << "fma_step: " << compared << " operations compared\n";
  EXPECT_GT(shortcut, 2000000);
}

/// A unit with FTZ whose accumulation format reaches binary64's range is no FMA chain, and
/// preparing it computes no rounding constants for the chain's lowered emin (2^(-1022 - 64) is
/// below binary64: the shift that made its bits was undefined, caught by UBSan in
/// `ebla gemm --experiment narrow-range`).
TEST(MatrixUnitOracle, FtzUnitOnBinary64AccumulationIsPreparedWithinRange) {
  MatrixUnit u;
  u.input = ebla::formats::binary32();
  u.accumulation = ebla::formats::binary64();
  u.output_subnormals = false;
  EXPECT_FALSE(ebla::detail::is_fma_chain(u));
  const ebla::detail::PreparedUnit p = ebla::detail::prepare(u);
  EXPECT_FALSE(p.fma_chain);
  expect_dot(u, {1.5}, {2.0}, 1.0, 4.0, "binary64 accumulation, FTZ");
  expect_dot(u, {0x1p-100}, {0x1p-100}, 0.0, 0x1p-200, "binary64 accumulation, FTZ");
  expect_dot(u, {0.0}, {1.0}, 0x1p-1070, 0.0, "a subnormal result flushed");
  u.output_subnormals = true;
  expect_dot(u, {0.0}, {1.0}, 0x1p-1070, 0x1p-1070, "a subnormal result kept");
}

// ===========================================================================================
// 3. The FMA-chain presets against std::fma and std::fmaf

/// A random double: random sign and fraction, exponent uniform in [lo, hi].
double random_double(std::mt19937_64& rng, int lo, int hi) {
  const std::uint64_t r = rng();
  const int e = lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  const double m =
      ebla::bit_cast<double>((r & ebla::binary64::fraction_mask) | 0x3ff0000000000000ull);
  return std::ldexp((r >> 63) != 0 ? -m : m, e);
}

/// x with only its leading `bits` significant bits (the rest truncated).
double keep_bits(double x, int bits) {
  const std::uint64_t mask = ~((std::uint64_t{1} << (53 - bits)) - 1);
  return ebla::bit_cast<double>(bits_of(x) & mask);
}

/// The operands of one fused multiply-add.
template <class T>
struct FmaOperands {
  T a, b, c;
};

/// Any bit pattern of T (NaNs, infinities and subnormals included).
template <class T>
T random_pattern(std::mt19937_64& rng) {
  if constexpr (std::is_same<T, double>::value)
    return ebla::bit_cast<double>(rng());
  else
    return float_of(static_cast<std::uint32_t>(rng()));
}

/// Operands of T by kind: any bit pattern; cancellation (c near -a b); results in the
/// subnormal range; overflow; moderate ranges; half-width significands, whose sums with c
/// often end in a tie.
template <class T>
FmaOperands<T> fma_operands(std::mt19937_64& rng, int kind) {
  constexpr bool wide = std::is_same<T, double>::value;
  auto r = [&rng](int lo, int hi) { return static_cast<T>(random_double(rng, lo, hi)); };
  switch (kind) {
    case 0:
      return {random_pattern<T>(rng), random_pattern<T>(rng), random_pattern<T>(rng)};
    case 1: {
      const T a = wide ? r(-600, 600) : r(-60, 60), b = wide ? r(-400, 400) : r(-60, 60);
      T c = -a * b;
      for (int i = static_cast<int>(rng() % 4); i > 0; --i)
        c = std::nextafter(c, static_cast<T>(rng() % 2 ? inf : -inf));
      return {a, b, c};
    }
    case 2:
      return wide ? FmaOperands<T>{r(-560, -480), r(-560, -480), r(-1074, -1000)}
                  : FmaOperands<T>{r(-80, -60), r(-80, -60), r(-149, -120)};
    case 3:
      return wide ? FmaOperands<T>{r(500, 530), r(480, 520), r(1000, 1023)}
                  : FmaOperands<T>{r(60, 66), r(58, 64), r(120, 127)};
    case 4:
      return wide ? FmaOperands<T>{r(-60, 60), r(-60, 60), r(-130, 130)}
                  : FmaOperands<T>{r(-20, 20), r(-20, 20), r(-45, 45)};
    default: {
      const int bits = wide ? 27 : 12;
      const T a = static_cast<T>(keep_bits(random_double(rng, 0, 0), bits));
      const T b = static_cast<T>(keep_bits(random_double(rng, 0, 0), bits));
      return {a, b, r(0, 1)};
    }
  }
}

/// The unit against fma (std::fma or std::fmaf): single operations of every kind, then chains
/// c + a_1 b_1 + ... + a_k b_k, k <= 16, each term one fma.
template <class T, class Fma>
void compare_fma(const MatrixUnit& u, Fma fma, std::uint64_t seed, const std::string& name) {
  std::mt19937_64 rng(seed);
  Tally single, chains;
  for (int n = 0; n < 1200000; ++n) {
    const FmaOperands<T> x = fma_operands<T>(rng, n % 6);
    const double expected = fma(x.a, x.b, x.c), got = dot(u, {x.a}, {x.b}, x.c);
    ++single.cases;
    if (!same(got, expected))
      single.mismatch("fma(" + hex(x.a) + ", " + hex(x.b) + ", " + hex(x.c) +
                      ") = " + hex(expected) + ", unit " + hex(got));
  }
  for (int n = 0; n < 60000; ++n) {
    const std::size_t k = 1 + rng() % 16;
    std::vector<double> a(k), b(k);
    T s = fma_operands<T>(rng, 4).c;
    const double c = s;
    for (std::size_t l = 0; l < k; ++l) {
      const FmaOperands<T> x = fma_operands<T>(rng, 1 + n % 5);
      a[l] = x.a, b[l] = x.b;
      s = fma(x.a, x.b, s);  // s = fl(s + a_l b_l)
    }
    ++chains.cases;
    if (!same(dot(u, a, b, c), s))
      chains.mismatch("chain " + list(a) + " . " + list(b) + " + " + hex(c));
  }
  single.report(name);
  chains.report(name + "_chains");
}

TEST(MatrixUnitHardware, Binary64FmaChainMatchesStdFma) {
  compare_fma<double>(
      units::fma_binary64(), [](double a, double b, double c) { return std::fma(a, b, c); }, 3,
      "binary64_fma");
}

TEST(MatrixUnitHardware, Binary32FmaChainMatchesStdFmaf) {
  compare_fma<float>(
      units::fma_binary32(), [](float a, float b, float c) { return std::fmaf(a, b, c); }, 5,
      "binary32_fma");
}

// ===========================================================================================
// 4. The AVX-512 BF16 preset against VDPBF16PS

#if EBLA_TEST_X86

bool has_avx512bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/// acc[i] = VDPBF16PS lane i: acc[i] + a[2i+1] b[2i+1] + a[2i] b[2i], 16 lanes.
__attribute__((target("avx512f,avx512bf16"))) void vdpbf16ps(float* acc, const std::uint16_t* a,
                                                             const std::uint16_t* b) {
  const __m512i ai = _mm512_loadu_si512(a), bi = _mm512_loadu_si512(b);
  __m512bh av, bv;
  std::memcpy(&av, &ai, sizeof av);
  std::memcpy(&bv, &bi, sizeof bv);
  _mm512_storeu_ps(acc, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), av, bv));
}

/// A bfloat16 pattern by kind: any (NaN, infinities, subnormals included); products near 1;
/// products near the binary32 underflow threshold; products near overflow; products of
/// 2^-166 .. 2^-146, which move an addend just above fmin to just below it (kind 4).
std::uint16_t random_bf16(std::mt19937_64& rng, int kind) {
  const auto r = static_cast<std::uint16_t>(rng());
  if (kind == 0) return r;
  const int base[] = {0, 127 - 12, 64 - 12, 200, 44};  // exponent fields (bias 127)
  const int span[] = {1, 24, 24, 56, 11};
  const int field = base[kind] + static_cast<int>(rng() % span[kind]);
  return static_cast<std::uint16_t>((r & 0x807f) | (field << 7));
}

/// A binary32 addend by kind, in the range the products of that kind reach.
float random_addend(std::mt19937_64& rng, int kind) {
  const auto r = static_cast<std::uint32_t>(rng());
  if (kind == 0 || rng() % 16 == 0) return float_of(r);  // anything, subnormals and NaN included
  if (kind == 4) return float_of((r & 0x80000000u) | 0x00800000u | (r & 7));  // fmin + j ulps
  const int base[] = {0, 127 - 30, 0, 200};
  const int span[] = {1, 60, 40, 55};
  const int field = std::min(base[kind] + static_cast<int>(rng() % span[kind]), 254);
  return float_of((r & 0x807fffffu) | (static_cast<std::uint32_t>(field) << 23));
}

/// Emulates `rounds` VDPBF16PS on one lane: a, b hold the lane's pairs, round after round.
double emulate_lane(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                    float c) {
  std::vector<double> x(a.size()), y(b.size());
  for (std::size_t l = 0; l < a.size(); ++l) x[l] = bf16_value(a[l]), y[l] = bf16_value(b[l]);
  return dot(units::avx512_bf16_dot(), x, y, c);
}

/// Runs `rounds` instructions on 16 lanes with random operands of one kind and compares
/// every lane with the emulation of its whole chain.
void vdpbf16ps_batch(std::mt19937_64& rng, int kind, int rounds, Tally& tally) {
  float acc[16], c[16];
  for (int i = 0; i < 16; ++i) acc[i] = c[i] = random_addend(rng, kind);
  std::vector<std::vector<std::uint16_t>> la(16), lb(16);  // each lane's pairs, in order
  for (int r = 0; r < rounds; ++r) {
    std::uint16_t a[32], b[32];
    for (int l = 0; l < 32; ++l) a[l] = random_bf16(rng, kind), b[l] = random_bf16(rng, kind);
    vdpbf16ps(acc, a, b);
    for (int i = 0; i < 32; ++i) la[i / 2].push_back(a[i]), lb[i / 2].push_back(b[i]);
  }
  for (int i = 0; i < 16; ++i) {
    const double got = emulate_lane(la[i], lb[i], c[i]);
    ++tally.cases;
    if (!same(got, acc[i]))
      tally.mismatch("kind " + std::to_string(kind) + ", rounds " + std::to_string(rounds) +
                     ", c = " + hex(c[i]) + ", first pair a = " + hex(bf16_value(la[i][0])) + " " +
                     hex(bf16_value(la[i][1])) + ", b = " + hex(bf16_value(lb[i][0])) + " " +
                     hex(bf16_value(lb[i][1])) + ": hardware " + hex(acc[i]) + ", unit " +
                     hex(got));
  }
}

TEST(MatrixUnitHardware, Avx512Bf16DotMatchesVdpbf16ps) {
  if (!has_avx512bf16()) GTEST_SKIP() << "this CPU has no AVX-512 BF16 (vdpbf16ps)";
  std::mt19937_64 rng(13);
  Tally single, chained;
  const auto start = std::chrono::steady_clock::now();
  for (int n = 0; n < 200000; ++n) vdpbf16ps_batch(rng, n % 5, 1, single);  // 3.2M lanes
  for (int n = 0; n < 4000; ++n) vdpbf16ps_batch(rng, n % 5, 16, chained);  // 64k chains of 32
  std::cout << "[ time     ] vdpbf16ps comparison: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  single.report("vdpbf16ps_lanes");
  chained.report("vdpbf16ps_chains_of_16");
}

#else

TEST(MatrixUnitHardware, Avx512Bf16DotMatchesVdpbf16ps) {
  GTEST_SKIP() << "not an x86-64 build: no VDPBF16PS to compare with";
}

#endif  // EBLA_TEST_X86

// ===========================================================================================
// 5. unit_gemm, the catalogue and validation

// The host's count-leading-zeros and 128-bit multiply (what this build runs) give what the
// portable code that devices run gives: every single bit and pair of bits, and random words of
// every length.
TEST(MatrixUnitWords, HostInstructionsMatchThePortableCode) {
  std::vector<std::uint64_t> words = {0, ~std::uint64_t{0}};
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j <= i; ++j) words.push_back((std::uint64_t{1} << i) | (std::uint64_t{1} << j));
  std::mt19937_64 rng(5);
  for (int n = 0; n < 20000; ++n) words.push_back(rng() >> (n % 64));
  for (const std::uint64_t v : words) ASSERT_EQ(ebla::leading_zeros(v), ebla::leading_zeros_portable(v)) << v;
  for (std::size_t n = 0; n < 200000; ++n) {
    const std::uint64_t a = words[n % words.size()], b = words[(n * 7919 + 1) % words.size()];
    std::uint64_t hi = 0, lo = 0, phi = 1, plo = 1;
    ebla::detail::mul_64x64(a, b, hi, lo);
    ebla::detail::mul_64x64_portable(a, b, phi, plo);
    ASSERT_TRUE(hi == phi && lo == plo) << a << " * " << b;
  }
}

// prepare_input passes the normal values of the input format through unrounded: it reads every
// operand as round_input does, in every preset's input format (DAZ or not). For formats of at
// most 11 bits, every multiple of the format's quantum at each exponent from below the
// subnormals to above the overflow threshold (every value, every midpoint and the values just
// out of range), each also one binary64 ulp up and down; random doubles and random values of
// the format for all.
TEST(MatrixUnitOracle, PreparedInputsAreRoundedInputs) {
  std::mt19937_64 rng(23);
  std::size_t checked = 0;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    const ebla::detail::PreparedUnit p = ebla::detail::prepare(entry.unit);
    const Format& f = entry.unit.input;
    auto check = [&](double x) {
      for (const double y : {x, -x, std::nextafter(x, 0.0), std::nextafter(x, double(INFINITY))}) {
        const double fast = ebla::detail::prepare_input(p, y), general = ebla::detail::round_input(p, y);
        ASSERT_TRUE(same(fast, general)) << entry.name << ": " << hex(y) << " -> " << hex(fast)
                                         << ", rounded " << hex(general);
        ++checked;
      }
    };
    if (f.t <= 11)
      for (int e = f.emin - f.t - 1; e <= f.emax + 1; ++e)
        for (int m = 0; m <= (2 << f.t) + 2; ++m) check(std::ldexp(m, e - f.t));
    for (int n = 0; n < 20000; ++n) {  // random doubles over the format's range, and rounded to it
      const double x = random_double(rng, std::max(f.emin - f.t - 2, -1074), std::min(f.emax, 1023));
      check(x);
      check(ebla::round_to(x, f, ebla::Rounding::nearest_even));
    }
    for (const double x : {0.0, double(INFINITY), double(NAN), 0x1p-1074, DBL_MAX}) check(x);
  }
  EXPECT_GT(checked, std::size_t{1000000});
}

using Matrix = Kokkos::View<double**, Kokkos::HostSpace>;

Matrix random_matrix(std::mt19937_64& rng, std::size_t rows, std::size_t cols) {
  Matrix m("m", rows, cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) m(i, j) = random_double(rng, -3, 3);
  return m;
}

TEST(MatrixUnitGemm, EveryEntryIsUnitDotOfItsRowAndColumn) {
  std::mt19937_64 rng(17);
  for (const MatrixUnit& u : {units::v100_fp16(), units::a100_tf32(), units::avx512_bf16_dot(),
                              units::amx_bf16(), units::fma_binary64(), units::mi210_bf16()}) {
    const std::size_t m = 13, n = 7, k = 29;  // k is not a multiple of any block
    const Matrix A = random_matrix(rng, m, k), B = random_matrix(rng, k, n),
                 C0 = random_matrix(rng, m, n);
    Matrix C("C", m, n);
    Kokkos::deep_copy(C, C0);
    ebla::unit_gemm(u, A, B, C);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        std::vector<double> row(k), col(k);
        for (std::size_t l = 0; l < k; ++l) row[l] = A(i, l), col[l] = B(l, j);
        const double expected = dot(u, row, col, C0(i, j));
        ASSERT_TRUE(same(C(i, j), expected))
            << ebla::to_string(u) << ": C(" << i << ", " << j << ")";
      }
  }
}

TEST(MatrixUnitGemm, HandlesEmptyShapes) {
  const MatrixUnit u = units::v100_fp16();
  Matrix A("A", 2, 0), B("B", 0, 3), C("C", 2, 3);
  Kokkos::deep_copy(C, 1.0 / 3);
  ebla::unit_gemm(u, A, B, C);  // k = 0: C is only read as the unit reads it (binary32)
  EXPECT_EQ(C(1, 2), static_cast<double>(1.0f / 3));
  Matrix A0("A0", 0, 4), B0("B0", 4, 3), C0("C0", 0, 3);
  EXPECT_NO_THROW(ebla::unit_gemm(u, A0, B0, C0));
}

/// A unit changed from `base` by `change`, and unit_dot on it as a callable for expect_invalid.
template <class Change>
MatrixUnit changed(MatrixUnit base, Change change) {
  change(base);
  return base;
}
auto dot_on(const MatrixUnit& u) {
  return [u] {
    const std::vector<double> x = {1, 2};
    ebla::unit_dot(u, x, x);
  };
}

TEST(MatrixUnitValidation, RejectsBadUnitsNamingFunctionAndValue) {
  const auto with = [](auto change) { return changed(units::v100_fp16(), change); };
  const auto call = [](const MatrixUnit& u) { return dot_on(u); };
  expect_invalid(call(with([](MatrixUnit& u) { u.block = 0; })), {"ebla::unit_dot", "block = 0"});
  expect_invalid(call(with([](MatrixUnit& u) { u.block = 65; })), {"block = 65"});
  expect_invalid(call(with([](MatrixUnit& u) { u.input = ebla::formats::binary64(); })),
                 {"ebla::unit_dot", "input format binary64", "wider", "binary32"});
  expect_invalid(call(with([](MatrixUnit& u) { u.accumulation.t = 1; })),
                 {"ebla::unit_dot", "t = 1"});
  expect_invalid(call(with([](MatrixUnit& u) { u.accumulation.subnormals = false; })),
                 {"subnormals"});
  expect_invalid(call(with([](MatrixUnit& u) { u.rounding = Rounding::upward; })),
                 {"rounding = upward"});
  expect_invalid(call(with([](MatrixUnit& u) { u.extra_bits = -2; })), {"extra_bits = -2"});
  expect_invalid(call(with([](MatrixUnit& u) { u.sum_precision = 1; })), {"sum_precision = 1"});
  expect_invalid(call(with([](MatrixUnit& u) { u.sum_precision = 54; })), {"sum_precision = 54"});
  expect_invalid(call(with([](MatrixUnit& u) { u.chains = 5; })), {"chains = 5"});
  expect_invalid(call(with([](MatrixUnit& u) { u.chains = 2; })), {"chains = 2", "each_addition"});
  expect_invalid(call(with([](MatrixUnit& u) {
                   u.exact_products = false;
                   u.product.emax = 5000;
                 })),
                 {"emax = 5000"});
}

TEST(MatrixUnitValidation, RejectsPairwiseUnitsItCannotTree) {
  const auto with = [](auto change) { return changed(units::mi210_fp16(), change); };
  const auto call = [](const MatrixUnit& u) { return dot_on(u); };
  expect_invalid(call(with([](MatrixUnit& u) { u.normalisation = Normalisation::at_end; })),
                 {"ebla::unit_dot", "pairwise = true needs normalisation = each_addition",
                  "at_end"});
  expect_invalid(call(with([](MatrixUnit& u) { u.chains = 2; })),
                 {"ebla::unit_dot", "pairwise = true needs chains = 1, not chains = 2"});
  expect_invalid(call(with([](MatrixUnit& u) { u.addend = AddendJoin::with_products; })),
                 {"pairwise = true needs addend = after_products", "with_products"});
  for (int block : {3, 6, 12, 48, 63})
    expect_invalid(call(with([block](MatrixUnit& u) { u.block = block; })),
                   {"pairwise = true needs a block that is a power of two, not block = " +
                    std::to_string(block)});
  for (int block : {1, 2, 4, 8, 16, 32, 64})
    EXPECT_NO_THROW(ebla::validate(with([block](MatrixUnit& u) { u.block = block; })))
        << "block " << block;
  MatrixUnit off = units::mi210_fp16();  // the same fields without the tree: a valid chain
  off.pairwise = false;
  off.block = 6;
  EXPECT_NO_THROW(ebla::validate(off));
  EXPECT_NO_THROW(ebla::validate(with([](MatrixUnit& u) { u.order = ProductOrder::backward; })));
}

TEST(MatrixUnitValidation, RejectsMismatchedOperands) {
  const MatrixUnit u = units::fma_binary64();
  expect_invalid(
      [&] {
        ebla::unit_dot(u, std::vector<double>{1, 2}, std::vector<double>{1});
      },
      {"ebla::unit_dot", "a has 2 elements, b has 1"});
  expect_invalid([&] { ebla::unit_dot(u, nullptr, nullptr, 3); }, {"a is null", "k = 3"});
  EXPECT_EQ(ebla::unit_dot(u, nullptr, nullptr, 0, 2.5), 2.5);
  Matrix A("A", 2, 3), B("B", 4, 5), C("C", 2, 5);
  expect_invalid([&] { ebla::unit_gemm(u, A, B, C); },
                 {"ebla::unit_gemm", "A is 2 x 3", "B is 4 x 5", "C is 2 x 5"});
  MatrixUnit bad = u;
  bad.block = 0;
  Matrix B2("B2", 3, 5);
  expect_invalid([&] { ebla::unit_gemm(bad, A, B2, C); }, {"ebla::unit_gemm", "block = 0"});
}

TEST(MatrixUnitCatalogue, PresetsAreValidNamedData) {
  std::vector<std::string> names;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    EXPECT_NO_THROW(ebla::validate(entry.unit, "test")) << entry.name;
    EXPECT_FALSE(entry.source.empty()) << entry.name;
    EXPECT_FALSE(ebla::to_string(entry.unit).empty());
    EXPECT_EQ(ebla::to_string(ebla::matrix_unit_by_name(entry.name)), ebla::to_string(entry.unit));
    names.push_back(entry.name);
  }
  // 4 FMA/x86 + 6 AMD (2 of them MI250's names) + 44 NVIDIA (20 of them other GPUs' names)
  EXPECT_EQ(names.size(), 54u);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end()) << "names must be unique";
  expect_invalid([] { ebla::matrix_unit_by_name("tpu"); }, {"ebla::matrix_unit_by_name", "tpu"});
  // MI250 is MI210 (the authors' MI250MC.m calls MI210MC.m)
  EXPECT_EQ(ebla::to_string(ebla::matrix_unit_by_name("mi250_fp16")),
            ebla::to_string(units::mi210_fp16()));
  EXPECT_EQ(ebla::to_string(ebla::matrix_unit_by_name("mi250_bf16")),
            ebla::to_string(units::mi210_bf16()));
  EXPECT_EQ(ebla::to_string(units::v100_fp16()),
            "block 4, input binary16, products exact, accumulation binary32 toward_zero, "
            "extra bits 0, normalisation at_end, addend with_products, alignment exponent_sum");
  EXPECT_EQ(ebla::to_string(units::h100_fp8_e4m3()),
            "block 32, input fp8_e4m3, products exact, accumulation binary32 toward_zero, sums of "
            "14 bits, extra bits 0, normalisation at_end, addend with_products, alignment "
            "exponent_sum, alignment exponent >= -133");
}

}  // namespace

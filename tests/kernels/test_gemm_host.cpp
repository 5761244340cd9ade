// Tests of the host GEMM engines (ebla/kernels/gemm_host.hpp): OpenBLAS dgemm and sgemm,
// oneDNN's bfloat16 matmul.
//
//  1. What the engines report, and bad arguments.
//  2. Exact results on integer data small enough that every partial sum, in any order, is
//     exact; over shapes with m, n, k = 0, 1, odd, non-square, long k, and C written in full.
//  3. The error on random data against a __float128 reference: within gamma_k(u) sum |a_i b_i|
//     (u = 2^-24 for the binary32 engines on bfloat16, binary16 and tf32 data, whose products
//     are exact in binary32; u = 2^-53 for dgemm on binary32 data), with zero violations over
//     every entry of many shapes and three distributions; and the check itself rejects a
//     perturbed result.
//  4. The edges: bfloat16 subnormal inputs (read as zero), products and sums below binary32's
//     normal range (flushed), huge values, overflow, infinities and NaN with odd k; binary32's
//     gradual underflow in sgemm.
// bf16_gemm's tests are skipped, saying why, when gemm_engines().onednn_bf16 is false.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm_host.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../quad_vector.hpp"

namespace {

using quad = __float128;
using ebla::host::detail::Bf16Weights;

constexpr double inf = std::numeric_limits<double>::infinity();

#define SKIP_WITHOUT_BF16()                                                                       \
  do {                                                                                            \
    if (!ebla::host::gemm_engines().onednn_bf16) {                                                \
      GTEST_SKIP() << "oneDNN has no native bfloat16 matmul on this CPU (its ISA: \""             \
                   << ebla::host::gemm_engines().onednn_isa << "\")";                             \
    }                                                                                             \
  } while (false)

struct Shape {
  std::int64_t m, n, k;
};

std::string str(const Shape& s) {
  return std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
}

// m, n, k = 0 and 1, odd, non-square, long k, and m >= 1024 (bf16_gemm reorders B there).
const std::vector<Shape> shapes = {
    {0, 0, 0},    {0, 5, 3},    {4, 0, 3},    {3, 5, 0},      {0, 0, 7},     {1, 1, 1},    {1, 7, 1},
    {7, 1, 5},    {1, 1, 1000}, {3, 5, 7},    {17, 31, 13},   {64, 64, 64},  {65, 33, 129}, {100, 1, 300},
    {1, 200, 77}, {2, 3, 5001}, {33, 1031, 2}, {128, 96, 1024}, {1024, 40, 70}, {1100, 17, 33}};

// The engines under test.
enum class Engine { dgemm, sgemm, bf16 };
const char* name(Engine e) {
  switch (e) {
    case Engine::dgemm: return "dgemm";
    case Engine::sgemm: return "sgemm";
    case Engine::bf16: return "bf16_gemm";
  }
  return "?";
}

std::uint16_t bf16_bits(double x) {  // x must be a bfloat16 value
  const float f = static_cast<float>(x);
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  EXPECT_EQ(u & 0xffffu, 0u) << x << " is not a bfloat16 value";
  return static_cast<std::uint16_t>(u >> 16);
}

double bf16_value(std::uint16_t bits) {
  const std::uint32_t u = std::uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <class T>
const T* data_or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

// C = A B through one engine; A, B hold values of the engine's input format. C starts as NaN,
// so that an entry left unwritten shows.
std::vector<double> run(Engine e, const Shape& s, const std::vector<double>& A, const std::vector<double>& B,
                        Bf16Weights weights = Bf16Weights::automatic) {
  const std::size_t mn = static_cast<std::size_t>(s.m * s.n);
  std::vector<double> C(mn);
  if (e == Engine::dgemm) {
    C.assign(mn, std::nan(""));
    ebla::host::dgemm(s.m, s.n, s.k, data_or_null(A), data_or_null(B), mn ? C.data() : nullptr);
    return C;
  }
  std::vector<float> Cf(mn, std::nanf(""));
  if (e == Engine::sgemm) {
    const std::vector<float> Af(A.begin(), A.end()), Bf(B.begin(), B.end());
    ebla::host::sgemm(s.m, s.n, s.k, data_or_null(Af), data_or_null(Bf), mn ? Cf.data() : nullptr);
  } else {
    std::vector<std::uint16_t> Ab(A.size()), Bb(B.size());
    std::transform(A.begin(), A.end(), Ab.begin(), bf16_bits);
    std::transform(B.begin(), B.end(), Bb.begin(), bf16_bits);
    ebla::host::detail::bf16_gemm(s.m, s.n, s.k, data_or_null(Ab), data_or_null(Bb), mn ? Cf.data() : nullptr,
                                  weights);
  }
  std::copy(Cf.begin(), Cf.end(), C.begin());
  return C;
}

// ---------------------------------------------------------------------------------------------
// 1. Engines and arguments

TEST(GemmHost, EnginesReported) {
  const auto& e = ebla::host::gemm_engines();
  EXPECT_NE(e.blas.find("OpenBLAS"), std::string::npos) << e.blas;
  EXPECT_FALSE(e.onednn_isa.empty());
  std::printf("BLAS: %s\noneDNN ISA: %s, native bfloat16: %s\n", e.blas.c_str(), e.onednn_isa.c_str(),
              e.onednn_bf16 ? "yes" : "no");
#if defined(__x86_64__) && defined(__GNUC__)
  // oneDNN sees what cpuid says, unless told to use less
  if (std::getenv("DNNL_MAX_CPU_ISA") == nullptr && std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {
    EXPECT_EQ(e.onednn_bf16, __builtin_cpu_supports("avx512bf16") != 0);
  }
#endif
  EXPECT_EQ(&e, &ebla::host::gemm_engines());  // checked once
}

TEST(GemmHost, RejectsBadArguments) {
  double d = 1;
  float f = 1;
  std::uint16_t h = 0x3f80;
  EXPECT_THROW(ebla::host::dgemm(-1, 1, 1, &d, &d, &d), ebla::InvalidArgument);
  EXPECT_THROW(ebla::host::sgemm(1, -2, 1, &f, &f, &f), ebla::InvalidArgument);
  EXPECT_THROW(ebla::host::dgemm(1, 1, 1, nullptr, &d, &d), ebla::InvalidArgument);
  EXPECT_THROW(ebla::host::sgemm(1, 1, 1, &f, nullptr, &f), ebla::InvalidArgument);
  EXPECT_THROW(ebla::host::sgemm(1, 1, 0, nullptr, nullptr, nullptr), ebla::InvalidArgument);
  EXPECT_THROW(ebla::host::dgemm(std::int64_t{1} << 31, 1, 1, &d, &d, &d), ebla::InvalidArgument);
  try {
    ebla::host::dgemm(2, 3, -4, &d, &d, &d);
    ADD_FAILURE() << "no exception";
  } catch (const ebla::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ebla::host::dgemm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("k = -4"), std::string::npos) << e.what();
  }
  if (ebla::host::gemm_engines().onednn_bf16) {
    EXPECT_THROW(ebla::host::bf16_gemm(1, 1, -1, &h, &h, &f), ebla::InvalidArgument);
    EXPECT_THROW(ebla::host::bf16_gemm(1, 1, 1, &h, &h, nullptr), ebla::InvalidArgument);
  } else {
    try {
      ebla::host::bf16_gemm(1, 1, 1, &h, &h, &f);
      ADD_FAILURE() << "no exception without a native bfloat16 matmul";
    } catch (const ebla::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("ebla::host::bf16_gemm"), std::string::npos) << e.what();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Exact results

// Integers in [-r, r] with k r^2 <= 2^p: every partial sum of every order is an integer of
// magnitude <= 2^p, exact in a p-bit significand. r is also kept exact in the input format.
std::vector<double> integers(std::size_t count, std::int64_t r, std::mt19937_64& gen) {
  std::uniform_int_distribution<std::int64_t> value(-r, r);
  std::vector<double> v(count);
  for (auto& x : v) x = static_cast<double>(value(gen));
  return v;
}

std::int64_t integer_range(Engine e, std::int64_t k) {
  const int p = e == Engine::dgemm ? 53 : 24;
  const std::int64_t input = e == Engine::bf16 ? 256 : e == Engine::sgemm ? (1 << 24) : (std::int64_t{1} << 26);
  const double terms = static_cast<double>(std::max<std::int64_t>(k, 1));
  const auto r = static_cast<std::int64_t>(std::floor(std::sqrt(std::ldexp(1.0, p) / terms)));
  return std::max<std::int64_t>(1, std::min(r, input));
}

void check_exact(Engine e, const Shape& s, Bf16Weights weights, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const std::int64_t r = integer_range(e, s.k);
  const auto A = integers(static_cast<std::size_t>(s.m * s.k), r, gen);
  const auto B = integers(static_cast<std::size_t>(s.k * s.n), r, gen);
  const auto C = run(e, s, A, B, weights);
  int wrong = 0;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      std::int64_t exact = 0;
      for (std::int64_t l = 0; l < s.k; ++l)
        exact += static_cast<std::int64_t>(A[i * s.k + l]) * static_cast<std::int64_t>(B[l * s.n + j]);
      const double c = C[i * s.n + j];
      if (c != static_cast<double>(exact) && wrong++ < 5)
        ADD_FAILURE() << name(e) << " " << str(s) << " r = " << r << ": C(" << i << ", " << j << ") = " << c
                      << ", exact " << exact;
    }
  EXPECT_EQ(wrong, 0) << name(e) << " " << str(s);
}

TEST(GemmHost, DgemmExactOnIntegers) {
  for (const auto& s : shapes) check_exact(Engine::dgemm, s, Bf16Weights::automatic, 1);
}

TEST(GemmHost, SgemmExactOnIntegers) {
  for (const auto& s : shapes) check_exact(Engine::sgemm, s, Bf16Weights::automatic, 2);
}

TEST(GemmHost, Bf16ExactOnIntegers) {
  SKIP_WITHOUT_BF16();
  for (const auto& s : shapes)
    for (auto w : {Bf16Weights::automatic, Bf16Weights::as_given, Bf16Weights::reordered})
      check_exact(Engine::bf16, s, w, 3);
}

TEST(GemmHost, ExactOnPowersOfTwo) {
  // Products of powers of two from 2^-60 to 2^60 are exact; so are the sums of three powers
  // of two 2^p + 2^q + 2^r spanning at most the precision (p - r <= 23 for binary32), in every
  // order of the three terms.
  for (Engine e : {Engine::dgemm, Engine::sgemm, Engine::bf16}) {
    if (e == Engine::bf16 && !ebla::host::gemm_engines().onednn_bf16) continue;
    for (int p = -60; p <= 60; p += 12)
      for (int q = -60; q <= 60; q += 20)
        EXPECT_EQ(run(e, {1, 1, 1}, {std::ldexp(1.0, p)}, {std::ldexp(1.0, q)})[0], std::ldexp(1.0, p + q))
            << name(e) << " 2^" << p << " 2^" << q;
    const int span = e == Engine::dgemm ? 52 : 23;
    std::vector<double> terms = {std::ldexp(1.0, 10), std::ldexp(-1.0, 10 - span / 2), std::ldexp(1.0, 10 - span)};
    std::sort(terms.begin(), terms.end());
    do {
      const double exact = terms[0] + terms[1] + terms[2];  // exact in binary64
      EXPECT_EQ(run(e, {1, 1, 3}, terms, {1.0, 1.0, 1.0})[0], exact)
          << name(e) << " " << terms[0] << " + " << terms[1] << " + " << terms[2];
    } while (std::next_permutation(terms.begin(), terms.end()));
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Errors on random data against __float128

enum class Distribution { uniform, wide, positive };
const char* name(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "uniform";
    case Distribution::wide: return "wide";
    case Distribution::positive: return "positive";
  }
  return "?";
}

// uniform: U[-1, 1); wide: +-s 2^p, s ~ U[1, 2), p ~ U{-12..12}; positive: U[0.5, 1)
// (no cancellation: the bound is then closest to the error). Rounded to `format`.
std::vector<double> random_matrix(std::size_t count, Distribution d, const ebla::Format& format,
                                  std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), s(1.0, 2.0), half(0.5, 1.0);
  std::uniform_int_distribution<int> p(-12, 12);
  std::vector<double> v(count);
  for (auto& x : v) {
    if (d == Distribution::uniform) x = u(gen);
    if (d == Distribution::wide) x = (gen() & 1 ? -1.0 : 1.0) * std::ldexp(s(gen), p(gen));
    if (d == Distribution::positive) x = half(gen);
    x = ebla::round_to(x, format, ebla::Rounding::nearest_even);
  }
  return v;
}

struct ErrorCheck {
  std::int64_t entries = 0, violations = 0, inexact = 0;
  double max_ratio = 0;  // max error / bound
};

quad gamma_q(std::int64_t k, quad u) {
  const quad ku = static_cast<quad>(k) * u;
  return ku / (1 - ku);
}

// Counts the entries of C outside gamma_k(u) sum |a_i b_i| of the exact sum. The products
// are exact in binary64 (significands of at most 24 bits); the sum is accumulated in
// __float128 (relative error <= gamma_k(2^-113) of sum |a_i b_i|), sum |a_i b_i| in binary64
// (relative error <= gamma_k(2^-53)); the bound is widened by both.
ErrorCheck check_errors(const Shape& s, const std::vector<double>& A, const std::vector<double>& B,
                        const std::vector<double>& C, quad u) {
  ErrorCheck r;
  const quad g = (gamma_q(s.k, u) + gamma_q(s.k, quad(0x1p-113))) * (1 + gamma_q(s.k, quad(0x1p-53)));
  ebla_test::QuadVector exact(static_cast<std::size_t>(s.n));
  std::vector<double> abs_sum(static_cast<std::size_t>(s.n));
  for (std::int64_t i = 0; i < s.m; ++i) {
    std::fill(exact.begin(), exact.end(), quad(0));
    std::fill(abs_sum.begin(), abs_sum.end(), 0.0);
    for (std::int64_t l = 0; l < s.k; ++l) {
      const double a = A[i * s.k + l];
      for (std::int64_t j = 0; j < s.n; ++j) {
        const double prod = a * B[l * s.n + j];
        exact[j] += prod;
        abs_sum[j] += std::fabs(prod);
      }
    }
    for (std::int64_t j = 0; j < s.n; ++j) {
      const quad err = fabsq(static_cast<quad>(C[i * s.n + j]) - exact[j]);
      const quad bound = g * abs_sum[j];
      ++r.entries;
      if (!(err <= bound)) ++r.violations;
      if (err != 0) ++r.inexact;
      if (bound > 0) r.max_ratio = std::max(r.max_ratio, static_cast<double>(err / bound));
    }
  }
  return r;
}

const std::vector<Shape> random_shapes = {{1, 1, 1},     {3, 5, 7},     {17, 31, 13},   {64, 64, 64},
                                          {65, 33, 129}, {1, 200, 777}, {96, 64, 1024}, {31, 17, 4096},
                                          {8, 8, 16384}, {97, 65, 511}, {1100, 24, 300}};

void check_random(Engine e, const char* input, quad u, std::uint64_t seed) {
  const ebla::Format f = ebla::format_by_name(input);
  ErrorCheck total;
  std::mt19937_64 gen(seed);
  for (Distribution d : {Distribution::uniform, Distribution::wide, Distribution::positive}) {
    for (const auto& s : random_shapes) {
      const auto A = random_matrix(static_cast<std::size_t>(s.m * s.k), d, f, gen);
      const auto B = random_matrix(static_cast<std::size_t>(s.k * s.n), d, f, gen);
      const ErrorCheck c = check_errors(s, A, B, run(e, s, A, B), u);
      EXPECT_EQ(c.violations, 0) << name(e) << " on " << input << ", " << name(d) << ", " << str(s)
                                 << ": max error / bound " << c.max_ratio;
      total.entries += c.entries;
      total.violations += c.violations;
      total.inexact += c.inexact;
      total.max_ratio = std::max(total.max_ratio, c.max_ratio);
    }
  }
  std::printf("%s on %s: %lld entries, %lld inexact, %lld outside the bound, max error / bound %.3g\n", name(e),
              input, static_cast<long long>(total.entries), static_cast<long long>(total.inexact),
              static_cast<long long>(total.violations), total.max_ratio);
  EXPECT_EQ(total.violations, 0);
  EXPECT_GT(total.inexact, total.entries / 4) << "the data hardly exercises rounding";
}

TEST(GemmHost, DgemmErrorsWithinGammaOnBinary32Data) {
  check_random(Engine::dgemm, "binary32", quad(0x1p-53), 11);
}

TEST(GemmHost, SgemmErrorsWithinGammaOnBfloat16Data) {
  check_random(Engine::sgemm, "bfloat16", quad(0x1p-24), 12);
}

TEST(GemmHost, SgemmErrorsWithinGammaOnBinary16Data) {
  check_random(Engine::sgemm, "binary16", quad(0x1p-24), 13);
}

TEST(GemmHost, SgemmErrorsWithinGammaOnTf32Data) {
  check_random(Engine::sgemm, "tf32", quad(0x1p-24), 14);
}

TEST(GemmHost, Bf16ErrorsWithinGamma) {
  SKIP_WITHOUT_BF16();
  check_random(Engine::bf16, "bfloat16", quad(0x1p-24), 15);
}

TEST(GemmHost, ErrorCheckRejectsAPerturbedResult) {
  // The check above would notice an engine that accumulates in less than binary32: the exact
  // result pushed by twice the bound, or rounded to bfloat16, fails it.
  std::mt19937_64 gen(16);
  const Shape s{16, 16, 256};
  const ebla::Format bf16 = ebla::format_by_name("bfloat16");
  const auto A = random_matrix(static_cast<std::size_t>(s.m * s.k), Distribution::positive, bf16, gen);
  const auto B = random_matrix(static_cast<std::size_t>(s.k * s.n), Distribution::positive, bf16, gen);
  auto C = run(Engine::sgemm, s, A, B);
  ASSERT_EQ(check_errors(s, A, B, C, quad(0x1p-24)).violations, 0);
  const double g = static_cast<double>(gamma_q(s.k, quad(0x1p-24)));
  double abs_sum = 0;
  for (std::int64_t l = 0; l < s.k; ++l) abs_sum += A[l] * B[l * s.n];
  auto pushed = C;
  pushed[0] += 2 * g * abs_sum;
  EXPECT_EQ(check_errors(s, A, B, pushed, quad(0x1p-24)).violations, 1);
  auto low = C;
  for (auto& c : low) c = ebla::round_to(c, bf16, ebla::Rounding::toward_zero);
  EXPECT_GT(check_errors(s, A, B, low, quad(0x1p-24)).violations, s.m * s.n / 2);
}

// ---------------------------------------------------------------------------------------------
// 4. Subnormals, underflow, huge values, overflow, infinities and NaN

// One entry, c = sum_l a_l b_l, through bf16_gemm; B reordered or as given.
double bf16_dot(const std::vector<double>& a, const std::vector<double>& b, Bf16Weights w) {
  const Shape s{1, 1, static_cast<std::int64_t>(a.size())};
  return run(Engine::bf16, s, a, b, w)[0];
}

TEST(GemmHost, Bf16SubnormalInputsReadAsZero) {
  SKIP_WITHOUT_BF16();
  const double smallest = bf16_value(0x0001);  // 2^-133
  const double largest_sub = bf16_value(0x007f);  // (1 - 2^-7) 2^-126
  ASSERT_EQ(smallest, 0x1p-133);
  for (auto w : {Bf16Weights::as_given, Bf16Weights::reordered}) {
    // the products 2^-133, 2^-33 and ~2^-26 are normal binary32 numbers, but an input is subnormal
    EXPECT_EQ(bf16_dot({smallest}, {1.0}, w), 0.0);
    EXPECT_EQ(bf16_dot({smallest}, {0x1p100}, w), 0.0);
    EXPECT_EQ(bf16_dot({0x1p100}, {largest_sub}, w), 0.0);
    EXPECT_EQ(bf16_dot({1.0, smallest, 2.0}, {3.0, 0x1p120, 0.5}, w), 4.0);
    EXPECT_EQ(bf16_dot({0x1p-126}, {0x1p100}, w), 0x1p-26);  // the smallest normal is kept
  }
  // in a larger product, at every position of a row
  const Shape s{3, 4, 37};
  std::vector<double> A(static_cast<std::size_t>(s.m * s.k), 1.0), B(static_cast<std::size_t>(s.k * s.n), 0.0);
  for (std::int64_t l = 0; l < s.k; ++l) B[l * s.n + l % s.n] = 0x1p120;
  for (std::int64_t l = 0; l < s.k; ++l) A[l] = smallest;  // row 0: every a subnormal
  const auto C = run(Engine::bf16, s, A, B);
  for (std::int64_t j = 0; j < s.n; ++j) {
    EXPECT_EQ(C[j], 0.0) << "row of subnormals, column " << j;
    EXPECT_GT(C[s.n + j], 0x1p120) << "row of ones, column " << j;
  }
}

TEST(GemmHost, Bf16ResultsBelowTheNormalRangeFlushToZero) {
  SKIP_WITHOUT_BF16();
  for (auto w : {Bf16Weights::as_given, Bf16Weights::reordered}) {
    // products of normal inputs below 2^-126 (binary32 would hold them as subnormals)
    EXPECT_EQ(bf16_dot({0x1p-70}, {0x1p-70}, w), 0.0);
    EXPECT_EQ(bf16_dot({0x1p-63}, {0x1p-63}, w), 0x1p-126);
    EXPECT_EQ(bf16_dot({0x1.fcp-64}, {0x1p-63}, w), 0.0);  // (1 - 2^-7) 2^-126
    // a sum that falls below the normal range: 1.5 2^-126 - 2^-126 = 2^-127
    EXPECT_EQ(bf16_dot({0x1.8p-63, -0x1p-63}, {0x1p-63, 0x1p-63}, w), 0.0);
    // flushed products do not disturb a normal sum
    EXPECT_EQ(bf16_dot({1.0, 0x1p-80, 0x1p-80}, {1.0, 0x1p-80, -0x1p-80}, w), 1.0);
  }
}

TEST(GemmHost, SgemmKeepsSubnormals) {
  // OpenBLAS runs under the caller's MXCSR (gradual underflow by default), also after oneDNN
  // has run in this thread.
  if (ebla::host::gemm_engines().onednn_bf16) bf16_dot({1.0}, {1.0}, Bf16Weights::automatic);
  EXPECT_EQ(run(Engine::sgemm, {1, 1, 1}, {0x1p-70}, {0x1p-70})[0], 0x1p-140);
  EXPECT_EQ(run(Engine::sgemm, {1, 1, 2}, {0x1.8p-63, -0x1p-63}, {0x1p-63, 0x1p-63})[0], 0x1p-127);
  EXPECT_EQ(run(Engine::sgemm, {1, 1, 1}, {0x1p-149}, {1.0})[0], 0x1p-149);
}

TEST(GemmHost, HugeValuesAndOverflow) {
  const double bf16_max = bf16_value(0x7f7f);  // (2 - 2^-7) 2^127
  const double f32_max = std::numeric_limits<float>::max();
  for (Engine e : {Engine::sgemm, Engine::bf16}) {
    if (e == Engine::bf16 && !ebla::host::gemm_engines().onednn_bf16) continue;
    const double big = e == Engine::bf16 ? bf16_max : f32_max;
    const auto dot = [&](std::vector<double> a, std::vector<double> b) {
      return run(e, {1, 1, static_cast<std::int64_t>(a.size())}, a, b)[0];
    };
    EXPECT_EQ(dot({big}, {1.0}), big) << name(e);
    EXPECT_EQ(dot({big, -big}, {1.0, 1.0}), 0.0) << name(e);
    EXPECT_EQ(dot({0x1p100}, {0x1p27}), 0x1p127) << name(e);
    EXPECT_EQ(dot({big}, {2.0}), inf) << name(e);            // the product overflows
    EXPECT_EQ(dot({big, big}, {1.0, 1.0}), inf) << name(e);  // the sum overflows
    EXPECT_EQ(dot({-big, -big, 1.0}, {1.0, 1.0, 1.0}), -inf) << name(e);
  }
}

TEST(GemmHost, InfinitiesAndNanWithOddK) {
  // an infinity at the last of an odd number of inputs (a half-filled bfloat16 pair) gives an
  // infinity, not the NaN of inf * 0 with padding
  for (Engine e : {Engine::dgemm, Engine::sgemm, Engine::bf16}) {
    if (e == Engine::bf16 && !ebla::host::gemm_engines().onednn_bf16) continue;
    for (std::int64_t k : {1, 3, 5, 33}) {
      const Shape s{2, 3, k};
      std::vector<double> A(static_cast<std::size_t>(s.m * s.k), 1.0), B(static_cast<std::size_t>(s.k * s.n), 2.0);
      A[k - 1] = inf;                   // row 0 ends with inf
      A[s.k + k - 1] = std::nan("");    // row 1 ends with NaN
      B[(k - 1) * s.n + 2] = 0.0;       // inf * 0 in column 2
      const auto C = run(e, s, A, B);
      EXPECT_EQ(C[0], inf) << name(e) << " k = " << k;
      EXPECT_EQ(C[1], inf) << name(e) << " k = " << k;
      EXPECT_TRUE(std::isnan(C[2])) << name(e) << " k = " << k;
      for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(C[s.n + j])) << name(e) << " k = " << k;
    }
  }
}

}  // namespace

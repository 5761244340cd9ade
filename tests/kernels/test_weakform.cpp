// weakform: bit-exactness against unit_dot entry by entry, the certified bounds (14') and (15')
// against exact references on random and adversarial data, the printed bounds of seed 004
// failing where they miss a rounding, and bad input.
//
// References are exact in __float128 but for its own rounding: a product of two doubles has at
// most 106 bits and is exact; the sum of n + 1 terms is within (n + 1) 2^-113 sum |terms| of the
// exact one, which each check allows for (a violation counts only if the observed error exceeds
// the bound by more than that).
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/norm2.hpp>
#include <ebla/kernels/weakform.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "checks.hpp"

namespace {

using ebla_test::expect_invalid;

using ebla::Format;
using ebla::MatrixUnit;
using ebla::Rounding;
namespace formats = ebla::formats;

__extension__ typedef __float128 quad;

using View3 = Kokkos::View<double***, Kokkos::HostSpace>;
using View2 = Kokkos::View<double**, Kokkos::HostSpace>;

quad qabs(quad x) { return x < 0 ? -x : x; }

bool same(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return ebla::bit_cast<std::uint64_t>(x) == ebla::bit_cast<std::uint64_t>(y);
}

struct Problem {
  View3 A, B;
  View2 C;
};

Problem make_problem(std::size_t ni, std::size_t nj, std::size_t nk, std::size_t n) {
  return {View3("A", ni, nj, nk), View3("B", ni, n, nk), View2("C", nj, n)};
}

View3 copy_of(const View3& v) {
  View3 c("copy", v.extent(0), v.extent(1), v.extent(2));
  Kokkos::deep_copy(c, v);
  return c;
}

// The reference of the kernel: unit_dot on the row of B and the column of C, entry by entry.
View3 reference_kernel(const MatrixUnit& unit, const Problem& p) {
  View3 R = copy_of(p.A);
  const std::size_t n = p.B.extent(1);
  std::vector<double> row(n), col(n);
  for (std::size_t k = 0; k < p.A.extent(2); ++k)
    for (std::size_t i = 0; i < p.A.extent(0); ++i)
      for (std::size_t j = 0; j < p.A.extent(1); ++j) {
        for (std::size_t l = 0; l < n; ++l) {
          row[l] = p.B(i, l, k);
          col[l] = p.C(j, l);
        }
        R(i, j, k) = ebla::unit_dot(unit, row, col, p.A(i, j, k));
      }
  return R;
}

// ---- data ------------------------------------------------------------------------------

enum class Data { uniform, in_format, positive, cancellation, wide, near_underflow, large_addend, small_addend };
const Data all_data[] = {Data::uniform,      Data::in_format, Data::positive,
                         Data::cancellation, Data::wide,      Data::near_underflow};
const char* name(Data d) {
  switch (d) {
    case Data::uniform: return "uniform";
    case Data::in_format: return "in_format";
    case Data::positive: return "positive";
    case Data::cancellation: return "cancellation";
    case Data::wide: return "wide";
    case Data::near_underflow: return "near_underflow";
    case Data::large_addend: return "large_addend";
    case Data::small_addend: return "small_addend";
  }
  return "?";
}

// A0 against the products: large (2^10 U[-1, 1], within the accumulation's range: the products
// are aligned far below it and truncated), small (2^-20 U[-1, 1]) or as drawn.
double addend_scale(Data d, const Format& acc) {
  if (d == Data::large_addend) return std::ldexp(1.0, std::min(10, acc.emax - 5));
  return d == Data::small_addend ? 0x1p-20 : 1.0;
}

// Fills A (the initial value), B and C as `d` says, for the unit's formats.
void fill(Problem& p, Data d, const MatrixUnit& unit, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u01(0.0, 1.0), sym(-1.0, 1.0);
  const Format& in = unit.input;
  const Format& acc = unit.accumulation;
  // wide: exponents over much of the input range, products and sums kept inside the
  // accumulation range
  const int lo = in.emin + 2, hi = std::min(in.emax, acc.emax / 2) - 6;
  std::uniform_int_distribution<int> wide_exp(lo, hi), tiny_exp(in.emin - in.t, in.emin + 2);
  std::bernoulli_distribution coin(0.5);
  auto draw = [&](bool input) -> double {
    switch (d) {
      case Data::uniform:
      case Data::cancellation:
      case Data::large_addend:
      case Data::small_addend: return sym(gen);
      case Data::in_format:
        return ebla::round_to(sym(gen), input ? in : acc, Rounding::nearest_even);
      case Data::positive: return u01(gen);
      case Data::wide: return (coin(gen) ? -1 : 1) * (1 + u01(gen)) * std::ldexp(1.0, wide_exp(gen));
      case Data::near_underflow:
        return (coin(gen) ? -1 : 1) * (1 + u01(gen)) * std::ldexp(1.0, tiny_exp(gen));
    }
    return 0;
  };
  const std::size_t ni = p.A.extent(0), nj = p.A.extent(1), nk = p.A.extent(2), n = p.B.extent(1);
  for (std::size_t j = 0; j < nj; ++j)
    for (std::size_t l = 0; l < n; ++l) p.C(j, l) = draw(true);
  for (std::size_t k = 0; k < nk; ++k)
    for (std::size_t i = 0; i < ni; ++i) {
      for (std::size_t l = 0; l < n; ++l) p.B(i, l, k) = draw(true);
      for (std::size_t j = 0; j < nj; ++j) p.A(i, j, k) = draw(false) * addend_scale(d, acc);
    }
  if (d == Data::cancellation)  // A0 = -(B C^T) as the inputs are read: the result is tiny
    for (std::size_t k = 0; k < nk; ++k)
      for (std::size_t i = 0; i < ni; ++i)
        for (std::size_t j = 0; j < nj; ++j) {
          quad s = 0;
          for (std::size_t l = 0; l < n; ++l)
            s += static_cast<quad>(ebla::round_to(p.B(i, l, k), in, Rounding::nearest_even)) *
                 ebla::round_to(p.C(j, l), in, Rounding::nearest_even);
          p.A(i, j, k) = -static_cast<double>(s);
        }
}

// ---- checking the bounds ---------------------------------------------------------------

struct Tally {
  long layers = 0, entries = 0, finite = 0;
  long violations14 = 0, violations15 = 0;     // of the certified bounds
  long paper14 = 0, paper15 = 0;               // of the printed ones
  double max_ratio = 0;                        // observed error / (14'), finite bounds only
};

// Runs the kernel on p and checks (14'), (15') and the printed (14), (15) against the exact
// result, layer by layer.
void check_bounds(const MatrixUnit& unit, const Problem& p, Tally& t) {
  const ebla::WeakformBounds b = ebla::weakform_bounds(unit, p.A, p.B, p.C);
  View3 R = copy_of(p.A);
  ebla::weakform(unit, R, p.B, p.C);
  const std::size_t ni = p.A.extent(0), nj = p.A.extent(1), nk = p.A.extent(2), n = p.B.extent(1);
  for (std::size_t k = 0; k < nk; ++k) {
    // lower estimates of the error: the observed one less the reference's own error
    std::vector<double> col(nj, 0.0), errors;
    double row_max = 0;
    bool finite = true;
    for (std::size_t i = 0; i < ni; ++i) {
      double row = 0;
      for (std::size_t j = 0; j < nj; ++j) {
        quad exact = p.A(i, j, k), size = qabs(static_cast<quad>(p.A(i, j, k)));
        for (std::size_t l = 0; l < n; ++l) {
          exact += static_cast<quad>(p.B(i, l, k)) * p.C(j, l);
          size += qabs(static_cast<quad>(p.B(i, l, k)) * p.C(j, l));
        }
        const quad own = static_cast<quad>(n + 2) * ldexpq(size, -112);
        const quad observed = qabs(static_cast<quad>(R(i, j, k)) - exact);
        const double e = observed > own ? static_cast<double>(observed - own) : 0.0;
        const double bound = b.componentwise(i, j, k);
        ++t.entries;
        finite = finite && std::isfinite(bound);
        if (std::isfinite(bound)) {
          ++t.finite;
          if (!(e <= bound)) ++t.violations14;
          if (bound > 0) t.max_ratio = std::max(t.max_ratio, e / bound);
        }
        if (!(e <= b.paper(i, j, k))) ++t.paper14;
        row += e;
        col[j] += e;
        errors.push_back(e);
      }
      row_max = std::max(row_max, row);
    }
    const double col_max = nj > 0 ? *std::max_element(col.begin(), col.end()) : 0.0;
    // scaled (norm2_lower, a lower bound): the squares of wide binary64 errors overflow
    const double fro = ebla::norm2_lower([&](auto add) {
      for (double e : errors) add(e);
    });
    // the norms of the lower estimates, rounded down a little (binary64 sums of m terms)
    const double down = 1 - static_cast<double>(ni + nj + 4) * 0x1p-52;
    const ebla::WeakformLayerBound& L = b.layers[k];
    ++t.layers;
    if (finite) {
      t.violations15 += !(col_max * down <= L.bound1) + !(row_max * down <= L.bound_inf) +
                        !(fro <= L.bound_f);
      EXPECT_LE(col_max * down, L.bound1) << "layer " << k;
      EXPECT_LE(row_max * down, L.bound_inf) << "layer " << k;
      EXPECT_LE(fro, L.bound_f) << "layer " << k;
      // the norms of (14') lie between the errors and (15') (both computed upper bounds of
      // quantities that can be equal: compared to within their rounding)
      t.violations15 += !(col_max * down <= L.entry1) + !(row_max * down <= L.entry_inf) +
                        !(fro <= L.entry_f);
      EXPECT_LE(L.entry1, L.bound1 * (1 + 0x1p-40)) << "layer " << k;
      EXPECT_LE(L.entry_inf, L.bound_inf * (1 + 0x1p-40)) << "layer " << k;
      EXPECT_LE(L.entry_f, L.bound_f * (1 + 0x1p-40)) << "layer " << k;
    }
    t.paper15 += !(col_max * down <= L.paper1) + !(row_max * down <= L.paper_inf) +
                 !(fro <= L.paper_f);
  }
}

struct NamedUnit {
  std::string name;
  MatrixUnit unit;
};

std::vector<NamedUnit> bounded_units() {
  std::vector<NamedUnit> units = {
      {"binary32 fma", ebla::weakform_unit(formats::binary32(), formats::binary32())},
      {"binary32 fma toward zero",
       ebla::weakform_unit(formats::binary32(), formats::binary32(), Rounding::toward_zero)},
      {"binary16 -> binary32", ebla::weakform_unit(formats::binary16(), formats::binary32())},
      {"binary16 fma", ebla::weakform_unit(formats::binary16(), formats::binary16())},
      {"binary16 fma toward zero",
       ebla::weakform_unit(formats::binary16(), formats::binary16(), Rounding::toward_zero)},
      {"bfloat16 -> binary32", ebla::weakform_unit(formats::bfloat16(), formats::binary32())},
      {"bfloat16 fma", ebla::weakform_unit(formats::bfloat16(), formats::bfloat16())},
  };
  units.push_back({"fp8_e4m3 -> binary16", ebla::weakform_unit(formats::fp8_e4m3(), formats::binary16())});
  MatrixUnit daz = ebla::weakform_unit(formats::bfloat16(), formats::binary32());
  daz.input_subnormals = false;  // DAZ and FTZ, as x86's bfloat16 dot instructions
  daz.output_subnormals = false;
  units.push_back({"bfloat16 -> binary32 DAZ/FTZ", daz});
  MatrixUnit block = ebla::weakform_unit(formats::binary16(), formats::binary32());
  block.block = 4;  // one exact 4-product addition, one rounding per operation
  block.normalisation = ebla::Normalisation::at_end;
  units.push_back({"binary16 -> binary32 block 4 at_end", block});
  MatrixUnit block16 = block;
  block16.accumulation = formats::binary16();
  block16.rounding = Rounding::toward_zero;
  units.push_back({"binary16 block 4 at_end toward zero", block16});
  // the seed's own model (1)-(2): each product rounded before it is added, fl(s + fl(b c))
  units.push_back({"binary16, products rounded to binary16",
                   ebla::weakform_unit(formats::binary16(), formats::binary16(), Rounding::nearest_even,
                                       formats::binary16())});
  units.push_back({"binary32, products rounded to binary32",
                   ebla::weakform_unit(formats::binary32(), formats::binary32(), Rounding::nearest_even,
                                       formats::binary32())});
  units.push_back({"binary16 -> binary32 toward zero, products in bfloat16",
                   ebla::weakform_unit(formats::binary16(), formats::binary32(), Rounding::toward_zero,
                                       formats::bfloat16())});
  return units;
}

// ---- tests -------------------------------------------------------------------------------

// 3 x 16 units x 6 data x 4 sizes: 1,152 cases, 10,080 entries, each compared bit for bit.
TEST(Weakform, BitExactAgainstUnitDot) {
  std::mt19937_64 gen(4);
  std::vector<NamedUnit> units = bounded_units();
  units.push_back({"v100_fp16", ebla::units::v100_fp16()});  // kernel only: truncated alignment
  units.push_back({"avx512_bf16_dot", ebla::units::avx512_bf16_dot()});
  const std::size_t sizes[][4] = {{1, 1, 1, 1}, {2, 3, 2, 5}, {3, 2, 3, 9}, {2, 2, 1, 0}};
  long entries = 0;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (const NamedUnit& nu : units)
      for (Data d : all_data)
        for (const auto& s : sizes) {
          Problem p = make_problem(s[0], s[1], s[2], s[3]);
          fill(p, d, nu.unit, gen);
          const View3 expected = reference_kernel(nu.unit, p);
          View3 A = copy_of(p.A);
          ebla::weakform(nu.unit, A, p.B, p.C);
          for (std::size_t i = 0; i < s[0]; ++i)
            for (std::size_t j = 0; j < s[1]; ++j)
              for (std::size_t k = 0; k < s[2]; ++k, ++entries)
                ASSERT_TRUE(same(A(i, j, k), expected(i, j, k)))
                    << nu.name << ", " << name(d) << ", entry (" << i << ", " << j << ", " << k
                    << "): " << A(i, j, k) << " vs " << expected(i, j, k);
        }
  std::printf("[weakform] %ld entries bit-exact\n", entries);
}

// A whole FMA chain by hand: binary16 inputs, binary32 sums.
TEST(Weakform, SmallCaseByHand) {
  Problem p = make_problem(1, 1, 1, 3);
  p.A(0, 0, 0) = 1;
  p.B(0, 0, 0) = 0x1p-24;  // in binary16 (a subnormal)
  p.B(0, 1, 0) = 0.1;      // rounds to 0x1.998p-4
  p.B(0, 2, 0) = 3;
  p.C(0, 0) = 1;
  p.C(0, 1) = 1;
  p.C(0, 2) = 0x1p-24;
  const MatrixUnit unit = ebla::weakform_unit(formats::binary16(), formats::binary32());
  // the same chain by the CPU's binary32 FMA: fl(1 + 2^-24) is a tie, to even: 1
  float s = 1.0f;
  s = std::fma(0x1p-24f, 1.0f, s);
  EXPECT_EQ(s, 1.0f);
  s = std::fma(0x1.998p-4f, 1.0f, s);
  s = std::fma(3.0f, 0x1p-24f, s);
  ebla::weakform(unit, p.A, p.B, p.C);
  EXPECT_TRUE(same(p.A(0, 0, 0), static_cast<double>(s))) << p.A(0, 0, 0) << " vs " << s;
}

// 14 units x 6 data x 3 sizes x 4 seeds, 6 layers of 3 x 4 each: 6,048 layers, 72,576 entries.
TEST(Weakform, CertifiedBoundsHold) {
  std::mt19937_64 gen(2024);
  Tally all;
  for (const NamedUnit& nu : bounded_units()) {
    Tally unit_tally;
    for (Data d : all_data)
      for (std::size_t n : {1, 7, 32})
        for (int seed = 0; seed < 4; ++seed) {
          Problem p = make_problem(3, 4, 6, n);
          fill(p, d, nu.unit, gen);
          Tally t;
          check_bounds(nu.unit, p, t);
          EXPECT_EQ(t.violations14, 0) << nu.name << ", " << name(d) << ", n = " << n;
          EXPECT_EQ(t.violations15, 0) << nu.name << ", " << name(d) << ", n = " << n;
          unit_tally.layers += t.layers;
          unit_tally.entries += t.entries;
          unit_tally.finite += t.finite;
          unit_tally.violations14 += t.violations14;
          unit_tally.violations15 += t.violations15;
          unit_tally.paper14 += t.paper14;
          unit_tally.max_ratio = std::max(unit_tally.max_ratio, t.max_ratio);
        }
    std::printf("[weakform] %-38s %ld layers, %ld entries (%ld finite bounds), max error/bound "
                "%.3e, violations %ld + %ld; printed (14) exceeded on %ld\n",
                nu.name.c_str(), unit_tally.layers, unit_tally.entries, unit_tally.finite,
                unit_tally.max_ratio, unit_tally.violations14, unit_tally.violations15,
                unit_tally.paper14);
    // the bounds are finite almost everywhere and not vacuous
    EXPECT_GT(unit_tally.finite, unit_tally.entries * 9 / 10) << nu.name;
    EXPECT_GT(unit_tally.max_ratio, 1e-3) << nu.name;
    all.layers += unit_tally.layers;
    all.entries += unit_tally.entries;
  }
  EXPECT_GE(all.layers, 4000);
  EXPECT_GE(all.entries, 50000);
}

// Under the seed's own assumptions (data in the formats, rounding to nearest, no underflow)
// the printed (14) and (15) hold too: 2 units x 3 n x 8 layers.
TEST(Weakform, PrintedBoundsHoldUnderTheirAssumptions) {
  std::mt19937_64 gen(9);
  const std::vector<MatrixUnit> units = {
      ebla::weakform_unit(formats::binary16(), formats::binary32()),
      ebla::weakform_unit(formats::binary32(), formats::binary32())};
  for (const MatrixUnit& unit : units)
    for (std::size_t n : {1, 8, 64}) {
      Problem p = make_problem(4, 4, 8, n);
      fill(p, Data::in_format, unit, gen);
      Tally t;
      check_bounds(unit, p, t);
      EXPECT_EQ(t.paper14, 0) << format_name(unit.input) << ", n = " << n;
      EXPECT_EQ(t.paper15, 0) << format_name(unit.input) << ", n = " << n;
      EXPECT_EQ(t.violations14 + t.violations15, 0);
    }
}

// Each case below breaks the printed (14) (and (15): one entry) and keeps (14') and (15').
void expect_printed_fails(const MatrixUnit& unit, const Problem& p, const char* what) {
  Tally t;
  check_bounds(unit, p, t);
  EXPECT_GT(t.paper14, 0) << what << ": the printed (14) should fail";
  EXPECT_GT(t.paper15, 0) << what << ": the printed (15) should fail";
  EXPECT_EQ(t.violations14, 0) << what;
  EXPECT_EQ(t.violations15, 0) << what;
  EXPECT_EQ(t.finite, t.entries) << what;
}

TEST(Weakform, PrintedBoundMissesUnderflow) {
  // binary16 sums: 2^-20 2^-6 = 2^-26 is below half the smallest subnormal 2^-24: it rounds to
  // 0, an error of 2^-26 against gamma_2 2^-26 in (14) and gamma_2 2^-20 (1 + 2^-6) in (15).
  Problem p = make_problem(1, 1, 1, 1);
  p.B(0, 0, 0) = 0x1p-20;
  p.C(0, 0) = 0x1p-6;
  expect_printed_fails(ebla::weakform_unit(formats::binary16(), formats::binary16()), p,
                       "underflow");
}

TEST(Weakform, PrintedBoundMissesDirectedRounding) {
  // toward zero, 1 + c for c just below 2^-10 truncates to 1: a relative error near 2u at every
  // one of 8 steps; gamma_9 with u = 2^-11 allows about 4.5 of them.
  Problem p = make_problem(1, 1, 1, 8);
  p.A(0, 0, 0) = 1;
  for (std::size_t l = 0; l < 8; ++l) {
    p.B(0, l, 0) = 1;
    p.C(0, l) = 0x1.ffcp-11;
  }
  expect_printed_fails(
      ebla::weakform_unit(formats::binary16(), formats::binary16(), Rounding::toward_zero), p,
      "toward zero");
}

TEST(Weakform, PrintedBoundMissesInputRounding) {
  // 0.1 read as binary16: a relative error near 2^-12, against gamma_2 with binary32's u.
  Problem p = make_problem(1, 1, 1, 1);
  p.B(0, 0, 0) = 0.1;
  p.C(0, 0) = 1;
  expect_printed_fails(ebla::weakform_unit(formats::binary16(), formats::binary32()), p,
                       "input rounding");
}

TEST(Weakform, BoundsAreInfiniteWhenTheRangeIsExceeded) {
  Problem p = make_problem(1, 2, 1, 2);
  p.B(0, 0, 0) = 60000;
  p.B(0, 1, 0) = 60000;
  p.C(0, 0) = 1;
  p.C(0, 1) = 1;  // row 0 of C: 120000 overflows binary16
  p.C(1, 0) = 0.5;
  p.C(1, 1) = -0.5;  // row 1: cancels, 0
  const MatrixUnit unit = ebla::weakform_unit(formats::binary16(), formats::binary16());
  const ebla::WeakformBounds b = ebla::weakform_bounds(unit, p.A, p.B, p.C);
  EXPECT_TRUE(std::isinf(b.componentwise(0, 0, 0)));
  EXPECT_TRUE(std::isinf(b.layers[0].bound1));
  ebla::weakform(unit, p.A, p.B, p.C);
  EXPECT_TRUE(std::isinf(p.A(0, 0, 0)));
  // a saturating format: 10 is read as fp4_e2m1's fmax 6, finite but far off
  Problem q = make_problem(1, 1, 1, 1);
  q.B(0, 0, 0) = 10;
  q.C(0, 0) = 0.5;
  const MatrixUnit fp4 = ebla::weakform_unit(formats::fp4_e2m1(), formats::binary16());
  EXPECT_TRUE(std::isinf(ebla::weakform_bounds(fp4, q.A, q.B, q.C).componentwise(0, 0, 0)));
  q.B(0, 0, 0) = 5;  // in range: a finite bound that holds
  Tally t;
  check_bounds(fp4, q, t);
  EXPECT_EQ(t.finite, 1);
  EXPECT_EQ(t.violations14 + t.violations15, 0);
}

TEST(Weakform, ConstantsOfTheBounds) {
  Problem p = make_problem(2, 3, 2, 10);
  const MatrixUnit fma = ebla::weakform_unit(formats::binary16(), formats::binary32());
  ebla::WeakformBounds b = ebla::weakform_bounds(fma, p.A, p.B, p.C);
  EXPECT_EQ(b.roundings, 10);
  EXPECT_EQ(b.unit_roundoff, 0x1p-24);
  EXPECT_EQ(b.gamma, ebla::bounds::gamma(10, 0x1p-24));
  EXPECT_EQ(b.paper_gamma, ebla::bounds::gamma(11, 0x1p-24));
  const MatrixUnit tz = ebla::weakform_unit(formats::binary16(), formats::binary16(), Rounding::toward_zero);
  b = ebla::weakform_bounds(tz, p.A, p.B, p.C);
  EXPECT_EQ(b.unit_roundoff, 0x1p-10);
  MatrixUnit block = fma;
  block.block = 4;
  block.normalisation = ebla::Normalisation::at_end;
  b = ebla::weakform_bounds(block, p.A, p.B, p.C);
  EXPECT_EQ(b.roundings, 3);  // ceil(10 / 4)
  EXPECT_EQ(b.product_roundoff, 0.0);
  // products rounded to bfloat16 before each of the 10 additions: u_p = 2^-8 enters kappa_p
  const MatrixUnit rounded =
      ebla::weakform_unit(formats::binary16(), formats::binary32(), Rounding::nearest_even, formats::bfloat16());
  b = ebla::weakform_bounds(rounded, p.A, p.B, p.C);
  EXPECT_EQ(b.roundings, 10);
  EXPECT_EQ(b.product_roundoff, 0x1p-8);
  EXPECT_FALSE(b.general);
  MatrixUnit rounded_block = rounded;  // rounded products in a block of 4: the general bound
  rounded_block.block = 4;
  rounded_block.normalisation = ebla::Normalisation::at_end;
  const ebla::WeakformBounds rb = ebla::weakform_bounds(rounded_block, p.A, p.B, p.C);
  EXPECT_TRUE(rb.general);
  EXPECT_EQ(rb.product_roundoff, 0x1p-8);  // u_p outside the model, which takes exact products
  EXPECT_EQ(rb.delta, 0x1p-24);            // one rounding to nearest per operation, nothing dropped
  EXPECT_EQ(rb.depth, 3);                  // ceil(10 / 4) operations
  EXPECT_EQ(rb.steps, 3);
  // ||C'||: C = 0, so C' = [0; I_3]
  EXPECT_NEAR(b.norm_c1, 1, 1e-12);
  EXPECT_NEAR(b.norm_cinf, 1, 1e-12);
  EXPECT_NEAR(b.norm_cf, std::sqrt(3.0), 1e-12);
}

// ---- every unit: the general bound --------------------------------------------------------

void add_to(Tally& into, const Tally& t) {
  into.layers += t.layers;
  into.entries += t.entries;
  into.finite += t.finite;
  into.violations14 += t.violations14;
  into.violations15 += t.violations15;
  into.paper14 += t.paper14;
  into.max_ratio = std::max(into.max_ratio, t.max_ratio);
}

// Units made by hand that the r-roundings bound does not cover: truncated alignment on leading
// bits (0, 1, 3 extra bits, to nearest and toward zero), the addend after the products, two
// chains, DAZ/FTZ on a tensor core, rounded products in blocks, sums of fewer bits than the
// format, a truncating FMA chain and a high alignment floor.
std::vector<NamedUnit> altered_units() {
  std::vector<NamedUnit> units;
  const MatrixUnit lead = ebla::units::mi100_fp16();  // b = 4, binary16 -> binary32, leading bit
  for (int extra : {0, 1, 3}) {
    MatrixUnit u = lead;
    u.extra_bits = extra;
    units.push_back({"leading bit, " + std::to_string(extra) + " extra bits", u});
    u.rounding = Rounding::toward_zero;
    units.push_back({"leading bit, " + std::to_string(extra) + " extra bits, toward zero", u});
  }
  MatrixUnit after = lead;
  after.extra_bits = 1;
  after.addend = ebla::AddendJoin::after_products;
  units.push_back({"block 4, 1 extra bit, after_products", after});
  MatrixUnit chains = ebla::weakform_unit(formats::binary16(), formats::binary32());
  chains.block = 4;
  chains.chains = 2;
  units.push_back({"each_addition, 2 chains", chains});
  chains.addend = ebla::AddendJoin::after_products;
  chains.rounding = Rounding::toward_zero;
  units.push_back({"2 chains, after_products, toward zero", chains});
  MatrixUnit daz = ebla::units::v100_fp16();
  daz.input_subnormals = false;
  daz.output_subnormals = false;
  units.push_back({"v100_fp16 with DAZ/FTZ", daz});
  MatrixUnit rounded = ebla::weakform_unit(formats::binary16(), formats::binary32(), Rounding::nearest_even,
                                           formats::bfloat16());
  rounded.block = 4;
  rounded.normalisation = ebla::Normalisation::at_end;
  rounded.extra_bits = 2;
  units.push_back({"block 4, products in bfloat16, 2 extra", rounded});
  MatrixUnit narrow = ebla::weakform_unit(formats::binary16(), formats::binary32());
  narrow.sum_precision = 14;
  units.push_back({"FMA chain, sums of 14 bits", narrow});
  MatrixUnit truncating = ebla::weakform_unit(formats::bfloat16(), formats::binary32(), Rounding::toward_zero);
  truncating.extra_bits = 0;
  units.push_back({"FMA chain, 0 extra bits, toward zero", truncating});
  MatrixUnit floor = ebla::units::v100_fp16();
  floor.alignment_floor = -10;  // E >= -10: products far below lose their bits whatever their size
  units.push_back({"v100_fp16 with E >= -10", floor});
  return units;
}

const Data general_data[] = {Data::uniform,        Data::in_format,    Data::positive,
                             Data::cancellation,   Data::wide,         Data::near_underflow,
                             Data::large_addend,   Data::small_addend};

// 8 kinds of data x n in {1, 7, 33, 64} x 2 seeds, 3 layers of 3 x 4: 2,304 entries per unit.
Tally check_unit(const NamedUnit& nu, std::mt19937_64& gen) {
  Tally all;
  for (Data d : general_data)
    for (std::size_t n : {1, 7, 33, 64})
      for (int seed = 0; seed < 2; ++seed) {
        Problem p = make_problem(3, 4, 3, n);
        fill(p, d, nu.unit, gen);
        Tally t;
        check_bounds(nu.unit, p, t);
        EXPECT_EQ(t.violations14, 0) << nu.name << ", " << name(d) << ", n = " << n;
        EXPECT_EQ(t.violations15, 0) << nu.name << ", " << name(d) << ", n = " << n;
        add_to(all, t);
      }
  return all;
}

bool general(const MatrixUnit& unit) {
  const Problem p = make_problem(1, 1, 1, 1);
  return ebla::weakform_bounds(unit, p.A, p.B, p.C).general;
}

// Checks every unit of the list; prints entries and the largest error / bound per unit and per
// class (r roundings, general).
void check_units(const std::vector<NamedUnit>& units, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Tally classes[2];
  long units_of[2] = {0, 0};
  for (const NamedUnit& nu : units) {
    const Tally t = check_unit(nu, gen);
    const bool g = general(nu.unit);
    std::printf("[weakform] %-44s %-7s %ld entries (%ld finite bounds), max error/bound %.3e, "
                "violations %ld + %ld\n",
                nu.name.c_str(), g ? "general" : "r", t.entries, t.finite, t.max_ratio, t.violations14,
                t.violations15);
    EXPECT_GT(t.finite, t.entries * 9 / 10) << nu.name;  // finite almost everywhere
    EXPECT_GT(t.max_ratio, 0.1) << nu.name;               // and not vacuous
    add_to(classes[g], t);
    ++units_of[g];
  }
  for (int g = 0; g < 2; ++g)
    if (units_of[g] > 0)
      std::printf("[weakform] %s: %ld units, %ld entries, max error/bound %.3e, violations %ld + %ld\n",
                  g ? "general bound" : "r roundings", units_of[g], classes[g].entries, classes[g].max_ratio,
                  classes[g].violations14, classes[g].violations15);
}

// Every preset of the catalogue (tensor cores of every generation, fp8 with 14-bit sums,
// binary16 results, DAZ/FTZ, AMX's two chains): zero violations of (14') and (15').
TEST(Weakform, EveryCatalogueUnitIsBounded) {
  std::vector<NamedUnit> units;
  for (const ebla::NamedMatrixUnit& entry : ebla::matrix_unit_catalogue())
    units.push_back({entry.name, entry.unit});
  check_units(units, 314);
}

TEST(Weakform, AlteredUnitsAreBounded) { check_units(altered_units(), 271); }

// The observed error of one entry, exactly (the data below are sums of few binary64 terms).
double observed_error(const MatrixUnit& unit, const Problem& p) {
  View3 R = copy_of(p.A);
  ebla::weakform(unit, R, p.B, p.C);
  quad exact = p.A(0, 0, 0);
  for (std::size_t l = 0; l < p.B.extent(1); ++l) exact += static_cast<quad>(p.B(0, l, 0)) * p.C(0, l);
  return static_cast<double>(qabs(static_cast<quad>(R(0, 0, 0)) - exact));
}

// V100 drops every bit below 2^-23 of an operation whose addend is 1: sixteen products
// 1.5 2^-24 are lost entirely, an error of 1.5 2^-20 (4 ulps of 1 at 2^-23 over 4
// operations), where the bound with exact alignment (the same unit with unbounded extra bits,
// gamma_4 of u = 2^-23) allows 4 2^-23: the truncation term of delta is needed.
TEST(Weakform, TruncatedAlignmentNeedsItsTerm) {
  Problem p = make_problem(1, 1, 1, 16);
  p.A(0, 0, 0) = 1;
  for (std::size_t l = 0; l < 16; ++l) {
    p.B(0, l, 0) = 0x1.8p-12;
    p.C(0, l) = 0x1p-12;
  }
  const MatrixUnit v100 = ebla::units::v100_fp16();
  MatrixUnit exact_alignment = v100;
  exact_alignment.extra_bits = MatrixUnit::unbounded;
  const double error = observed_error(v100, p);
  EXPECT_EQ(error, 0x1.8p-20);
  const ebla::WeakformBounds b = ebla::weakform_bounds(v100, p.A, p.B, p.C);
  const ebla::WeakformBounds weak = ebla::weakform_bounds(exact_alignment, p.A, p.B, p.C);
  EXPECT_TRUE(b.general);
  EXPECT_FALSE(weak.general);
  EXPECT_LE(error, b.componentwise(0, 0, 0));
  EXPECT_GT(error, 2 * weak.componentwise(0, 0, 0)) << "a bound without the truncation term holds here";
  Tally t;
  check_bounds(v100, p, t);
  EXPECT_EQ(t.violations14 + t.violations15, 0);
}

// Aligned on exponent sums, a subnormal input (2^-24 in binary16) times 65504 sets E = -14 + 15
// = 1 while its product is 2^-9: the three products of 2^-22 next to it are lost, an error of
// about 3 2^-22, far beyond the relative terms (delta 2^-9) and G of normal inputs; the entry's
// own alignment term covers it.
TEST(Weakform, SubnormalInputThatSetsTheAlignmentIsCovered) {
  Problem p = make_problem(1, 1, 1, 4);
  p.B(0, 0, 0) = 0x1p-24;
  p.C(0, 0) = 0x1.ffcp15;
  for (std::size_t l = 1; l < 4; ++l) {
    p.B(0, l, 0) = 0x1.ffcp-12;
    p.C(0, l) = 0x1.ffcp-12;
  }
  const MatrixUnit v100 = ebla::units::v100_fp16();
  const double error = observed_error(v100, p);
  const ebla::WeakformBounds b = ebla::weakform_bounds(v100, p.A, p.B, p.C);
  // the bound without the entry's alignment term: kappa |B| |C|^T + N G (1 + g), the data in the format
  double bc = 0;
  for (std::size_t l = 0; l < 4; ++l) bc += std::fabs(p.B(0, l, 0) * p.C(0, l));
  const double without = b.layers[0].kappa * bc + b.steps * b.underflow * (1 + b.gamma);
  EXPECT_GT(error, 0x1.7p-21);
  EXPECT_GT(error, 10 * without);
  EXPECT_LE(error, b.componentwise(0, 0, 0));
  EXPECT_LE(b.componentwise(0, 0, 0), b.steps * b.underflow_subnormal * (1 + b.gamma) * 1.01 + without);
  Tally t;
  check_bounds(v100, p, t);
  EXPECT_EQ(t.violations14 + t.violations15, 0);
}

// Sums of 14 bits (sum_precision) in binary32: 1 + 1.5 2^-15 rounds to 1, an error of 0.375
// ulps of 14 bits, far beyond the bound of the same chain with 24-bit sums (gamma_1 of 2^-24):
// such a unit takes the general bound, with T_s = 14.
TEST(Weakform, NarrowSumsAreBoundedAtTheirPrecision) {
  Problem p = make_problem(1, 1, 1, 1);
  p.A(0, 0, 0) = 1;
  p.B(0, 0, 0) = 0x1.8p-15;
  p.C(0, 0) = 1;
  MatrixUnit narrow = ebla::weakform_unit(formats::binary16(), formats::binary32());
  narrow.sum_precision = 14;
  const MatrixUnit wide = ebla::weakform_unit(formats::binary16(), formats::binary32());
  const double error = observed_error(narrow, p);
  EXPECT_EQ(error, 0x1.8p-15);
  const ebla::WeakformBounds b = ebla::weakform_bounds(narrow, p.A, p.B, p.C);
  EXPECT_TRUE(b.general);
  EXPECT_EQ(b.unit_roundoff, 0x1p-14);
  EXPECT_LE(error, b.componentwise(0, 0, 0));
  EXPECT_GT(error, 100 * ebla::weakform_bounds(wide, p.A, p.B, p.C).componentwise(0, 0, 0));
}

// The addend as the unit reads it: a subnormal A0 read as zero (DAZ, amx_bf16: an error of
// 1.5 2^-127 with no product to blame), and A0 = 0.1 read as binary16 by a unit with binary16
// results.
TEST(Weakform, AddendAsTheUnitReadsItIsCovered) {
  Problem p = make_problem(1, 1, 1, 2);
  p.A(0, 0, 0) = 0x1.8p-127;
  const MatrixUnit amx = ebla::units::amx_bf16();
  EXPECT_EQ(observed_error(amx, p), 0x1.8p-127);
  Tally t;
  check_bounds(amx, p, t);
  p.A(0, 0, 0) = 0.1;
  const MatrixUnit out16 = ebla::units::v100_fp16_out16();
  EXPECT_GT(observed_error(out16, p), 1e-6);
  check_bounds(out16, p, t);
  EXPECT_EQ(t.finite, 2);
  EXPECT_EQ(t.violations14 + t.violations15, 0);
}

// The constants of the general bound: accumulation_model's delta, d and N.
TEST(Weakform, ConstantsOfTheGeneralBound) {
  Problem p = make_problem(2, 3, 2, 10);
  ebla::WeakformBounds b = ebla::weakform_bounds(ebla::units::v100_fp16(), p.A, p.B, p.C);
  EXPECT_TRUE(b.general);
  EXPECT_EQ(b.unit_roundoff, 0x1p-23);  // toward zero in binary32
  EXPECT_EQ(b.delta, 0x1p-23 + 5 * 0x1p-23 * (1 + 0x1p-23));  // rounding + 5 operands' truncation
  EXPECT_EQ(b.depth, 3);  // ceil(10 / 4) operations
  EXPECT_EQ(b.steps, 3);
  EXPECT_GE(b.gamma, std::pow(1 + b.delta, 3) - 1);
  EXPECT_LE(b.gamma, (std::pow(1 + b.delta, 3) - 1) * (1 + 1e-12));
  EXPECT_GT(b.underflow_subnormal, b.underflow);  // E <= emin + emax = 1 of binary16
  Problem q = make_problem(1, 1, 1, 64);
  b = ebla::weakform_bounds(ebla::units::amx_bf16(), q.A, q.B, q.C);
  EXPECT_TRUE(b.general);
  EXPECT_EQ(b.delta, 0x1p-24);
  EXPECT_EQ(b.depth, 2 * (16 + 1 + 1));  // per operation: a chain of 16, even + odd, c + that
  EXPECT_EQ(b.steps, 2 * (32 + 1 + 1));
  EXPECT_EQ(b.underflow, 0x1p-126);  // FTZ
  b = ebla::weakform_bounds(ebla::units::h100_fp8_e4m3(), q.A, q.B, q.C);
  EXPECT_EQ(b.unit_roundoff, 0x1p-13);  // sums of 14 bits toward zero
  EXPECT_EQ(b.depth, 2);
}

TEST(Weakform, BadInput) {
  const MatrixUnit unit = ebla::weakform_unit(formats::binary16(), formats::binary32());
  Problem p = make_problem(2, 3, 4, 5);
  const View3 A_wrong("A", 2, 4, 4), B_wrong("B", 2, 5, 3);
  const View2 C_wrong("C", 3, 6);
  expect_invalid([&] { ebla::weakform(unit, A_wrong, p.B, p.C); },
                 {"ebla::weakform", "A is 2 x 4 x 4", "C is 3 x 5"});
  expect_invalid([&] { ebla::weakform(unit, p.A, B_wrong, p.C); },
                 {"ebla::weakform", "B is 2 x 5 x 3"});
  expect_invalid([&] { ebla::weakform(unit, p.A, p.B, C_wrong); }, {"C is 3 x 6"});
  expect_invalid([&] { ebla::weakform_bounds(unit, p.A, p.B, C_wrong); },
                 {"ebla::weakform_bounds", "C is 3 x 6"});
  p.B(1, 2, 3) = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([&] { ebla::weakform(unit, p.A, p.B, p.C); },
                 {"ebla::weakform", "B(1, 2, 3) = nan is not finite"});
  expect_invalid([&] { ebla::weakform_bounds(unit, p.A, p.B, p.C); },
                 {"ebla::weakform_bounds", "B(1, 2, 3) = nan"});
  p.B(1, 2, 3) = 0;
  p.C(2, 4) = -std::numeric_limits<double>::infinity();
  expect_invalid([&] { ebla::weakform(unit, p.A, p.B, p.C); }, {"C(2, 4) = -inf is not finite"});
  p.C(2, 4) = 0;
  p.A(0, 1, 2) = std::numeric_limits<double>::infinity();
  expect_invalid([&] { ebla::weakform(unit, p.A, p.B, p.C); }, {"A(0, 1, 2) = inf is not finite"});
  p.A(0, 1, 2) = 0;
  // invalid formats and units
  expect_invalid([&] { ebla::weakform_unit(formats::binary32(), formats::binary16()); },
                 {"ebla::weakform_unit", "input format binary32", "wider"});
  Format bad = formats::binary16();
  bad.t = 1;
  expect_invalid([&] { ebla::weakform_unit(bad, formats::binary32()); }, {"t = 1"});
  expect_invalid([&] { ebla::weakform_unit(formats::binary16(), formats::binary32(), Rounding::upward); },
                 {"rounding = upward"});
  MatrixUnit broken = unit;
  broken.block = 0;
  expect_invalid([&] { ebla::weakform(broken, p.A, p.B, p.C); }, {"ebla::weakform", "block = 0"});
  expect_invalid([&] { ebla::weakform_bounds(broken, p.A, p.B, p.C); },
                 {"ebla::weakform_bounds", "block = 0"});
  // every valid unit has bounds (once refused: truncated alignment, two chains, the addend
  // after the products): the general bound
  MatrixUnit chains = unit;
  chains.block = 2;
  chains.chains = 2;
  MatrixUnit after = unit;
  after.addend = ebla::AddendJoin::after_products;
  for (const MatrixUnit& u : {ebla::units::v100_fp16(), chains, after}) {
    const ebla::WeakformBounds b = ebla::weakform_bounds(u, p.A, p.B, p.C);
    EXPECT_TRUE(b.general);
    EXPECT_TRUE(std::isfinite(b.componentwise(1, 2, 3)));
    EXPECT_TRUE(std::isfinite(b.layers[3].bound_f));
  }
}

}  // namespace

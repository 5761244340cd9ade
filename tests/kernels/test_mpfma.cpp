// mpfma: bit-exact emulation against independent oracles, the bounds against exact
// references, the corrections to seed 000, and bad input.
//
// The oracles share nothing with the kernel's TwoSum / round-to-odd machinery:
//  - exact values in __float128 (libquadmath): a' b' has at most 106 bits; a' b' + c' is held
//    as S + E, S its rounding to 113 bits and E the exact remainder;
//  - rounding to a format by searching the sorted table of its values, built here from
//    (t, emin, emax, subnormals, specials) (not with ebla::decode or ebla::round_to), with the
//    rules written out: ties to the even encoding, directed, stochastic (r (v - d) < x - d),
//    overflow per IEEE / OCP, the sign of an exact zero sum (IEEE 754 section 6.3);
//  - binary32 / binary64 steps by the CPU's own arithmetic (fmaf, fma, float +, *, and
//    conversions) under fesetround.
// Case counts are stated next to each test and printed by it.
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/mpfma.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "checks.hpp"
#include "../quad_vector.hpp"

namespace {
using ebla_test::hex;
using ebla_test::same;

using ebla::Format;
using ebla::MpfmaConfig;
using ebla::ProductStep;
using ebla::Rounding;
namespace formats = ebla::formats;

__extension__ typedef __float128 quad;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
const Rounding all_modes[] = {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward,
                              Rounding::downward, Rounding::stochastic};

quad qabs(quad x) { return x < 0 ? -x : x; }
bool is_binary64(const Format& f) {
  static const Format b64 = formats::binary64();
  return f == b64;
}
bool is_binary32(const Format& f) {
  static const Format b32 = formats::binary32();
  return f == b32;
}

// ---------------------------------------------------------------------------------------
// The table oracle.

struct Table {
  Format f;
  ebla_test::QuadVector v;  // the non-negative finite values, increasing
  std::vector<bool> odd;    // last significand bit of each
  double top_ulp;           // spacing in the top binade: a power of two, held as a double (nvcc
                            // compiles no std::vector<Table> if Table holds a __float128)
  std::vector<double> vd;   // v as doubles (exact), to start the search
};

Table make_table(const Format& f) {
  Table T{f, {}, {}, std::ldexp(1.0, f.emax - f.t + 1), {}};
  const std::int64_t half = std::int64_t{1} << (f.t - 1);  // 2^(t-1)
  T.v.push_back(0);
  T.odd.push_back(false);
  if (f.subnormals)
    for (std::int64_t k = 1; k < half; ++k) {
      T.v.push_back(ldexpq(static_cast<quad>(k), f.emin - f.t + 1));
      T.odd.push_back(k & 1);
    }
  for (int e = f.emin; e <= f.emax; ++e)
    for (std::int64_t m = 0; m < half; ++m) {
      if (f.specials == ebla::Specials::nan_only && e == f.emax && m == half - 1) continue;  // NaN
      T.v.push_back(ldexpq(static_cast<quad>(half + m), e - f.t + 1));
      T.odd.push_back(m & 1);
    }
  for (quad x : T.v) T.vd.push_back(static_cast<double>(x));
  return T;
}

// An exact value x = s + e: e = 0, or s = RN_113(x) and e the remainder.
struct Exact {
  quad s, e;
};
Exact exact_sum(quad a, quad b) {  // Knuth's TwoSum in quad
  const quad s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

double overflow_value(const Format& f) {
  switch (f.overflow) {
    case ebla::Overflow::infinity:
      return inf;
    case ebla::Overflow::nan:
      return nan;
    case ebla::Overflow::saturate:
      return f.fmax();
  }
  return 0;
}

bool away_from_zero(Rounding m, bool negative) {
  return (m == Rounding::upward && !negative) || (m == Rounding::downward && negative);
}

// The table's values as doubles or quads, and the few operations table_round needs of each.
const ebla_test::QuadVector& values(const Table& T, quad) { return T.v; }
const std::vector<double>& values(const Table& T, double) { return T.vd; }
bool is_nan(double x) { return std::isnan(x); }
bool is_nan(quad x) { return isnanq(x); }
bool is_inf(double x) { return std::isinf(x); }
bool is_inf(quad x) { return isinfq(x); }
bool sign_bit(double x) { return std::signbit(x); }
bool sign_bit(quad x) { return signbitq(x) != 0; }

// Rounds x = s + e to the table's format, in N = double when x is a double (exact, and fast),
// else in quad. Stochastic rounding: up iff r q < |x| - d, decided as A < B + e with A = r q and
// B = |s| - d exact; when A != B their difference exceeds |e| (r is a multiple of 2^-53 and
// |x| < 2^16 q for formats of at most 16 bits), so e only breaks the tie A = B.
template <class N>
double table_round_as(const Table& T, N s, N e, Rounding m, double r) {
  const Format& f = T.f;
  const auto& v = values(T, N{});
  if (is_nan(s)) return nan;
  const bool neg = sign_bit(s);
  if (is_inf(s)) {
    if (f.has_infinity()) return neg ? -inf : inf;
    const double sat = f.overflow == ebla::Overflow::saturate ? f.fmax() : nan;
    return neg ? -sat : sat;
  }
  if (s == 0) return static_cast<double>(s);  // keeps the sign (e = 0 then)
  const auto stochastic_up = [&](N q, N d) {
    const N A = static_cast<N>(r) * q, B = (neg ? -s : s) - d;
    return A < B || (A == B && (neg ? -e : e) > 0);
  };
  const N as = neg ? -s : s, ae = neg ? -e : e;  // |x| = as + ae
  const auto cmp = [&](N w) { return as != w ? (as < w ? -1 : 1) : (ae < 0 ? -1 : ae > 0 ? 1 : 0); };
  const N fmax = v.back(), top_ulp = static_cast<N>(T.top_ulp);
  double mag;
  if (cmp(fmax) > 0) {
    bool over;
    switch (m) {
      case Rounding::nearest_even: {
        const int c = cmp(fmax + top_ulp / 2);
        over = c > 0 || (c == 0 && T.odd.back());
        break;
      }
      case Rounding::toward_zero:
        over = false;
        break;
      case Rounding::stochastic:
        over = stochastic_up(top_ulp, fmax);
        break;
      default:
        over = away_from_zero(m, neg);
        break;
    }
    mag = over ? overflow_value(f) : f.fmax();
  } else {
    // the first value above |x|: a search on the doubles, then exact steps
    std::size_t hi = static_cast<std::size_t>(
        std::upper_bound(T.vd.begin(), T.vd.end(), static_cast<double>(as)) - T.vd.begin());
    while (hi > 0 && cmp(v[hi - 1]) < 0) --hi;
    while (hi < v.size() && cmp(v[hi]) >= 0) ++hi;
    const std::size_t lo = hi - 1;
    if (cmp(v[lo]) == 0) {
      mag = static_cast<double>(v[lo]);
    } else {
      bool up;
      switch (m) {
        case Rounding::nearest_even: {
          const int c = cmp((v[lo] + v[hi]) / 2);  // exact: one bit more than the format
          up = c > 0 || (c == 0 && T.odd[lo]);
          break;
        }
        case Rounding::toward_zero:
          up = false;
          break;
        case Rounding::stochastic:
          up = stochastic_up(v[hi] - v[lo], v[lo]);
          break;
        default:
          up = away_from_zero(m, neg);
          break;
      }
      mag = static_cast<double>(up ? v[hi] : v[lo]);
    }
  }
  return neg ? -mag : mag;
}

double table_round(const Table& T, Exact x, Rounding m, double r) {
  const double d = static_cast<double>(x.s);
  if (x.e == 0 && static_cast<quad>(d) == x.s) return table_round_as<double>(T, d, 0.0, m, r);
  return table_round_as<quad>(T, x.s, x.e, m, r);
}

// ---------------------------------------------------------------------------------------
// Hardware steps under fesetround (binary32, binary64).

int fe_mode(Rounding m) {
  switch (m) {
    case Rounding::toward_zero:
      return FE_TOWARDZERO;
    case Rounding::upward:
      return FE_UPWARD;
    case Rounding::downward:
      return FE_DOWNWARD;
    default:
      return FE_TONEAREST;
  }
}
struct FeMode {
  explicit FeMode(Rounding m) { std::fesetround(fe_mode(m)); }
  ~FeMode() { std::fesetround(FE_TONEAREST); }
};
__attribute__((noinline)) double hw_to_float(double x, Rounding m) {
  FeMode g(m);
  volatile double vx = x;
  volatile float r = static_cast<float>(vx);
  return r;
}
__attribute__((noinline)) double hw_fmaf(double a, double b, double c, Rounding m) {
  FeMode g(m);
  volatile float va = static_cast<float>(a), vb = static_cast<float>(b), vc = static_cast<float>(c);
  volatile float r = std::fmaf(va, vb, vc);
  return r;
}
__attribute__((noinline)) double hw_mulf(double a, double b, Rounding m) {
  FeMode g(m);
  volatile float va = static_cast<float>(a), vb = static_cast<float>(b);
  volatile float r = va * vb;
  return r;
}
__attribute__((noinline)) double hw_addf(double a, double b, Rounding m) {
  FeMode g(m);
  volatile float va = static_cast<float>(a), vb = static_cast<float>(b);
  volatile float r = va + vb;
  return r;
}
__attribute__((noinline)) double hw_fma(double a, double b, double c, Rounding m) {
  FeMode g(m);
  volatile double va = a, vb = b, vc = c;
  volatile double r = std::fma(va, vb, vc);
  return r;
}
__attribute__((noinline)) double hw_mul(double a, double b, Rounding m) {
  FeMode g(m);
  volatile double va = a, vb = b;
  volatile double r = va * vb;
  return r;
}
__attribute__((noinline)) double hw_add(double a, double b, Rounding m) {
  FeMode g(m);
  volatile double va = a, vb = b;
  volatile double r = va + vb;
  return r;
}

// ---------------------------------------------------------------------------------------
// The oracle of the whole pipeline.

struct Oracle {
  MpfmaConfig cfg;
  std::vector<Table> tables;  // input, addend, product, sum, output (empty for hardware formats)

  explicit Oracle(const MpfmaConfig& c) : cfg(c) {
    for (const Format* f : {&c.input, &c.addend, &c.product, &c.sum, &c.output})
      tables.push_back(is_binary32(*f) || is_binary64(*f) ? Table{*f, {}, {}, 0, {}} : make_table(*f));
  }
  double round_double(int step, double x, double r) const {
    const Table& T = tables[step];
    if (is_binary64(T.f)) return x;
    if (is_binary32(T.f)) return hw_to_float(x, cfg.rounding);
    return table_round(T, {x, 0}, cfg.rounding, r);
  }
  // z for element i (stochastic rounding: the kernel's counter-based random numbers)
  double operator()(double a, double b, double c, std::uint64_t seed, std::uint64_t i) const {
    const Rounding m = cfg.rounding;
    const auto r = [&](int k) {
      return m == Rounding::stochastic ? ebla::detail::mpfma_uniform(seed, i, k) : 0.0;
    };
    const double ar = round_double(0, a, r(0)), br = round_double(0, b, r(1));
    const double cr = round_double(1, c, r(2));
    const bool rounded = cfg.product_step == ProductStep::rounded;
    quad p = static_cast<quad>(ar) * br;  // exact
    double pd = 0;
    if (rounded) {
      if (is_binary64(cfg.product))
        pd = hw_mul(ar, br, m);
      else if (is_binary32(cfg.product))
        pd = hw_mulf(ar, br, m);
      else
        pd = table_round(tables[2], {p, 0}, m, r(3));
      p = pd;
    }
    double s;
    if (is_binary32(cfg.sum)) {
      s = rounded ? hw_addf(pd, cr, m) : hw_fmaf(ar, br, cr, m);
    } else if (is_binary64(cfg.sum)) {
      s = rounded ? hw_add(pd, cr, m) : hw_fma(ar, br, cr, m);
    } else {
      Exact x{p + cr, 0};
      if (!isinfq(p) && !isnanq(p) && std::isfinite(cr)) x = exact_sum(p, cr);
      if (x.s == 0 && x.e == 0) {  // IEEE 754 6.3: the sign of an exact zero sum
        const bool both_pos = !signbitq(p) && !std::signbit(cr), both_neg = signbitq(p) && std::signbit(cr);
        x.s = (m == Rounding::downward ? !both_pos : both_neg) ? -quad(0) : quad(0);
      }
      s = table_round(tables[3], x, m, r(4));
    }
    return round_double(4, s, r(5));
  }
};

// ---------------------------------------------------------------------------------------
// Running the kernel on host data.

struct Triple {
  double a, b, c;
};
struct Output {
  std::vector<double> z, bound, probable;
  double failure, lambda;
};

Output run(const MpfmaConfig& cfg, const std::vector<Triple>& t, std::uint64_t seed) {
  const std::size_t n = t.size();
  Kokkos::View<double*> a("a", n), b("b", n), c("c", n);
  auto ha = Kokkos::create_mirror_view(a), hb = Kokkos::create_mirror_view(b),
       hc = Kokkos::create_mirror_view(c);
  for (std::size_t i = 0; i < n; ++i) {
    ha(i) = t[i].a;
    hb(i) = t[i].b;
    hc(i) = t[i].c;
  }
  Kokkos::deep_copy(a, ha);
  Kokkos::deep_copy(b, hb);
  Kokkos::deep_copy(c, hc);
  const auto r = ebla::mpfma(a, b, c, cfg, seed);
  const auto hz = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.z);
  const auto hbd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.bound);
  const auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.probable_bound);
  Output out{std::vector<double>(hz.data(), hz.data() + n), std::vector<double>(hbd.data(), hbd.data() + n),
             std::vector<double>(hp.data(), hp.data() + n), r.failure, r.lambda};
  return out;
}

std::string describe(const MpfmaConfig& c) {
  const char* step = c.product_step == ProductStep::fused   ? "fused"
                     : c.product_step == ProductStep::exact ? "exact"
                                                            : "rounded";
  return ebla::format_name(c.input) + "*" + ebla::format_name(c.input) + "+" + ebla::format_name(c.addend) +
         " product " + step +
         (c.product_step == ProductStep::fused ? "" : " " + ebla::format_name(c.product)) + " sum " +
         ebla::format_name(c.sum) + " out " + ebla::format_name(c.output) + " " + ebla::to_string(c.rounding);
}

// Compares the kernel with the oracle on every triple; returns the number compared.
std::size_t expect_matches_oracle(const MpfmaConfig& cfg, const std::vector<Triple>& t) {
  const std::uint64_t seed = 0x5eed;
  const Output k = run(cfg, t, seed);
  const Oracle oracle(cfg);
  int failures = 0;
  std::size_t compared = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double want = oracle(t[i].a, t[i].b, t[i].c, seed, i);
    ++compared;
    if (!same(want, k.z[i]) && failures++ < 5)
      ADD_FAILURE() << describe(cfg) << ": a = " << hex(t[i].a) << " b = " << hex(t[i].b)
                    << " c = " << hex(t[i].c) << " want " << hex(want) << " got " << hex(k.z[i]);
  }
  EXPECT_EQ(failures, 0) << describe(cfg);
  return compared;
}

// The finite values of a small format, both signs (+0 and -0 included).
std::vector<double> finite_values(const Format& f) {
  std::vector<double> out;
  for (quad v : make_table(f).v) {
    out.push_back(static_cast<double>(v));
    out.push_back(-static_cast<double>(v));
  }
  return out;
}

// A format that holds every product of two values of f (for MPFMA configs over small formats).
Format product_format_for(const Format& f) {
  const int t = 2 * f.t + 1;
  return ebla::make_format(t, 2 * (f.emin - f.t + 1) + t - 1, 2 * f.emax + 2);
}

// ---------------------------------------------------------------------------------------
// 1. Bit-exact emulation.

struct SmallFormat {
  const char* name;
  Format f;
  int c_stride;  // every c_stride-th value of c (1: all triples)
};

std::vector<SmallFormat> small_formats() {
  return {
      {"fp4_e2m1", formats::fp4_e2m1(), 1},
      {"fp6_e2m3", formats::fp6_e2m3(), 1},
      {"fp6_e3m2", formats::fp6_e3m2(), 3},
      {"custom t=3", ebla::make_format(3, -2, 3), 2},
      {"custom t=4 no subnormals", ebla::make_format(4, -3, 2, false), 8},
      {"custom t=5 saturating",
       ebla::make_format(5, -2, 1, true, ebla::Specials::none, ebla::Overflow::saturate), 32},
      {"fp8_e4m3", formats::fp8_e4m3(), 101},
      {"fp8_e5m2", formats::fp8_e5m2(), 101},
  };
}

// Exhaustive over a, b and every c_stride-th c among the format's finite values (both signs,
// +-0 included), for fma, mac and mpfma (into a format holding the products; output back in the
// small format), in every mode: fp4 and fp6_e2m3 all 16^3 and 64^3 triples, the other 6- and
// 7-bit formats all (a, b) pairs with 1/2 to 1/32 of the c values, fp8 all 254^2 and 248^2
// pairs with 3 values of c: 1.07 million triples x 3 configs x 5 modes = 16 million.
TEST(MpfmaEmulation, MatchesOracleExhaustivelyOnSmallFormats) {
  std::size_t total = 0;
  for (const auto& sf : small_formats()) {
    const auto vals = finite_values(sf.f);
    std::vector<Triple> t;
    for (std::size_t ic = 0; ic < vals.size(); ic += sf.c_stride)
      for (double a : vals)
        for (double b : vals) t.push_back({a, b, vals[ic]});
    const Format wide = product_format_for(sf.f);
    for (Rounding m : all_modes) {
      MpfmaConfig mp = MpfmaConfig::mpfma(sf.f, wide, m);
      mp.output = sf.f;  // Lemma 3.4's output rounding u_FMA > u-bar
      for (const MpfmaConfig& cfg : {MpfmaConfig::fma(sf.f, m), MpfmaConfig::mac(sf.f, m), mp}) {
        total += expect_matches_oracle(cfg, t);
        if (HasFailure()) return;
      }
    }
    std::printf("  %-26s %zu triples x 3 configs x 5 modes\n", sf.name, t.size());
  }
  std::printf("  %zu comparisons\n", total);
  EXPECT_GT(total, 15000000u);  // 16,126,080
}

// Inputs that are not values of the formats: the representation step against the table oracle
// too (the addend in the product format, so c' keeps more bits than a', b'): 8 formats x 3
// configs x 5 modes x 20,000 random triples = 2.4 million.
TEST(MpfmaEmulation, MatchesOracleOnUnroundedInputs) {
  std::mt19937_64 gen(3);
  std::size_t total = 0;
  for (const auto& sf : small_formats()) {
    const Format wide = product_format_for(sf.f);
    std::vector<Triple> t(20000);
    const int lo = sf.f.emin - sf.f.t - 1, span = sf.f.emax + 3 - lo;
    auto draw = [&] {
      const double m = 1.0 + static_cast<double>(gen() >> 11) * 0x1p-53;
      return std::ldexp(gen() & 1 ? -m : m, lo + static_cast<int>(gen() % span));
    };
    for (auto& x : t) x = {draw(), draw(), draw()};
    for (Rounding m : all_modes) {
      MpfmaConfig mp = MpfmaConfig::mpfma(sf.f, wide, m);
      MpfmaConfig mac = MpfmaConfig::mac(sf.f, m);
      mac.addend = wide;
      for (const MpfmaConfig& cfg : {MpfmaConfig::fma(sf.f, m), mac, mp})
        total += expect_matches_oracle(cfg, t);
    }
  }
  std::printf("  %zu comparisons\n", total);
  EXPECT_GE(total, 2400000u);
}

// Random inputs for the binary16 / bfloat16 configurations: a mixture of U[1,2], wide exponents
// (over- and underflow of the formats), midpoints of the input format (ties), and cancellation.
std::vector<Triple> random_triples(std::size_t n, const Format& in, const Format& add, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto unit = [&] { return static_cast<double>(gen() >> 11) * 0x1p-53; };
  auto wide = [&](const Format& f) {
    const int lo = f.emin - f.t - 2, span = f.emax + 2 - lo;
    const double m = 1.0 + unit();
    return std::ldexp(gen() & 1 ? -m : m, lo + static_cast<int>(gen() % span));
  };
  auto midpoint = [&](const Format& f) {  // halfway between two values of f
    const double v = ebla::round_to(wide(f), f, Rounding::toward_zero);
    const int e = std::max(ebla::exponent_of(v), f.emin);
    return std::isfinite(v) && std::fabs(v) < f.fmax() ? v + std::copysign(std::ldexp(1.0, e - f.t), v) : v;
  };
  std::vector<Triple> t(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0:
        t[i] = {1 + unit(), 1 + unit(), 1 + unit()};
        break;
      case 1:
        t[i] = {wide(in), wide(in), wide(add)};
        break;
      case 2:
        t[i] = {midpoint(in), midpoint(in), midpoint(add)};
        break;
      default: {
        const double a = std::ldexp(1 + unit(), static_cast<int>(gen() % 16) - 8), b = 1 + unit();
        t[i] = {a, b, -a * b * (1 + (unit() - 0.5) * 0x1p-8)};
      }
    }
  }
  return t;
}

// binary16 / bfloat16 configurations against the oracle: 4 configs with a binary32 sum (CPU
// fmaf / float arithmetic) x 4 deterministic modes x 150,000, and 5 configs with binary16 /
// bfloat16 sums or outputs (table oracle) x 5 modes x 100,000 (4 in stochastic rounding):
// 4.8 million triples.
TEST(MpfmaEmulation, MatchesOracleForBinary16AndBfloat16) {
  const Format h = formats::binary16(), bf = formats::bfloat16(), s = formats::binary32();
  std::size_t total = 0;
  for (Rounding m : all_modes) {
    MpfmaConfig bf_mp = MpfmaConfig::mpfma(bf, s, m);  // bf16 products need binary32's range and more
    bf_mp.product = formats::binary64();
    MpfmaConfig mp_out16 = MpfmaConfig::mpfma(h, s, m);  // Lemma 3.4 with u_FMA > u-bar
    mp_out16.output = h;
    MpfmaConfig tc_row2 = MpfmaConfig::mpfma(h, h, m);  // Table 2, second row
    tc_row2.product = s;
    if (m != Rounding::stochastic) {
      const auto t = random_triples(150000, h, s, 11 + static_cast<int>(m));
      const auto tb = random_triples(150000, bf, s, 21 + static_cast<int>(m));
      total += expect_matches_oracle(MpfmaConfig::mpfma(h, s, m), t);
      total += expect_matches_oracle(bf_mp, tb);
      total += expect_matches_oracle(MpfmaConfig::mac(s, m), tb);
      total += expect_matches_oracle(MpfmaConfig::fma(s, m), tb);
    }
    const auto t = random_triples(100000, h, h, 31 + static_cast<int>(m));
    const auto tb = random_triples(100000, bf, bf, 41 + static_cast<int>(m));
    for (const auto& [cfg, data] :
         {std::make_pair(tc_row2, &t), std::make_pair(mp_out16, &t),
          std::make_pair(MpfmaConfig::mac(h, m), &t), std::make_pair(MpfmaConfig::fma(bf, m), &tb),
          std::make_pair(MpfmaConfig::mac(bf, m), &tb)}) {
      if (m == Rounding::stochastic && cfg.sum == s) continue;
      total += expect_matches_oracle(cfg, *data);
    }
    if (HasFailure()) return;
  }
  std::printf("  %zu comparisons\n", total);
  EXPECT_GT(total, 4700000u);
}

// Rounds an exact x to the grid of a format of t bits and exponents >= emin (normal and
// subnormal range) by scaling and flooring in quad: the oracle for targets too wide for a table.
double grid_round(quad x, int t, int emin, Rounding m, double r) {
  const bool neg = x < 0;
  const quad ax = qabs(x);
  const quad q = ldexpq(1, std::max(ilogbq(ax), emin) - t + 1);  // the quantum at |x|
  const quad d = floorq(ax / q) * q;
  bool up = false;
  if (ax != d) switch (m) {
      case Rounding::nearest_even:
        up = ax > d + q / 2 || (ax == d + q / 2 && fmodq(d / q, 2) == 1);
        break;
      case Rounding::toward_zero:
        break;
      case Rounding::stochastic:
        up = static_cast<quad>(r) * q < ax - d;
        break;
      default:
        up = away_from_zero(m, neg);
        break;
    }
  const double mag = static_cast<double>(up ? d + q : d);
  return neg ? -mag : mag;
}

// round_exact alone, on double-doubles hi + lo with lo from half an ulp of hi down to 2^-200 of
// it, into binary16 and fp8 (table oracle), a t = 51 format and binary64 (grid oracle), in
// every mode: 5 modes x 4 targets x 100,000 pairs drawn, the ~870,000 the oracles hold exactly
// checked.
TEST(MpfmaEmulation, RoundExactRoundsDoubleDoublesCorrectly) {
  std::mt19937_64 gen(5);
  const Format t51 = ebla::make_format(51, -30, 30);
  std::size_t checked = 0;
  for (const Format& f : {formats::binary16(), formats::fp8_e4m3(), t51, formats::binary64()}) {
    const bool b64 = is_binary64(f);
    const Table T = f.t > 20 ? Table{f, {}, {}, 0, {}} : make_table(f);
    const ebla::detail::ExactTarget target{ebla::rounding_constants(f), f.t, f.emin, f.subnormals, b64};
    for (Rounding m : all_modes)
      for (int i = 0; i < 100000; ++i) {
        // hi: arbitrary, a value of f, or a midpoint of f; lo below half an ulp of hi
        const int span = std::min(f.emax - f.emin + f.t + 3, 2000);
        double hi = std::ldexp(1 + static_cast<double>(gen() >> 11) * 0x1p-53,
                               f.emin - f.t + static_cast<int>(gen() % span));
        if (gen() % 3 == 0) hi = ebla::round_to(hi, f, Rounding::nearest_even);
        if (gen() % 3 == 0 && !b64) hi += std::ldexp(1.0, std::max(ebla::exponent_of(hi), f.emin) - f.t);
        if (gen() & 1) hi = -hi;
        if (!std::isfinite(hi) || hi == 0) continue;
        const int ulp_e = std::max(ebla::exponent_of(hi), -1022) - 52;
        double lo =
            std::ldexp(static_cast<double>(gen() >> 11) * 0x1p-53, ulp_e - 1 - static_cast<int>(gen() % 200));
        if (gen() & 1) lo = -lo;
        if (hi + lo != hi) continue;  // keep hi = RN(hi + lo)
        const double r = static_cast<double>(gen() >> 11) * 0x1p-53;
        const double got = ebla::dispatch_rounding(
            m, [&](auto mm) { return ebla::detail::round_exact<decltype(mm)::value>(hi, lo, target, r); });
        const Exact x = exact_sum(hi, lo);
        double want;
        if (!T.v.empty()) {
          want = table_round(T, x, m, r);
        } else {
          if (x.e != 0) continue;
          want = grid_round(x.s, f.t, f.emin, m, r);
          if (!(std::fabs(want) <= f.fmax())) continue;  // overflow: not the grid oracle's business
        }
        ++checked;
        ASSERT_TRUE(same(got, want)) << ebla::format_name(f) << " " << ebla::to_string(m)
                                     << ": hi = " << hex(hi) << " lo = " << hex(lo) << " r = " << hex(r)
                                     << " want " << hex(want) << " got " << hex(got);
      }
  }
  std::printf("  %zu double-doubles checked\n", checked);
  EXPECT_GT(checked, 800000u);  // about 870,000: the rest are beyond the oracles (x.e != 0)
}

// Stochastic rounding: reproducible for a seed, different for another, and unbiased:
// the mean of z over 4,000 seeds is a' b' + c' within 5 standard errors (fp8 MAC).
TEST(MpfmaEmulation, StochasticRoundingIsReproducibleAndUnbiased) {
  const auto cfg = MpfmaConfig::mac(formats::fp8_e4m3(), Rounding::stochastic);
  const std::vector<Triple> t(4000, Triple{1.375, 1.625, 0.0859375});  // all in fp8_e4m3
  const Output r1 = run(cfg, t, 1), r2 = run(cfg, t, 1), r3 = run(cfg, t, 2);
  EXPECT_EQ(r1.z, r2.z);
  EXPECT_NE(r1.z, r3.z);
  double mean = 0, sq = 0;
  for (double z : r1.z) mean += z;
  mean /= t.size();
  for (double z : r1.z) sq += (z - mean) * (z - mean);
  const double se = std::sqrt(sq / (t.size() - 1) / t.size());
  const double exact = 1.375 * 1.625 + 0.0859375;
  std::printf("  mean %.6f exact %.6f standard error %.6f\n", mean, exact, se);
  EXPECT_LT(std::fabs(mean - exact), 5 * se);
  EXPECT_GT(se, 0);
}

// ---------------------------------------------------------------------------------------
// 2. The bounds.

enum class Dist { u12, uniform, wide, near_overflow, cancellation, subnormal, ties };
const char* name(Dist d) {
  switch (d) {
    case Dist::u12:
      return "U[1,2]";
    case Dist::uniform:
      return "U[-1,1]";
    case Dist::wide:
      return "wide";
    case Dist::near_overflow:
      return "near overflow";
    case Dist::cancellation:
      return "cancellation";
    case Dist::subnormal:
      return "subnormal";
    case Dist::ties:
      return "ties";
  }
  return "";
}
bool random_model(Dist d) { return d == Dist::u12 || d == Dist::uniform || d == Dist::wide; }

std::vector<Triple> draw(Dist d, const MpfmaConfig& cfg, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto unit = [&] { return static_cast<double>(gen() >> 11) * 0x1p-53; };
  auto sign = [&](double x) { return gen() & 1 ? -x : x; };
  auto expo = [&](int lo, int hi) {
    return lo + static_cast<int>(gen() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const Format& in = cfg.input;
  const Format& add = cfg.addend;
  // the format whose range the product meets first
  const Format& pf =
      cfg.product_step == ProductStep::rounded && cfg.product.emax < cfg.sum.emax ? cfg.product : cfg.sum;
  auto midpoint = [&](const Format& f, double x) {
    if (f.t > 52) return x;
    const double v = ebla::round_to(x, f, Rounding::toward_zero);
    const int e = std::max(ebla::exponent_of(v), f.emin);
    return std::fabs(v) < f.fmax() ? v + std::copysign(std::ldexp(1.0, e - f.t), v) : x;
  };
  std::vector<Triple> t(n);
  for (auto& x : t) {
    switch (d) {
      case Dist::u12:
        x = {1 + unit(), 1 + unit(), 1 + unit()};
        break;
      case Dist::uniform:
        x = {2 * unit() - 1, 2 * unit() - 1, 2 * unit() - 1};
        break;
      case Dist::wide: {
        const int lo = std::max(in.emin - in.t - 2, -1070), hi = std::min(in.emax + 1, 1020);
        const int clo = std::max(add.emin - add.t - 2, -1070), chi = std::min(add.emax + 1, 1020);
        x = {sign(std::ldexp(1 + unit(), expo(lo, hi))), sign(std::ldexp(1 + unit(), expo(lo, hi))),
             sign(std::ldexp(1 + unit(), expo(clo, chi)))};
        break;
      }
      case Dist::near_overflow: {  // a b near the fmax of the product's or sum's format
        const double root = std::sqrt(std::min(pf.fmax(), in.fmax() * in.fmax()));
        const double a = sign(root * (0.7 + 0.6 * unit())), b = sign(root * (0.7 + 0.6 * unit()));
        x = {a, b, sign(std::min(pf.fmax(), add.fmax()) * unit())};
        break;
      }
      case Dist::cancellation: {
        const double a = sign(std::ldexp(1 + unit(), expo(-6, 6))), b = std::ldexp(1 + unit(), expo(-6, 6));
        const double c = gen() % 4 == 0 ? -a * b : -a * b * (1 + sign(std::ldexp(unit(), expo(-30, -3))));
        x = {a, b, c};
        break;
      }
      case Dist::subnormal: {  // inputs around fmin of their formats, products around the sum's
        const int e_in = in.emin, e_p = std::max(pf.emin / 2, in.emin - in.t),
                  e_c = std::max(add.emin, pf.emin);
        if (gen() & 1)
          x = {sign(std::ldexp(1 + unit(), expo(e_in - in.t - 1, e_in + 1))),
               sign(std::ldexp(1 + unit(), expo(e_in - in.t - 1, e_in + 1))),
               sign(std::ldexp(1 + unit(), expo(e_c - add.t - 1, e_c + 1)))};
        else
          x = {sign(std::ldexp(1 + unit(), expo(e_p - 3, e_p + 1))),
               sign(std::ldexp(1 + unit(), expo(e_p - 3, e_p + 1))),
               sign(std::ldexp(1 + unit(), expo(e_c - add.t - 1, e_c + 1)))};
        break;
      }
      case Dist::ties:
        x = {midpoint(in, sign(std::ldexp(1 + unit(), expo(-4, 4)))),
             midpoint(in, sign(std::ldexp(1 + unit(), expo(-4, 4)))),
             midpoint(add, sign(std::ldexp(1 + unit(), expo(-4, 4))))};
        break;
    }
  }
  return t;
}

// |z - (a b + c)| in quad, against the exact a b + c of the inputs as given.
quad error_of(const Triple& t, double z) {
  const Exact x = exact_sum(static_cast<quad>(t.a) * t.b, t.c);
  return qabs((static_cast<quad>(z) - x.s) - x.e);
}

std::vector<MpfmaConfig> bound_configs(Rounding m) {
  const Format h = formats::binary16(), bf = formats::bfloat16(), s = formats::binary32();
  MpfmaConfig bf_mp = MpfmaConfig::mpfma(bf, s, m);
  bf_mp.product = formats::binary64();
  MpfmaConfig mp_out16 = MpfmaConfig::mpfma(h, s, m);
  mp_out16.output = h;
  MpfmaConfig tc_row2 = MpfmaConfig::mpfma(h, h, m);
  tc_row2.product = s;
  std::vector<MpfmaConfig> out = {MpfmaConfig::fma(h, m),
                                  MpfmaConfig::fma(bf, m),
                                  MpfmaConfig::fma(formats::fp8_e4m3(), m),
                                  MpfmaConfig::fma(s, m),
                                  MpfmaConfig::mac(h, m),
                                  MpfmaConfig::mac(bf, m),
                                  MpfmaConfig::mac(formats::fp8_e5m2(), m),
                                  MpfmaConfig::mac(formats::fp4_e2m1(), m),
                                  MpfmaConfig::mpfma(h, s, m),
                                  MpfmaConfig::mpfma(formats::fp8_e4m3(), bf, m),
                                  bf_mp,
                                  mp_out16,
                                  tc_row2};
  if (m == Rounding::nearest_even) {
    out.push_back(MpfmaConfig::fma(formats::binary64(), m));
    out.push_back(MpfmaConfig::mac(formats::binary64(), m));
  }
  for (auto& c : out) c.failure = 0.5;
  return out;
}

// Largest frequency compatible with a failure probability `stated` in n trials: four binomial
// standard deviations plus one trial.
double allowed_frequency(double stated, std::size_t n) {
  return stated + 4 * std::sqrt(stated * (1 - stated) / static_cast<double>(n)) +
         1.0 / static_cast<double>(n);
}

// Deterministic bound: zero violations; probabilistic bound (failure 0.5, round to nearest and
// stochastic, random distributions): failure frequency within the stated probability. 13
// configs x 5 modes (+ 2 binary64 configs, nearest) x 7 distributions x 15,000 triples = 7.0
// million triples.
TEST(MpfmaBounds, DeterministicBoundHoldsAndProbabilisticFailsNoMoreThanStated) {
  constexpr std::size_t n = 15000;
  std::size_t total = 0, finite = 0, violations = 0;
  for (Rounding m : all_modes) {
    std::uint64_t seed = 100 * static_cast<int>(m);
    for (const auto& cfg : bound_configs(m)) {
      for (Dist d : {Dist::u12, Dist::uniform, Dist::wide, Dist::near_overflow, Dist::cancellation,
                     Dist::subnormal, Dist::ties}) {
        const auto t = draw(d, cfg, n, ++seed);
        const Output r = run(cfg, t, seed);
        std::size_t fin = 0, prob_fail = 0, viol = 0;
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (std::isinf(r.bound[i])) continue;
          ++fin;
          const quad err = error_of(t[i], r.z[i]);
          if (!(err <= r.bound[i])) {
            if (viol++ < 3)
              ADD_FAILURE() << describe(cfg) << " " << name(d) << ": a = " << hex(t[i].a)
                            << " b = " << hex(t[i].b) << " c = " << hex(t[i].c) << " z = " << hex(r.z[i])
                            << " error " << static_cast<double>(err) << " > bound " << r.bound[i];
          }
          if (r.bound[i] > 0) worst = std::max(worst, static_cast<double>(err / r.bound[i]));
          prob_fail += err > r.probable[i];
        }
        total += n;
        finite += fin;
        violations += viol;
        if (random_model(d) && r.failure > 0 && fin > 0) {
          const double freq = static_cast<double>(prob_fail) / fin;
          EXPECT_LE(freq, allowed_frequency(r.failure, fin)) << describe(cfg) << " " << name(d);
          if (d == Dist::wide)
            std::printf("  %-72s max error/bound %.3f; probable bound failed %.5f (stated %.2f)\n",
                        describe(cfg).c_str(), worst, freq, r.failure);
        }
      }
    }
  }
  std::printf("  %zu triples, %zu with a finite bound, %zu violations\n", total, finite, violations);
  EXPECT_EQ(violations, 0u);
  EXPECT_GT(finite, total * 8 / 10);
}

// The probabilistic bound where it is below the deterministic one: a, b rounded to binary16 in an
// MPFMA into binary32 (the representation pair dominates the error), at failure probabilities
// 0.2 to 0.95; round to nearest (Lemma 2.2's model) and stochastic rounding (Higham & Mary's
// theorem holds there by construction). The observed failure frequency must stay within four
// binomial standard deviations of the stated probability: 2 modes x 4 probabilities x 3
// distributions x 50,000 triples = 1.2 million.
TEST(MpfmaBounds, ProbabilisticBoundFailsNoMoreThanStatedAtEveryLevel) {
  constexpr std::size_t n = 50000;
  for (Rounding m : {Rounding::nearest_even, Rounding::stochastic})
    for (double f : {0.2, 0.5, 0.8, 0.95}) {
      MpfmaConfig cfg = MpfmaConfig::mpfma(formats::binary16(), formats::binary32(), m);
      cfg.failure = f;
      std::printf("  %-13s failure %.2f:", ebla::to_string(m), f);
      for (Dist d : {Dist::u12, Dist::uniform, Dist::wide}) {
        const auto t = draw(d, cfg, n, 77 + static_cast<int>(100 * f));
        const Output r = run(cfg, t, 3);
        std::size_t fails = 0, below = 0, fin = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (std::isinf(r.bound[i])) continue;
          ++fin;
          below += r.probable[i] < r.bound[i];
          fails += error_of(t[i], r.z[i]) > r.probable[i];
        }
        const double freq = static_cast<double>(fails) / fin;
        std::printf("  %s %.4f (%zu%% below DBEA)", name(d), freq, 100 * below / fin);
        EXPECT_LE(freq, allowed_frequency(f, fin)) << ebla::to_string(m) << " " << f << " " << name(d);
      }
      std::printf("\n");
    }
}

// The bound is attained to within a factor 2 on adversarial data (midpoint inputs, round to
// nearest; 4 configs x 50,000 triples): it is not vacuous.
TEST(MpfmaBounds, IsAttainedWithinAFactorTwoOnTies) {
  for (const auto& cfg : {MpfmaConfig::fma(formats::binary16()), MpfmaConfig::mac(formats::bfloat16()),
                          MpfmaConfig::mpfma(formats::binary16(), formats::binary32()),
                          MpfmaConfig::fma(formats::fp8_e4m3())}) {
    const auto t = draw(Dist::ties, cfg, 50000, 9);
    const Output r = run(cfg, t, 1);
    double worst = 0;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (std::isfinite(r.bound[i]) && r.bound[i] > 0)
        worst = std::max(worst, static_cast<double>(error_of(t[i], r.z[i]) / r.bound[i]));
    std::printf("  %-60s max error/bound %.3f\n", describe(cfg).c_str(), worst);
    EXPECT_GT(worst, 0.5) << describe(cfg);
    EXPECT_LE(worst, 1.0) << describe(cfg);
  }
}

// Seed 000 section 4.1: a, b, c ~ U[1,2] given in binary32; MAC without FMA and FMA in binary32,
// MPFMA with a, b rounded to binary16 (Lemma 3.5 / 3.6). Prints the largest relative forward
// error and the bounds, as the seed's Fig. 5; 100,000 triples each.
TEST(MpfmaBounds, MacExperimentOfSection41) {
  std::mt19937_64 gen(41);
  std::vector<Triple> t(100000);
  for (auto& x : t) {
    auto u = [&] {
      return static_cast<double>(static_cast<float>(1 + static_cast<double>(gen() >> 11) * 0x1p-53));
    };
    x = {u(), u(), u()};
  }
  const Format s = formats::binary32();
  for (const auto& [label, cfg] :
       {std::make_pair("MAC without FMA", MpfmaConfig::mac(s)), std::make_pair("FMA", MpfmaConfig::fma(s)),
        std::make_pair("MPFMA fp16/fp32", MpfmaConfig::mpfma(formats::binary16(), s))}) {
    const Output r = run(cfg, t, 1);
    double err = 0, det = 0, prob = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double d = std::fabs(t[i].a * t[i].b + t[i].c);  // relative to |d| as the seed's Fig. 5
      err = std::max(err, static_cast<double>(error_of(t[i], r.z[i])) / d);
      det = std::max(det, r.bound[i] / d);
      prob = std::max(prob, r.probable[i] / d);
      ASSERT_LE(error_of(t[i], r.z[i]), r.bound[i]);
    }
    std::printf("  %-16s max forward error %.3e  DBEA %.3e  VIBEA(failure %.2f, lambda %.2f) %.3e\n", label,
                err, det, r.failure, r.lambda, prob);
  }
}

// ---------------------------------------------------------------------------------------
// The bounds as the lemmas print them, where no input needs rounding or underflows.

double bound_of(const MpfmaConfig& cfg, double a, double b, double c, double* probable = nullptr) {
  const Output r = run(cfg, {{a, b, c}}, 1);
  if (probable) *probable = r.probable[0];
  return r.bound[0];
}
double inflated(double x) { return x * (1 + 0x1p-45) + 0x1p-1065; }

TEST(MpfmaBounds, EqualsTheLemmasOnHandCheckedCases) {
  const double u16 = 0x1p-11, u32 = 0x1p-24, g2 = ebla::bounds::gamma(2, u16);
  const double a = 1.5, b = -1.25, c = 0.75;  // in every format
  // Lemma 3.1: FMA, inputs in the format: u (|a b| + |c|)
  EXPECT_DOUBLE_EQ(bound_of(MpfmaConfig::fma(formats::binary16()), a, b, c), inflated(u16 * (1.875 + 0.75)));
  // Lemma 3.4 with u_FMA = 0 (output = accumulation), eq. (6): u_high (|a b| + |c|)
  EXPECT_DOUBLE_EQ(bound_of(MpfmaConfig::mpfma(formats::binary16(), formats::binary32()), a, b, c),
                   inflated(u32 * (1.875 + 0.75)));
  // Lemma 3.4 with a binary16 output: (u-bar + u_FMA + u-bar u_FMA)(|a b| + |c|)
  MpfmaConfig out16 = MpfmaConfig::mpfma(formats::binary16(), formats::binary32());
  out16.output = formats::binary16();
  EXPECT_DOUBLE_EQ(bound_of(out16, a, b, c), inflated((u32 + u16 + u32 * u16) * (1.875 + 0.75)));
  // MAC without FMA (Lemma 2.1): (2u + u^2)|a b| + u |c|
  EXPECT_DOUBLE_EQ(bound_of(MpfmaConfig::mac(formats::binary16()), a, b, c),
                   inflated((2 * u16 + u16 * u16) * 1.875 + u16 * 0.75));
  // Lemma 3.5: a, b not in binary16, c not in binary32:
  //   [gamma_2 + zeta (1 + gamma_2)] |a||b| + [u_high + zeta (1 + u_high)] |c|, zeta = u_high
  const double a2 = 1.5 + 0x1p-20, b2 = -1.25 - 0x1p-19, c2 = 0.75 + 0x1p-40;
  const double ab2 = std::fabs(a2 * b2);
  double prob = 0;
  EXPECT_DOUBLE_EQ(bound_of(MpfmaConfig::mpfma(formats::binary16(), formats::binary32()), a2, b2, c2, &prob),
                   inflated((g2 + u32 * (1 + g2)) * ab2 + (u32 + u32 * (1 + u32)) * c2));
  // Lemma 3.6: gamma~_2(lambda) in place of gamma_2, lambda from the failure probability by
  // Lemma 2.2 (p_b), not Higham and Mary's P(lambda), whose lambda is smaller here
  const auto cfg = MpfmaConfig::mpfma(formats::binary16(), formats::binary32());
  const double lambda = ebla::bounds::vibea_lambda(cfg.failure, u16, 2);
  EXPECT_GT(lambda, ebla::bounds::hm_lambda(cfg.failure, u16));
  const double gt = ebla::bounds::gamma_tilde(2, u16, lambda);
  EXPECT_DOUBLE_EQ(prob, inflated((gt + u32 * (1 + gt)) * ab2 + (u32 + u32 * (1 + u32)) * c2));
  EXPECT_DOUBLE_EQ(run(cfg, {{a2, b2, c2}}, 1).lambda, lambda);
  // Lemma 3.2 / 3.3: FMA with all three rounded to binary16:
  //   (u + gamma_2 + u gamma_2)|a||b| + (2u + u^2)|c|, and gamma~_2 with probability p_b(lambda, u, 2)
  const double c3 = 0.75 + 0x1p-20;
  EXPECT_DOUBLE_EQ(bound_of(MpfmaConfig::fma(formats::binary16()), a2, b2, c3, &prob),
                   inflated((u16 + g2 + u16 * g2) * ab2 + (2 * u16 + u16 * u16) * c3));
  EXPECT_DOUBLE_EQ(prob, inflated((u16 + gt + u16 * gt) * ab2 + (2 * u16 + u16 * u16) * c3));
  EXPECT_GE(
      std::max(ebla::bounds::vibea_probability(lambda, u16, 2), ebla::bounds::hm_probability(lambda, u16)),
      1 - cfg.failure - 1e-12);
  // directed rounding: 2u everywhere, no probabilistic claim
  const Output rz = run(MpfmaConfig::fma(formats::binary16(), Rounding::toward_zero), {{a, b, c}}, 1);
  EXPECT_DOUBLE_EQ(rz.bound[0], inflated(2 * u16 * (1.875 + 0.75)));
  EXPECT_EQ(rz.bound[0], rz.probable[0]);
  EXPECT_EQ(rz.failure, 0.0);
}

// The bounds are against the exact a b + c of the inputs as given. For inputs not in their
// formats the rounded-input bound of Lemma 3.4 does not hold against them; Lemma 3.5's does.
TEST(MpfmaBounds, AreAgainstTheInputsAsGiven) {
  const auto cfg = MpfmaConfig::mpfma(formats::binary16(), formats::binary32());
  const Triple t{1 + 0x1p-12, 1, 0};  // a rounds to 1
  const Output r = run(cfg, {t}, 1);
  EXPECT_EQ(r.z[0], 1.0);
  const double err = static_cast<double>(error_of(t, r.z[0]));
  EXPECT_EQ(err, 0x1p-12);
  const double lemma34 = 0x1p-24 * std::fabs(t.a * t.b);  // rounded-input bound, u_FMA = 0
  EXPECT_GT(err, lemma34);
  EXPECT_LE(err, r.bound[0]);
}

// ---------------------------------------------------------------------------------------
// Corrections to the seed: each printed version fails here.

// Correction 1: Lemma 3.4 ignores underflow. Table 2's second row (fp16 accumulation): a b =
// 1.5 2^-24 is exact in the fp32 product, then rounds to the fp16 subnormal 2^-23: relative
// error 1/3, far above the printed zeta (|a b| + |c|). ebla's bound adds gmin.
TEST(MpfmaSeedCorrections, PrintedLemma34FailsOnASubnormalSum) {
  MpfmaConfig cfg = MpfmaConfig::mpfma(formats::binary16(), formats::binary16());
  cfg.product = formats::binary32();
  const Triple t{1.5 * 0x1p-12, 0x1p-12, 0};
  const Output r = run(cfg, {t}, 1);
  EXPECT_EQ(r.z[0], 0x1p-23);
  const double err = static_cast<double>(error_of(t, r.z[0]));
  const double zeta = 0x1p-11;                  // u-bar = u_fp16, u_FMA = 0
  EXPECT_GT(err, zeta * std::fabs(t.a * t.b));  // the printed Lemma 3.4
  EXPECT_LE(err, r.bound[0]);
}

// Correction 2: the lemmas' u is round to nearest's. Round toward zero in binary16:
// 1 + 2^-10 - 2^-21 (a b + c with a = b = 1, c = 2^-10 - 2^-21 in binary16) truncates to 1,
// an error of almost 2u, twice the printed Lemma 3.1 bound u (|a b| + |c|).
TEST(MpfmaSeedCorrections, PrintedLemma31FailsForRoundTowardZero) {
  const Triple t{1, 1, 0x1p-10 - 0x1p-21};
  const Output r = run(MpfmaConfig::fma(formats::binary16(), Rounding::toward_zero), {t}, 1);
  EXPECT_EQ(r.z[0], 1.0);
  const double err = static_cast<double>(error_of(t, r.z[0]));
  EXPECT_GT(err, 0x1p-11 * (1 + t.c));  // the printed Lemma 3.1
  EXPECT_LE(err, r.bound[0]);
}

// Correction 3: "the product of two fp16 has at most 20 significant bits". 2047 2^-10 squared
// has 22 (4190209 = 2^22 - 2^12 + 1): a 20- or 21-bit product format rounds it; a product
// format must have t >= 2 t_low = 22.
TEST(MpfmaSeedCorrections, ProductOfTwoBinary16NeedsTwentyTwoBits) {
  const double x = 2047 * 0x1p-10;  // largest binary16 below 2
  const double p = x * x;           // exact in double
  const Format h = formats::binary16();
  for (int t : {20, 21, 22}) {
    const Format f = ebla::make_format(t, -126, 127);
    EXPECT_EQ(ebla::round_to(p, f, Rounding::nearest_even) == p, t >= 22) << "t = " << t;
    EXPECT_EQ(ebla::holds_all_products(f, h), t >= 22) << "t = " << t;
  }
  MpfmaConfig cfg = MpfmaConfig::mpfma(h, formats::binary32());
  cfg.product = ebla::make_format(20, -126, 127);
  Kokkos::View<double*> v("v", 1);
  EXPECT_THROW(ebla::mpfma(v, v, v, cfg), ebla::InvalidArgument);
}

// holds_all_products against enumeration: for 200 random pairs of small formats, every product
// of two input values is exact in the product format exactly when the function says so
// (necessity checked where some product reaches the product format's normal range).
TEST(MpfmaSeedCorrections, HoldsAllProductsMatchesEnumeration) {
  std::mt19937_64 gen(17);
  int agree = 0, holds = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int t = 2 + static_cast<int>(gen() % 3), emin = -static_cast<int>(gen() % 4),
              emax = static_cast<int>(gen() % 4);
    const Format in = ebla::make_format(t, emin, emax, gen() & 1);
    const int tp = 2 * t - 1 + static_cast<int>(gen() % 3);
    const int pemin = 2 * (emin - t + 1) + tp - 1 - 1 + static_cast<int>(gen() % 3);
    const int pemax = std::max(2 * emax + static_cast<int>(gen() % 3), pemin);
    const Format pf = ebla::make_format(tp, pemin, pemax, gen() % 4 != 0);
    bool all = true;
    for (double a : finite_values(in))
      for (double b : finite_values(in))
        all = all && ebla::round_to(a * b, pf, Rounding::nearest_even) == a * b;
    const bool claim = ebla::holds_all_products(pf, in);
    EXPECT_TRUE(!claim || all) << "unsound for t=" << t << " product t=" << tp;  // sufficient, always
    agree += claim == all;
    holds += all;
  }
  std::printf("  agree on %d of 200 pairs (%d hold every product)\n", agree, holds);
  EXPECT_EQ(agree, 200);
  EXPECT_GT(holds, 20);
}

// ---------------------------------------------------------------------------------------
// 3. Bad input.

TEST(MpfmaBadInput, ThrowsNamingTheFunctionAndValue) {
  Kokkos::View<double*> x("x", 4), y("y", 3);
  const auto cfg = MpfmaConfig::mpfma(formats::binary16(), formats::binary32());
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const ebla::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message([&] { ebla::mpfma(x, x, y, cfg); }).find("ebla::mpfma: a, b, c have 4, 4, 3"),
            std::string::npos);
  MpfmaConfig bad = cfg;
  bad.sum.t = 60;
  EXPECT_NE(message([&] { ebla::mpfma(x, x, x, bad); }).find("ebla::mpfma (sum format): precision t = 60"),
            std::string::npos);
  bad = cfg;
  bad.failure = 1.5;
  EXPECT_NE(message([&] { ebla::mpfma(x, x, x, bad); }).find("failure probability 1.5"), std::string::npos);
  // products the product format cannot hold: binary16's are 22 bits, bfloat16's exceed binary32's range
  bad = cfg;
  bad.product = formats::bfloat16();
  EXPECT_NE(message([&] { ebla::mpfma(x, x, x, bad); }).find("cannot hold every product of two binary16"),
            std::string::npos);
  EXPECT_THROW(ebla::mpfma(x, x, x, MpfmaConfig::mpfma(formats::bfloat16(), formats::binary32())),
               ebla::InvalidArgument);
  // not emulated exactly: directed fused binary64; a sum format of 52 bits
  EXPECT_THROW(ebla::mpfma(x, x, x, MpfmaConfig::fma(formats::binary64(), Rounding::toward_zero)),
               ebla::InvalidArgument);
  EXPECT_THROW(ebla::mpfma(x, x, x, MpfmaConfig::mac(ebla::make_format(52, -100, 100))),
               ebla::InvalidArgument);
  // non-finite entries, named with their index
  auto h = Kokkos::create_mirror_view(y);
  h(2) = nan;
  Kokkos::deep_copy(y, h);
  Kokkos::View<double*> z("z", 3);
  EXPECT_NE(message([&] { ebla::mpfma(z, y, z, cfg); }).find("ebla::mpfma: b(2) = nan is not finite"),
            std::string::npos);
  h(2) = -inf;
  Kokkos::deep_copy(y, h);
  EXPECT_NE(message([&] { ebla::mpfma(z, z, y, cfg); }).find("c(2) = -inf"), std::string::npos);
}

TEST(MpfmaBadInput, EmptyViewsGiveEmptyResults) {
  Kokkos::View<double*> e("e", 0);
  const auto r = ebla::mpfma(e, e, e, MpfmaConfig::fma(formats::binary16()));
  EXPECT_EQ(r.z.extent(0), 0u);
  EXPECT_EQ(r.bound.extent(0), 0u);
}

}  // namespace

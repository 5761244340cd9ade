// round_to against an independent oracle, exhaustively.
//
// The oracle knows nothing of round_to's bit tricks: it decodes every encoding of a
// format into a sorted table of values and rounds by searching that table, with the
// rounding rules written out directly (nearest with ties to the even encoding,
// directed, stochastic with an exact comparison, overflow per IEEE/OCP rules).
// Every format of at most 16 bits is checked at every value, every midpoint between
// neighbours, the doubles adjacent to both, and points beyond the range, in every mode,
// for the catalogue formats and their variants without subnormals / with saturation.
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using ebla::Format;
using ebla::Rounding;

constexpr double inf = std::numeric_limits<double>::infinity();

std::uint64_t bits_of(double x) { return ebla::bit_cast<std::uint64_t>(x); }

// Same value and sign (any NaN equals any NaN).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return bits_of(a) == bits_of(b);
}

// The non-negative finite values of a format, sorted, with the parity of the last
// significand bit of each encoding (used for ties to even).
struct ValueTable {
  Format f;
  std::vector<double> value;
  std::vector<bool> odd;
};

ValueTable table_of(const Format& f) {
  ValueTable t{f, {}, {}};
  const int width = ebla::encoding_bits(f);
  for (std::uint32_t e = 0; e < (1u << (width - 1)); ++e) {  // sign bit clear
    const double v = ebla::decode(e, f);
    if (!std::isfinite(v)) continue;
    if (!t.value.empty() && v == t.value.back()) continue;  // flushed subnormal encodings
    t.value.push_back(v);
    t.odd.push_back((e & 1u) != 0);
  }
  for (std::size_t i = 1; i < t.value.size(); ++i)
    if (!(t.value[i - 1] < t.value[i])) ADD_FAILURE() << "decode is not increasing";
  return t;
}

double overflow_value(const Format& f) {
  switch (f.overflow) {
    case ebla::Overflow::infinity: return inf;
    case ebla::Overflow::nan: return std::numeric_limits<double>::quiet_NaN();
    case ebla::Overflow::saturate: return f.fmax();
  }
  return 0;
}

// Rounds |x| (ax) in the direction of a mode for a value of sign `negative`.
bool away_from_zero(Rounding mode, bool negative) {
  return (mode == Rounding::upward && !negative) || (mode == Rounding::downward && negative);
}

double oracle_magnitude(const ValueTable& t, double ax, bool negative, Rounding mode, double r) {
  const Format& f = t.f;
  const double fmax = t.value.back();
  const double top_ulp = std::ldexp(1.0, f.emax - f.t + 1);
  if (ax > fmax) {
    bool overflow;
    switch (mode) {
      case Rounding::nearest_even: {
        const double tau = fmax + top_ulp / 2;  // midpoint to the next (virtual) value
        overflow = ax > tau || (ax == tau && t.odd.back());
        break;
      }
      case Rounding::toward_zero: overflow = false; break;
      case Rounding::stochastic:  // long double: r * ulp is exact, no underflow
        overflow = ax >= fmax + top_ulp ||
                   static_cast<long double>(r) * top_ulp < static_cast<long double>(ax) - fmax;
        break;
      default: overflow = away_from_zero(mode, negative); break;
    }
    return overflow ? overflow_value(f) : fmax;
  }
  const auto it = std::lower_bound(t.value.begin(), t.value.end(), ax);
  if (*it == ax) return ax;
  const std::size_t hi = static_cast<std::size_t>(it - t.value.begin());
  const std::size_t lo = hi - 1;
  const double vlo = t.value[lo], vhi = t.value[hi];
  switch (mode) {
    case Rounding::nearest_even: {
      const double mid = (vlo + vhi) / 2;  // exact: one more bit than the format
      if (ax < mid) return vlo;
      if (ax > mid) return vhi;
      return t.odd[lo] ? vhi : vlo;  // tie: to the even encoding (0 counts as even)
    }
    case Rounding::toward_zero: return vlo;
    case Rounding::stochastic:  // long double: both sides exact, no underflow
      return static_cast<long double>(r) * (vhi - vlo) < static_cast<long double>(ax) - vlo ? vhi : vlo;
    default: return away_from_zero(mode, negative) ? vhi : vlo;
  }
}

double oracle(const ValueTable& t, double x, Rounding mode, double r = 0.0) {
  if (std::isnan(x) || x == 0) return x;
  const bool negative = std::signbit(x);
  if (std::isinf(x)) {
    if (t.f.has_infinity()) return x;
    const double v = t.f.overflow == ebla::Overflow::saturate ? t.f.fmax()
                                                              : std::numeric_limits<double>::quiet_NaN();
    return negative ? -v : v;
  }
  const double m = oracle_magnitude(t, std::fabs(x), negative, mode, r);
  return negative ? -m : m;
}

// Inputs: every value, every midpoint, their neighbouring doubles, points beyond fmax
// and below the smallest subnormal, extreme doubles.
std::vector<double> probe_points(const ValueTable& t) {
  std::vector<double> p;
  auto around = [&p](double v) {
    p.push_back(v);
    p.push_back(std::nextafter(v, 0.0));
    p.push_back(std::nextafter(v, inf));
  };
  for (std::size_t i = 0; i < t.value.size(); ++i) {
    around(t.value[i]);
    if (i + 1 < t.value.size()) {
      const double lo = t.value[i], hi = t.value[i + 1];
      around((lo + hi) / 2);
      p.push_back(lo + (hi - lo) / 4);
      p.push_back(lo + 3 * (hi - lo) / 4);
    }
  }
  const double fmax = t.value.back();
  const double top_ulp = std::ldexp(1.0, t.f.emax - t.f.t + 1);
  for (double k : {0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 1000.0}) around(fmax + k * top_ulp);
  const double tiny = t.value[1];
  for (double k : {0.125, 0.25, 0.5, 0.75, 1.5}) around(k * tiny);
  for (double v : {2.0 * fmax, 1e300, std::numeric_limits<double>::max(), 1e-310,
                   std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min()})
    around(v);
  const std::size_t n = p.size();
  for (std::size_t i = 0; i < n; ++i) p.push_back(-p[i]);
  for (double v : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) p.push_back(v);
  return p;
}

const Rounding deterministic_modes[] = {Rounding::nearest_even, Rounding::toward_zero,
                                        Rounding::upward, Rounding::downward};

// Formats small enough to enumerate, with variants of each.
std::vector<std::pair<std::string, Format>> enumerable_formats() {
  std::vector<std::pair<std::string, Format>> out;
  for (const char* name : {"binary16", "bfloat16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3",
                           "fp6_e3m2", "fp4_e2m1"}) {
    const Format f = ebla::format_by_name(name);
    out.emplace_back(name, f);
    Format no_sub = f;
    no_sub.subnormals = false;
    out.emplace_back(std::string(name) + " without subnormals", no_sub);
    if (f.overflow != ebla::Overflow::saturate) {
      Format sat = f;
      sat.overflow = ebla::Overflow::saturate;
      out.emplace_back(std::string(name) + " saturating", sat);
    }
  }
  Format e5m2_nan = ebla::formats::fp8_e5m2();
  e5m2_nan.overflow = ebla::Overflow::nan;
  out.emplace_back("fp8_e5m2 overflow to NaN", e5m2_nan);
  return out;
}

std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

TEST(Rounding, MatchesOracleExhaustivelyInEveryDeterministicMode) {
  std::size_t checked = 0;
  for (const auto& [name, f] : enumerable_formats()) {
    const ValueTable t = table_of(f);
    const auto points = probe_points(t);
    for (Rounding mode : deterministic_modes) {
      int failures = 0;
      for (double x : points) {
        const double want = oracle(t, x, mode);
        const double got = ebla::round_to(x, f, mode);
        ++checked;
        if (!same(want, got) && failures++ < 5)
          ADD_FAILURE() << name << " " << ebla::to_string(mode) << ": x = " << hex(x)
                        << " want " << hex(want) << " got " << hex(got);
      }
    }
  }
  EXPECT_GT(checked, 2000000u);
}

TEST(Rounding, StochasticMatchesOracleAtTheDecisionBoundary) {
  std::mt19937_64 gen(12345);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::size_t checked = 0;
  for (const auto& [name, f] : enumerable_formats()) {
    const ValueTable t = table_of(f);
    for (double x : probe_points(t)) {
      // the exact fraction (x - lo)/(hi - lo), and random numbers on both sides of it
      const double ax = std::fabs(x);
      std::vector<double> rs = {0.0, 0.5, std::nextafter(1.0, 0.0), uniform(gen)};
      if (std::isfinite(ax) && ax < t.value.back()) {
        const auto it = std::upper_bound(t.value.begin(), t.value.end(), ax);
        const double lo = *(it - 1), hi = *it;
        const double frac = (ax - lo) / (hi - lo);  // exact: power-of-two divisor
        rs.push_back(frac);
        rs.push_back(std::nextafter(frac, 0.0));
        rs.push_back(std::nextafter(frac, 1.0));
      }
      for (double r : rs) {
        if (!(r >= 0.0 && r < 1.0)) continue;
        ++checked;
        const double want = oracle(t, x, Rounding::stochastic, r);
        const double got = ebla::round_to(x, f, Rounding::stochastic, r);
        ASSERT_TRUE(same(want, got)) << name << ": x = " << hex(x) << " r = " << hex(r)
                                     << " want " << hex(want) << " got " << hex(got);
      }
    }
  }
  EXPECT_GT(checked, 1000000u);
}

TEST(Rounding, EveryFormatValueRoundsToItself) {
  for (const auto& [name, f] : enumerable_formats()) {
    const ValueTable t = table_of(f);
    for (double v : t.value)
      for (Rounding mode : deterministic_modes) {
        ASSERT_TRUE(same(ebla::round_to(v, f, mode), v)) << name << " " << hex(v);
        ASSERT_TRUE(same(ebla::round_to(-v, f, mode), -v)) << name << " " << hex(-v);
      }
  }
}

TEST(Rounding, HandCheckedCases) {
  const Format h = ebla::formats::binary16();
  EXPECT_EQ(ebla::round_to(1.0 + std::ldexp(1.0, -11), h, Rounding::nearest_even), 1.0);  // tie, even
  EXPECT_EQ(ebla::round_to(1.0 + 3 * std::ldexp(1.0, -11), h, Rounding::nearest_even),
            1.0 + std::ldexp(1.0, -9));  // tie, odd below: up
  EXPECT_EQ(ebla::round_to(65519.0, h, Rounding::nearest_even), 65504.0);
  EXPECT_EQ(ebla::round_to(65520.0, h, Rounding::nearest_even), inf);  // tie goes to 2^16
  EXPECT_EQ(ebla::round_to(1e6, h, Rounding::toward_zero), 65504.0);
  EXPECT_EQ(ebla::round_to(-1e6, h, Rounding::upward), -65504.0);
  EXPECT_EQ(ebla::round_to(-1e6, h, Rounding::downward), -inf);
  EXPECT_EQ(ebla::round_to(std::ldexp(1.0, -25), h, Rounding::nearest_even), 0.0);  // tie to 0
  EXPECT_EQ(ebla::round_to(std::ldexp(1.5, -25), h, Rounding::nearest_even), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::signbit(ebla::round_to(-1e-30, h, Rounding::nearest_even)));
  const Format e4m3 = ebla::formats::fp8_e4m3();
  EXPECT_EQ(ebla::round_to(464.0, e4m3, Rounding::nearest_even), 448.0);  // tie to even 448
  EXPECT_TRUE(std::isnan(ebla::round_to(464.5, e4m3, Rounding::nearest_even)));
  EXPECT_TRUE(std::isnan(ebla::round_to(inf, e4m3, Rounding::nearest_even)));
  EXPECT_EQ(ebla::round_to(500.0, e4m3, Rounding::toward_zero), 448.0);
  const Format e2m1 = ebla::formats::fp4_e2m1();
  EXPECT_EQ(ebla::round_to(100.0, e2m1, Rounding::nearest_even), 6.0);
  EXPECT_EQ(ebla::round_to(-inf, e2m1, Rounding::nearest_even), -6.0);
  EXPECT_EQ(ebla::round_to(0.25, e2m1, Rounding::nearest_even), 0.0);  // tie between 0 and 0.5
  EXPECT_EQ(ebla::round_to(0.26, e2m1, Rounding::nearest_even), 0.5);
  Format flush = ebla::formats::binary16();
  flush.subnormals = false;
  EXPECT_EQ(ebla::round_to(std::ldexp(1.0, -15), flush, Rounding::nearest_even), 0.0);  // fmin/2
  EXPECT_EQ(ebla::round_to(std::ldexp(1.5, -15), flush, Rounding::nearest_even), std::ldexp(1.0, -14));
  EXPECT_EQ(ebla::round_to(std::ldexp(1.0, -20), flush, Rounding::upward), std::ldexp(1.0, -14));
}

TEST(Rounding, NanAndSignedZeroArePreserved) {
  for (const auto& [name, f] : enumerable_formats())
    for (Rounding mode : deterministic_modes) {
      EXPECT_TRUE(std::isnan(ebla::round_to(std::numeric_limits<double>::quiet_NaN(), f, mode)));
      EXPECT_TRUE(same(ebla::round_to(0.0, f, mode), 0.0));
      EXPECT_TRUE(same(ebla::round_to(-0.0, f, mode), -0.0));
    }
}

TEST(Rounding, Binary64IsTheIdentity) {
  const Format d = ebla::formats::binary64();
  std::mt19937_64 gen(7);
  for (int i = 0; i < 1000000; ++i) {
    const double x = ebla::bit_cast<double>(gen());
    for (Rounding mode : deterministic_modes) ASSERT_TRUE(same(ebla::round_to(x, d, mode), x)) << hex(x);
  }
}

// binary32 is too wide to enumerate: random doubles against the oracle built from
// the neighbours float(x) rounded down and up (std::nextafter on floats).
TEST(Rounding, Binary32MatchesNeighbourSearchOnRandomDoubles) {
  const Format s = ebla::formats::binary32();
  std::mt19937_64 gen(99);
  for (int i = 0; i < 2000000; ++i) {
    // magnitudes 2^-160 .. 2^130: subnormals, normals and overflow
    const double x = std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, static_cast<int>(gen() % 290) - 160) *
                     (gen() & 1 ? -1.0 : 1.0);
    const double got = ebla::round_to(x, s, Rounding::toward_zero);
    // truncation: the largest binary32 value not above |x| in magnitude
    const float f = static_cast<float>(std::fabs(x));  // some neighbour of |x|
    float lo = f > std::fabs(x) ? std::nextafter(f, 0.0f) : f;
    if (std::isinf(lo)) lo = std::numeric_limits<float>::max();
    const double want = std::copysign(static_cast<double>(lo), x);
    ASSERT_TRUE(same(got, want)) << hex(x) << " want " << hex(want) << " got " << hex(got);
  }
}

// Formats too wide to enumerate (binary64's exponent range at lower precisions, tf32):
// an oracle from the quantum q at |x|, with lo = floor(|x|/q) q computed exactly in
// long double, whose exponent range holds every q and every quotient.
double quantum_oracle(const Format& f, double x, Rounding mode) {
  if (std::isnan(x) || x == 0 || std::isinf(x)) return x;  // formats here have infinities
  const bool negative = std::signbit(x);
  const long double ax = std::fabs(x);
  const int e = std::max(std::ilogb(x), f.emin);
  const long double q = ax < std::ldexp(1.0, f.emin) && !f.subnormals
                            ? std::ldexp(1.0L, f.emin)
                            : std::ldexp(1.0L, e - f.t + 1);
  const long double n = std::floor(ax / q);
  const long double lo = n * q, hi = lo + q;
  long double m;
  if (lo == ax) m = lo;
  else if (mode == Rounding::nearest_even) {
    const long double mid = lo + q / 2;
    const bool lo_odd = std::fmod(n, 2.0L) != 0 && !(lo == 0);
    m = ax < mid ? lo : ax > mid ? hi : (lo_odd ? hi : lo);
  } else if (mode == Rounding::toward_zero) m = lo;
  else m = away_from_zero(mode, negative) ? hi : lo;
  const bool toward_zero = mode == Rounding::toward_zero ||
                           (mode != Rounding::nearest_even && !away_from_zero(mode, negative));
  if (m > f.fmax()) m = toward_zero ? f.fmax() : overflow_value(f);
  return negative ? -static_cast<double>(m) : static_cast<double>(m);
}

TEST(Rounding, WideFormatsMatchQuantumOracleOnRandomDoubles) {
  std::vector<Format> formats = {ebla::formats::tf32(), ebla::formats::binary32()};
  for (int t : {2, 5, 24, 52, 53})
    for (bool sub : {true, false}) formats.push_back(ebla::make_format(t, -1022, 1023, sub));
  formats.push_back(ebla::make_format(7, -1000, 1000, false, ebla::Specials::ieee, ebla::Overflow::saturate));
  std::mt19937_64 gen(2024);
  std::size_t checked = 0;
  for (const Format& f : formats) {
    for (int i = 0; i < 200000; ++i) {
      // random bit patterns: every exponent, double subnormals included
      double x = ebla::bit_cast<double>(gen());
      if (i % 4 == 1) x = std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, f.emin - static_cast<int>(gen() % 64));
      if (i % 4 == 2) x = std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, f.emax - static_cast<int>(gen() % 4));
      for (Rounding mode : deterministic_modes) {
        ++checked;
        const double want = quantum_oracle(f, x, mode);
        const double got = ebla::round_to(x, f, mode);
        ASSERT_TRUE(same(want, got)) << ebla::format_name(f) << " " << ebla::to_string(mode)
                                     << ": x = " << hex(x) << " want " << hex(want) << " got " << hex(got);
      }
    }
  }
  EXPECT_GT(checked, 9000000u);
}

TEST(Rounding, StochasticRoundingIsUnbiased) {
  // E[SR(x)] = x: the mean over many draws approaches x within a few standard errors
  const Format f = ebla::formats::fp8_e5m2();
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (double x : {1.1, 3.3, -7.77, 0.0001, 1000.5}) {
    const int draws = 200000;
    double sum = 0;
    for (int i = 0; i < draws; ++i) sum += ebla::round_to(x, f, Rounding::stochastic, uniform(gen));
    const double lo = ebla::round_to(x, f, Rounding::toward_zero);
    const double hi = ebla::round_to(x, f, std::signbit(x) ? Rounding::downward : Rounding::upward);
    const double sd = std::fabs(hi - lo) / 2 / std::sqrt(static_cast<double>(draws));
    EXPECT_NEAR(sum / draws, x, 5 * sd) << x;
  }
}

TEST(Rounding, ModesAreLookedUpByName) {
  EXPECT_EQ(ebla::rounding_by_name("nearest_even"), Rounding::nearest_even);
  EXPECT_EQ(ebla::rounding_by_name("RZ"), Rounding::toward_zero);
  EXPECT_EQ(ebla::rounding_by_name("toward-zero"), Rounding::toward_zero);
  EXPECT_EQ(ebla::rounding_by_name("upward"), Rounding::upward);
  EXPECT_EQ(ebla::rounding_by_name("rd"), Rounding::downward);
  EXPECT_EQ(ebla::rounding_by_name("sr"), Rounding::stochastic);
  for (Rounding m : deterministic_modes) EXPECT_EQ(ebla::rounding_by_name(ebla::to_string(m)), m);
  try {
    ebla::rounding_by_name("sideways");
    FAIL() << "no exception";
  } catch (const ebla::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'sideways'"), std::string::npos);
  }
}

TEST(Exponent, ReadsTheUnbiasedExponentFromTheBits) {
  EXPECT_EQ(ebla::exponent_of(1.0), 0);
  EXPECT_EQ(ebla::exponent_of(1.999), 0);
  EXPECT_EQ(ebla::exponent_of(-2.0), 1);
  EXPECT_EQ(ebla::exponent_of(0.75), -1);
  EXPECT_EQ(ebla::exponent_of(std::numeric_limits<double>::denorm_min()), -1074);
  EXPECT_EQ(ebla::exponent_of(std::ldexp(1.5, -1050)), -1050);
  EXPECT_EQ(ebla::exponent_of(std::numeric_limits<double>::max()), 1023);
  EXPECT_EQ(ebla::exponent_of(0.0), ebla::exponent_of_zero);
  EXPECT_EQ(ebla::exponent_of(inf), ebla::exponent_of_nonfinite);
  std::mt19937_64 gen(5);
  for (int i = 0; i < 100000; ++i) {
    const double x = ebla::bit_cast<double>(gen() >> 1);
    if (!std::isfinite(x) || x == 0) continue;
    ASSERT_EQ(ebla::exponent_of(x), std::ilogb(x)) << hex(x);
  }
}

TEST(Exponent, FexpIsTheUnbiasedExponentNotThePrintedCeiling) {
  // seed 002 (1.1) prints ceil(log2|x|) for |x| < 1; that gives 0 for 0.75, whose
  // exponent is -1, and then 0.75 > 2^fexp(0.75) would not hold.
  const double x = 0.75;
  const int printed = static_cast<int>(std::ceil(std::log2(x)));
  EXPECT_EQ(printed, 0);
  EXPECT_EQ(ebla::fexp(x), -1);
  EXPECT_LE(std::ldexp(1.0, ebla::fexp(x)), x);
  EXPECT_LT(x, std::ldexp(1.0, ebla::fexp(x) + 1));
  EXPECT_EQ(ebla::fexp(4.0), 2);
  EXPECT_EQ(ebla::fexp(0.5), -1);
}

}  // namespace

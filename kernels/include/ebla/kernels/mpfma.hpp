// mpfma: fused and mixed-precision multiply-add z = a*b + c, elementwise over Kokkos views,
// emulated bit-exactly, with the error bounds of seed 000 (Bhola & Duraisamy), sections 3.1-3.2.
//
// The model (seed 000 section 3.2, Fig. 2): five formats and one rounding mode.
//   a' = fl_input(a), b' = fl_input(b)   t_low,  u_low    representation of the inputs
//   c' = fl_addend(c)                    t_high, u_high   representation of the addend
//   p  = a' b'                           t~               fused: exact, no format; exact: in the
//                                                         product format, which must hold every
//                                                         product; rounded: fl_product(a' b')
//   s  = fl_sum(p + c')                  t-bar,  u-bar    ONE rounding of the exact sum
//   z  = fl_output(s)                    t_FMA,  u_FMA    no error when the output format holds
//                                                         every value of the sum format
// Presets (named constructors of MpfmaConfig) and the lemma each one is:
//   fma(f)            every format f, product fused     Lemma 3.1 (inputs in f), 3.2 and 3.3
//                                                       (inputs rounded to f)
//   mac(f)            product rounded to f, then the    no lemma in the seed (its section 4.1
//                     sum rounded to f                  "MAC without FMA"): Lemma 2.1 applied
//                                                       to fl(fl(a b) + c)
//   mpfma(low, high)  a, b in low; c, product, sum and  Lemma 3.4 (inputs in their formats),
//                     output in high; product exact     3.5 and 3.6 (inputs rounded)
// Table 2's second tensor-core row (fp16 product in fp32, accumulated in fp16) is the config
// {binary16, binary16, binary32, binary16, binary16, exact}.
//
// What the bounds certify. For every element, against the exact a b + c of the inputs AS
// GIVEN (the doubles passed in, not the rounded a', b', c'):
//   |z - (a b + c)| <= bound                always;
//   |z - (a b + c)| <= probable_bound       with probability >= 1 - failure under the model of
//                                           Lemma 2.2 (see below);
// both +inf when a step overflows (its exact operand exceeds its format's fmax). Both are
// evaluated with a margin (relative 2^-45, absolute 2^-1065) that covers their own rounding.
//   bound = K_ab |a b| + K_c |c| + U, with (each constant next to its lemma)
//   K_ab = (1 + gamma_k(u_low)) (1 + u_p) (1 + zeta) - 1   Lemma 3.5: gamma_2 + zeta (1 + gamma_2);
//                                                          Lemma 3.2: u + gamma_2 + u gamma_2
//   K_c  = (1 + u_high) (1 + zeta) - 1                     Lemma 3.5: u_high + zeta (1 + u_high);
//                                                          Lemma 3.2: 2u + u^2
//   zeta = (1 + u-bar)(1 + u_FMA) - 1                      Lemma 3.4: u-bar + u_FMA + u-bar u_FMA
// where gamma_k is Lemma 2.1's constant for the k in {0, 1, 2} of a, b that their rounding
// changed (an input already in its format has no representation error: k = 0 and u_high -> 0
// give Lemmas 3.4 and 3.1, stated for the rounded inputs, which then equal the given ones;
// gamma_k = +inf when k u >= 1, i.e. fp4 with directed rounding); u_p = u_product for a
// rounded product, else 0; u_FMA = 0 when the output step is exact. probable_bound replaces
// gamma_k by gamma~_k(lambda) (Lemmas 3.3 and 3.6: only the pair of input roundings is treated
// probabilistically; every other rounding keeps its worst case).
//
// Corrections to the seed, each with a test in tests/kernels/test_mpfma.cpp:
//  1. The lemmas use fl(x) = x(1 + delta), which fails when x underflows. Each rounding is
//     modelled as in seed 001 (2.1): fl(x) = x(1 + delta) for |x| > fmin, fl(x) = x + eta with
//     |eta| <= gmin for |x| <= fmin (decided on the exact operand x of each step); such a step
//     contributes no u to K and its eta to U (U = 0 when nothing underflows, and then the bound
//     is exactly the lemma's).
//     (PrintedLemma34FailsOnASubnormalSum)
//  2. The lemmas take u = 2^-t, the unit roundoff of round to nearest. Directed and stochastic
//     rounding have |delta| < 2^(1-t) and |eta| < 2 gmin; ebla uses those.
//     (PrintedLemma31FailsForRoundTowardZero)
//  3. Section 3.2 says the product of two fp16 numbers "has at most 20 significant bits"; it has
//     up to 22 = 2 t_low (2047 * 2047 = 4190209 > 2^21). The product format must have
//     t~ >= 2 t_low and the exponent range of every product: holds_all_products() checks this.
//     (ProductOfTwoBinary16NeedsTwentyTwoBits)
//  4. The text before Lemma 3.5 prints |Delta b| <= gamma_2^{u_low} without the factor |b|.
//
// The probabilistic model. probable_bound holds with probability >= 1 - failure if the relative
// errors delta_a, delta_b of rounding a and b are independent and: uniform on [-u, u] (round to
// nearest; Lemma 2.2, p_b(lambda, u, k)) or merely mean-zero (stochastic rounding; Higham & Mary
// 2019, P(lambda)). lambda is the smallest that meets the failure probability, by
// ebla::bounds::vibea_lambda (round to nearest: the seed's VIBEA, Lemma 2.2, although Higham and
// Mary's P(lambda) would give a smaller lambda for k = 2, 3.26 against 3.51 at failure 0.01) or
// hm_lambda (stochastic rounding). Directed rounding is biased: probable_bound = bound, failure 0.
// For k = 2 and a small failure probability gamma~_2 exceeds gamma_2 (seed 000's Fig. 5 shows
// VIBEA above DBEA for MPFMA and MAC); probable_bound is the lemma's value all the same.
//
// Emulation. Each rounding is ebla::round_to of a double, or of an exact double-double
// hi + lo (hi = RN(hi + lo)) from TwoProd / TwoSum, never a rounding of a rounded value:
// round_exact rounds hi + lo to odd at 53 bits and then once to the target, which is correct
// in every deterministic mode for targets of t <= 51 bits (Boldo & Melquiond, IEEE Trans.
// Computers 57(4), 2008); for a binary64 target it moves hi by one ulp according to the sign of
// lo; stochastic rounding decides r q < |x| - d exactly (the sign of a three-term expansion,
// Shewchuk 1997). The one exception is the fused product of inputs wider than 26 bits, done by
// std::fma, hence binary64 round to nearest only. validate() rejects what is not emulated exactly.
// Stochastic rounding draws r = mpfma_uniform(seed, i, step) (counter-based: reproducible on
// every backend and thread count).
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/exact.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace ebla {

/// How the product a' b' enters the sum.
enum class ProductStep : std::uint8_t {
  fused,    ///< unrounded, no product format (FMA); MpfmaConfig::product is ignored
  exact,    ///< in MpfmaConfig::product, which must hold every product of two input values (MPFMA)
  rounded,  ///< rounded to MpfmaConfig::product (MAC without FMA)
};

/// The formats and rounding of one multiply-add. Every Format defaults to binary64.
struct MpfmaConfig {
  Format input{};    ///< a and b are rounded to it (t_low)
  Format addend{};   ///< c is rounded to it (t_high)
  Format product{};  ///< the product's format (t~), used as product_step says
  Format sum{};      ///< a' b' + c' is rounded once to it (accumulation, t-bar)
  Format output{};   ///< the sum is rounded to it (t_FMA)
  ProductStep product_step = ProductStep::fused;
  Rounding rounding = Rounding::nearest_even;  ///< every step rounds in this mode
  double failure = 0.01;  ///< per-element failure probability of probable_bound; in (0, 1)

  /// FMA in f: one rounding of a b + c (Lemmas 3.1-3.3).
  static MpfmaConfig fma(const Format& f, Rounding mode = Rounding::nearest_even);
  /// Multiply-accumulate without FMA in f: fl(fl(a b) + c) (Lemma 2.1).
  static MpfmaConfig mac(const Format& f, Rounding mode = Rounding::nearest_even);
  /// Mixed-precision FMA: a, b in low; exact product, c, sum and output in high (Lemmas 3.4-3.6).
  static MpfmaConfig mpfma(const Format& low, const Format& high,
                           Rounding mode = Rounding::nearest_even);
};

/// z and its two componentwise bounds (see the top of this header).
struct MpfmaResult {
  Kokkos::View<double*> z;               ///< fl_output(fl_sum(p + c'))
  Kokkos::View<double*> bound;           ///< |z - (a b + c)| <= bound, always
  Kokkos::View<double*> probable_bound;  ///< holds with probability >= 1 - failure
  double failure = 0;  ///< per element; 0 for directed rounding (probable_bound = bound)
  double lambda = 0;   ///< lambda of gamma~_2 (elements with both inputs rounded)
};

/// z(i) = a(i) b(i) + c(i) as the config says, with its bounds. Runs in Kokkos' default
/// execution space, on the device in a CUDA or HIP build: a, b, c and the result's Views are
/// in its memory, and only the position of a non-finite entry comes back to the host. Throws InvalidArgument naming
/// ebla::mpfma and the value if the extents differ, an entry is not finite, or
/// validate(config) fails. `seed` feeds stochastic rounding only.
MpfmaResult mpfma(const Kokkos::View<const double*>& a, const Kokkos::View<const double*>& b,
                  const Kokkos::View<const double*>& c, const MpfmaConfig& config,
                  std::uint64_t seed = 0);

/// Checks a config; throws InvalidArgument naming `function`: an invalid format or failure
/// probability; ProductStep::exact with a product format that cannot hold every product of
/// two input values; and what is not emulated exactly: a product or sum rounded to a format
/// of t = 52 or 53 other than binary64; a fused product of inputs with t > 26 unless the sum is
/// binary64 with round to nearest; an exact product needing inputs with emin - t + 1 < -537
/// (products below 2^-1074) or emax > 511 (products beyond binary64); sums beyond binary64.
void validate(const MpfmaConfig& config, const char* function = "ebla::validate");

/// Whether `product` holds the exact product of every two finite values of `input`:
/// t~ >= 2 t_low, fmax_low^2 <= fmax~, and the finest quantum 2^(emin_low - t_low + 1) squared
/// is a multiple of the product format's finest quantum (and, without subnormals in the
/// product format, the smallest product is at least its fmin). Sufficient, and necessary
/// unless every product falls into the product format's subnormal range.
bool holds_all_products(const Format& product, const Format& input);

/// Whether every finite value of `inner` is a value of `outer`.
bool contains(const Format& outer, const Format& inner);

namespace detail {

KOKKOS_INLINE_FUNCTION bool negative(double x) {
  return (bit_cast<std::uint64_t>(x) & binary64::sign_mask) != 0;
}
KOKKOS_INLINE_FUNCTION bool finite(double x) {
  return (bit_cast<std::uint64_t>(x) & binary64::exponent_mask) != binary64::exponent_mask;
}


/// The double next to x in magnitude: one ulp up (+1) or down (-1).
KOKKOS_INLINE_FUNCTION double step_magnitude(double x, int dir) {
  const auto step = static_cast<std::uint64_t>(static_cast<std::int64_t>(dir));  // +1 or 2^64 - 1
  return bit_cast<double>(bit_cast<std::uint64_t>(x) + step);
}

/// splitmix64's step and finaliser.
KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform random number in [0, 1), a multiple of 2^-53, for the stochastic rounding of step
/// `step` (0..5: a, b, c, product, sum, output) of element i.
KOKKOS_INLINE_FUNCTION double mpfma_uniform(std::uint64_t seed, std::uint64_t i, int step) {
  const std::uint64_t counter = 6 * i + static_cast<std::uint64_t>(step);
  return static_cast<double>(splitmix64(splitmix64(seed) ^ counter) >> 11) * 0x1p-53;
}

/// A format as the target of round_exact.
struct ExactTarget {
  RoundingConstants c;
  int t, emin;
  bool subnormals;
  bool binary64;  ///< the format is binary64 itself
};

/// Distance from the value |d| of the format to the next one away from zero (beyond fmax: to
/// the next one the exponent range would have).
KOKKOS_INLINE_FUNCTION double quantum(double d, const ExactTarget& f) {
  const double fmin = pow2(f.emin);
  if (!(d >= fmin)) return f.subnormals ? pow2(f.emin - f.t + 1) : fmin;
  return pow2(exponent_of(d) - f.t + 1);
}

/// Whether r q < X + L, exactly, for r in [0, 1), q = 2^k and 0 <= X + L (Shewchuk's
/// Grow-Expansion: the sign of a sum of three doubles).
KOKKOS_INLINE_FUNCTION bool below_exactly(double r, double q, double X, double L) {
  if (X >= 2 * q) return true;  // |x| - d >= 2q: beyond the next value (only above fmax)
  // X < 2q here, so X = |hi| - d was exact (Sterbenz). Scale so that A = r q is exact.
  double A = r * q, B = X, C = L;
  const int k = exponent_of(q);
  if (k < 0) {  // scale by 2^-k <= 2^1074 in two exact steps
    const int s1 = -k > 1000 ? 1000 : -k;
    B = B * pow2(s1) * pow2(-k - s1);
    C = C * pow2(s1) * pow2(-k - s1);
    A = r;
  }
  double s, e, q1, h1, q2, h2;
  two_sum(C, B, s, e);    // B + C = s + e, nonoverlapping
  two_sum(-A, e, q1, h1);  // grow the expansion [e, s] by -A
  two_sum(q1, s, q2, h2);  // B + C - A = h1 + h2 + q2, nonoverlapping
  const double top = q2 != 0 ? q2 : h2 != 0 ? h2 : h1;
  return top > 0;
}

/// Rounds the exact value hi + lo (hi = RN(hi + lo)) correctly to the target: lo = 0 or a
/// non-finite hi go to round_to directly; otherwise see the top of this header.
template <Rounding mode>
KOKKOS_INLINE_FUNCTION double round_exact(double hi, double lo, const ExactTarget& f, double r) {
  if (lo == 0 || !finite(hi)) return round_to<mode>(hi, f.c, r);
  const bool up = negative(lo) == negative(hi);  // |hi + lo| > |hi|
  if constexpr (mode == Rounding::stochastic) {
    const double d = round_exact<Rounding::toward_zero>(hi, lo, f, 0.0);  // neighbour toward 0
    const bool neg = negative(hi);
    const double v = neg ? round_exact<Rounding::downward>(hi, lo, f, 0.0)
                         : round_exact<Rounding::upward>(hi, lo, f, 0.0);  // and away from 0
    const double ad = magnitude(d);
    // up with probability (|x| - |d|) / q: r q < (|hi| - |d|) + lo sign(hi)
    return below_exactly(r, quantum(ad, f), magnitude(hi) - ad, neg ? -lo : lo) ? v : d;
  } else if (f.binary64) {
    // hi is the nearest double; a directed mode moves one ulp when x lies beyond hi its way
    if constexpr (mode == Rounding::nearest_even) return hi;
    const bool neg = negative(hi);
    const bool away = (mode == Rounding::upward && !neg) || (mode == Rounding::downward && neg);
    if (away) return up ? step_magnitude(hi, 1) : hi;
    return up ? hi : step_magnitude(hi, -1);
  } else {
    // round to odd at 53 bits (hi, or its neighbour toward x when hi's last bit is even),
    // then once to t <= 51 bits
    const double odd = (bit_cast<std::uint64_t>(hi) & 1) ? hi : step_magnitude(hi, up ? 1 : -1);
    return round_to<mode>(odd, f.c);
  }
}

/// The error model of one rounding step: fl(x) = x (1 + delta), |delta| <= u, for
/// fmin < |x| <= fmax; fl(x) = x + eta, |eta| <= g, for |x| <= fmin.
struct StepModel {
  double u = 0, g = 0, fmin = 0, fmax = 0;
};

/// Everything the element function needs, prepared once per call by mpfma_plan.
struct MpfmaPlan {
  ExactTarget input, addend, product, sum, output;
  ProductStep product_step;
  bool native_fma;     ///< fused product of wide inputs: std::fma (binary64, nearest)
  bool output_rounds;  ///< the output format does not hold every sum-format value
  StepModel m_input, m_addend, m_product, m_sum, m_output;  // u = g = 0 for exact steps
  double gamma_rep[3];        ///< gamma_k(u_low), k = 0, 1, 2 (Lemma 2.1)
  double gamma_rep_prob[3];   ///< gamma~_k(u_low, lambda_k) (Lemma 2.2 / Higham-Mary)
  double failure, lambda;
};

/// Validates the config (validate()) and prepares the plan.
MpfmaPlan mpfma_plan(const MpfmaConfig& config, const char* function = "ebla::mpfma");

struct MpfmaValue {
  double z, bound, probable_bound;
};

/// (1 + x)(1 + y) - 1 without cancellation (and without inf * 0 when gamma_2 = inf at u = 1/2).
KOKKOS_INLINE_FUNCTION double grow(double x, double y) {
  return y == 0 ? x : x == 0 ? y : x + y + x * y;
}

/// |hi + lo| > fmax
KOKKOS_INLINE_FUNCTION bool beyond(double hi, double lo, double fmax) {
  const double a = magnitude(hi);
  return !(a <= fmax) || (a == fmax && lo != 0 && negative(lo) == negative(hi));
}

/// One element: z = fl_output(fl_sum(p + c')) and its bounds.
template <Rounding mode>
KOKKOS_INLINE_FUNCTION MpfmaValue mpfma_element(const MpfmaPlan& P, double a, double b, double c,
                                                std::uint64_t seed, std::uint64_t i) {
  constexpr bool sr = mode == Rounding::stochastic;
  // 1. representation: a' = fl_input(a), b' = fl_input(b), c' = fl_addend(c)
  const double ar = round_to<mode>(a, P.input.c, sr ? mpfma_uniform(seed, i, 0) : 0.0);
  const double br = round_to<mode>(b, P.input.c, sr ? mpfma_uniform(seed, i, 1) : 0.0);
  const double cr = round_to<mode>(c, P.addend.c, sr ? mpfma_uniform(seed, i, 2) : 0.0);
  // 2. product: a' b' = ph + pl exactly; p = fl_product(ph + pl) if rounded, else ph (pl = 0)
  double ph, pl, sh, sl;
  two_prod(ar, br, ph, pl);
  double s;
  if (P.native_fma) {
    s = ::fma(ar, br, cr);  // one rounding of a' b' + c' in binary64
    sh = s;
    sl = 0;
  } else {
    const double p = P.product_step == ProductStep::rounded
                         ? round_exact<mode>(ph, pl, P.product, sr ? mpfma_uniform(seed, i, 3) : 0.0)
                         : ph;
    // 3. sum: p + c' = sh + sl exactly, rounded once
    two_sum(p, cr, sh, sl);
    // an exact zero sum is -0 when rounding downward unless both terms are +0 (IEEE 754 6.3)
    if (mode == Rounding::downward && sh == 0 && (negative(p) || negative(cr) || p != 0)) sh = -0.0;
    s = round_exact<mode>(sh, sl, P.sum, sr ? mpfma_uniform(seed, i, 4) : 0.0);
  }
  // 4. output
  const double z = round_to<mode>(s, P.output.c, sr ? mpfma_uniform(seed, i, 5) : 0.0);

  // The bound. Which steps overflowed (no bound) or underflowed (absolute error g, no u: the
  // lemmas assume no underflow, correction 1 at the top of this header):
  const bool rounded = P.product_step == ProductStep::rounded;
  const bool overflow = beyond(a, 0, P.m_input.fmax) || beyond(b, 0, P.m_input.fmax) ||
                        beyond(c, 0, P.m_addend.fmax) ||
                        (rounded && beyond(ph, pl, P.m_product.fmax)) ||
                        beyond(sh, sl, P.m_sum.fmax) ||
                        (P.output_rounds && beyond(s, 0, P.m_output.fmax));
  const bool a_small = !(magnitude(a) > P.m_input.fmin), b_small = !(magnitude(b) > P.m_input.fmin);
  const bool c_small = !(magnitude(c) > P.m_addend.fmin);
  const bool p_small = !(magnitude(ph) > P.m_product.fmin), s_small = !(magnitude(sh) > P.m_sum.fmin);
  const bool o_small = !(magnitude(s) > P.m_output.fmin);
  // representation errors: none where the input is already in its format (Lemmas 3.1, 3.4)
  const double ua = ar != a && !a_small ? P.m_input.u : 0, ga = ar != a && a_small ? P.m_input.g : 0;
  const double ub = br != b && !b_small ? P.m_input.u : 0, gb = br != b && b_small ? P.m_input.g : 0;
  const double uc = cr != c && !c_small ? P.m_addend.u : 0, gc = cr != c && c_small ? P.m_addend.g : 0;
  const int k = (ua != 0) + (ub != 0);  // relative errors among a, b: gamma_k (Lemma 2.1)
  const double up = p_small ? 0 : P.m_product.u, gp = p_small ? P.m_product.g : 0;  // 0 unless rounded
  const double us = s_small ? 0 : P.m_sum.u, gs = s_small ? P.m_sum.g : 0;
  const double uo = o_small ? 0 : P.m_output.u, go = o_small ? P.m_output.g : 0;  // 0 unless rounds
  const double zeta = grow(us, uo);    // Lemma 3.4: u-bar + u_FMA + u-bar u_FMA
  const double after_p = grow(up, zeta);
  const double k_ab = grow(P.gamma_rep[k], after_p);              // Lemmas 3.2, 3.5
  const double k_ab_prob = grow(P.gamma_rep_prob[k], after_p);    // Lemmas 3.3, 3.6
  const double k_c = grow(uc, zeta);                              // u_high + zeta (1 + u_high)
  // underflow (correction 1), with fl(x) = x (1 + d) + e at every step:
  //   z - (a b + c) = a b [(1+da)(1+db)(1+dp)(1+ds)(1+do) - 1] + c [(1+dc)(1+ds)(1+do) - 1]
  //                 + (ea b (1+db) + eb a (1+da) + ea eb)(1+dp)(1+ds)(1+do)
  //                 + (ep + ec)(1+ds)(1+do) + es (1+do) + eo
  const double abs_a = magnitude(a), abs_b = magnitude(b), abs_c = magnitude(c);
  const double e_prod = ga * abs_b + ga * abs_b * ub + gb * abs_a + gb * abs_a * ua + ga * gb;
  const double U = e_prod + e_prod * after_p + (gp + gc) + (gp + gc) * zeta + gs + gs * uo + go;
  const double abs_ab = magnitude(a * b);
  // evaluated upward enough: (1 + 2^-45) covers the ~20 roundings of these sums of positive
  // terms, 2^-1065 their underflow
  constexpr double up_rel = 1 + 0x1p-45, up_abs = 0x1p-1065;
  // a copy of the constant: bit_cast takes a reference, and a reference to a namespace-scope
  // constexpr variable is not available in device code
  const std::uint64_t inf_bits = binary64::exponent_mask;
  const double inf = bit_cast<double>(inf_bits);
  MpfmaValue v;
  v.z = z;
  v.bound = overflow ? inf : (k_ab * abs_ab + k_c * abs_c + U) * up_rel + up_abs;
  v.probable_bound = overflow ? inf : (k_ab_prob * abs_ab + k_c * abs_c + U) * up_rel + up_abs;
  return v;
}

}  // namespace detail
}  // namespace ebla

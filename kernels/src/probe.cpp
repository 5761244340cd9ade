#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/probe.hpp>
#include <set>
#include <stdexcept>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define EBLA_PROBE_X86 1
#else
#define EBLA_PROBE_X86 0
#endif

namespace ebla {

namespace {

__attribute__((format(printf, 1, 2))) std::string text(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string hexf(double x) { return text("%a", x); }

double p2(int e) { return std::ldexp(1.0, e); }

/// Bitwise equality (distinguishes -0 from +0; NaN equals NaN).
bool same(double x, double y) {
  return bit_cast<std::uint64_t>(x) == bit_cast<std::uint64_t>(y) ||
         (std::isnan(x) && std::isnan(y));
}

/// 2^k as a product x y of two normal numbers of the input format, if there is one; with
/// `subnormal`, of subnormal powers of two too (for a unit found to keep them).
bool split_pow2(const Format& in, int k, double& x, double& y, bool subnormal = false) {
  const int least = subnormal && in.subnormals ? in.emin - (in.t - 1) : in.emin;
  const int ka = std::max(least, std::min(in.emax, k - k / 2));
  const int kb = k - ka;
  if (kb < least || kb > in.emax) return false;
  x = p2(ka);
  y = p2(kb);
  return true;
}

/// A nonzero value v as a product x y of input numbers: v 1 if v is a normal one, else a
/// split power of two (normal factors, or subnormal ones too with `subnormal`).
bool as_product(const Format& in, double v, double& x, double& y, bool subnormal = false) {
  if (round_to(v, in, Rounding::nearest_even) == v && std::fabs(v) >= in.fmin()) {
    x = v;
    y = 1;
    return true;
  }
  int e = 0;
  if (std::fabs(std::frexp(v, &e)) != 0.5 || !split_pow2(in, e - 1, x, y, subnormal)) return false;
  x = std::copysign(x, v);
  return true;
}

/// One call of the device: a term in slot 0 is c, a term in slot i >= 1 is the product
/// a_{i-1} b_{i-1}; empty slots are 0 (c) and 0 * 0.
class Block {
 public:
  explicit Block(const DotDevice& d) : dev_(d), a_(d.length, 0.0), b_(d.length, 0.0) {}
  bool subnormal_factors = false;  ///< products may have a subnormal factor

  /// Places v in a slot; false if v cannot be a product of input numbers.
  bool put(int slot, double v) {
    if (slot < 0 || slot > static_cast<int>(a_.size())) return false;  // beyond the call
    if (slot == 0) {
      c_ = v;
      return true;
    }
    if (v == 0) {
      a_[slot - 1] = b_[slot - 1] = 0;
      return true;
    }
    return as_product(dev_.input, v, a_[slot - 1], b_[slot - 1], subnormal_factors);
  }
  double run() const { return dev_.run(a_.data(), b_.data(), c_); }
  void clear() {
    std::fill(a_.begin(), a_.end(), 0.0);
    std::fill(b_.begin(), b_.end(), 0.0);
    c_ = 0;
  }

 private:
  const DotDevice& dev_;
  std::vector<double> a_, b_;
  double c_ = 0;
};

/// d = c + (the one product v), the other products zero.
double run_two(const DotDevice& d, double c, double v) {
  Block blk(d);
  if (!blk.put(1, v)) throw_invalid("ebla::probe", hexf(v) + " is not a product of input numbers");
  blk.put(0, c);
  return blk.run();
}

// ---- the probes --------------------------------------------------------------------------

void probe_products(const DotDevice& d, ProbeFindings& f) {
  // seed 003: (1 - 2^-t)^2 = 1 - 2^(1-t) + 2^-2t; c cancels its rounded value, so that the
  // last term shows even when T < 2t
  const int t = d.input.t;
  const double x = 1 - p2(-t);
  std::vector<double> a(d.length, 0.0);
  a[0] = x;
  f.product_result = d.run(a.data(), a.data(), -(1 - p2(1 - t)));
  f.products = same(f.product_result, p2(-2 * t)) ? ProbeFindings::Products::exact
               : f.product_result == 0            ? ProbeFindings::Products::rounded_to_input
                                                  : ProbeFindings::Products::other;
}

/// Whether 2^-(T-1+k) next to 1 (the product 1 * 1) changes the result: up (1 + tiny),
/// toward zero or down (1 - tiny), or to nearest (1 - (half + tiny) against 1 - half);
/// T the precision of the sums.
/// 1 (kept), 0 (dropped), -1 (not testable: tiny is neither an addend nor a product there).
/// The tiny term is c while the accumulation format holds it, else a second product next to
/// 1 (binary16 results: their units keep more bits than binary16's range shows through c).
int alignment_keeps(const DotDevice& d, int T, int k) {
  const double tiny = p2(-(T - 1 + k));
  const double base = k == 2 ? p2(-T) : p2(-(T + 1));
  // (as c, -(base + tiny) must be a number of the accumulation format: k <= T + 1)
  const bool as_c = k <= T + 1 && tiny >= p2(d.accumulation.emin - d.accumulation.t + 1);
  Block blk(d);
  bool placed = true;
  const auto run = [&](double c, double t) {  // c + 1 + (t as a product, unless as_c)
    blk.clear();
    blk.put(1, 1);
    blk.put(0, as_c ? c + t : c);
    if (!as_c && t != 0) placed = placed && blk.put(2, t);
    return blk.run();
  };
  const double one = run(0, 0);
  const bool changed = !same(run(0, tiny), one) || !same(run(0, -tiny), one);
  if (!placed) return -1;
  if (changed) return 1;
  if (k < 2) return 0;
  const double r = run(-base, -tiny);
  if (!placed) return -1;
  return same(r, run(-base, 0)) ? 0 : 1;
}

void probe_sum_precision(const DotDevice& d, ProbeFindings& f) {
  // 1 + 2^-j (c next to the product 1 * 1) comes out exact while j < Ts, the precision the
  // sums and d keep, and not for j = Ts: rounded down, or a tie to nearest-even (Khattak &
  // Mikaitis 2025: NVIDIA's fp8 units keep sums of 14 bits in binary32)
  const int T = d.accumulation.t;
  f.sum_precision = 1;
  for (int j = 1; j < T && same(run_two(d, p2(-j), 1), 1 + p2(-j)); ++j) f.sum_precision = j + 1;
}

void probe_alignment(const DotDevice& d, ProbeFindings& f) {
  const int T = f.sum_precision;  // extra bits count below the sums' last bit
  // up to T + 1 bits; where the accumulation's range cuts that short (binary16), up to 2 t_in
  // with the tiny term a product, as far as it can be placed
  const bool range_short = -d.accumulation.emin - T + 1 < T + 1;
  const int most = range_short ? std::max(T + 1, 2 * d.input.t) : T + 1;
  f.extra_bits = 0;
  f.extra_bits_tested = 0;
  for (int k = 1; k <= most; ++k) {
    const int kept = alignment_keeps(d, T, k);
    if (kept < 0) break;  // the range tested ends here
    f.extra_bits_tested = k;
    if (kept == 0) {  // lost: K = k - 1, within the range meant
      f.extra_bits_tested = most;
      break;
    }
    f.extra_bits = k;
  }
  if (f.extra_bits_tested > 0 && f.extra_bits == f.extra_bits_tested)
    f.extra_bits = MatrixUnit::unbounded;
}

/// The block from a block test's results for p = first, first + 1, ... (f.block_results): the
/// first p whose result shows a later operation, or the whole call (b >= length) if none does.
template <class Later>
void settle_block(ProbeFindings& f, int first, int length, Later later) {
  const auto split = std::find_if(f.block_results.begin(), f.block_results.end(), later);
  f.block_bounded = split != f.block_results.end();
  f.block = f.block_bounded ? first + static_cast<int>(split - f.block_results.begin()) : length;
}

/// Whether position p of a call is added in the same operation as positions 0 and 1 (p >= 2),
/// or position 1 in that of position 0 and of c (p = 1); `same` is the result of one operation.
/// Three terms, two of them cancelling: one operation adds them exactly once, a rounding in
/// between changes the result.
struct BlockTest {
  Block blk;
  bool kept;         // the small term survives one operation (K >= 2 extra bits)
  double L, small;   // the scale and the small term
  double same() const { return kept ? small : 0.0; }

  /// kept:    c = s, 1 at 0, -1 at 1 (p = 1);   1 at 0, s at 1, -1 at p (p >= 2)
  /// dropped: c = L, -L at 0, s at 1 (p = 1);   -L at 0, L at 1, s at p (p >= 2)
  bool place(int p) {
    blk.clear();
    if (p == 1)
      return kept ? blk.put(0, small) && blk.put(1, L) && blk.put(2, -L)
                  : blk.put(0, L) && blk.put(1, -L) && blk.put(2, small);
    return kept ? blk.put(1, L) && blk.put(2, small) && blk.put(p + 1, -L)
                : blk.put(1, -L) && blk.put(2, L) && blk.put(p + 1, small);
  }
};

void probe_block(const DotDevice& d, ProbeFindings& f) {
  // kept: with K >= 2 extra bits one operation keeps s = 2^-(Ts+1) L of L + s - L exactly,
  //   while L + s rounded alone loses it (to L, or L + ulp rounding up): not s after -L.
  // dropped: one operation drops s = 2^-(Ts+K) L next to L and -L (one bit below its grid),
  //   while after L - L = 0 is rounded, s alone is exact.
  // Positions 0 and 1 share an operation unless p = 1 already splits them, so p >= 2 needs
  // no c, wherever the unit adds it. L = 2^e, the least e >= 0 with every term placeable.
  const int Ts = f.sum_precision;
  const bool kept = f.extra_bits == MatrixUnit::unbounded || f.extra_bits >= 2;
  f.block_test = kept ? "kept" : "dropped";
  f.block = 0;
  f.block_bounded = false;
  f.block_results.clear();
  f.slots = d.length;
  if (d.length < 2) {  // one product per call: one operation
    f.block = 1;
    return;
  }
  BlockTest test{Block(d), kept, 0, 0};
  bool placeable = false;
  for (int e = 0; e <= d.accumulation.emax && !placeable; ++e) {
    test.L = p2(e);
    test.small = p2(e - Ts - (kept ? 1 : f.extra_bits));
    placeable = true;
    for (int p = 1; p < d.length && placeable; ++p) placeable = test.place(p);
  }
  if (!placeable) return;  // not testable: the other probes use the whole call
  f.block_scale = test.L;
  f.block_small = test.small;
  for (int p = 1; p < d.length; ++p) {
    test.place(p);
    f.block_results.push_back(test.blk.run());
  }
  const double one = test.same();
  settle_block(f, 1, d.length, [&](double r) { return r != one; });
  f.slots = f.block >= 2 ? f.block : d.length;
}

void probe_permutation(const DotDevice& d, ProbeFindings& f) {
  // seed 003's permutation test: 1 and b addends 2^-T, the 1 in every position
  const int T = f.sum_precision;
  Block blk(d);
  f.permutation_results.clear();
  for (int pos = 0; pos <= f.slots; ++pos) {
    bool ok = true;
    for (int slot = 0; slot <= f.slots; ++slot) ok = ok && blk.put(slot, slot == pos ? 1 : p2(-T));
    if (!ok) {
      f.largest_first = ProbeAnswer::not_testable;
      f.permutation_results.clear();
      return;
    }
    f.permutation_results.push_back(blk.run());
  }
  const double first = f.permutation_results[0];
  f.largest_first = std::all_of(f.permutation_results.begin(), f.permutation_results.end(),
                                [&](double r) { return same(r, first); })
                        ? ProbeAnswer::yes
                        : ProbeAnswer::no;
}

void probe_alignment_reference(const DotDevice& d, ProbeFindings& f) {
  // Khattak & Mikaitis 2025: 1.5 * 1.5 - 1.5 * 1.5 + g, g = 2^-(Ts-1+K) the least addend kept
  // next to 1 * 1. The products' exponent sum is 0 as 1's is, their leading bit 2^1: aligned
  // on exponent sums, the grid is g and d = g; aligned on leading bits, the grid is 2 g and g
  // is dropped. Only an adder that drops bits, in one multi-operand addition, can show it.
  f.exponent_sum_alignment = ProbeAnswer::not_testable;
  if (f.slots < 2 || f.extra_bits == MatrixUnit::unbounded || f.normalised_at_end != ProbeAnswer::yes ||
      round_to(1.5, d.input, Rounding::nearest_even) != 1.5)
    return;
  // scaled by S = 2^j where g would be below the accumulation format's normal range
  double S = 1;
  const double g = p2(-(f.sum_precision - 1 + f.extra_bits));
  while (g * S < d.accumulation.fmin() && 1.5 * S * 2 <= d.input.fmax()) S *= 2;
  f.alignment_addend = g * S;
  f.alignment_scale = S;
  std::vector<double> a(d.length, 0.0), b(d.length, 0.0);
  a[0] = 1.5 * S;
  b[0] = b[1] = 1.5;
  a[1] = -1.5 * S;
  f.alignment_result = d.run(a.data(), b.data(), f.alignment_addend);
  f.exponent_sum_alignment = same(f.alignment_result, f.alignment_addend) ? ProbeAnswer::yes : ProbeAnswer::no;
}

void probe_rounding(const DotDevice& d, ProbeFindings& f) {
  const int T = f.sum_precision;  // the last bit of the sums, where they are rounded
  double lo, hi;
  // the paper's test (2 + 0.75 ulp) needs two bits below the last of 2 kept in alignment;
  // else 1 + (1 + 3 2^(1-T)) = 2 + 1.5 ulp, whose bits no adder drops (the carry is kept)
  if (f.extra_bits == MatrixUnit::unbounded || f.extra_bits >= 2) {
    f.rounding_test = "paper";
    const double small = p2(1 - T) + p2(-T);
    f.rounding_positive = run_two(d, small, 2);
    f.rounding_negative = run_two(d, -small, -2);
    lo = 2, hi = 2 + p2(2 - T);
  } else {
    f.rounding_test = "carry";
    const double c = 1 + 3 * p2(1 - T);
    f.rounding_positive = run_two(d, c, 1);
    f.rounding_negative = run_two(d, -c, -1);
    lo = 2 + p2(2 - T), hi = 2 + p2(3 - T);
  }
  const double pos = f.rounding_positive, neg = f.rounding_negative;
  f.rounding_known = true;
  if (pos == hi && neg == -hi)
    f.rounding = Rounding::nearest_even;
  else if (pos == lo && neg == -lo)
    f.rounding = Rounding::toward_zero;
  else if (pos == hi && neg == -lo)
    f.rounding = Rounding::upward;
  else if (pos == lo && neg == -hi)
    f.rounding = Rounding::downward;
  else
    f.rounding_known = false;
}

/// 1, -1 and 2^-(T+2) in every order over slots first..last (representative ones):
/// the least and largest result, or false if no order could be placed.
bool order_spread(const DotDevice& d, int first, int last, double& lo, double& hi) {
  const int T = d.accumulation.t;
  std::set<int> candidates = {first, first + 1, first + 2, first + 3, first + 4, last - 1, last};
  std::vector<int> s;
  for (int x : candidates)
    if (x >= first && x <= last) s.push_back(x);
  const double terms[3] = {1, -1, p2(-(T + 2))};
  Block blk(d);
  bool any = false;
  for (int i : s)
    for (int j : s)
      for (int k : s) {
        if (i == j || j == k || i == k) continue;
        blk.clear();
        if (!blk.put(i, terms[0]) || !blk.put(j, terms[1]) || !blk.put(k, terms[2])) continue;
        const double r = blk.run();
        if (!any) lo = hi = r;
        any = true;
        lo = std::min(lo, r);
        hi = std::max(hi, r);
      }
  return any;
}

void probe_normalisation(const DotDevice& d, ProbeFindings& f) {
  // 1 + (-1) + 2^-(T+2) in every order over representative slots: one rounding at the end
  // gives one value whatever the order (2^-(T+2), or 0 if alignment drops it); a rounding
  // after each addition gives 2^-(T+2) when 1 - 1 comes first and loses it (0, or 2^(1-T)
  // rounding up) when it is added to 1 before -1
  f.normalised_at_end = ProbeAnswer::not_testable;
  if (f.slots < 2 || !order_spread(d, 0, f.slots, f.normalisation_min, f.normalisation_max)) return;
  f.normalised_at_end =
      same(f.normalisation_min, f.normalisation_max) ? ProbeAnswer::yes : ProbeAnswer::no;
}

/// Units that round each addition: the number h of partial sums (chains, taking the products
/// round-robin).
void probe_chains(const DotDevice& d, ProbeFindings& f) {
  // 1 at 0, s at 1, -1 at p (c = 0): in one chain 1 + s loses s before -1 comes; with h chains
  // -1 at p = h meets 1 alone in chain 0 (exactly 0) while s waits in chain 1
  const double s = p2(-(f.sum_precision + 1));
  Block blk(d);
  f.chains = 1;
  for (int p = 2; p < d.length && f.chains == 1; ++p) {
    blk.clear();
    blk.put(1, 1);
    blk.put(2, s);
    blk.put(p + 1, -1);
    f.chain_result = blk.run();
    if (same(f.chain_result, s)) f.chains = p;
  }
}

/// The block of a unit with h >= 2 chains and c first.
void probe_chain_block(const DotDevice& d, ProbeFindings& f) {
  const double s = p2(-(f.sum_precision + 1));
  Block blk(d);
  // the block: s at p >= h, 1 at p mod h (s's chain, if p is in the first operation) and -1
  // at (p + 1) mod h (another chain; the chains are added at the operation's end: 0). In the
  // first operation s meets 1 in its chain and is lost; in the next one it is alone.
  const int h = f.chains;
  f.block_test = "chains";
  f.block_small = s;
  f.block_results.clear();
  for (int p = h; p < d.length; ++p) {
    blk.clear();
    blk.put(1 + p % h, 1);
    blk.put(1 + (p + 1) % h, -1);
    blk.put(p + 1, s);
    f.block_results.push_back(blk.run());
  }
  settle_block(f, h, d.length, [&](double r) { return same(r, s); });
}

/// The block of a unit whose c comes after the products: c = 1, -1 at 0 and s at p. While p is
/// in the first operation, -1 and s are added (and s lost) before c comes; in the next one c
/// has met -1 (0) and s is alone.
void probe_late_block(const DotDevice& d, ProbeFindings& f) {
  const double s = p2(-(f.sum_precision + 1));
  Block blk(d);
  f.block_test = "late c";
  f.block_small = s;
  f.block_results.clear();
  for (int p = 1; p < d.length; ++p) {
    blk.clear();
    blk.put(0, 1);
    blk.put(1, -1);
    blk.put(p + 1, s);
    f.block_results.push_back(blk.run());
  }
  settle_block(f, 1, d.length, [&](double r) { return same(r, s); });
}

/// A chain of one operation's b >= 4 products, or a balanced tree of them (CDNA 2): 1 at 0,
/// -1 at 2 and s at 3 (mirrored for last to first). A chain adds 1 + 0 - 1 = 0 and then s;
/// a tree adds (1 + 0) and (-1 + s), which loses s.
void probe_pairwise(const DotDevice& d, ProbeFindings& f) {
  const double s = p2(-(f.sum_precision + 1));
  const bool forward = f.forward_order == ProbeAnswer::yes;
  Block blk(d);
  blk.put(forward ? 1 : 4, 1);
  blk.put(forward ? 3 : 2, -1);
  blk.put(forward ? 4 : 1, s);
  f.pairwise_result = blk.run();
  f.pairwise = same(f.pairwise_result, s) ? ProbeAnswer::no : ProbeAnswer::yes;
}

void probe_addend_and_order(const DotDevice& d, ProbeFindings& f) {
  // One rounding of c with the products: c joins them. Otherwise c = 1, then -1 and s =
  // 2^-(Ts+1) as products 0 and 1 in both orders: a chain that starts from c and takes -1 first
  // gives 1 - 1 = 0, then s exactly; taking s first, 1 + s rounds s away. Neither order giving
  // s: c comes after the products (it meets their sum, -1 + s rounded, which loses s too).
  f.addend_with_products = f.products_at_end = f.forward_order = ProbeAnswer::not_testable;
  if (f.normalised_at_end == ProbeAnswer::not_testable) return;
  if (f.normalised_at_end == ProbeAnswer::yes) {
    f.addend_with_products = f.products_at_end = ProbeAnswer::yes;
    return;
  }
  const double s = p2(-(f.sum_precision + 1));
  Block blk(d);
  for (int swap = 0; swap < 2; ++swap) {
    blk.clear();
    blk.put(0, 1);
    blk.put(swap == 0 ? 1 : 2, -1);
    blk.put(swap == 0 ? 2 : 1, s);
    f.first_results[swap] = blk.run();
  }
  const bool forward = same(f.first_results[0], s), backward = same(f.first_results[1], s);
  if (forward || backward) {  // c first, then the products one by one
    f.addend_with_products = ProbeAnswer::yes;
    f.products_at_end = ProbeAnswer::no;
    f.forward_order = forward ? ProbeAnswer::yes : ProbeAnswer::no;
    probe_chains(d, f);
    if (f.chains >= 2) probe_chain_block(d, f);
    return;
  }
  f.addend_with_products = ProbeAnswer::no;
  probe_late_block(d, f);
  // the products of one operation alone (c = 0) in every order: one rounding, or one by one
  const int b = f.block;
  if (b < 3 || !order_spread(d, 1, b, f.products_min, f.products_max)) return;
  f.products_at_end = same(f.products_min, f.products_max) ? ProbeAnswer::yes : ProbeAnswer::no;
  if (f.products_at_end == ProbeAnswer::yes) return;
  probe_chains(d, f);
  // their order within a chain: 1, -1, s as products 0, h, 2h gives s first to last, loses s
  // last to first
  const int h = f.chains;
  if (2 * h >= b) return;
  blk.clear();
  blk.put(1, 1);
  blk.put(1 + h, -1);
  blk.put(1 + 2 * h, s);
  f.order_result = blk.run();
  f.forward_order = same(f.order_result, s) ? ProbeAnswer::yes : ProbeAnswer::no;
  if (h == 1 && b >= 4) probe_pairwise(d, f);
}

void probe_floor(const DotDevice& d, ProbeFindings& f) {
  // 2^e and the least addend kept on e's grid, g = 2^(e-Ts+1-K), both products: while e is
  // at least the floor F, E = e and g counts; below it, E = F and g is below the grid. Toward
  // zero, -g takes 2^e to the number below it; to nearest, h (half the result's spacing at
  // 2^e) + g turns a tie upward, while without g it rounds to the even 2^e.
  f.floor_testable = ProbeAnswer::not_testable;
  const bool nearest = f.rounding_known && f.rounding == Rounding::nearest_even;
  const bool toward_zero = f.rounding_known && f.rounding == Rounding::toward_zero;
  if (f.normalised_at_end != ProbeAnswer::yes || f.extra_bits == MatrixUnit::unbounded ||
      f.products != ProbeFindings::Products::exact ||  // a rounded g would look dropped
      !(nearest || toward_zero) || f.slots < (nearest ? 3 : 2))
    return;
  const Format& acc = d.accumulation;
  const int Ts = f.sum_precision;
  Block blk(d);
  blk.subnormal_factors = f.input_subnormals == ProbeAnswer::yes;
  // d for 2^e, +-g (and h): NaN where the terms are not input products
  auto run_at = [&](int e) {
    const double x = p2(e), g = p2(e - Ts + 1 - f.extra_bits), h = p2(std::max(e, acc.emin) - Ts);
    blk.clear();
    const bool placed = blk.put(1, x) && blk.put(2, nearest ? g : -g) && (!nearest || blk.put(3, h));
    return placed ? blk.run() : std::nan("");
  };
  // from 2^0 down to the least result (to nearest, whose tie has an even neighbour 2^e)
  f.floor_lowest = acc.emin - Ts + 1 + (nearest ? 1 : 0);
  bool any = false;
  for (int e = 0; e >= f.floor_lowest; --e) {
    const double r = run_at(e);
    if (std::isnan(r)) {
      if (any) {  // the products end here: no floor seen above
        f.floor_lowest = e + 1;
        break;
      }
      continue;
    }
    const bool kept = !same(r, p2(e));
    if (kept) {
      any = true;
      f.floor_kept_result = r;
      continue;
    }
    if (!any) continue;  // dropped above every kept e: not what this test reads
    f.floor_testable = ProbeAnswer::yes;
    f.alignment_floor = e + 1;
    f.floor_dropped_result = r;
    return;
  }
  if (any) {
    f.floor_testable = ProbeAnswer::yes;
    f.alignment_floor = MatrixUnit::no_floor;
  }
}

void probe_input_subnormals(const DotDevice& d, ProbeFindings& f) {
  // a subnormal a times 4 is a normal product
  const Format& in = d.input;
  if (!in.subnormals || in.emax < 2) return;
  std::vector<double> a(d.length, 0.0), b(d.length, 0.0);
  a[0] = p2(in.emin - 1);
  b[0] = 4;
  f.input_subnormal_result = d.run(a.data(), b.data(), 0.0);
  f.input_subnormals = same(f.input_subnormal_result, p2(in.emin + 1)) ? ProbeAnswer::yes
                       : f.input_subnormal_result == 0                 ? ProbeAnswer::no
                                                                       : ProbeAnswer::not_testable;
}

void probe_subnormals(const DotDevice& d, ProbeFindings& f) {
  const Format &in = d.input, &acc = d.accumulation;
  double x, y;
  if (split_pow2(in, acc.emin, x, y)) {
    // c = 2^(emin-1) + b products 2^emin: (b + 1/2) 2^emin, or b 2^emin if c reads as zero;
    // every partial sum with a product in it is normal, whatever the order (a flush of an
    // intermediate c + 0 would look like DAZ)
    Block blk(d);
    for (int slot = 1; slot <= f.slots; ++slot) blk.put(slot, p2(acc.emin));
    blk.put(0, p2(acc.emin - 1));
    f.addend_subnormal_result = blk.run();
    const double b = f.slots;
    f.addend_subnormals =
        same(f.addend_subnormal_result, (b + 0.5) * p2(acc.emin)) ? ProbeAnswer::yes
        : same(f.addend_subnormal_result, b * p2(acc.emin))       ? ProbeAnswer::no
                                                                  : ProbeAnswer::not_testable;
    // c = 1.5 2^emin minus the product 2^emin: the subnormal 2^(emin-1), or 0 if flushed
    f.output_subnormal_result = run_two(d, 1.5 * p2(acc.emin), -p2(acc.emin));
    f.output_subnormals = same(f.output_subnormal_result, p2(acc.emin - 1)) ? ProbeAnswer::yes
                          : f.output_subnormal_result == 0                  ? ProbeAnswer::no
                                                           : ProbeAnswer::not_testable;
  } else {
    // products cannot reach 2^emin: c = 2^(emin-1) alone, kept only if kept in and out
    Block blk(d);
    blk.put(0, p2(acc.emin - 1));
    const double r = blk.run();
    f.addend_subnormal_result = f.output_subnormal_result = r;
    if (same(r, p2(acc.emin - 1))) f.addend_subnormals = f.output_subnormals = ProbeAnswer::yes;
  }
}

void probe_overflow(const DotDevice& d, ProbeFindings& f) {
  const Format& acc = d.accumulation;
  double x, y;
  if (!split_pow2(d.input, acc.emax, x, y)) return;
  f.overflow_positive = run_two(d, acc.fmax(), p2(acc.emax));
  f.overflow_negative = run_two(d, -acc.fmax(), -p2(acc.emax));
  using O = ProbeFindings::OverflowResult;
  // saturation: at fmax, or at the largest number of Ts bits below it, to which a call of
  // several operations rounds a saturated fmax passing through the next one as its c
  const double sum_max = std::ldexp(1.0 - p2(-f.sum_precision), acc.emax + 1);
  auto kind = [&](double r, double sign) {
    if (std::isnan(r)) return O::nan;
    if (r == sign * HUGE_VAL) return O::infinity;
    if (r == sign * acc.fmax() || r == sign * sum_max) return O::saturation;
    return O::other;
  };
  const O p = kind(f.overflow_positive, 1), n = kind(f.overflow_negative, -1);
  // rounding up or down saturates on the side toward zero (IEEE 754): the other side decides
  const bool up = f.rounding_known && f.rounding == Rounding::upward;
  const bool down = f.rounding_known && f.rounding == Rounding::downward;
  f.overflow = up     ? (n == O::saturation ? p : O::other)
               : down ? (p == O::saturation ? n : O::other)
                      : (p == n ? p : O::other);
}

void probe_monotonicity(const DotDevice& d, ProbeFindings& f) {
  // c = 1 - 2^-T (below 1: a finer alignment grid) against c = 1, with b addends 2^-(T+j):
  // an adder that drops bits below the grid of the largest term can give more for the smaller c
  const int T = d.accumulation.t;
  Block blk(d);
  f.monotonic = ProbeAnswer::yes;
  f.monotonic_tests = 0;
  for (int j = 0; j <= 8; ++j) {
    bool ok = true;
    for (int slot = 1; slot <= f.slots; ++slot) ok = ok && blk.put(slot, p2(-(T + j)));
    if (!ok) continue;
    blk.put(0, 1 - p2(-T));
    const double low = blk.run();
    blk.put(0, 1);
    const double high = blk.run();
    ++f.monotonic_tests;
    if (low > high && f.monotonic == ProbeAnswer::yes) {
      f.monotonic = ProbeAnswer::no;
      f.monotonic_c_low = 1 - p2(-T);
      f.monotonic_d_low = low;
      f.monotonic_d_high = high;
    }
  }
  if (f.monotonic_tests == 0) f.monotonic = ProbeAnswer::not_testable;
}

// ---- the hardware ------------------------------------------------------------------------

#if EBLA_PROBE_X86

bool cpu_has_avx512_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/// VDPBF16PS on 16 lanes holding the same pair: lane 0 of c + a1 b1 + a0 b0.
__attribute__((target("avx512bf16,avx512f,avx512vl"))) float vdpbf16ps_lane(const std::uint16_t* a,
                                                                            const std::uint16_t* b,
                                                                            float c) {
  std::uint16_t av[32], bv[32];
  for (int l = 0; l < 32; ++l) av[l] = a[l % 2], bv[l] = b[l % 2];
  const __m512i ai = _mm512_loadu_si512(av), bi = _mm512_loadu_si512(bv);
  __m512bh abh, bbh;
  std::memcpy(&abh, &ai, sizeof abh);
  std::memcpy(&bbh, &bi, sizeof bbh);
  float out[16];
  _mm512_storeu_ps(out, _mm512_dpbf16_ps(_mm512_set1_ps(c), abh, bbh));
  return out[0];
}

#endif  // EBLA_PROBE_X86

/// The bfloat16 encoding of x, which must be a bfloat16 value.
std::uint16_t bf16_bits(double x) {
  const float f = static_cast<float>(x);
  const std::uint32_t bits = bit_cast<std::uint32_t>(f);
  if (static_cast<double>(f) != x || (bits & 0xffffu) != 0)
    throw_invalid("ebla::avx512_bf16_device", hexf(x) + " is not a bfloat16 value");
  return static_cast<std::uint16_t>(bits >> 16);
}

}  // namespace

DotDevice unit_device(const std::string& name, const MatrixUnit& unit, int length) {
  validate(unit, "ebla::unit_device");
  if (length == 0) length = std::min(2 * unit.block, 64);  // two operations: b can be seen
  if (length < 1 || length > 64)
    throw_invalid("ebla::unit_device", "length = " + std::to_string(length) + " is outside 1..64");
  DotDevice d;
  d.name = name;
  d.length = length;
  d.input = unit.input;
  d.accumulation = unit.accumulation;
  d.run = [unit, length](const double* a, const double* b, double c) {
    return unit_dot(unit, a, b, static_cast<std::size_t>(length), c);
  };
  return d;
}

bool avx512_bf16_available() {
#if EBLA_PROBE_X86
  return cpu_has_avx512_bf16();
#else
  return false;
#endif
}

bool amx_bf16_available() {
#if EBLA_PROBE_X86 && defined(__clang__) && __clang_major__ < 16
  // clang before 16 has no "amx-bf16" for __builtin_cpu_supports: test what GCC's does,
  // CPUID.(EAX=7,ECX=0):EDX[22] and the tile state enabled by the OS (XCR0 bits 17 and 18)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 22)) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);
#elif EBLA_PROBE_X86
  return __builtin_cpu_supports("amx-bf16");
#else
  return false;
#endif
}

DotDevice avx512_bf16_device() {
  if (!avx512_bf16_available())
    throw std::runtime_error("ebla::avx512_bf16_device: this CPU has no AVX512_BF16 (VDPBF16PS)");
  DotDevice d;
  d.name = "avx512_bf16_hw";
  d.length = 2;
  d.input = formats::bfloat16();
  d.accumulation = formats::binary32();
#if EBLA_PROBE_X86
  d.run = [](const double* a, const double* b, double c) {
    const std::uint16_t ab[2] = {bf16_bits(a[0]), bf16_bits(a[1])};
    const std::uint16_t bb[2] = {bf16_bits(b[0]), bf16_bits(b[1])};
    const float cf = static_cast<float>(c);
    if (static_cast<double>(cf) != c && !std::isnan(c))
      throw_invalid("ebla::avx512_bf16_device", "c = " + hexf(c) + " is not a binary32 value");
    return static_cast<double>(vdpbf16ps_lane(ab, bb, cf));
  };
#endif
  return d;
}

ProbeFindings probe(const DotDevice& device) {
  if (!device.run) throw_invalid("ebla::probe", "device '" + device.name + "' has no run function");
  if (device.length < 1 || device.length > 64)
    throw_invalid("ebla::probe", "length = " + std::to_string(device.length) + " is outside 1..64");
  if (device.input.t < 3 || device.accumulation.t < 3)
    throw_invalid("ebla::probe", "the probes need formats of at least 3 bits of precision");
  ProbeFindings f;
  f.device = device.name;
  f.length = device.length;
  f.input = device.input;
  f.accumulation = device.accumulation;
  probe_products(device, f);
  probe_sum_precision(device, f);
  probe_alignment(device, f);
  probe_block(device, f);  // needs Ts and K; the probes below place terms in its slots
  probe_permutation(device, f);
  probe_rounding(device, f);
  probe_normalisation(device, f);
  probe_addend_and_order(device, f);
  probe_alignment_reference(device, f);
  probe_input_subnormals(device, f);
  probe_floor(device, f);  // with subnormal factors where the inputs keep them
  probe_subnormals(device, f);
  probe_overflow(device, f);
  probe_monotonicity(device, f);
  return f;
}

const char* to_string(ProbeAnswer a) {
  return a == ProbeAnswer::yes ? "yes" : a == ProbeAnswer::no ? "no" : "not testable";
}

const char* to_string(ProbeFindings::Products p) {
  return p == ProbeFindings::Products::exact ? "exact"
         : p == ProbeFindings::Products::rounded_to_input
             ? "rounded to the input format"
             : "neither exact nor rounded to the input";
}

const char* to_string(ProbeFindings::OverflowResult o) {
  using O = ProbeFindings::OverflowResult;
  return o == O::infinity     ? "infinity"
         : o == O::saturation ? "saturation at +-fmax"
         : o == O::nan        ? "NaN"
         : o == O::other      ? "other"
                              : "not testable";
}

namespace {

const char* rounding_name(Rounding r) {
  return r == Rounding::nearest_even  ? "to nearest"
         : r == Rounding::toward_zero ? "toward zero"
         : r == Rounding::upward      ? "up (toward +inf)"
         : r == Rounding::downward    ? "down (toward -inf)"
                                      : "other";
}

const char* kept(ProbeAnswer a, const char* flushed) {
  return a == ProbeAnswer::yes ? "kept" : a == ProbeAnswer::no ? flushed : "not testable";
}

std::string distinct(const std::vector<double>& v) {
  std::vector<double> u;
  for (double x : v)
    if (std::none_of(u.begin(), u.end(), [&](double y) { return same(x, y); })) u.push_back(x);
  std::string s;
  for (double x : u) s += (s.empty() ? "" : ", ") + hexf(x);
  return s;
}

/// The block row: b and the test that shows it (L, -L and s at positions 0, p and 1, or c).
ProbeRow block_row(const ProbeFindings& f) {
  if (f.block == 0) return {"block", "not testable", "the test's terms are not input numbers"};
  if (f.block_results.empty()) return {"block", "1 (one product per call)", "-"};
  const std::string finding = !f.block_bounded ? text("at least %d (the whole call)", f.length)
                              : f.block == 1   ? std::string("1 (every addition rounds)")
                                               : text("%d products", f.block);
  // the test's terms, the first p it tries, and what one operation gives
  const std::string s = hexf(f.block_small);
  const std::string L = f.block_scale == 1 ? "1" : hexf(f.block_scale);
  const int h = f.chains;
  const int first = f.block_test == "chains" ? h : 1;
  std::string terms, one = "0";
  if (f.block_test == "late c") {
    terms = "c = 1, -1 at 0, " + s + " at p";
  } else if (f.block_test == "chains") {
    terms = text("%s at p, 1 at p mod %d, -1 at (p + 1) mod %d", s.c_str(), h, h);
  } else if (f.block_test == "kept") {
    terms = L + " at 0, -" + L + " at p, " + s + " as c (p = 1) or at 1";
    one = s;
  } else {
    terms = "-" + L + " at 0, " + L + " as c (p = 1) or at 1, " + s + " at p";
  }
  std::string outcome;
  if (f.block > first)
    outcome = text("d = %s for p = %d..%d", one.c_str(), first, f.block_bounded ? f.block - 1 : f.length - 1);
  if (f.block_bounded)
    outcome += (outcome.empty() ? "d = " : ", ") +
               text("%s for p = %d", hexf(f.block_results[f.block - first]).c_str(), f.block);
  return {"block", finding, terms + ": " + outcome};
}

ProbeRow addend_row(const ProbeFindings& f) {
  using A = ProbeAnswer;
  const std::string finding = f.addend_with_products == A::yes  ? "with the products"
                              : f.addend_with_products == A::no ? "after the products"
                                                                : "not testable";
  std::string evidence = "-";
  const std::string s = hexf(p2(-(f.sum_precision + 1)));
  if (f.addend_with_products == A::yes && f.normalised_at_end == A::yes)
    evidence = "one rounding with them (normalisation)";
  else if (f.addend_with_products != A::not_testable)
    evidence = text("c = 1, products -1, %s: %s; %s, -1: %s", s.c_str(), hexf(f.first_results[0]).c_str(),
                    s.c_str(), hexf(f.first_results[1]).c_str()) +
               (f.addend_with_products == A::yes ? " (c first)" : " (c last: s lost both ways)");
  if (f.addend_with_products == A::no && f.products_at_end != A::not_testable)
    evidence += text("; products alone 1, -1, 2^-%d in every order: %s .. %s (%s)", f.accumulation.t + 2,
                     hexf(f.products_min).c_str(), hexf(f.products_max).c_str(),
                     f.products_at_end == A::yes ? "one rounding" : "one by one");
  return {"where c joins", finding, evidence};
}

ProbeRow order_row(const ProbeFindings& f) {
  using A = ProbeAnswer;
  if (f.forward_order == A::not_testable)
    return {"product order", "not testable",
            f.products_at_end == A::yes ? "the products are added in one rounding" : "-"};
  const std::string finding = f.forward_order == A::yes ? "first to last" : "last to first";
  const std::string s = hexf(p2(-(f.sum_precision + 1)));
  const std::string evidence =
      f.addend_with_products == A::yes
          ? text("c = 1, then -1 and %s: %s when -1 is product 0, %s when it is product 1", s.c_str(),
                 hexf(f.first_results[0]).c_str(), hexf(f.first_results[1]).c_str())
          : text("products 1, -1, %s: %s", s.c_str(), hexf(f.order_result).c_str());
  return {"product order", finding, evidence};
}

ProbeRow chains_row(const ProbeFindings& f) {
  if (f.chains == 0) return {"chains", "not testable", "the products are added in one rounding"};
  const std::string s = hexf(p2(-(f.sum_precision + 1)));
  return {"chains", f.chains == 1 ? std::string("1") : text("%d (round-robin)", f.chains),
          f.chains == 1 ? text("1 at 0, %s at 1, -1 at p: s lost for every p", s.c_str())
                        : text("1 at 0, %s at 1, -1 at p: %s first for p = %d", s.c_str(),
                               hexf(f.chain_result).c_str(), f.chains)};
}

ProbeRow floor_row(const ProbeFindings& f) {
  if (f.floor_testable != ProbeAnswer::yes)
    return {"alignment floor", "not testable",
            "needs one rounding, bits dropped in alignment and products near 2^emin"};
  const int K = f.extra_bits, drop = f.sum_precision - 1 + K;
  const bool none = f.alignment_floor == MatrixUnit::no_floor;
  const std::string finding = none ? text("none down to 2^%d", f.floor_lowest)
                                   : text("2^%d", f.alignment_floor);
  const std::string terms = text("2^e and %s2^(e-%d)", f.rounding == Rounding::nearest_even ? "half an ulp + " : "-", drop);
  const std::string evidence =
      none ? terms + text(": kept for every e down to %d", f.floor_lowest)
           : terms + text(": kept at e = %d (%s), dropped at e = %d (%s)", f.alignment_floor,
                          hexf(f.floor_kept_result).c_str(), f.alignment_floor - 1,
                          hexf(f.floor_dropped_result).c_str());
  return {"alignment floor", finding, evidence};
}

}  // namespace

std::vector<ProbeRow> probe_table(const ProbeFindings& f) {
  const int t = f.input.t, T = f.accumulation.t, Ts = f.sum_precision;
  const int emin = f.accumulation.emin, emax = f.accumulation.emax;
  std::vector<ProbeRow> rows;
  rows.push_back({"products", to_string(f.products),
                  text("-(1 - 2^-%d) + (1 - 2^-%d)^2 = %s (exact: 2^-%d, rounded: 0)", t - 1, t,
                       hexf(f.product_result).c_str(), 2 * t)});
  rows.push_back(block_row(f));
  const std::string extra = f.extra_bits == MatrixUnit::unbounded
                                ? text("unbounded (all %d tested kept)", f.extra_bits_tested)
                                : std::to_string(f.extra_bits);
  const std::string extra_why =
      f.extra_bits == MatrixUnit::unbounded
          ? text("1 +- 2^-(%d+k) changes the result for k = 1..%d", Ts - 1, f.extra_bits_tested)
      : f.extra_bits == 0 ? text("1 +- 2^-(%d+k) lost already for k = 1", Ts - 1)
                          : text("1 +- 2^-(%d+k) kept for k <= %d, lost for k = %d", Ts - 1,
                                 f.extra_bits, f.extra_bits + 1);
  rows.push_back({"sum precision", text("%d bits", Ts),
                  Ts < T ? text("1 + 2^-j exact for j < %d, not for j = %d", Ts, Ts)
                         : text("1 + 2^-j exact for j < %d (all of %s)", Ts, format_name(f.accumulation).c_str())});
  rows.push_back({"extra alignment bits", extra, extra_why});
  rows.push_back({"alignment reference",
                  f.exponent_sum_alignment == ProbeAnswer::yes  ? "exponent sums e_a + e_b"
                  : f.exponent_sum_alignment == ProbeAnswer::no ? "leading bits"
                                                                : "not testable",
                  f.exponent_sum_alignment == ProbeAnswer::not_testable
                      ? std::string("nothing dropped in one multi-operand addition")
                      : f.alignment_scale == 1
                          ? text("1.5 * 1.5 - 1.5 * 1.5 + %s = %s", hexf(f.alignment_addend).c_str(),
                                 hexf(f.alignment_result).c_str())
                          : text("(1.5 * 1.5 - 1.5 * 1.5) %s + %s = %s (scaled into the normal range)",
                                 hexf(f.alignment_scale).c_str(), hexf(f.alignment_addend).c_str(),
                                 hexf(f.alignment_result).c_str())});
  rows.push_back({"largest addend first",
                  f.largest_first == ProbeAnswer::yes  ? "yes (every order the same)"
                  : f.largest_first == ProbeAnswer::no ? "no (depends on the order)"
                                                       : "not testable",
                  text("1 and %d addends 2^-%d, the 1 in each of %d positions: %s", f.slots, Ts,
                       f.slots + 1, distinct(f.permutation_results).c_str())});
  const std::string rtest = f.rounding_test == "paper" ? text("+-(2 + (2^-%d + 2^-%d))", Ts - 1, Ts)
                                                       : text("+-(1 + (1 + 3 2^-%d))", Ts - 1);
  rows.push_back({"rounding of the sum", f.rounding_known ? rounding_name(f.rounding) : "unknown",
                  rtest + " = " + hexf(f.rounding_positive) + ", " + hexf(f.rounding_negative) +
                      (f.rounding_test == "carry" ? " (the carry test: < 2 extra bits)" : "")});
  rows.push_back(
      {"normalisation",
       f.normalised_at_end == ProbeAnswer::yes  ? "at the end (one rounding)"
       : f.normalised_at_end == ProbeAnswer::no ? "after each addition"
                                                : "not testable (b = 1: one addition)",
       f.normalised_at_end == ProbeAnswer::not_testable
           ? std::string("-")
           : text("1 - 1 + 2^-%d in every order: %s .. %s", T + 2,
                  hexf(f.normalisation_min).c_str(), hexf(f.normalisation_max).c_str())});
  rows.push_back(addend_row(f));
  rows.push_back(order_row(f));
  rows.push_back(chains_row(f));
  rows.push_back({"pairwise tree",
                  f.pairwise == ProbeAnswer::yes  ? "yes ((p1 + p2) + (p3 + p4) ...)"
                  : f.pairwise == ProbeAnswer::no ? "no (a chain)"
                                                  : "not testable",
                  f.pairwise == ProbeAnswer::not_testable
                      ? std::string("-")
                      : text("1, -1, %s at 0, 2, 3 (mirrored last to first): %s", hexf(p2(-(f.sum_precision + 1))).c_str(),
                             hexf(f.pairwise_result).c_str())});
  rows.push_back(floor_row(f));
  rows.push_back(
      {"subnormal inputs a, b", kept(f.input_subnormals, "read as zero (DAZ)"),
       f.input_subnormals == ProbeAnswer::not_testable
           ? std::string("-")
           : text("2^%d * 4 = %s", f.input.emin - 1, hexf(f.input_subnormal_result).c_str())});
  double x, y;
  if (split_pow2(f.input, emin, x, y)) {
    rows.push_back({"subnormal addend c", kept(f.addend_subnormals, "read as zero (DAZ)"),
                    text("2^%d + %d products 2^%d = %s", emin - 1, f.slots, emin,
                         hexf(f.addend_subnormal_result).c_str())});
    rows.push_back(
        {"subnormal results", kept(f.output_subnormals, "flushed to zero (FTZ)"),
         text("1.5 2^%d - 2^%d = %s", emin, emin, hexf(f.output_subnormal_result).c_str())});
  } else {  // products cannot reach 2^emin: c alone
    const std::string alone = text("c = 2^%d alone = %s (products cannot reach 2^%d)", emin - 1,
                                   hexf(f.addend_subnormal_result).c_str(), emin);
    rows.push_back({"subnormal addend c", kept(f.addend_subnormals, "read as zero (DAZ)"), alone});
    rows.push_back(
        {"subnormal results", kept(f.output_subnormals, "flushed to zero (FTZ)"), alone});
  }
  rows.push_back({"overflow", to_string(f.overflow),
                  f.overflow == ProbeFindings::OverflowResult::not_testable
                      ? text("products cannot reach 2^%d", emax)
                      : text("+-(fmax + 2^%d) = %s, %s", emax, hexf(f.overflow_positive).c_str(),
                             hexf(f.overflow_negative).c_str())});
  rows.push_back({"monotonic",
                  f.monotonic == ProbeAnswer::yes  ? "no violation found"
                  : f.monotonic == ProbeAnswer::no ? "no"
                                                   : "not testable",
                  f.monotonic == ProbeAnswer::no
                      ? text("c = %s gives %s, c = 1 gives %s", hexf(f.monotonic_c_low).c_str(),
                             hexf(f.monotonic_d_low).c_str(), hexf(f.monotonic_d_high).c_str())
                      : text("c = 1 - 2^-%d against c = 1, addends 2^-(%d+j): %d tests", T, T,
                             f.monotonic_tests)});
  return rows;
}

bool rounds_each(const MatrixUnit& u) {
  return u.block == 1 || u.normalisation == Normalisation::each_addition;
}

int expected_block(const MatrixUnit& u, int length) {
  if (length < 2) return 1;
  // a unit with one chain from c rounds every addition: each product its own operation
  const bool chain_from_c = rounds_each(u) && u.chains == 1 && u.addend == AddendJoin::with_products;
  return chain_from_c ? 1 : std::min(u.block, length);
}

std::vector<std::string> probe_differences(const ProbeFindings& f, const MatrixUnit& u) {
  std::vector<std::string> d;
  auto differ = [&](const std::string& property, const std::string& found,
                    const std::string& unit) {
    d.push_back(property + ": found " + found + ", the unit says " + unit);
  };
  using P = ProbeFindings::Products;
  // products rounded to a format with 2 t_in bits or more are exact (in its range)
  const P products = u.exact_products || u.product.t >= 2 * u.input.t ? P::exact
                     : u.product == u.input                          ? P::rounded_to_input
                                                                     : P::other;
  if (f.products != products) differ("products", to_string(f.products), to_string(products));

  const int b = expected_block(u, f.length);
  if (b != 0 && f.block != 0 && f.block != b)
    differ("block", std::to_string(f.block) + " products", std::to_string(b) + " products");

  const int sums = u.sum_precision != 0 ? u.sum_precision : u.accumulation.t;
  if (f.sum_precision != sums)
    differ("sum precision", std::to_string(f.sum_precision) + " bits", std::to_string(sums) + " bits");
  const bool unbounded =
      u.extra_bits == MatrixUnit::unbounded || u.extra_bits >= f.extra_bits_tested;
  if (unbounded ? f.extra_bits != MatrixUnit::unbounded : f.extra_bits != u.extra_bits)
    differ("extra alignment bits",
           f.extra_bits == MatrixUnit::unbounded ? "unbounded" : std::to_string(f.extra_bits),
           unbounded ? "unbounded" : std::to_string(u.extra_bits));
  const ProbeAnswer on_sums = u.alignment == Alignment::exponent_sum ? ProbeAnswer::yes : ProbeAnswer::no;
  if (f.exponent_sum_alignment != ProbeAnswer::not_testable && f.exponent_sum_alignment != on_sums)
    differ("alignment reference", f.exponent_sum_alignment == ProbeAnswer::yes ? "exponent sums" : "leading bits",
           to_string(u.alignment));

  // the probed slots form one addition: one product, or one operation that adds c with them
  const bool one_addition = f.slots == 1 || (!rounds_each(u) && u.addend == AddendJoin::with_products);
  if (f.largest_first != ProbeAnswer::not_testable &&  // (addends 2^-T not products of fp8)
      f.largest_first != (one_addition ? ProbeAnswer::yes : ProbeAnswer::no))
    differ("largest addend first", to_string(f.largest_first), one_addition ? "yes" : "no");

  if (!f.rounding_known || f.rounding != u.rounding)
    differ("rounding", f.rounding_known ? rounding_name(f.rounding) : "unknown", rounding_name(u.rounding));

  const ProbeAnswer at_end = f.slots == 1   ? ProbeAnswer::not_testable
                             : one_addition ? ProbeAnswer::yes
                                            : ProbeAnswer::no;
  if (f.normalised_at_end != at_end)
    differ("normalised at the end", to_string(f.normalised_at_end), to_string(at_end));

  const auto answer = [](bool b) { return b ? ProbeAnswer::yes : ProbeAnswer::no; };
  // c with the products: in their operation, or first in a chain of one-product operations
  const ProbeAnswer with = answer(u.addend == AddendJoin::with_products || u.block == 1);
  if (f.addend_with_products != ProbeAnswer::not_testable && f.addend_with_products != with)
    differ("where c joins", f.addend_with_products == ProbeAnswer::yes ? "with the products" : "after them",
           u.addend == AddendJoin::with_products ? "with_products" : "after_products");
  if (f.addend_with_products == ProbeAnswer::no && f.products_at_end != ProbeAnswer::not_testable &&
      f.products_at_end != answer(!rounds_each(u)))
    differ("products added in one rounding", to_string(f.products_at_end), to_string(answer(!rounds_each(u))));
  if (f.chains != 0 && rounds_each(u) && f.chains != u.chains)
    differ("chains", std::to_string(f.chains), std::to_string(u.chains));
  if (f.pairwise != ProbeAnswer::not_testable && f.pairwise != answer(u.pairwise))
    differ("pairwise tree", to_string(f.pairwise), u.pairwise ? "yes" : "no");
  // (a tree adds the same pairs whichever end it starts from)
  const ProbeAnswer forward = answer(u.block == 1 || u.pairwise || u.order == ProductOrder::forward);
  if (f.forward_order != ProbeAnswer::not_testable && f.forward_order != forward)
    differ("product order", f.forward_order == ProbeAnswer::yes ? "first to last" : "last to first",
           u.order == ProductOrder::forward ? "forward" : "backward");
  if (f.floor_testable == ProbeAnswer::yes) {
    // none found down to floor_lowest: a floor there or below acts on no e tested
    const bool below = u.alignment_floor <= f.floor_lowest;  // no_floor included
    const bool agree = f.alignment_floor == MatrixUnit::no_floor ? below : f.alignment_floor == u.alignment_floor;
    const auto name = [](int e) { return e == MatrixUnit::no_floor ? std::string("none") : std::to_string(e); };
    if (!agree) differ("alignment floor", name(f.alignment_floor), name(u.alignment_floor));
  }

  const ProbeAnswer in = u.input_subnormals ? ProbeAnswer::yes : ProbeAnswer::no;
  const ProbeAnswer out = u.output_subnormals ? ProbeAnswer::yes : ProbeAnswer::no;
  if (f.input_subnormals != ProbeAnswer::not_testable && f.input_subnormals != in)
    differ("subnormal inputs kept", to_string(f.input_subnormals), to_string(in));
  if (f.addend_subnormals != ProbeAnswer::not_testable && f.addend_subnormals != in)
    differ("subnormal addend kept", to_string(f.addend_subnormals), to_string(in));
  if (f.output_subnormals != ProbeAnswer::not_testable && f.output_subnormals != out)
    differ("subnormal results kept", to_string(f.output_subnormals), to_string(out));

  using O = ProbeFindings::OverflowResult;
  const O overflow = u.rounding == Rounding::toward_zero             ? O::saturation
                     : u.accumulation.overflow == Overflow::infinity ? O::infinity
                     : u.accumulation.overflow == Overflow::nan      ? O::nan
                                                                     : O::saturation;
  if (f.overflow != O::not_testable && f.overflow != overflow)
    differ("overflow", to_string(f.overflow), to_string(overflow));

  // every rounding is monotonic, and so is their composition: only an adder that drops bits
  // in alignment can lower d when c rises
  if (u.extra_bits == MatrixUnit::unbounded && f.monotonic == ProbeAnswer::no)
    differ("monotonic", "no", "yes (nothing dropped in alignment)");
  return d;
}

}  // namespace ebla

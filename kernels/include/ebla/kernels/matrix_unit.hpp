// The matrix-multiply unit model: how a hardware unit computes one block fused multiply-add
//
//   d = c + a_1 b_1 + ... + a_b b_b,
//
// bit-exactly, and a GEMM built from it the way seed 000's Algorithm 1 builds one from tensor
// cores: C_ij accumulates its k inner products b at a time, each block through one unit
// operation whose addend is the running C_ij.
//
//   MatrixUnit unit = units::v100_fp16();            // or any hand-made model
//   double d = unit_dot(unit, a, b, k, c);           // c + a^T b, b products per unit operation
//   unit_gemm(unit, A, B, C);                        // C = C + A B over Kokkos views
//
// The model (docs/matrix-units.md has the details and the source of every preset):
//  - inputs a_i, b_i are rounded to the input format (ebla::round_to, nearest-even); c to the
//    accumulation format; subnormal inputs (c included) read as zero when the unit has no
//    subnormal inputs (DAZ);
//  - products are exact (a 2t-bit significand; seed 003: tensor cores keep them exactly) or
//    rounded to nearest-even in a product format;
//  - normalisation at_end (tensor cores, seed 003): c (when it joins with the products) and
//    the b products are one multi-operand addition: every significand is aligned to the largest
//    reference exponent E among the nonzero terms (raised to alignment_floor if below it),
//    truncated toward zero to the bits from 2^E down to 2^(E - t + 1 - extra_bits) (t the
//    sum precision: the accumulation format's, or sum_precision if set; unbounded extra bits:
//    nothing is dropped), the truncated terms are added exactly (the carries above 2^E are
//    kept: seed 003's "> 24 bits in addition"), and the sum is normalised and rounded once,
//    nearest-even or toward zero, to t bits in the accumulation format's range;
//  - the reference exponent of a term: its leading bit (alignment leading_bit: the products
//    normalised), or (alignment exponent_sum, as the GPU tensor cores measured by Khattak &
//    Mikaitis 2025 do) e_a + e_b for a product a b, e_x = max(floor(log2 |x|), emin of the
//    input format), so the product's significand lies in [2^-2(t_in-1), 4) and its bits may
//    reach 2^(E + 1) (a rounded product: the same e_a + e_b), and c's own exponent
//    max(floor(log2 |c|), emin of the accumulation); each_addition units ignore alignment;
//  - normalisation each_addition (FMA chains, the AVX-512 BF16 and AMX-BF16 instructions): the
//    products are added one at a time (forward or backward), round-robin into `chains` partial
//    sums, each addition a two-term version of the above (so with unbounded extra bits each step
//    is a fused multiply-add with one rounding); the chains are then added in order;
//  - pairwise (each_addition, one chain, c after the products, b a power of two; AMD CDNA 2 as
//    Khattak & Mikaitis model it): the b products are added as a balanced binary tree,
//    neighbours first ((p_1 + p_2) + (p_3 + p_4) for b = 4), each addition a two-term addition
//    as above; without subnormal outputs a product below the accumulation format's normal
//    range enters the tree as +-0 (the tree adds flushed values); then d = c + (the tree's sum);
//  - c joins with_products (one more operand; the first of chain 0) or after_products
//    (d = c + (sum of the products), one more two-term addition);
//  - results below the normal range are kept (gradual underflow) or flushed to zero when the
//    unit has no subnormal outputs (FTZ, decided after rounding, as x86 does);
//  - overflow: nearest gives the format's overflow value (inf for IEEE formats), toward zero
//    gives +-fmax; NaN and infinities propagate as in IEEE 754 (inf - inf and 0 * inf are NaN).
//
// Zero signs follow IEEE 754: an exact zero sum is +0 unless every term is -0. A short final
// block (k not a multiple of b) is padded with +0 * +0 products, as zero-padded operands are.
//
// Everything below `detail` is integer arithmetic on significands (a fixed-point accumulator
// of 64-bit limbs wide enough for the exact sum of binary64 products), written as
// KOKKOS_INLINE_FUNCTION so that it runs inside kernels on any backend.
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/exact.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla {

/// When a unit's partial sums are normalised and rounded.
enum class Normalisation : std::uint8_t {
  at_end,         ///< one multi-operand addition, one rounding (tensor cores, seed 003)
  each_addition,  ///< terms added one by one, every sum rounded (FMA chains, vdpbf16ps, AMX)
};

/// Where the addend c enters the sum.
enum class AddendJoin : std::uint8_t {
  with_products,   ///< one more operand of the sum (the first of chain 0 for each_addition)
  after_products,  ///< d = c + (rounded sum of the products): one more rounding
};

/// The order in which an each_addition unit takes the products of a block.
enum class ProductOrder : std::uint8_t {
  forward,   ///< a_1 b_1 first
  backward,  ///< a_b b_b first (vdpbf16ps adds the odd element of a pair first)
};

/// What the multi-operand addition of an at_end unit aligns its terms on.
enum class Alignment : std::uint8_t {
  leading_bit,   ///< every term's leading bit (products normalised first)
  exponent_sum,  ///< e_a + e_b of each product (kept unnormalised in [1, 4)), c's exponent
};

/// A matrix-multiply unit: plain data (copy it into kernels freely). The default is an IEEE
/// binary64 fused multiply-add (b = 1, one rounding per operation). validate() checks it.
struct MatrixUnit {
  /// extra_bits value meaning that alignment drops nothing (the sum is exact before rounding).
  static constexpr int unbounded = -1;
  /// alignment_floor value meaning that the alignment exponent E is not raised.
  static constexpr int no_floor = -2147483647 - 1;

  int block = 1;                 ///< b: products per unit operation; 1..64
  Format input{};                ///< format of a and b; inside the accumulation format
  bool input_subnormals = true;  ///< false: subnormal a, b and c read as zero (DAZ)
  bool exact_products = true;    ///< false: products rounded to nearest-even in `product`
  Format product{};              ///< product format when !exact_products (subnormals kept)
  Format accumulation{};         ///< format of c, of the partial sums and of d; needs
                                 ///< subnormals = true (output_subnormals decides)
  Rounding rounding = Rounding::nearest_even;  ///< of the sums: nearest_even or toward_zero
  int extra_bits = unbounded;  ///< alignment bits kept below the sum precision
                               ///< (0 V100, 1 A100, 2 H100), >= 0, or `unbounded`
  int sum_precision = 0;  ///< t of the sums and of d (14: NVIDIA fp8); 0: the accumulation's
  Normalisation normalisation = Normalisation::at_end;
  Alignment alignment = Alignment::leading_bit;  ///< at_end: the terms' reference exponents
  int alignment_floor = no_floor;  ///< at_end: E is at least this (-132 A100, -133 H100)
  AddendJoin addend = AddendJoin::with_products;
  ProductOrder order = ProductOrder::forward;  ///< each_addition only
  int chains = 1;                 ///< each_addition: partial sums, round-robin; 1..block
  bool output_subnormals = true;  ///< false: results below fmin become +-0 (FTZ)
  /// each_addition only: the products of a block are added as a balanced binary tree,
  /// neighbours first, each addition rounded; then d = c + (the tree's sum). Needs chains = 1,
  /// addend = after_products and a block that is a power of two; `order` has no effect (the
  /// mirrored tree adds the same pairs). With output_subnormals = false, a product below the
  /// accumulation format's fmin enters the tree as +-0.
  bool pairwise = false;
};

/// Checks a unit; throws InvalidArgument naming `function` and the bad field: a block outside
/// 1..64, an invalid format, an accumulation format without subnormals, an input format with
/// more precision or range than the accumulation format, a rounding other than nearest_even or
/// toward_zero, extra_bits below 0 (and not `unbounded`), a sum_precision other than 0 or
/// 2..t (t the accumulation precision), chains outside 1..block,
/// or several chains with at_end normalisation; pairwise without each_addition normalisation,
/// with chains > 1, with c joining the products or with a block that is not a power of two.
/// (alignment and alignment_floor apply to at_end units; each_addition ignores them.)
void validate(const MatrixUnit& unit, const char* function = "ebla::validate");

/// c + sum_{i<k} a_i b_i through the unit, b products per unit operation, in index order
/// (seed 000, Algorithm 1, for one row of A and one column of B). Validates the unit; throws
/// InvalidArgument for a null a or b with k > 0.
double unit_dot(const MatrixUnit& unit, const double* a, const double* b, std::size_t k,
                double c = 0.0);
/// The same on vectors; throws InvalidArgument if their lengths differ.
double unit_dot(const MatrixUnit& unit, const std::vector<double>& a, const std::vector<double>& b,
                double c = 0.0);

/// Many dot products through the unit at once: D[r] = unit_dot(unit, A + r k, B + r k, k, C[r])
/// for every row r < rows, where A and B hold `rows` rows of k elements one after the other
/// (row-major) and C and D `rows` elements (D may be C). The rows are shared among the threads
/// of Kokkos's default host execution space (the calling thread alone where Kokkos is not
/// initialised); each is computed on its own, so D is the same bit for bit on any number of threads. The unit is validated once
/// and prepared once, not per row. Throws InvalidArgument for a null array with rows > 0 (A
/// and B may be null when k = 0).
void unit_dot_rows(const MatrixUnit& unit, const double* A, const double* B, const double* C,
                   double* D, std::size_t rows, std::size_t k);

/// C = C + A B with every C_ij computed as unit_dot(unit, row i of A, column j of B, k, C_ij),
/// as a Kokkos parallel_for over (i, j) in C's execution space (on the device for Views in its
/// memory; unit_dot itself takes host pointers). A is m x k, B is k x n, C is m x n (rank-2 views of
/// double). Throws InvalidArgument naming the extents if they do not match.
template <class AView, class BView, class CView>
void unit_gemm(const MatrixUnit& unit, const AView& A, const BView& B, const CView& C);

/// Known units as named data (docs/matrix-units.md gives the source of each).
namespace units {
MatrixUnit fma_binary64();     ///< IEEE binary64 FMA chain: b = 1, one rounding per FMA
MatrixUnit fma_binary32();     ///< IEEE binary32 FMA chain
// NVIDIA tensor cores (Khattak & Mikaitis 2025, validated on their published GPU outputs):
// binary32 accumulation toward zero (B200 fp8: to nearest), products aligned on exponent sums
MatrixUnit v100_fp16();      ///< V100: b = 4, 0 extra bits
MatrixUnit a100_fp16();      ///< A100 (and A2): b = 8, 1 extra bit, E >= -132
MatrixUnit a100_bf16();      ///< A100, bf16: b = 8, 1 extra bit
MatrixUnit a100_tf32();      ///< A100, tf32: b = 4, 1 extra bit
MatrixUnit h100_fp16();      ///< H100 (and H200): b = 16, 2 extra bits, E >= -133
MatrixUnit h100_bf16();      ///< H100, bf16: b = 16, 2 extra bits
MatrixUnit h100_tf32();      ///< H100, tf32: b = 8, 2 extra bits
MatrixUnit h100_fp8_e4m3();  ///< H100, fp8-E4M3: b = 32, sums of 14 bits, 0 extra bits
MatrixUnit h100_fp8_e5m2();  ///< H100, fp8-E5M2: b = 32, sums of 14 bits, 0 extra bits
MatrixUnit ada_fp16();       ///< Ada (and L40S): as A100
MatrixUnit ada_bf16();       ///< Ada, bf16: as A100
MatrixUnit ada_tf32();       ///< Ada, tf32: as A100
MatrixUnit ada_fp8_e4m3();   ///< Ada, fp8-E4M3: b = 16, sums of 14 bits, E >= -132
MatrixUnit ada_fp8_e5m2();   ///< Ada, fp8-E5M2: b = 16, sums of 14 bits
MatrixUnit b200_fp16();      ///< B200: as H100
MatrixUnit b200_bf16();      ///< B200, bf16: as H100
MatrixUnit b200_tf32();      ///< B200, tf32: as H100
MatrixUnit b200_fp8_e4m3();  ///< B200, fp8-E4M3: b = 32, 7 extra bits, to nearest, E >= -133
MatrixUnit b200_fp8_e5m2();  ///< B200, fp8-E5M2: as b200_fp8_e4m3
// binary16 results (fp16 inputs): the binary32 adder's 24 + K aligned bits, rounded to nearest
// binary16 (K + 13 extra bits), c in binary16
MatrixUnit v100_fp16_out16();  ///< V100: b = 4, E >= -19
MatrixUnit a100_fp16_out16();  ///< A100 (and A2): b = 8, E >= -20
MatrixUnit ada_fp16_out16();   ///< Ada (and L40S): as A100
MatrixUnit h100_fp16_out16();  ///< H100 (and H200): b = 16, E >= -21
MatrixUnit b200_fp16_out16();  ///< B200: as H100
// AMD CDNA 1 (MI100), from Khattak & Mikaitis's model (no hardware outputs published)
MatrixUnit mi100_fp16();  ///< b = 4, exact sum, one rounding to nearest binary32
MatrixUnit mi100_bf16();  ///< b = 2, as mi100_fp16
// AMD CDNA 2 (MI210, MI250), from Khattak & Mikaitis's model (no hardware outputs published)
MatrixUnit mi210_fp16();  ///< b = 4, DAZ, products in binary32, pairwise tree RN, FTZ, then c
MatrixUnit mi210_bf16();  ///< b = 4 (the model's, for the _1k instructions), as mi210_fp16
MatrixUnit avx512_bf16_dot();  ///< x86 VDPBF16PS: bf16 pairs, two FP32 FMAs, DAZ/FTZ, RNE
MatrixUnit amx_bf16();         ///< x86 TDPBF16PS as documented (not verified on hardware)
/// IEEE FMA chain in any format (b = 1, exact products, one rounding per step); ebla::gemm
/// replaces its input format by the config's.
MatrixUnit fma_in(const Format& format);
}  // namespace units

/// A catalogue entry: a name, the unit and where its parameters come from.
struct NamedMatrixUnit {
  std::string name;
  MatrixUnit unit;
  std::string source;
};

/// Every preset of `units`, in the order declared there, with the GPUs that share a preset's
/// parameters (a2_*, l40s_*, h200_*, mi250_*) listed under their own names too.
const std::vector<NamedMatrixUnit>& matrix_unit_catalogue();
/// A preset by its catalogue name ("v100_fp16", ...); throws InvalidArgument naming the string.
MatrixUnit matrix_unit_by_name(const std::string& name);
/// A one-line description of every parameter of a unit.
std::string to_string(const MatrixUnit& unit);
const char* to_string(Normalisation n);
const char* to_string(AddendJoin a);
const char* to_string(ProductOrder o);
const char* to_string(Alignment a);

namespace detail {

/// Largest block the emulation holds on the stack.
constexpr int max_unit_block = 64;
/// Limbs of the fixed-point accumulator: the exact sum of 65 binary64 products spans at most
/// 2047 - (-2148) + 1 = 4196 bits, plus 7 carry bits and a sign bit: 66 limbs.
constexpr int wide_limbs = 68;

/// The 128-bit product of two 64-bit words from 32-bit halves: what devices run (no __int128
/// on every device compiler).
KOKKOS_INLINE_FUNCTION void mul_64x64_portable(std::uint64_t a, std::uint64_t b, std::uint64_t& hi,
                                               std::uint64_t& lo) {
  constexpr std::uint64_t low32 = 0xffffffffull;
  const std::uint64_t p00 = (a & low32) * (b & low32), p01 = (a & low32) * (b >> 32);
  const std::uint64_t p10 = (a >> 32) * (b & low32), p11 = (a >> 32) * (b >> 32);
  const std::uint64_t mid = (p00 >> 32) + (p01 & low32) + (p10 & low32);  // < 3 * 2^32
  lo = (mid << 32) | (p00 & low32);
  hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/// The 128-bit product of two 64-bit words: the host's 128-bit integers where it has them, else
/// mul_64x64_portable.
KOKKOS_INLINE_FUNCTION void mul_64x64(std::uint64_t a, std::uint64_t b, std::uint64_t& hi,
                                      std::uint64_t& lo) {
#if EBLA_HOST_BUILTINS && defined(__SIZEOF_INT128__)
  __extension__ typedef unsigned __int128 u128;  // (__extension__: quiet under -Wpedantic)
  const u128 p = static_cast<u128>(a) * b;
  lo = static_cast<std::uint64_t>(p);
  hi = static_cast<std::uint64_t>(p >> 64);
#else
  mul_64x64_portable(a, b, hi, lo);
#endif
}

/// Number of significant bits of v (0 for v = 0).
KOKKOS_INLINE_FUNCTION int bit_length(std::uint64_t v) {
  return v == 0 ? 0 : 64 - leading_zeros(v);
}

/// An operand of a sum: the exact finite value (-1)^negative (hi 2^64 + lo) 2^exp, or, when
/// `nonfinite` is not 0, that infinity or NaN. Plain data: `Term t{}` is +0, and arrays of
/// terms cost nothing until written.
struct Term {
  std::uint64_t hi, lo;
  int exp;
  bool negative;
  double nonfinite;

  KOKKOS_INLINE_FUNCTION bool finite() const { return nonfinite == 0.0; }  // false for NaN
  KOKKOS_INLINE_FUNCTION bool zero() const { return (hi | lo) == 0; }
  /// Exponent of the leading bit: |value| lies in [2^top, 2^(top + 1)). Nonzero terms only.
  KOKKOS_INLINE_FUNCTION int top() const {
    return exp + (hi != 0 ? 64 + bit_length(hi) : bit_length(lo)) - 1;
  }
};

KOKKOS_INLINE_FUNCTION bool is_finite(double x) {
  return (bit_cast<std::uint64_t>(x) & binary64::exponent_mask) != binary64::exponent_mask;
}

/// The exact value of a double as a Term.
KOKKOS_INLINE_FUNCTION Term term_of(double x) {
  using namespace binary64;
  Term t{};
  if (!is_finite(x)) {
    t.nonfinite = x;
    return t;
  }
  const std::uint64_t bits = bit_cast<std::uint64_t>(x);
  const int field = static_cast<int>((bits & abs_mask) >> fraction_bits);
  t.lo = (bits & fraction_mask) | (field != 0 ? implicit_bit : 0);  // x = m 2^(e - 52)
  t.exp = (field != 0 ? field : 1) - bias - fraction_bits;
  t.negative = (bits & sign_mask) != 0;
  return t;
}

/// The exact product of two doubles (a NaN or infinity if either is not finite).
KOKKOS_INLINE_FUNCTION Term product_term(double a, double b) {
  if (!is_finite(a) || !is_finite(b)) {
    Term t{};
    t.nonfinite = a * b;  // inf * 0 is NaN, inf * x is +-inf
    return t;
  }
  const Term ta = term_of(a), tb = term_of(b);
  Term p{};
  mul_64x64(ta.lo, tb.lo, p.hi, p.lo);  // significands: at most 53 x 53 = 106 bits
  p.exp = ta.exp + tb.exp;
  p.negative = ta.negative != tb.negative;
  return p;
}

/// What rounding to a format needs: precision, range, direction, underflow and overflow.
struct RoundingTarget {
  int t = 53, emin = -1022, emax = 1023;
  bool nearest = true;              ///< nearest-even, else toward zero
  bool gradual = true;              ///< subnormal results, else flush to zero after rounding
  std::uint64_t fmax_bits = 0;      ///< largest finite value
  std::uint64_t overflow_bits = 0;  ///< result of an overflow when rounding to nearest
  Format format{};                  ///< for infinities (round_to maps them)
};

KOKKOS_INLINE_FUNCTION RoundingTarget rounding_target(const Format& f, Rounding mode,
                                                      bool gradual) {
  RoundingTarget r;
  r.t = f.t;
  r.emin = f.emin;
  r.emax = f.emax;
  r.nearest = mode == Rounding::nearest_even;
  r.gradual = gradual;
  r.fmax_bits = f.fmax_bits();
  r.overflow_bits = rounding_constants(f).overflow_bits;
  r.format = f;
  return r;
}

/// A two's complement fixed-point number: the sum of limb[i] 2^(64 i + lsb), i < n.
struct Wide {
  std::uint64_t limb[wide_limbs];
  int n = 0;
  int lsb = 0;

  KOKKOS_INLINE_FUNCTION void clear(int limbs, int low) {
    n = limbs;
    lsb = low;
    for (int i = 0; i < n; ++i) limb[i] = 0;
  }

  /// Adds +-|t| truncated toward zero to a multiple of 2^lsb (the alignment: bits shifted out
  /// below the kept ones are lost).
  KOKKOS_INLINE_FUNCTION void add(const Term& t) {
    std::uint64_t w[3];
    const int q = align(t, w);
    if (t.negative)
      subtract_words(w, q);
    else
      add_words(w, q);
  }

  /// Adds |t| (whatever its sign) truncated toward zero to a multiple of 2^lsb.
  KOKKOS_INLINE_FUNCTION void add_magnitude(const Term& t) {
    std::uint64_t w[3];
    const int q = align(t, w);
    add_words(w, q);
  }

  /// Subtracts x, which has the same limbs and lsb.
  KOKKOS_INLINE_FUNCTION void subtract(const Wide& x) {
    std::uint64_t borrow = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t d = limb[i] - x.limb[i];
      const std::uint64_t b1 = limb[i] < x.limb[i];
      limb[i] = d - borrow;
      borrow = b1 | (d < borrow);
    }
  }

  /// Turns the two's complement value into its magnitude; returns whether it was negative.
  KOKKOS_INLINE_FUNCTION bool take_sign() {
    if (n == 0) return false;
    const bool negative = (limb[n - 1] >> 63) != 0;
    if (!negative) return false;
    std::uint64_t carry = 1;
    for (int i = 0; i < n; ++i) {
      limb[i] = ~limb[i] + carry;
      carry = carry != 0 && limb[i] == 0;
    }
    return true;
  }

  /// Index of the leading one bit, or -1 if the value is zero.
  KOKKOS_INLINE_FUNCTION int leading_bit() const {
    for (int i = n - 1; i >= 0; --i)
      if (limb[i] != 0) return 64 * i + bit_length(limb[i]) - 1;
    return -1;
  }

  KOKKOS_INLINE_FUNCTION bool bit(int pos) const {
    return pos >= 0 && pos < 64 * n && ((limb[pos / 64] >> (pos % 64)) & 1) != 0;
  }

  /// Whether any bit below index pos is set.
  KOKKOS_INLINE_FUNCTION bool any_below(int pos) const {
    if (pos <= 0) return false;
    const int q = pos / 64 < n ? pos / 64 : n;
    for (int i = 0; i < q; ++i)
      if (limb[i] != 0) return true;
    const int r = pos % 64;
    return q < n && r != 0 && (limb[q] & ((std::uint64_t{1} << r) - 1)) != 0;
  }

  /// Bits pos .. pos + count - 1 as an integer (count <= 63; bits below index 0 are zero).
  KOKKOS_INLINE_FUNCTION std::uint64_t bits(int pos, int count) const {
    if (count <= 0 || pos + count <= 0) return 0;
    const int up = pos < 0 ? -pos : 0;  // zeros below index 0
    pos += up;
    count -= up;
    const int q = pos / 64, r = pos % 64;
    const std::uint64_t lo = q < n ? limb[q] : 0, hi = q + 1 < n ? limb[q + 1] : 0;
    const std::uint64_t v = r != 0 ? (lo >> r) | (hi << (64 - r)) : lo;
    return (v & ((std::uint64_t{1} << count) - 1)) << up;
  }

 private:
  /// |t| truncated toward zero to a multiple of 2^lsb, as the words w[0..2] to be added from
  /// limb q on; returns q.
  KOKKOS_INLINE_FUNCTION int align(const Term& t, std::uint64_t* w) const {
    std::uint64_t hi = t.hi, lo = t.lo;
    int pos = t.exp - lsb;  // bit index of the term's lowest bit
    if (pos < 0) {
      const int s = -pos;  // drop s low bits
      lo = s >= 128 ? 0 : s >= 64 ? hi >> (s - 64) : (lo >> s) | (hi << 1 << (63 - s));
      hi = s >= 64 ? 0 : hi >> s;
      pos = 0;
    }
    const int q = pos / 64, r = pos % 64;
    w[0] = lo << r;
    w[1] = r != 0 ? (hi << r) | (lo >> (64 - r)) : hi;
    w[2] = r != 0 ? hi >> (64 - r) : 0;
    return q;
  }

  KOKKOS_INLINE_FUNCTION void add_words(const std::uint64_t* w, int q) {
    std::uint64_t carry = 0;
    for (int j = 0; q + j < n && (j < 3 || carry != 0); ++j) {
      const std::uint64_t word = j < 3 ? w[j] : 0;
      const std::uint64_t s = limb[q + j] + word;
      const std::uint64_t c1 = s < word;
      limb[q + j] = s + carry;
      carry = c1 | (limb[q + j] < carry);
    }
  }

  KOKKOS_INLINE_FUNCTION void subtract_words(const std::uint64_t* w, int q) {
    std::uint64_t borrow = 0;
    for (int j = 0; q + j < n && (j < 3 || borrow != 0); ++j) {
      const std::uint64_t word = j < 3 ? w[j] : 0;
      const std::uint64_t d = limb[q + j] - word;
      const std::uint64_t b1 = limb[q + j] < word;
      limb[q + j] = d - borrow;
      borrow = b1 | (d < borrow);
    }
  }
};

/// Rounds the nonzero magnitude held in w, with the given sign, as the target says.
KOKKOS_INLINE_FUNCTION double round_wide(const Wide& w, bool negative, const RoundingTarget& rt) {
  const int lead_bit = w.leading_bit();
  const int lead = w.lsb + lead_bit;  // exponent of the leading one
  int q = lead - rt.t + 1;            // exponent of the last kept bit of a t-bit significand
  if (rt.gradual && q < rt.emin - rt.t + 1) q = rt.emin - rt.t + 1;  // the subnormal quantum
  const int s = q - w.lsb;                                           // its bit index
  std::uint64_t kept = w.bits(s, lead_bit - s + 1);
  const bool half = w.bit(s - 1), sticky = w.any_below(s - 1);
  kept += (rt.nearest && half && (sticky || (kept & 1) != 0)) ? 1 : 0;  // ties to even
  if ((kept >> rt.t) != 0) {  // carried out to 2^t: one binade up
    kept >>= 1;
    ++q;
  }
  const double zero = negative ? -0.0 : 0.0;
  if (kept == 0) return zero;
  const int e = q + bit_length(kept) - 1;       // exponent of the rounded value
  if (!rt.gradual && e < rt.emin) return zero;  // flush to zero, tininess after rounding
  std::uint64_t r = rt.nearest ? rt.overflow_bits : rt.fmax_bits;  // toward zero: fmax
  if (e <= rt.emax) {
    const std::uint64_t v = bit_cast<std::uint64_t>(static_cast<double>(kept) * pow2(q));
    r = v <= rt.fmax_bits ? v : r;  // fp8-E4M3's fmax is below 2^emax (2 - 2u)
  }
  return bit_cast<double>(r | (negative ? binary64::sign_mask : 0));
}

/// The value of infinities and NaN among terms, as IEEE addition gives, in the target format.
KOKKOS_INLINE_FUNCTION double nonfinite_sum(const Term* terms, int count,
                                            const RoundingTarget& rt) {
  double s = 0.0;
  for (int i = 0; i < count; ++i) s += terms[i].finite() ? 0.0 : terms[i].nonfinite;
  return round_to(s, rt.format, rt.nearest ? Rounding::nearest_even : Rounding::toward_zero);
}

/// One multi-operand addition of the unit: the terms aligned to the largest reference exponent
/// E (refs[i] for term i, or its leading bit if refs is null; at least `floor`), truncated below
/// 2^(E - t + 1 - extra_bits) (nothing dropped if extra_bits is unbounded), added exactly, then
/// normalised and rounded once.
KOKKOS_INLINE_FUNCTION double sum_terms(const Term* terms, int count, int extra_bits,
                                        const RoundingTarget& rt, const int* refs = nullptr,
                                        int floor = MatrixUnit::no_floor) {
  int top = -2147483647, ref = -2147483647, low = 2147483647, nonzero = 0;
  bool all_negative = true, finite = true;
  for (int i = 0; i < count; ++i) {
    finite = finite && terms[i].finite();
    all_negative = all_negative && terms[i].negative;
    if (!terms[i].finite() || terms[i].zero()) continue;
    ++nonzero;
    const int lead = terms[i].top(), r = refs != nullptr ? refs[i] : lead;
    top = lead > top ? lead : top;
    ref = r > ref ? r : ref;
    low = terms[i].exp < low ? terms[i].exp : low;
  }
  if (!finite) return nonfinite_sum(terms, count, rt);
  if (nonzero == 0) return all_negative ? -0.0 : 0.0;  // a sum of zeros: -0 only if all are
  ref = ref < floor ? floor : ref;
  // the grid: t + extra_bits bits from the reference exponent E down
  const int grid = ref - (rt.t - 1) - extra_bits;
  const int lsb = extra_bits == MatrixUnit::unbounded || grid < low ? low : grid;
  // room for the carries of `nonzero` terms above the highest bit and for a sign bit
  const int high = top > ref ? top : ref;
  const int width = high - lsb + 1 + bit_length(static_cast<std::uint64_t>(nonzero)) + 1;
  // the magnitudes of the positive and of the negative terms apart (no branch on the signs,
  // which are random), then their difference
  Wide w, negatives;
  w.clear((width + 63) / 64, lsb);
  negatives.clear(w.n, lsb);
  Wide* const by_sign[2] = {&w, &negatives};
  for (int i = 0; i < count; ++i)
    if (!terms[i].zero()) by_sign[terms[i].negative]->add_magnitude(terms[i]);
  w.subtract(negatives);
  const bool negative = w.take_sign();
  if (w.leading_bit() < 0) return 0.0;  // exact cancellation: +0 (nearest and toward zero)
  return round_wide(w, negative, rt);
}

/// A unit with the constants its operations need, computed once per kernel.
struct PreparedUnit {
  MatrixUnit unit;
  RoundingTarget accumulation;  ///< partial sums and d
  RoundingTarget product;       ///< products, when they are rounded
  RoundingConstants input_rc;   ///< round_to constants of the input format
  RoundingConstants addend_rc;  ///< round_to constants of the accumulation format
  /// The unit is one fused multiply-add per product (b = 1, exact products, nothing dropped in
  /// alignment) into a format of t <= 51 bits: fma_step applies.
  bool fma_chain = false;
  RoundingConstants fma_rc;  ///< the accumulation format; without FTZ's flush: emin lowered
};

/// Whether fma_step can carry out the unit's operations.
KOKKOS_INLINE_FUNCTION bool is_fma_chain(const MatrixUnit& u) {
  const bool lowered = u.output_subnormals || u.accumulation.emin - 64 >= -1022;
  return u.block == 1 && u.exact_products && u.extra_bits == MatrixUnit::unbounded &&
         u.sum_precision == 0 &&
         u.addend == AddendJoin::with_products && u.input.t <= 26 && u.accumulation.t <= 51 &&
         lowered;
}

KOKKOS_INLINE_FUNCTION PreparedUnit prepare(const MatrixUnit& u) {
  PreparedUnit p;
  p.unit = u;
  p.accumulation = rounding_target(u.accumulation, u.rounding, u.output_subnormals);
  if (u.sum_precision != 0) p.accumulation.t = u.sum_precision;  // range stays the format's
  p.product = rounding_target(u.product, Rounding::nearest_even, true);
  p.input_rc = rounding_constants(u.input);
  p.addend_rc = rounding_constants(u.accumulation);
  p.fma_chain = is_fma_chain(u);
  p.fma_rc = RoundingConstants{};
  if (p.fma_chain) {  // (only then is the lowered emin within binary64's range)
    Format f = u.accumulation;
    if (!u.output_subnormals) f.emin -= 64;  // FTZ rounds with an unbounded exponent first
    p.fma_rc = rounding_constants(f);
  }
  return p;
}

/// One operation of an fma_chain unit, fl(c + a b), when it can be done in binary64: the
/// product is exact (checked), TwoSum gives c + a b = hi + lo exactly, hi is rounded to odd
/// and then once to the accumulation format; rounding to odd at 53 bits and then to t <= 51
/// bits is correct for nearest and toward zero (Boldo & Melquiond, IEEE Trans. Computers
/// 57(4), 2008). Returns false, leaving `s` alone, when the product or the sum is not exact
/// in binary64 (tiny or huge operands, infinities, NaN): then unit_operation is used.
KOKKOS_INLINE_FUNCTION bool fma_step(const PreparedUnit& p, double a, double b, double& s) {
  const double prod = a * b;
  const double mag = magnitude(prod);
  const bool exact_product = (mag >= 0x1p-1022 || a == 0 || b == 0) && mag <= 0x1p1020 &&
                             ::fma(a, b, -prod) == 0;
  if (!exact_product || !(magnitude(s) <= 0x1p1020)) return false;
  double hi, lo;
  two_sum(prod, s, hi, lo);  // exact: no overflow below 2^1021
  if (lo != 0 && (bit_cast<std::uint64_t>(hi) & 1) == 0) {  // round to odd
    const bool away = (lo > 0) == (hi > 0);
    hi = bit_cast<double>(bit_cast<std::uint64_t>(hi) + (away ? 1 : ~std::uint64_t{0}));
  }
  double r = p.unit.rounding == Rounding::nearest_even
                 ? round_to<Rounding::nearest_even>(hi, p.fma_rc)
                 : round_to<Rounding::toward_zero>(hi, p.fma_rc);
  if (!p.unit.output_subnormals && bit_cast<std::uint64_t>(magnitude(r)) < p.addend_rc.fmin)
    r = bit_cast<double>(bit_cast<std::uint64_t>(r) & binary64::sign_mask);  // FTZ
  s = r;
  return true;
}

/// x with subnormals read as zero (keeping the sign) if the unit has no subnormal inputs.
KOKKOS_INLINE_FUNCTION double flush_input(const PreparedUnit& p, double x,
                                          std::uint64_t fmin_bits) {
  const std::uint64_t bits = bit_cast<std::uint64_t>(x);
  const bool tiny = (bits & binary64::abs_mask) < fmin_bits;
  return (!p.unit.input_subnormals && tiny) ? bit_cast<double>(bits & binary64::sign_mask) : x;
}

/// An element of A or B as the unit reads it: rounded to the input format, DAZ applied.
KOKKOS_INLINE_FUNCTION double round_input(const PreparedUnit& p, double x) {
  return flush_input(p, round_to<Rounding::nearest_even>(x, p.input_rc), p.input_rc.fmin);
}

/// Whether x is a normal value of the format of `rc` (neither rounding nor DAZ changes it):
/// fmin <= |x| <= fmax and no bit below the format's precision.
KOKKOS_INLINE_FUNCTION bool is_normal_value(double x, const RoundingConstants& rc) {
  const std::uint64_t a = bit_cast<std::uint64_t>(x) & binary64::abs_mask;
  const std::uint64_t below = (std::uint64_t{1} << rc.k_normal) - 1;  // k_normal = 53 - t
  return a >= rc.fmin && a <= rc.fmax && (a & below) == 0;
}

/// round_input, skipping the rounding for the operands that are normal values of the input
/// format already (the usual case: data in the format the unit reads).
KOKKOS_INLINE_FUNCTION double prepare_input(const PreparedUnit& p, double x) {
  return is_normal_value(x, p.input_rc) ? x : round_input(p, x);
}

/// The addend c as the unit reads it: rounded to the accumulation format, DAZ applied.
KOKKOS_INLINE_FUNCTION double prepare_addend(const PreparedUnit& p, double c) {
  return flush_input(p, round_to<Rounding::nearest_even>(c, p.addend_rc), p.addend_rc.fmin);
}

/// The product a b as the unit forms it: exact, or rounded to the product format.
KOKKOS_INLINE_FUNCTION Term unit_product(const PreparedUnit& p, double a, double b) {
  const Term exact = product_term(a, b);
  if (p.unit.exact_products || !exact.finite()) return exact;
  return term_of(sum_terms(&exact, 1, MatrixUnit::unbounded, p.product));
}

/// Two-term addition x + y of the unit (one rounding).
KOKKOS_INLINE_FUNCTION double add_two(const PreparedUnit& p, const Term& x, const Term& y) {
  const Term terms[2] = {x, y};
  return sum_terms(terms, 2, p.unit.extra_bits, p.accumulation);
}

/// The exponent of a nonzero x as a format with minimum exponent emin holds it: floor(log2 |x|),
/// or emin for a subnormal.
KOKKOS_INLINE_FUNCTION int format_exponent(double x, int emin) {
  const int e = exponent_of(x);
  return e < emin ? emin : e;
}

/// at_end: c (if it joins) and the products a[i] b[i] in one multi-operand addition, aligned
/// on the unit's reference exponents.
KOKKOS_INLINE_FUNCTION double operation_at_end(const PreparedUnit& p, const double* a,
                                               const double* b, double c) {
  const MatrixUnit& u = p.unit;
  const bool sums = u.alignment == Alignment::exponent_sum;
  Term terms[max_unit_block + 1];
  int refs[max_unit_block + 1];
  int n = 0;
  if (u.addend == AddendJoin::with_products) {
    if (sums) refs[n] = c != 0 ? format_exponent(c, u.accumulation.emin) : 0;
    terms[n++] = term_of(c);
  }
  for (int i = 0; i < u.block; ++i) {  // e_a + e_b (zero products are skipped by sum_terms)
    const bool zero = a[i] == 0 || b[i] == 0;
    if (sums)
      refs[n] = zero ? 0 : format_exponent(a[i], u.input.emin) + format_exponent(b[i], u.input.emin);
    terms[n++] = unit_product(p, a[i], b[i]);
  }
  const double s =
      sum_terms(terms, n, u.extra_bits, p.accumulation, sums ? refs : nullptr, u.alignment_floor);
  return u.addend == AddendJoin::after_products ? add_two(p, term_of(c), term_of(s)) : s;
}

/// each_addition: products one by one into round-robin chains, then the chains in order.
KOKKOS_INLINE_FUNCTION double operation_each_addition(const PreparedUnit& p, const Term* products,
                                                      double c) {
  const MatrixUnit& u = p.unit;
  double chain[max_unit_block];
  for (int j = 0; j < u.chains; ++j) chain[j] = 0.0;
  if (u.addend == AddendJoin::with_products) chain[0] = c;
  for (int step = 0; step < u.block; ++step) {
    const int i = u.order == ProductOrder::forward ? step : u.block - 1 - step;
    const int j = step % u.chains;
    chain[j] = add_two(p, term_of(chain[j]), products[i]);  // chain_j = fl(chain_j + a_i b_i)
  }
  double s = chain[0];
  for (int j = 1; j < u.chains; ++j) s = add_two(p, term_of(s), term_of(chain[j]));
  return u.addend == AddendJoin::after_products ? add_two(p, term_of(c), term_of(s)) : s;
}

/// pairwise: the products (flushed to +-0 below fmin without subnormal outputs) as a balanced
/// binary tree, neighbours first, level by level in place (no recursion: device code); then
/// d = c + the tree's sum. The block is a power of two (validate).
KOKKOS_INLINE_FUNCTION double operation_pairwise(const PreparedUnit& p, Term* products, double c) {
  const MatrixUnit& u = p.unit;
  if (!u.output_subnormals)
    for (int i = 0; i < u.block; ++i) {
      Term& x = products[i];
      if (x.finite() && !x.zero() && x.top() < u.accumulation.emin) x.hi = x.lo = 0;  // sign kept
    }
  if (u.block == 1) return add_two(p, term_of(c), products[0]);
  double level[max_unit_block / 2];
  int width = u.block / 2;
  for (int i = 0; i < width; ++i) level[i] = add_two(p, products[2 * i], products[2 * i + 1]);
  for (; width > 1; width /= 2)
    for (int i = 0; i < width / 2; ++i)
      level[i] = add_two(p, term_of(level[2 * i]), term_of(level[2 * i + 1]));
  return add_two(p, term_of(c), term_of(level[0]));
}

/// One unit operation d = c + sum_{i<b} a_i b_i on operands already prepared (prepare_input,
/// prepare_addend): exactly `block` products.
KOKKOS_INLINE_FUNCTION double unit_operation(const PreparedUnit& p, const double* a,
                                             const double* b, double c) {
  if (p.unit.normalisation == Normalisation::at_end) return operation_at_end(p, a, b, c);
  Term products[max_unit_block];
  for (int i = 0; i < p.unit.block; ++i) products[i] = unit_product(p, a[i], b[i]);
  return p.unit.pairwise ? operation_pairwise(p, products, c)
                         : operation_each_addition(p, products, c);
}

/// Algorithm 1 of seed 000 for one entry: s = c; s = unit(s + A_ik B_kj) for each block of b
/// consecutive k. a(l) and b(l) give the l-th elements of the row and the column.
template <class RowA, class ColB>
KOKKOS_INLINE_FUNCTION double unit_dot_prepared(const PreparedUnit& p, const RowA& a, const ColB& b,
                                                std::size_t k, double c) {
  const std::size_t block = static_cast<std::size_t>(p.unit.block);
  double s = prepare_addend(p, c);  // C_ij in the accumulation format
  double ab[max_unit_block], bb[max_unit_block];
  for (std::size_t k0 = 0; k0 < k; k0 += block) {
    const std::size_t inside = k - k0 < block ? k - k0 : block;
    for (std::size_t l = 0; l < inside; ++l) {
      ab[l] = prepare_input(p, a(k0 + l));
      bb[l] = prepare_input(p, b(k0 + l));
    }
    for (std::size_t l = inside; l < block; ++l) ab[l] = bb[l] = 0.0;  // +0 * +0 products
    if (!(p.fma_chain && fma_step(p, ab[0], bb[0], s)))
      s = unit_operation(p, ab, bb, s);  // C_ij = fl_unit(C_ij + A_ik B_kj)
  }
  return s;
}

/// Element access to a raw array.
struct ArrayElements {
  const double* x;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t l) const { return x[l]; }
};

template <class AView, class BView, class CView>
struct UnitGemmFunctor {
  struct Row {
    AView A;
    int i;
    KOKKOS_INLINE_FUNCTION double operator()(std::size_t l) const { return A(i, l); }
  };
  struct Column {
    BView B;
    int j;
    KOKKOS_INLINE_FUNCTION double operator()(std::size_t l) const { return B(l, j); }
  };
  AView A;
  BView B;
  CView C;
  PreparedUnit p;

  KOKKOS_INLINE_FUNCTION void operator()(const int i, const int j) const {
    C(i, j) = unit_dot_prepared(p, Row{A, i}, Column{B, j}, A.extent(1), C(i, j));
  }
};

/// Validates the unit and the shapes of unit_gemm (m x k times k x n into m x n).
void check_unit_gemm(const MatrixUnit& unit, std::size_t am, std::size_t ak, std::size_t bk,
                     std::size_t bn, std::size_t cm, std::size_t cn);

}  // namespace detail

template <class AView, class BView, class CView>
void unit_gemm(const MatrixUnit& unit, const AView& A, const BView& B, const CView& C) {
  static_assert(AView::rank == 2 && BView::rank == 2 && CView::rank == 2,
                "ebla::unit_gemm: A, B and C must be rank-2 views");
  static_assert(std::is_same<typename CView::value_type, double>::value,
                "ebla::unit_gemm: C must be a view of (non-const) double");
  detail::check_unit_gemm(unit, A.extent(0), A.extent(1), B.extent(0), B.extent(1), C.extent(0),
                          C.extent(1));
  if (C.extent(0) == 0 || C.extent(1) == 0) return;
  using exec = typename CView::execution_space;
  const Kokkos::MDRangePolicy<exec, Kokkos::Rank<2>> range(
      {0, 0}, {static_cast<std::int64_t>(C.extent(0)), static_cast<std::int64_t>(C.extent(1))});
  Kokkos::parallel_for(
      "ebla::unit_gemm", range,
      detail::UnitGemmFunctor<AView, BView, CView>{A, B, C, detail::prepare(unit)});
  exec().fence();
}

}  // namespace ebla

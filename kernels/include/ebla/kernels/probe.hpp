// Probes of a dot-product device: the tests of seed 003 (Fasi, Higham, Mikaitis, Pranesh) that
// find how a matrix-multiply unit computes
//
//   d = c + a_1 b_1 + ... + a_k b_k
//
// from its results alone, generalised to any input precision t and accumulation precision T.
// A call takes k products (the instruction's inner dimension, known from its interface); the
// unit computes them in operations of b products each (its block, found by the probes).
//
//   DotDevice dev = unit_device("v100_fp16", units::v100_fp16());   // the emulation, or
//   DotDevice hw = avx512_bf16_device();                             // this CPU's VDPBF16PS
//   ProbeFindings f = probe(dev);
//   for (const ProbeRow& row : probe_table(f)) ...                   // one row per property
//   std::vector<std::string> d = probe_differences(f, units::v100_fp16());  // empty: agree
//
// What is probed (docs/probes.md has every test and its expected outcomes):
//  - the block b: how many products of a call are added in one operation before its result
//    is rounded (1 where every addition rounds), by cancelling 1 - 1 next to a small term in
//    one position p after another;
//  - products: exact, or rounded back to the input format;
//  - the precision of the sums Ts: the largest such that 1 + 2^(1-Ts) comes out exact (the
//    accumulation format's T, or fewer: NVIDIA's fp8 units keep 14 bits);
//  - extra alignment bits: the largest k such that an addend 2^-(Ts-1+k) next to 1 still
//    changes the result, and whether every position of the largest addend gives the same
//    result (the permutation test: alignment to the largest addend);
//  - what the terms are aligned on: each product's exponent sum e_a + e_b, or its leading bit
//    (1.5 * 1.5 - 1.5 * 1.5 + the least addend kept next to 1; Khattak & Mikaitis 2025);
//  - the rounding of the sum: to nearest, toward zero, up or down;
//  - normalisation at the end (one rounding) or after each addition; where c joins (with the
//    products or after them), and the order in which a unit that rounds each addition takes
//    the products;
//  - the alignment floor: the exponent below which the alignment reference is not lowered;
//  - subnormal inputs, subnormal addend c and subnormal results kept or flushed;
//  - overflow: infinity, saturation at fmax, or NaN;
//  - monotonicity: whether raising c can lower d.
//
// Where it runs: on the host. A DotDevice's `run` is a host function (unit_device calls
// unit_dot on host values; avx512_bf16_device runs this CPU's instruction).
#pragma once

#include <cstdint>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ebla {

/// A device computing d = c + sum_{i<length} a_i b_i in one call, as its interface shows it
/// (the length is given; how the device splits it into operations is for the probes to find).
/// The probes pass a_i, b_i exactly representable in `input` and c in `accumulation`; `run`
/// returns d as a double.
struct DotDevice {
  std::string name;
  int length = 1;  ///< k, the products one call takes
  Format input{};
  Format accumulation{};
  std::function<double(const double* a, const double* b, double c)> run;
};

/// A matrix unit as a device, through ebla::unit_dot with k = length: by default two of the
/// unit's operations (2 b), so that the probes can find where the first one ends. Validates
/// the unit; throws InvalidArgument for a length outside 1..64.
DotDevice unit_device(const std::string& name, const MatrixUnit& unit, int length = 0);

/// Whether this CPU executes VDPBF16PS (AVX512_BF16 with AVX512F).
bool avx512_bf16_available();
/// This CPU's VDPBF16PS, lane 0: b = 2, bfloat16 inputs, binary32 accumulation. Throws
/// std::runtime_error if the CPU lacks the instruction (check avx512_bf16_available() first),
/// and InvalidArgument if an operand is not a bfloat16 (a, b) or binary32 (c) value.
DotDevice avx512_bf16_device();
/// Whether this CPU has AMX-BF16 (TDPBF16PS). ebla has no AMX device: with AMX present the
/// probe still reports it as not probed.
bool amx_bf16_available();

/// A yes / no answer of a probe, or that the device cannot show it (formats out of reach).
enum class ProbeAnswer : std::uint8_t { yes, no, not_testable };

/// What the probes found.
struct ProbeFindings {
  std::string device;
  int length = 1;  ///< k: the products of one call
  Format input{}, accumulation{};

  /// The block b: products 0..b-1 of a call are added in one operation, product b after its
  /// result is rounded; 1 where every addition rounds (an FMA chain). b = length with
  /// block_bounded false: all k in one operation (b >= k). 0: not testable.
  int block = 0;
  bool block_bounded = false;
  std::string block_test;  ///< "kept" (c = 2^-(Ts+1), 1, -1 at p), "dropped" (c = L, -L, s at
                           ///< p), "chains" (1, -1 in two chains, s at p) or "late c" (c = 1,
                           ///< -1 at 0, s at p: a c that joins after the products)
  double block_scale = 1, block_small = 0;  ///< L and the small term
  std::vector<double> block_results;        ///< d for p = 1..length-1
  /// The products the other probes place, in the first operation: b, or the whole call where
  /// every addition rounds (b = 1) or b was not testable.
  int slots = 1;

  enum class Products : std::uint8_t { exact, rounded_to_input, other };
  Products products = Products::exact;
  double product_result = 0;  ///< -(1 - 2^(1-t)) + (1 - 2^-t)^2 as the device gives it

  /// The precision Ts of the sums and of d: 1 + 2^-j is exact for j < Ts, not for j = Ts.
  int sum_precision = 0;
  /// Alignment bits kept below the sum precision: the last k of 1..extra_bits_tested
  /// for which 2^-(Ts-1+k) next to 1 is kept, or MatrixUnit::unbounded if all were kept.
  int extra_bits = 0;
  int extra_bits_tested = 0;
  /// The permutation test: the same result wherever the largest addend is (yes).
  ProbeAnswer largest_first = ProbeAnswer::yes;
  std::vector<double> permutation_results;  ///< one per position of the largest addend

  bool rounding_known = false;
  Rounding rounding = Rounding::nearest_even;
  std::string rounding_test;  ///< "paper" (2 + 0.75 ulp) or "carry" (1 + 1.5 ulp + 1)
  double rounding_positive = 0, rounding_negative = 0;

  /// yes: one rounding at the end (every order of 1, -1, 2^-(T+2) gives one value); no:
  /// rounding after each addition; not_testable for b = 1.
  ProbeAnswer normalised_at_end = ProbeAnswer::not_testable;
  double normalisation_min = 0, normalisation_max = 0;

  /// Where c joins: yes with the products (in their rounding, or first in a chain), no after
  /// them. not_testable where the normalisation is.
  ProbeAnswer addend_with_products = ProbeAnswer::not_testable;
  /// Where normalisation_at_end is no: the products alone (c = 0) added in one rounding (yes:
  /// an at_end unit whose c comes after them), or one by one (no).
  ProbeAnswer products_at_end = ProbeAnswer::not_testable;
  double products_min = 0, products_max = 0;
  /// Units that round after each addition: the products taken first to last (yes) or last to
  /// first (no). Results of c = 1, -1 and s = 2^-(Ts+1) (first_results: -1 then s, and s then
  /// -1) and, with c last, of 1, -1, s as products (order_result).
  ProbeAnswer forward_order = ProbeAnswer::not_testable;
  double first_results[2] = {0, 0};
  double order_result = 0;
  /// Units that round each addition: the partial sums h that take the products round-robin
  /// (AMX: 2), from 1 at 0, s at 1, -1 at p (s kept first for p = h); 0: not testable. With
  /// h >= 2 the block is found by its own test (block_test "chains").
  int chains = 0;
  double chain_result = 0;
  /// One chain with c last and b >= 4: its products added as a balanced tree, neighbours first
  /// (yes: AMD CDNA 2), or one by one (no).
  ProbeAnswer pairwise = ProbeAnswer::not_testable;
  double pairwise_result = 0;

  /// The alignment floor F (E raised to at least F): the least e for which 2^e next to
  /// 2^(e-Ts+1-K), the least addend kept on e's own grid, keeps it; MatrixUnit::no_floor if kept
  /// down to floor_lowest (the smallest e with both terms input products and 2^e a result).
  /// not_testable for units whose sum is not one rounding, that drop nothing in alignment, or
  /// whose inputs cannot form those products (binary16, fp8: their products stay far above).
  ProbeAnswer floor_testable = ProbeAnswer::not_testable;
  int alignment_floor = MatrixUnit::no_floor;
  int floor_lowest = 0;
  double floor_kept_result = 0, floor_dropped_result = 0;  ///< d at e = F and at e = F - 1

  /// yes: terms aligned on exponent sums (1.5 * 1.5 - 1.5 * 1.5 + g gave g, g = 2^-(Ts-1+K));
  /// no: on leading bits (g dropped); not_testable where nothing is dropped in alignment,
  /// sums are rounded after each addition, or 1.5 is not an input number.
  ProbeAnswer exponent_sum_alignment = ProbeAnswer::not_testable;
  double alignment_addend = 0, alignment_result = 0;
  double alignment_scale = 1;  ///< 1.5 S: g S stays a normal number (binary16 results)

  ProbeAnswer input_subnormals = ProbeAnswer::not_testable;   ///< a, b kept (yes) or DAZ
  ProbeAnswer addend_subnormals = ProbeAnswer::not_testable;  ///< c kept (yes) or DAZ
  ProbeAnswer output_subnormals = ProbeAnswer::not_testable;  ///< kept (yes) or FTZ
  double input_subnormal_result = 0, addend_subnormal_result = 0, output_subnormal_result = 0;

  enum class OverflowResult : std::uint8_t { infinity, saturation, nan, other, not_testable };
  OverflowResult overflow = OverflowResult::not_testable;
  double overflow_positive = 0, overflow_negative = 0;

  /// no: some c' < c gave a larger d (example below); yes: no violation in the tests run.
  ProbeAnswer monotonic = ProbeAnswer::yes;
  int monotonic_tests = 0;
  double monotonic_c_low = 0, monotonic_d_low = 0, monotonic_d_high = 0;
};

/// Runs every probe on the device. Throws InvalidArgument for a device without `run`, a
/// length outside 1..64, or formats of fewer than 3 bits of precision.
ProbeFindings probe(const DotDevice& device);

/// One row of the findings table: a property, what was found, and the test that shows it.
struct ProbeRow {
  std::string property, finding, evidence;
};
std::vector<ProbeRow> probe_table(const ProbeFindings& f);

/// Whether every addition of the unit rounds (b = 1, or normalisation after each addition).
bool rounds_each(const MatrixUnit& u);
/// The block the probes find on a unit called with k = length products: 1 for a chain of
/// roundings that starts from c (each product its own operation), else min(b, k).
int expected_block(const MatrixUnit& u, int length);

/// The properties on which the findings contradict a unit's parameters (empty: they agree);
/// each entry names the property, the finding and what the unit says.
std::vector<std::string> probe_differences(const ProbeFindings& f, const MatrixUnit& unit);

const char* to_string(ProbeAnswer a);
const char* to_string(ProbeFindings::Products p);
const char* to_string(ProbeFindings::OverflowResult o);

}  // namespace ebla

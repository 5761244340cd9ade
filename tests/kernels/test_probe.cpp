// Tests of the probes of seed 003 (ebla/kernels/probe.hpp).
//
//  1. Every preset of matrix_unit_catalogue(), through the emulation: each finding checked
//     against the preset's parameters, property by property, and probe_differences empty.
//  2. Variants that are no preset (other extra bits, rounding, normalisation, rounded products,
//     DAZ / FTZ), so that every finding is seen to take more than one value.
//  3. Ideal devices written here in __float128: the exact sum rounded once, or a rounding after
//     each addition, in all four directions (the emulation has only nearest and toward zero).
//  4. The block found from outside on every call length, kind of test and rounding.
//  5. probe_differences on a wrong model, and bad devices.
//  6. This CPU's VDPBF16PS against units::avx512_bf16_dot (skipped, saying why, without it).
#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/probe.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace {

using ebla::DotDevice;
using ebla::Format;
using ebla::MatrixUnit;
using ebla::ProbeAnswer;
using ebla::ProbeFindings;
using ebla::Rounding;
namespace units = ebla::units;
namespace formats = ebla::formats;

using quad = __float128;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

/// Checks every finding against a unit's parameters, written out here property by property.
void expect_findings_match(const ProbeFindings& f, const MatrixUnit& u, const std::string& name) {
  SCOPED_TRACE(name + ": " + ebla::to_string(u));
  // (products rounded to a format of 2 t_in bits or more are exact: MI210's binary32)
  EXPECT_EQ(f.products, u.exact_products || u.product.t >= 2 * u.input.t
                            ? ProbeFindings::Products::exact
                            : ProbeFindings::Products::rounded_to_input);
  // the sums' precision: the accumulation format's, or fewer (NVIDIA fp8: 14 bits)
  const int sums = u.sum_precision != 0 ? u.sum_precision : u.accumulation.t;
  EXPECT_EQ(f.sum_precision, sums);
  // unbounded when nothing is dropped, or more bits than the accumulation's range lets the
  // probes test (binary16 results keep 13 + K)
  const bool beyond = u.extra_bits == MatrixUnit::unbounded || u.extra_bits >= f.extra_bits_tested;
  EXPECT_EQ(f.extra_bits, beyond ? MatrixUnit::unbounded : u.extra_bits);
  // the block: the unit's b (at most the call's k); 1 for a chain of roundings from c
  const bool each = u.block == 1 || u.normalisation == ebla::Normalisation::each_addition;
  const bool late = u.addend == ebla::AddendJoin::after_products && u.block > 1;
  {
    // (a chain of roundings from c: each product its own operation)
    const bool from_c = each && u.chains == 1 && u.addend == ebla::AddendJoin::with_products;
    const int b = from_c ? 1 : std::min(u.block, f.length);
    EXPECT_EQ(f.block, f.length < 2 ? 1 : b);
    EXPECT_EQ(f.block_bounded, f.length >= 2 && b < f.length);
    if (u.chains == 1 && !late) {  // (chains, a late c: the other probes keep the first test's slots)
      EXPECT_EQ(f.slots, f.block >= 2 ? f.block : f.length);
    }
  }
  // the probed slots are one addition: one product, or one operation that adds c with them
  const bool one_addition = f.slots == 1 || (!each && u.addend == ebla::AddendJoin::with_products);
  // the addends 2^-Ts must be products of normal inputs (fp8-E4M3's reach 2^-12 only)
  const bool tiny_products = 2 * u.input.emin <= -sums;
  EXPECT_EQ(f.largest_first, !tiny_products ? ProbeAnswer::not_testable
                             : one_addition ? ProbeAnswer::yes
                                            : ProbeAnswer::no);
  EXPECT_TRUE(f.rounding_known);
  EXPECT_EQ(f.rounding, u.rounding);
  // the alignment reference shows where one multi-operand addition drops bits
  const bool drops = f.slots > 1 && one_addition && !beyond;
  EXPECT_EQ(f.exponent_sum_alignment, !drops ? ProbeAnswer::not_testable
                                      : u.alignment == ebla::Alignment::exponent_sum ? ProbeAnswer::yes
                                                                                     : ProbeAnswer::no);
  EXPECT_EQ(f.normalised_at_end, f.slots == 1   ? ProbeAnswer::not_testable
                                 : one_addition ? ProbeAnswer::yes
                                                : ProbeAnswer::no);
  // where c joins (a late c shows with two products or more), and the order of a chain
  if (f.slots >= 2) {
    EXPECT_EQ(f.addend_with_products, late ? ProbeAnswer::no : ProbeAnswer::yes);
  }
  if (f.slots >= 3 || (late && std::min(u.block, f.length) >= 3)) {
    EXPECT_EQ(f.products_at_end, !each ? ProbeAnswer::yes : ProbeAnswer::no);
    EXPECT_EQ(f.forward_order, !each ? ProbeAnswer::not_testable
                               : u.block == 1 || u.pairwise || u.order == ebla::ProductOrder::forward
                                   ? ProbeAnswer::yes
                                   : ProbeAnswer::no);
    EXPECT_EQ(f.chains, !each ? 0 : u.chains);
  }
  if (late && each && u.chains == 1 && std::min(u.block, f.length) >= 4) {
    EXPECT_EQ(f.pairwise, u.pairwise ? ProbeAnswer::yes : ProbeAnswer::no);
  }
  // the alignment floor: where one rounding drops bits and the inputs' products reach 2^-149
  // next to the least kept addend (bfloat16, tf32: 8 exponent bits)
  if (f.floor_testable == ProbeAnswer::yes) {
    EXPECT_EQ(f.alignment_floor, u.alignment_floor > f.floor_lowest ? u.alignment_floor
                                                                    : MatrixUnit::no_floor);
  }
  const bool wide_inputs = 2 * u.input.emin <= u.accumulation.emin - 2 * sums - 8;
  if (one_addition && f.slots >= 2 && !beyond && u.exact_products && wide_inputs &&
      u.rounding == Rounding::toward_zero) {
    EXPECT_EQ(f.floor_testable, ProbeAnswer::yes);
  }
  const ProbeAnswer in = u.input_subnormals ? ProbeAnswer::yes : ProbeAnswer::no;
  const ProbeAnswer out = u.output_subnormals ? ProbeAnswer::yes : ProbeAnswer::no;
  EXPECT_EQ(f.input_subnormals, in);
  // c = 2^(emin-1) needs a product 2^emin of the accumulation format, or c alone kept
  if (f.addend_subnormals != ProbeAnswer::not_testable) {
    EXPECT_EQ(f.addend_subnormals, in);
  }
  if (f.output_subnormals != ProbeAnswer::not_testable) {
    EXPECT_EQ(f.output_subnormals, out);
  }
  if (2 * u.input.emin <= u.accumulation.emin) {  // products reach 2^emin: both testable
    EXPECT_EQ(f.addend_subnormals, in);
    EXPECT_EQ(f.output_subnormals, out);
  }
  // products reach 2^emax: overflow testable
  const bool reach = 2 * u.input.emax >= u.accumulation.emax;
  EXPECT_EQ(f.overflow, !reach ? ProbeFindings::OverflowResult::not_testable
                        : u.rounding == Rounding::toward_zero
                            ? ProbeFindings::OverflowResult::saturation
                            : ProbeFindings::OverflowResult::infinity);
  if (u.extra_bits == MatrixUnit::unbounded) {
    EXPECT_EQ(f.monotonic, ProbeAnswer::yes);
  }
  EXPECT_TRUE(ebla::probe_differences(f, u).empty()) << joined(ebla::probe_differences(f, u));
}

ProbeFindings probe_unit(const MatrixUnit& u, const std::string& name = "unit", int length = 0) {
  return ebla::probe(ebla::unit_device(name, u, length));
}

// ===========================================================================================
// 1. The presets

TEST(ProbePresets, FindingsMatchEveryPresetOfTheCatalogue) {
  const auto& catalogue = ebla::matrix_unit_catalogue();
  ASSERT_GE(catalogue.size(), 10u);
  for (const auto& entry : catalogue)
    expect_findings_match(probe_unit(entry.unit, entry.name), entry.unit, entry.name);
}

TEST(ProbePresets, V100FindsSeed003) {
  // seed 003: exact products, no bit kept below binary32's last, round toward zero,
  // normalisation at the end; and (its test suite) not monotonic
  const ProbeFindings f = probe_unit(units::v100_fp16(), "v100_fp16");
  EXPECT_EQ(f.products, ProbeFindings::Products::exact);
  EXPECT_EQ(f.product_result, std::ldexp(1, -22));
  EXPECT_EQ(f.extra_bits, 0);
  EXPECT_EQ(f.largest_first, ProbeAnswer::yes);
  EXPECT_EQ(f.rounding, Rounding::toward_zero);
  EXPECT_EQ(f.rounding_test, "carry");  // 0 extra bits: the paper's 0.75 ulp is dropped
  EXPECT_EQ(f.normalised_at_end, ProbeAnswer::yes);
  EXPECT_EQ(f.monotonic, ProbeAnswer::no);
  EXPECT_EQ(f.monotonic_d_low, 1 + std::ldexp(1, -23));
  EXPECT_EQ(f.monotonic_d_high, 1.0);
  // binary16 products cannot reach binary32's range ends
  EXPECT_EQ(f.overflow, ProbeFindings::OverflowResult::not_testable);
  EXPECT_EQ(f.output_subnormals, ProbeAnswer::yes);  // c = 2^-127 alone, kept in and out
}

TEST(ProbePresets, H100KeepsTwoBitsAndUsesThePapersRoundingTest) {
  const ProbeFindings f = probe_unit(units::h100_bf16(), "h100_bf16");
  EXPECT_EQ(f.extra_bits, 2);
  EXPECT_EQ(f.rounding, Rounding::toward_zero);
  EXPECT_EQ(f.rounding_test, "paper");  // >= 2 extra bits: 2 + 0.75 ulp is seen
  EXPECT_EQ(f.rounding_positive, 2.0);
  EXPECT_EQ(f.rounding_negative, -2.0);
  EXPECT_EQ(f.overflow, ProbeFindings::OverflowResult::saturation);
}

TEST(ProbePresets, A100KeepsOneBitAndNeedsTheCarryTest) {
  const ProbeFindings f = probe_unit(units::a100_bf16(), "a100_bf16");
  EXPECT_EQ(f.extra_bits, 1);
  EXPECT_EQ(f.rounding, Rounding::toward_zero);
  EXPECT_EQ(f.rounding_test, "carry");  // 1 extra bit drops the paper's 0.75 ulp
}

TEST(ProbePresets, TableHasOneRowPerProperty) {
  const auto rows = ebla::probe_table(probe_unit(units::avx512_bf16_dot()));
  ASSERT_EQ(rows.size(), 18u);
  EXPECT_EQ(rows[0].property, "products");
  EXPECT_EQ(rows[0].finding, "exact");
  EXPECT_EQ(rows[1].property, "block");
  EXPECT_EQ(rows[1].finding, "1 (every addition rounds)");
  EXPECT_EQ(rows[2].property, "sum precision");
  EXPECT_EQ(rows[2].finding, "24 bits");
  EXPECT_EQ(rows[4].property, "alignment reference");
  EXPECT_EQ(rows[4].finding, "not testable");  // rounded after each addition
  EXPECT_EQ(rows[6].finding, "to nearest");
  EXPECT_EQ(rows[7].finding, "after each addition");
  EXPECT_EQ(rows[8].property, "where c joins");
  EXPECT_EQ(rows[8].finding, "with the products");
  EXPECT_EQ(rows[9].property, "product order");
  EXPECT_EQ(rows[9].finding, "last to first");  // VDPBF16PS: the odd element first
  EXPECT_EQ(rows[10].property, "chains");
  EXPECT_EQ(rows[10].finding, "1");
  EXPECT_EQ(rows[11].property, "pairwise tree");
  EXPECT_EQ(rows[11].finding, "not testable");  // c first: a chain
  EXPECT_EQ(rows[12].property, "alignment floor");
  EXPECT_EQ(rows[12].finding, "not testable");
  EXPECT_EQ(rows[13].finding, "read as zero (DAZ)");
  EXPECT_EQ(rows[15].finding, "flushed to zero (FTZ)");
  EXPECT_EQ(rows[16].finding, "infinity");
  const auto v100 = ebla::probe_table(probe_unit(units::v100_fp16()));
  EXPECT_EQ(v100[1].finding, "4 products");
  EXPECT_EQ(v100[1].evidence,
            "-1 at 0, 1 as c (p = 1) or at 1, 0x1p-24 at p: d = 0 for p = 1..3, 0x1p-24 for p = 4");
  EXPECT_EQ(v100[4].finding, "exponent sums e_a + e_b");
  EXPECT_EQ(v100[4].evidence, "1.5 * 1.5 - 1.5 * 1.5 + 0x1p-23 = 0x1p-23");
  const auto h100 = ebla::probe_table(probe_unit(units::h100_bf16()));
  EXPECT_EQ(h100[12].finding, "2^-133");
  EXPECT_EQ(h100[12].evidence,
            "2^e and -2^(e-25): kept at e = -133 (0x1.fffep-134), dropped at e = -134 (0x1p-134)");
  const auto fp8 = ebla::probe_table(probe_unit(units::h100_fp8_e4m3()));
  EXPECT_EQ(fp8[1].finding, "32 products");
  EXPECT_EQ(fp8[2].finding, "14 bits");
  EXPECT_EQ(fp8[2].evidence, "1 + 2^-j exact for j < 14, not for j = 14");
  for (const auto& r : rows) EXPECT_FALSE(r.evidence.empty()) << r.property;
}

// ===========================================================================================
// 2. Variants

TEST(ProbeVariants, FindingsFollowTheParameters) {
  std::vector<std::pair<std::string, MatrixUnit>> variants;
  for (int extra : {1, 2, 5, 12}) {
    MatrixUnit u = units::v100_fp16();
    u.extra_bits = extra;
    variants.push_back({"v100, extra " + std::to_string(extra), u});
  }
  MatrixUnit nearest = units::a100_fp16();
  nearest.rounding = Rounding::nearest_even;
  variants.push_back({"a100 to nearest", nearest});
  MatrixUnit nearest0 = units::v100_fp16();
  nearest0.rounding = Rounding::nearest_even;
  variants.push_back({"v100 to nearest", nearest0});
  MatrixUnit each = units::v100_fp16();
  each.normalisation = ebla::Normalisation::each_addition;
  variants.push_back({"v100 each addition", each});
  MatrixUnit rounded = units::a100_bf16();
  rounded.exact_products = false;
  rounded.product = rounded.input;
  variants.push_back({"a100 bf16, rounded products", rounded});
  MatrixUnit daz = units::a100_bf16();
  daz.input_subnormals = false;
  variants.push_back({"a100 bf16, DAZ", daz});
  MatrixUnit ftz = units::fma_binary32();
  ftz.output_subnormals = false;
  variants.push_back({"fma binary32, FTZ", ftz});
  MatrixUnit rz = units::avx512_bf16_dot();
  rz.rounding = Rounding::toward_zero;
  rz.input_subnormals = true;
  variants.push_back({"vdpbf16ps toward zero, subnormal inputs", rz});
  MatrixUnit forward = units::amx_bf16();
  forward.chains = 1;
  forward.block = 4;
  variants.push_back({"one bf16 chain of 4", forward});
  for (const auto& [name, u] : variants) expect_findings_match(probe_unit(u, name), u, name);
}

// Every preset that drops bits in one multi-operand addition, altered in one parameter the
// hardware data tells apart (Khattak & Mikaitis 2025): the other alignment reference, sums of
// two bits fewer, one extra bit more. The probes find the altered parameter as a black box,
// and compared with the preset they name it.
TEST(ProbeVariants, AlteredPresetsAreFoundAndNamed) {
  int altered = 0;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    const MatrixUnit& p = entry.unit;
    if (p.block < 2 || p.normalisation != ebla::Normalisation::at_end ||
        probe_unit(p).extra_bits == MatrixUnit::unbounded)  // nothing the probes see dropped
      continue;
    const int sums = p.sum_precision != 0 ? p.sum_precision : p.accumulation.t;
    std::vector<std::tuple<std::string, MatrixUnit, std::string>> variants;
    MatrixUnit other = p;
    other.alignment = p.alignment == ebla::Alignment::exponent_sum ? ebla::Alignment::leading_bit
                                                                   : ebla::Alignment::exponent_sum;
    variants.emplace_back("the other alignment", other, "alignment reference");
    MatrixUnit narrower = p;
    narrower.sum_precision = sums - 2;
    variants.emplace_back("sums of 2 bits fewer", narrower, "sum precision");
    MatrixUnit wider = p;
    wider.extra_bits = p.extra_bits + 1;
    variants.emplace_back("1 extra bit more", wider, "extra alignment bits");
    MatrixUnit half = p;
    half.block = p.block / 2;
    variants.emplace_back("half the block", half, "block");
    for (const auto& [what, u, property] : variants) {
      const std::string name = entry.name + ", " + what;
      const ProbeFindings f = probe_unit(u, name);
      expect_findings_match(f, u, name);
      const std::string d = joined(ebla::probe_differences(f, p));
      EXPECT_NE(d.find(property + ": found"), std::string::npos) << name << d;
      ++altered;
    }
  }
  EXPECT_EQ(altered, 4 * 44);  // the NVIDIA presets: 35 with binary32 results, 9 with binary16
}

// The floor of every NVIDIA preset whose products reach it (bfloat16 and tf32 inputs), and
// presets moved to another floor or to none: found, and named against the preset.
TEST(ProbeVariants, AlignmentFloorsAreFoundAndNamed) {
  int found = 0;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    const MatrixUnit& p = entry.unit;
    if (p.alignment_floor == MatrixUnit::no_floor || p.input.emin > -100) continue;
    const ProbeFindings f = probe_unit(p, entry.name);
    ASSERT_EQ(f.floor_testable, ProbeAnswer::yes) << entry.name;
    EXPECT_EQ(f.alignment_floor, p.alignment_floor) << entry.name;
    ++found;
    for (int floor : {-120, -140, MatrixUnit::no_floor}) {
      MatrixUnit moved = p;
      moved.alignment_floor = floor;
      const ProbeFindings g = probe_unit(moved, entry.name);
      EXPECT_EQ(g.alignment_floor, floor) << entry.name << " moved to " << floor;
      const std::string d = joined(ebla::probe_differences(g, p));
      EXPECT_NE(d.find("alignment floor: found "), std::string::npos) << entry.name << d;
    }
  }
  EXPECT_EQ(found, 16);  // bf16 and tf32 on A100, A2, A30, Ada, L40S, H100, H200, B200
  MatrixUnit nearest = units::a100_bf16();  // to nearest: half an ulp + g turns a tie
  nearest.rounding = Rounding::nearest_even;
  EXPECT_EQ(probe_unit(nearest).alignment_floor, -132);
  nearest.alignment_floor = -128;
  EXPECT_EQ(probe_unit(nearest).alignment_floor, -128);
  // binary16 products reach 2^-48 only (subnormal factors): no floor down to 2^-25, where
  // g = 2^-48 still is one; the V100 has none, and its neighbours' floors cannot act there
  const ProbeFindings v100 = probe_unit(units::v100_fp16());
  EXPECT_EQ(v100.alignment_floor, MatrixUnit::no_floor);
  EXPECT_EQ(v100.floor_lowest, -25);
  // binary16 results: the floors of -19, -20, -21 found, next to 13, 14, 15 extra bits
  const std::pair<const char*, int> out16[] = {{"v100_fp16_out16", -19}, {"a100_fp16_out16", -20},
                                               {"h100_fp16_out16", -21}, {"b200_fp16_out16", -21}};
  for (const auto& [name, floor] : out16) {
    const ProbeFindings g = probe_unit(ebla::matrix_unit_by_name(name), name);
    EXPECT_EQ(g.alignment_floor, floor) << name;
    EXPECT_EQ(g.extra_bits, ebla::matrix_unit_by_name(name).extra_bits) << name;
  }
}

// Where c joins and the order of the products, on units that differ in nothing else.
TEST(ProbeVariants, AddendAndOrderAreFound) {
  MatrixUnit late = units::h100_bf16();
  late.addend = ebla::AddendJoin::after_products;
  const ProbeFindings f = probe_unit(late, "late c");
  EXPECT_EQ(f.addend_with_products, ProbeAnswer::no);
  EXPECT_EQ(f.products_at_end, ProbeAnswer::yes);
  EXPECT_NE(joined(ebla::probe_differences(f, units::h100_bf16())).find("where c joins"), std::string::npos);
  for (auto join : {ebla::AddendJoin::with_products, ebla::AddendJoin::after_products})
    for (auto order : {ebla::ProductOrder::forward, ebla::ProductOrder::backward}) {
      MatrixUnit u = units::avx512_bf16_dot();
      u.block = 4;
      u.addend = join;
      u.order = order;
      const ProbeFindings g = probe_unit(u, "chain");
      expect_findings_match(g, u, "chain");
      if (join == ebla::AddendJoin::with_products) {  // c first: its chain shows the order
        EXPECT_EQ(g.addend_with_products, ProbeAnswer::yes);
        EXPECT_EQ(g.products_at_end, ProbeAnswer::no);
        EXPECT_EQ(g.forward_order, order == ebla::ProductOrder::forward ? ProbeAnswer::yes : ProbeAnswer::no);
      } else {  // c last: the block from c = 1, -1 and s, the order from the products alone
        EXPECT_EQ(g.addend_with_products, ProbeAnswer::no);
        EXPECT_EQ(g.block, 4);
        EXPECT_EQ(g.products_at_end, ProbeAnswer::no);
        EXPECT_EQ(g.forward_order, order == ebla::ProductOrder::forward ? ProbeAnswer::yes : ProbeAnswer::no);
        EXPECT_EQ(g.pairwise, ProbeAnswer::no);
      }
    }
}

// AMD CDNA 2 (MI210, MI250): a balanced tree of 4 products, then c; the same unit as a chain,
// and trees of 8, are found and named.
TEST(ProbeVariants, PairwiseTreesAreFound) {
  for (const char* name : {"mi210_fp16", "mi210_bf16", "mi250_fp16", "mi250_bf16"}) {
    const MatrixUnit p = ebla::matrix_unit_by_name(name);
    const ProbeFindings f = probe_unit(p, name);
    EXPECT_EQ(f.pairwise, ProbeAnswer::yes) << name;
    EXPECT_EQ(f.block, 4) << name;
    EXPECT_EQ(f.addend_with_products, ProbeAnswer::no) << name;
    EXPECT_TRUE(ebla::probe_differences(f, p).empty()) << name << joined(ebla::probe_differences(f, p));
    MatrixUnit chain = p;
    chain.pairwise = false;
    const std::string d = joined(ebla::probe_differences(probe_unit(chain, name), p));
    EXPECT_NE(d.find("pairwise tree: found no, the unit says yes"), std::string::npos) << name << d;
    MatrixUnit eight = p;
    eight.block = 8;
    const ProbeFindings g = probe_unit(eight, name);
    EXPECT_EQ(g.block, 8) << name;
    EXPECT_EQ(g.pairwise, ProbeAnswer::yes) << name;
  }
}

TEST(ProbeVariants, RoundedProductsAreFound) {
  MatrixUnit u = units::v100_fp16();
  u.exact_products = false;
  u.product = formats::binary16();
  const ProbeFindings f = probe_unit(u);
  EXPECT_EQ(f.products, ProbeFindings::Products::rounded_to_input);
  EXPECT_EQ(f.product_result, 0.0);
  u.product = formats::bfloat16();  // another format: neither exact nor the input's
  EXPECT_EQ(probe_unit(u).products, ProbeFindings::Products::other);
}

// ===========================================================================================
// 3. Ideal devices in __float128

/// x rounded to the format in the given direction: to odd at 53 bits first (exact enough for
/// any later rounding to t <= 51 bits), then ebla::round_to.
double round_quad(quad x, const Format& f, Rounding mode) {
  double q = static_cast<double>(x);
  if (static_cast<quad>(q) != x) {
    if (fabsq(static_cast<quad>(q)) > fabsq(x)) q = std::nextafter(q, 0.0);  // toward zero
    q = ebla::bit_cast<double>(ebla::bit_cast<std::uint64_t>(q) | 1);        // to odd
  }
  return ebla::round_to(q, f, mode);
}

/// b = 4, bfloat16 inputs, binary32 sums in `mode`: the exact sum rounded once (at_end), or
/// c + p_0, then + p_1, ... each rounded.
DotDevice ideal_device(Rounding mode, bool at_end, int block = 4, int length = 4) {
  DotDevice d;
  d.name = "ideal";
  d.length = length;
  d.input = formats::bfloat16();
  d.accumulation = formats::binary32();
  const Format acc = d.accumulation;
  d.run = [=](const double* a, const double* b, double c) {
    quad s = c;
    for (int i = 0; i < length; ++i) {
      s += static_cast<quad>(a[i]) * b[i];
      if (!at_end || (i + 1) % block == 0) s = round_quad(s, acc, mode);  // an operation ends
    }
    return round_quad(s, acc, mode);
  };
  return d;
}

TEST(ProbeIdealDevices, FindAllFourRoundingDirections) {
  for (Rounding mode :
       {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward, Rounding::downward}) {
    SCOPED_TRACE(ebla::to_string(mode));
    const ProbeFindings once = ebla::probe(ideal_device(mode, true));
    EXPECT_TRUE(once.rounding_known);
    EXPECT_EQ(once.rounding, mode);
    EXPECT_EQ(once.products, ProbeFindings::Products::exact);
    EXPECT_EQ(once.extra_bits, MatrixUnit::unbounded);
    EXPECT_EQ(once.largest_first, ProbeAnswer::yes);
    EXPECT_EQ(once.normalised_at_end, ProbeAnswer::yes);
    EXPECT_EQ(once.input_subnormals, ProbeAnswer::yes);
    EXPECT_EQ(once.addend_subnormals, ProbeAnswer::yes);
    EXPECT_EQ(once.output_subnormals, ProbeAnswer::yes);
    EXPECT_EQ(once.overflow, mode == Rounding::toward_zero
                                 ? ProbeFindings::OverflowResult::saturation
                                 : ProbeFindings::OverflowResult::infinity);
    EXPECT_EQ(once.monotonic, ProbeAnswer::yes);
    const ProbeFindings each = ebla::probe(ideal_device(mode, false));
    EXPECT_EQ(each.rounding, mode);
    EXPECT_EQ(each.normalised_at_end, ProbeAnswer::no);
    EXPECT_EQ(each.largest_first, ProbeAnswer::no);
    EXPECT_EQ(each.extra_bits, MatrixUnit::unbounded);
  }
}

TEST(ProbeIdealDevices, FindsNaNOnOverflow) {
  DotDevice d = ideal_device(Rounding::nearest_even, true);
  const auto inner = d.run;
  d.run = [inner](const double* a, const double* b, double c) {
    const double r = inner(a, b, c);
    return std::isinf(r) ? std::nan("") : r;
  };
  EXPECT_EQ(ebla::probe(d).overflow, ProbeFindings::OverflowResult::nan);
}

// ===========================================================================================
// 4. The block

/// Expects the block probe to find b on a call of k products: min(b, k), bounded if b < k.
void expect_block(const ProbeFindings& f, int b, const std::string& what) {
  SCOPED_TRACE(what + ", k = " + std::to_string(f.length));
  EXPECT_EQ(f.block, std::min(b, f.length));
  EXPECT_EQ(f.block_bounded, b < f.length);
  EXPECT_EQ(f.slots, f.block >= 2 ? f.block : f.length);
}

// Every kind of block test: "dropped" with 0 and 1 extra bits (V100, A100), scaled for fp8
// (E4M3 products reach only 2^-12), "kept" with 2 and 7 extra bits (H100, B200 fp8) and with
// all kept (binary16 results); blocks of 3 and 5, which no preset has; every call length.
TEST(ProbeBlock, FoundOnEveryCallLength) {
  std::vector<std::pair<std::string, MatrixUnit>> cases = {
      {"v100_fp16", units::v100_fp16()},         {"a100_bf16", units::a100_bf16()},
      {"h100_bf16", units::h100_bf16()},         {"h100_fp8_e4m3", units::h100_fp8_e4m3()},
      {"b200_fp8_e5m2", units::b200_fp8_e5m2()}, {"v100_fp16_out16", ebla::matrix_unit_by_name("v100_fp16_out16")}};
  for (int b : {3, 5}) {
    MatrixUnit u = units::h100_bf16();
    u.block = b;
    cases.emplace_back("h100_bf16 with b = " + std::to_string(b), u);
    MatrixUnit v = units::v100_fp16();
    v.block = b;
    cases.emplace_back("v100_fp16 with b = " + std::to_string(b), v);
  }
  int probed = 0;
  for (const auto& [name, u] : cases)
    for (int k = 1; k <= std::min(64, 3 * u.block); ++k) {
      const ProbeFindings f = probe_unit(u, name, k);
      expect_block(f, u.block, name);
      expect_findings_match(f, u, name);
      ++probed;
    }
  EXPECT_GE(probed, 250);
  EXPECT_EQ(probe_unit(units::h100_fp8_e4m3()).block_scale, 4.0);  // L = 4: 2^-10 = 2^-5 2^-5
  EXPECT_EQ(probe_unit(units::v100_fp16()).block_test, "dropped");
  EXPECT_EQ(probe_unit(units::h100_bf16()).block_test, "kept");
}

// Devices written here: operations of b products, each the exact sum rounded once, in all
// four directions (the kept test under rounding up gives 2^(1-T), not 0, for a split).
TEST(ProbeBlock, FoundOnIdealDevicesInEveryDirection) {
  for (Rounding mode :
       {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward, Rounding::downward})
    for (int b : {1, 2, 3, 4, 8})
      for (int k : {1, 2, 5, 8, 16}) {
        const ProbeFindings f = ebla::probe(ideal_device(mode, true, b, k));
        expect_block(f, b, std::string(ebla::to_string(mode)) + ", b = " + std::to_string(b));
        EXPECT_EQ(f.block_test, "kept");
        EXPECT_EQ(f.rounding, mode);
      }
  const ProbeFindings each = ebla::probe(ideal_device(Rounding::upward, false, 4, 8));
  EXPECT_EQ(each.block, 1);  // a rounding after each addition: every product its own
  EXPECT_EQ(each.slots, 8);
}

// Units whose every addition rounds: b = 1 (an FMA chain, VDPBF16PS with the odd product
// first), or 2 where c joins after the products (c + round(p_0 + p_1) is also one operation
// of two with a late c); several chains are not compared.
TEST(ProbeBlock, EveryAdditionRounding) {
  for (int k : {2, 3, 8}) {
    EXPECT_EQ(probe_unit(units::fma_binary32(), "fma", k).block, 1);
    EXPECT_EQ(probe_unit(units::avx512_bf16_dot(), "vdpbf16ps", k).block, 1);
  }
  MatrixUnit late = units::amx_bf16();
  late.chains = 1;
  late.block = 4;
  EXPECT_EQ(probe_unit(late, "one chain, c last").block, 4);
  EXPECT_EQ(ebla::expected_block(late, 8), 4);
  // AMX: two chains, added at the end of an operation of 32 products, then c
  const ProbeFindings amx = probe_unit(units::amx_bf16());
  EXPECT_EQ(ebla::expected_block(units::amx_bf16(), 64), 32);
  EXPECT_EQ(amx.chains, 2);
  EXPECT_EQ(amx.block, 32);
  EXPECT_EQ(amx.block_test, "late c");
  EXPECT_EQ(amx.forward_order, ProbeAnswer::yes);
  EXPECT_EQ(amx.addend_with_products, ProbeAnswer::no);
  EXPECT_TRUE(ebla::probe_differences(amx, units::amx_bf16()).empty());
  for (int chains : {2, 3, 4})  // other chain counts and blocks, c last or first: found, named
    for (auto join : {ebla::AddendJoin::after_products, ebla::AddendJoin::with_products}) {
      MatrixUnit u = units::amx_bf16();
      u.chains = chains;
      u.block = 8 * chains;
      u.addend = join;
      const ProbeFindings g = probe_unit(u, "chains");
      expect_findings_match(g, u, "chains");
      EXPECT_EQ(g.chains, chains);
      EXPECT_EQ(g.block, 8 * chains);
      EXPECT_EQ(g.block_test, join == ebla::AddendJoin::with_products ? "chains" : "late c");
      if (chains != 2) {
        EXPECT_NE(joined(ebla::probe_differences(g, units::amx_bf16())).find("chains: found " + std::to_string(chains)),
                  std::string::npos);
      }
    }
  EXPECT_EQ(probe_unit(units::v100_fp16(), "one product", 1).block, 1);
}

// ===========================================================================================
// 5. Differences and bad devices

TEST(ProbeDifferences, NameWhatAWrongModelGetsWrong) {
  const ProbeFindings v100 = probe_unit(units::v100_fp16());
  const auto d = ebla::probe_differences(v100, units::a100_fp16());
  ASSERT_EQ(d.size(), 2u) << joined(d);
  EXPECT_NE(d[0].find("block: found 4 products, the unit says 8 products"), std::string::npos) << d[0];
  EXPECT_NE(d[1].find("extra alignment bits: found 0, the unit says 1"), std::string::npos) << d[1];
  // the two x86 models: VDPBF16PS's chain from c, the odd product first, against AMX's two
  // chains of 32 products followed by c
  const auto hw = ebla::probe_differences(probe_unit(units::avx512_bf16_dot()), units::amx_bf16());
  ASSERT_EQ(hw.size(), 4u) << joined(hw);
  EXPECT_EQ(hw[0], "block: found 1 products, the unit says 4 products");
  EXPECT_EQ(hw[1], "where c joins: found with the products, the unit says after_products");
  EXPECT_EQ(hw[2], "chains: found 1, the unit says 2");
  EXPECT_EQ(hw[3], "product order: found last to first, the unit says forward");
  const auto tc = ebla::probe_differences(probe_unit(units::avx512_bf16_dot()), units::a100_bf16());
  EXPECT_GE(tc.size(), 5u) << joined(tc);  // rounding, extra bits, order, normalisation, DAZ, ...
}

TEST(ProbeDifferences, RejectsBadDevices) {
  DotDevice none;
  none.name = "none";
  EXPECT_THROW(ebla::probe(none), ebla::InvalidArgument);
  DotDevice big = ideal_device(Rounding::nearest_even, true);
  big.length = 65;
  EXPECT_THROW(ebla::probe(big), ebla::InvalidArgument);
  MatrixUnit bad = units::v100_fp16();
  bad.block = 0;
  EXPECT_THROW(ebla::unit_device("bad", bad), ebla::InvalidArgument);
  EXPECT_THROW(ebla::unit_device("long", units::v100_fp16(), 65), ebla::InvalidArgument);
  EXPECT_THROW(ebla::unit_device("short", units::v100_fp16(), -1), ebla::InvalidArgument);
}

// ===========================================================================================
// 6. The hardware

TEST(ProbeHardware, Vdpbf16psAgreesWithItsPreset) {
  if (!ebla::avx512_bf16_available()) {
    EXPECT_THROW(ebla::avx512_bf16_device(), std::runtime_error);
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 (vdpbf16ps)";
  }
  const ProbeFindings f = ebla::probe(ebla::avx512_bf16_device());
  expect_findings_match(f, units::avx512_bf16_dot(), "avx512_bf16_hw");
  EXPECT_EQ(f.input_subnormals, ProbeAnswer::no);
  EXPECT_EQ(f.output_subnormals, ProbeAnswer::no);
  // operands the instruction cannot take are refused, not rounded
  const DotDevice hw = ebla::avx512_bf16_device();
  const double a[2] = {1 + std::ldexp(1, -10), 0}, b[2] = {1, 0};
  EXPECT_THROW(hw.run(a, b, 0.0), ebla::InvalidArgument);
  const double one[2] = {1, 0};
  EXPECT_THROW(hw.run(one, b, 1 + std::ldexp(1, -30)), ebla::InvalidArgument);
  EXPECT_EQ(hw.run(one, b, 0.5), 1.5);
}

}  // namespace

// Custom matrix units from spec files (unit_spec.hpp): every preset survives a round trip
// through its spec bit for bit, a hand-written spec gives the unit it describes, and every
// malformed spec is refused with a message that names the line and the key or value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/unit_spec.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ebla::MatrixUnit;

MatrixUnit from_text(const std::string& text) {
  std::istringstream in(text);
  return ebla::read_unit_spec(in, "test.unit");
}

// Every field that the emulation reads (the product format only for rounded products).
void expect_same_unit(const MatrixUnit& a, const MatrixUnit& b, const std::string& name) {
  EXPECT_EQ(a.block, b.block) << name;
  EXPECT_TRUE(a.input == b.input) << name;
  EXPECT_EQ(a.input_subnormals, b.input_subnormals) << name;
  EXPECT_EQ(a.exact_products, b.exact_products) << name;
  if (!a.exact_products) {
    EXPECT_TRUE(a.product == b.product) << name;
  }
  EXPECT_TRUE(a.accumulation == b.accumulation) << name;
  EXPECT_EQ(a.rounding, b.rounding) << name;
  EXPECT_EQ(a.extra_bits, b.extra_bits) << name;
  EXPECT_EQ(a.sum_precision, b.sum_precision) << name;
  EXPECT_EQ(a.normalisation, b.normalisation) << name;
  EXPECT_EQ(a.alignment, b.alignment) << name;
  EXPECT_EQ(a.alignment_floor, b.alignment_floor) << name;
  EXPECT_EQ(a.addend, b.addend) << name;
  EXPECT_EQ(a.order, b.order) << name;
  EXPECT_EQ(a.chains, b.chains) << name;
  EXPECT_EQ(a.output_subnormals, b.output_subnormals) << name;
  EXPECT_EQ(a.pairwise, b.pairwise) << name;
}

// A value of format f with a random sign and an exponent spread over f's range (subnormals
// and zeros included), rounded to f.
double random_value(std::mt19937_64& rng, const ebla::Format& f) {
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(f.emin - f.t - 1, f.emax);
  const double x = std::ldexp(significand(rng), exponent(rng)) * (rng() % 2 ? 1 : -1);
  return ebla::round_to(x, f, ebla::Rounding::nearest_even);
}

// The bits of d from both units on the same inputs: two blocks of products and an addend.
int differences(const MatrixUnit& u, const MatrixUnit& v, int cases, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int differ = 0;
  for (int n = 0; n < cases; ++n) {
    const std::size_t k = 2 * static_cast<std::size_t>(u.block);
    std::vector<double> a(k), b(k);
    for (std::size_t i = 0; i < k; ++i) {
      a[i] = random_value(rng, u.input);
      b[i] = random_value(rng, u.input);
    }
    const double c = random_value(rng, u.input);
    const double du = ebla::unit_dot(u, a, b, c), dv = ebla::unit_dot(v, a, b, c);
    const bool same = std::isnan(du) ? std::isnan(dv) : du == dv && std::signbit(du) == std::signbit(dv);
    differ += same ? 0 : 1;
  }
  return differ;
}

std::string refusal(const std::string& text) {
  try {
    from_text(text);
  } catch (const ebla::InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(UnitSpec, EveryPresetSurvivesItsSpec) {
  int presets = 0;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    const MatrixUnit back = from_text(ebla::unit_spec(entry.unit));
    expect_same_unit(entry.unit, back, entry.name);
    EXPECT_EQ(ebla::unit_spec(back), ebla::unit_spec(entry.unit)) << entry.name;
    EXPECT_EQ(differences(entry.unit, back, 200, 7 + presets), 0) << entry.name;
    ++presets;
  }
  EXPECT_GE(presets, 36);
}

TEST(UnitSpec, AHandWrittenSpecGivesTheUnitItDescribes) {
  // H100's fp16 unit, written out as a user would from docs/matrix-units.md
  const MatrixUnit h100 = from_text(
      "# H100 fp16 inputs, binary32 results\n"
      "block = 16\n"
      "input = binary16\n"
      "accumulation = binary32   # c, the sums and d\n"
      "rounding = toward_zero\n"
      "extra_bits = 2\n"
      "\n"
      "alignment = exponent_sum\n"
      "alignment_floor = -133\n");
  expect_same_unit(h100, ebla::units::h100_fp16(), "h100_fp16");
  EXPECT_EQ(differences(h100, ebla::units::h100_fp16(), 2000, 1), 0);
}

TEST(UnitSpec, ABaseWithAnOverrideChangesThatFieldOnly) {
  const MatrixUnit v = from_text("base = v100_fp16\nextra_bits = 3\n");
  MatrixUnit expected = ebla::units::v100_fp16();
  expected.extra_bits = 3;
  expect_same_unit(v, expected, "v100_fp16 with 3 extra bits");
  // the override is seen by the emulation: the preset and the altered unit differ somewhere
  EXPECT_GT(differences(v, ebla::units::v100_fp16(), 2000, 2), 0);
  // rounded products and FMA-chain fields
  const MatrixUnit chain = from_text(
      "input = bfloat16\naccumulation = binary32\nexact_products = false\nproduct = binary32\n"
      "normalisation = each_addition\nblock = 2\nchains = 2\norder = backward\n"
      "input_subnormals = false\noutput_subnormals = false\naddend = after_products\n");
  EXPECT_FALSE(chain.exact_products);
  EXPECT_TRUE(chain.product == ebla::formats::binary32());
  EXPECT_EQ(chain.chains, 2);
  EXPECT_EQ(chain.order, ebla::ProductOrder::backward);
  EXPECT_EQ(chain.addend, ebla::AddendJoin::after_products);
  EXPECT_FALSE(chain.input_subnormals);
  EXPECT_FALSE(chain.output_subnormals);
  expect_same_unit(from_text(ebla::unit_spec(chain)), chain, "chain");
}

TEST(UnitSpec, APairwiseSpecGivesTheMi210Unit) {
  // AMD CDNA 2 as docs/matrix-units.md describes it, written out by hand
  const MatrixUnit mi210 = from_text(
      "block = 4\n"
      "input = bfloat16\n"
      "input_subnormals = false\n"
      "exact_products = false\n"
      "product = binary32\n"
      "accumulation = binary32\n"
      "normalisation = each_addition\n"
      "addend = after_products\n"
      "pairwise = true   # (p1 + p2) + (p3 + p4), then c\n"
      "output_subnormals = false\n");
  expect_same_unit(mi210, ebla::units::mi210_bf16(), "mi210_bf16");
  EXPECT_EQ(differences(mi210, ebla::units::mi210_bf16(), 2000, 3), 0);
  // the key is read: without it the same unit adds in order, and differs somewhere
  const MatrixUnit chain = from_text("base = mi210_bf16\npairwise = false\n");
  EXPECT_FALSE(chain.pairwise);
  EXPECT_GT(differences(chain, ebla::units::mi210_bf16(), 2000, 4), 0);
  EXPECT_NE(ebla::unit_spec(ebla::units::mi210_fp16()).find("\npairwise = true\n"),
            std::string::npos);
  EXPECT_NE(ebla::unit_spec(ebla::units::v100_fp16()).find("\npairwise = false\n"),
            std::string::npos);
}

TEST(UnitSpec, MalformedSpecsAreRefusedByLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"input = binary16\nblock 4\n", "test.unit:2: 'block 4' is not key = value"},
      {"input = binary16\nblok = 4\n", "test.unit:2: unknown key 'blok' (known: base, accumulation"},
      {"block = 4\nblock = 8\n", "test.unit:2: block is given twice"},
      {"block = 4\nbase = v100_fp16\n", "test.unit:2: base must come before the other keys"},
      {"base = v99_fp16\n", "test.unit:1: base: ebla::matrix_unit_by_name: unknown matrix unit 'v99_fp16'"},
      {"base = v100_fp16\nblock = four\n", "test.unit:2: block: ebla::read_unit_spec: 'four' is not an integer"},
      {"base = v100_fp16\nblock = 99999999999\n", "'99999999999' is not an integer"},
      {"base = v100_fp16\ninput_subnormals = yes\n", "test.unit:2: input_subnormals: ebla::read_unit_spec: 'yes' is neither true nor false"},
      {"base = v100_fp16\ninput = binary17\n", "test.unit:2: input: "},
      {"base = v100_fp16\nrounding = sideways\n", "test.unit:2: rounding: "},
      {"base = v100_fp16\nextra_bits = -3\n", "test.unit:2: extra_bits: ebla::read_unit_spec: '-3' is below 0"},
      {"base = v100_fp16\nalignment = middle\n", "'middle' is neither leading_bit nor exponent_sum"},
      {"base = v100_fp16\nalignment_floor = -2147483648\n", "write none"},
      {"input = binary16\n", "test.unit: without base, input and accumulation are required"},
      {"# nothing\n\n", "test.unit: without base, input and accumulation are required"},
      {"base = v100_fp16\nblock = 65\n", "ebla::read_unit_spec: test.unit: "},
      {"input = binary32\naccumulation = binary16\n", "ebla::read_unit_spec: test.unit: "},
      {"base = mi210_fp16\npairwise = yes\n", "test.unit:2: pairwise: ebla::read_unit_spec: 'yes' is neither true nor false"},
      {"base = mi210_fp16\nblock = 6\n", "ebla::read_unit_spec: test.unit: pairwise = true needs a block that is a power of two, not block = 6"},
      {"base = v100_fp16\npairwise = true\n", "ebla::read_unit_spec: test.unit: pairwise = true needs normalisation = each_addition"},
  };
  for (const auto& [text, message] : cases) {
    const std::string what = refusal(text);
    EXPECT_NE(what.find(message), std::string::npos) << "spec:\n" << text << "message: " << what;
  }
}

TEST(UnitSpec, AFileThatCannotBeReadIsNamed) {
  try {
    ebla::read_unit_spec_file("/nonexistent/dir/my.unit");
    FAIL() << "accepted";
  } catch (const ebla::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/my.unit'"), std::string::npos) << e.what();
  }
}

}  // namespace

// The NVIDIA presets of matrix_unit_catalogue() against real tensor-core outputs.
//
// data/tensor-cores/<preset>_fp32.txt holds the first 500 of the 5000 published results of each
// (GPU, input format) pair with binary32 output (Khattak & Mikaitis 2025; data/tensor-cores/
// README.md): one unit operation d = c + a^T b per line, k = the GPU's row length. Every
// preset named by a file must give d bit for bit on every case, and units with one parameter
// altered (extra bits, the alignment reference) must not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ebla/core/bits.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ebla::MatrixUnit;

const std::string data_dir = std::string(EBLA_DATA_DIR) + "/tensor-cores";

/// One published case: the inputs as values, c, and d as a binary32 bit pattern.
struct HardwareCase {
  std::vector<double> a, b;
  double c = 0.0;
  std::uint32_t d = 0;
};

double binary32_value(std::uint32_t bits) {
  return static_cast<double>(ebla::bit_cast<float>(bits));
}

std::uint32_t binary32_bits(double x) {
  return ebla::bit_cast<std::uint32_t>(static_cast<float>(x));  // exact: x is a binary32 value
}

/// The values of a row of hex codes, `digits` per value, in the unit's input format (tf32:
/// the top 19 bits of a binary32 pattern).
std::vector<double> decode_row(const std::string& hex, const ebla::Format& input) {
  const bool tf32 = input.t == 11 && input.emin == -126;
  const int digits = tf32 ? 5 : ebla::encoding_bits(input) / 4;
  EXPECT_EQ(hex.size() % digits, 0u) << hex;
  std::vector<double> v;
  for (std::size_t i = 0; i + digits <= hex.size(); i += digits) {
    const auto code = static_cast<std::uint32_t>(std::stoul(hex.substr(i, digits), nullptr, 16));
    v.push_back(tf32 ? binary32_value(code << 13) : ebla::decode(code, input));
  }
  return v;
}

std::vector<HardwareCase> read_cases(const std::string& path, const ebla::Format& input) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<HardwareCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string a, b, c, d;
    if (!(fields >> a >> b >> c >> d)) {
      ADD_FAILURE() << path << ": bad line '" << line << "'";
      continue;
    }
    HardwareCase h;
    h.a = decode_row(a, input);
    h.b = decode_row(b, input);
    h.c = binary32_value(static_cast<std::uint32_t>(std::stoul(c, nullptr, 16)));
    h.d = static_cast<std::uint32_t>(std::stoul(d, nullptr, 16));
    EXPECT_EQ(h.a.size(), h.b.size()) << line;
    cases.push_back(h);
  }
  return cases;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The preset names with a data file, and the files: <preset>_fp32.txt (binary32 results) and
/// <gpu>_fp16_out16.txt (binary16 results, the preset of that name).
std::vector<std::pair<std::string, std::string>> data_sets() {
  std::vector<std::pair<std::string, std::string>> sets;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir)) {
    const std::string file = entry.path().filename().string();
    if (ends_with(file, "_fp32.txt")) sets.emplace_back(file.substr(0, file.size() - 9), entry.path().string());
    if (ends_with(file, "_out16.txt")) sets.emplace_back(file.substr(0, file.size() - 4), entry.path().string());
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

/// Cases where the unit's d differs from the hardware's bit pattern. The unit reads c in its
/// accumulation format (the published binary32 c rounded to nearest binary16 for binary16
/// results, as the authors' models do; a binary32 c unchanged).
int differences(const MatrixUnit& unit, const std::vector<HardwareCase>& cases,
                std::string* first = nullptr) {
  int n = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const HardwareCase& h = cases[i];
    const double c = ebla::round_to(h.c, unit.accumulation, ebla::Rounding::nearest_even);
    const std::uint32_t d = binary32_bits(ebla::unit_dot(unit, h.a, h.b, c));
    if (d == h.d) continue;
    if (n++ == 0 && first != nullptr) {
      char text[96];
      std::snprintf(text, sizeof text, "case %zu: unit %08x, hardware %08x", i + 1,
                    static_cast<unsigned>(d), static_cast<unsigned>(h.d));
      *first = text;
    }
  }
  return n;
}

std::vector<HardwareCase> cases_of(const std::string& preset) {
  const std::string file = ends_with(preset, "_out16") ? preset + ".txt" : preset + "_fp32.txt";
  return read_cases(data_dir + "/" + file, ebla::matrix_unit_by_name(preset).input);
}

TEST(TensorCoreOutputs, EveryPresetWithDataMatchesEveryCase) {
  const auto sets = data_sets();
  EXPECT_EQ(sets.size(), 40u) << "data sets in " << data_dir;  // 32 binary32, 8 binary16
  for (const auto& [preset, path] : sets) {
    const MatrixUnit unit = ebla::matrix_unit_by_name(preset);
    const auto cases = read_cases(path, unit.input);
    EXPECT_EQ(cases.size(), 500u) << path;
    std::string first;
    const int n = differences(unit, cases, &first);
    std::printf("%-14s %zu of %zu hardware cases matched (k = %zu, block %d)\n", preset.c_str(),
                cases.size() - n, cases.size(), cases.empty() ? 0 : cases[0].a.size(), unit.block);
    EXPECT_EQ(n, 0) << preset << ": first difference " << first;
  }
}

/// The number of cases on which `preset` with `change` applied differs from the hardware.
template <class Change>
int altered_differences(const std::string& preset, Change change) {
  MatrixUnit unit = ebla::matrix_unit_by_name(preset);
  change(unit);
  return differences(unit, cases_of(preset));
}

TEST(TensorCoreOutputs, AlteredExtraBitsDiffer) {
  const struct {
    const char* preset;
    int extra;
  } altered[] = {{"v100_fp16", 1},       {"a100_fp16", 0},     {"a100_fp16", 2},
                 {"a100_bf16", 0},       {"a100_tf32", 2},     {"h100_fp16", 1},
                 {"h100_fp16", 3},       {"h100_bf16", 3},     {"h100_tf32", 1},
                 {"h100_fp8_e4m3", 1},   {"ada_fp8_e5m2", 1},  {"b200_fp8_e4m3", 3},
                 {"b200_fp8_e5m2", 3},   {"b200_fp16", 3}};
  for (const auto& x : altered) {
    const int n = altered_differences(x.preset, [&](MatrixUnit& u) { u.extra_bits = x.extra; });
    std::printf("%-14s with extra bits %d: %d of 500 cases differ\n", x.preset, x.extra, n);
    EXPECT_GT(n, 0) << x.preset << " with extra_bits = " << x.extra;
  }
}

TEST(TensorCoreOutputs, AlteredSumPrecisionDiffers) {
  for (const char* preset : {"h100_fp8_e4m3", "h100_fp8_e5m2", "ada_fp8_e4m3", "ada_fp8_e5m2"})
    for (const int t : {13, 15, 0}) {
      const int n = altered_differences(preset, [&](MatrixUnit& u) { u.sum_precision = t; });
      std::printf("%-14s with sum precision %d: %d of 500 cases differ\n", preset, t, n);
      EXPECT_GT(n, 0) << preset << " with sum_precision = " << t;
    }
}

TEST(TensorCoreOutputs, LeadingBitAlignmentDiffers) {
  for (const char* preset : {"v100_fp16", "a100_fp16", "a100_bf16", "a100_tf32", "h100_fp16",
                             "h100_bf16", "h100_fp8_e4m3", "ada_fp8_e5m2"}) {
    const int n = altered_differences(
        preset, [](MatrixUnit& u) { u.alignment = ebla::Alignment::leading_bit; });
    std::printf("%-14s aligned on leading bits: %d of 500 cases differ\n", preset, n);
    EXPECT_GT(n, 0) << preset;
  }
}

TEST(TensorCoreOutputs, OtherRoundingDiffers) {
  for (const char* preset : {"v100_fp16", "h100_fp16", "ada_fp8_e4m3", "b200_fp8_e4m3",
                             "b200_fp8_e5m2", "v100_fp16_out16", "a100_fp16_out16",
                             "h100_fp16_out16", "b200_fp16_out16"}) {
    const int n = altered_differences(preset, [](MatrixUnit& u) {
      u.rounding = u.rounding == ebla::Rounding::toward_zero ? ebla::Rounding::nearest_even
                                                             : ebla::Rounding::toward_zero;
    });
    std::printf("%-14s with the other rounding: %d of 500 cases differ\n", preset, n);
    EXPECT_GT(n, 0) << preset;
  }
}

TEST(TensorCoreOutputs, V100HandCase) {
  // c = 2^-23, 1.5 * 1.5 + 2^-12 * 2^-11: the product 2.25 has exponent sum 0, so the grid is
  // 2^-23 and c and 2^-23 are both kept: 2.25 + 2^-22 exactly (0x1.200002p+1). Aligned on
  // 2.25's leading bit (2^1), the grid is 2^-22 and both small terms are lost.
  const std::vector<double> a = {1.5, 0x1p-12}, b = {1.5, 0x1p-11};
  EXPECT_EQ(ebla::unit_dot(ebla::units::v100_fp16(), a, b, 0x1p-23), 0x1.200002p+1);
  MatrixUnit leading = ebla::units::v100_fp16();
  leading.alignment = ebla::Alignment::leading_bit;
  EXPECT_EQ(ebla::unit_dot(leading, a, b, 0x1p-23), 0x1.2p+1);
}

}  // namespace

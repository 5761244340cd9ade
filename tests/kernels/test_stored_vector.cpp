// Stored vectors (kernels/stored_vector.hpp): the 16-bit words round-trip exhaustively, the
// floating formats round once to nearest (round_to, and the CPU's own binary64 -> binary16
// conversion where it has one), the block formats meet their bound on random and adversarial
// blocks, the vector scale keeps values that would underflow or overflow an unscaled format,
// and the measured squared error is the exact one.
#include <ebla/core/error.hpp>
#include <ebla/kernels/stored_vector.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "checks.hpp"

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<avx512fp16intrin.h>) && (defined(__clang__) || __GNUC__ >= 12)
#include <immintrin.h>
#define EBLA_TEST_FP16 1
#endif
#endif
#ifndef EBLA_TEST_FP16
#define EBLA_TEST_FP16 0
#endif

namespace {

using ebla::Storage;
using ebla_test::same;

using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

Kokkos::View<double*> device_copy(const std::vector<double>& v) {
  Kokkos::View<double*> d("v", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// The stored values of v in `format` (bound: max |v|), and the sums of the rounding.
std::vector<double> stored_values(Storage format, const std::vector<double>& v, ebla::StoreSums* sums = nullptr,
                                  ebla::StoredVector* keep = nullptr) {
  ebla::StoredVector p = ebla::make_stored_vector(format, v.size(), "p");
  const ebla::StoreSums s = ebla::store(p, device_copy(v));
  if (sums) *sums = s;
  Kokkos::View<double*> w("w", v.size());
  ebla::load(p, w);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  if (keep) *keep = p;
  return std::vector<double>(h.data(), h.data() + v.size());
}

std::vector<double> random_values(std::size_t n, int lo, int hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(n);
  for (double& x : v)
    x = (gen() & 1 ? -1.0 : 1.0) * std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, lo + static_cast<int>(gen() % (hi - lo + 1)));
  return v;
}

// sum (v_i - s_i)^2 in binary128 from the exact differences.
double exact_err2(const std::vector<double>& v, const std::vector<double>& s) {
  __float128 sum = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const __float128 d = static_cast<__float128>(v[i]) - static_cast<__float128>(s[i]);
    sum += d * d;
  }
  return static_cast<double>(sum);
}

TEST(StoredVector, SixteenBitWordsRoundTripExhaustively) {
  int checked = 0;
  for (std::uint32_t w = 0; w < 65536; ++w) {
    const auto h = static_cast<std::uint16_t>(w);
    const double half = ebla::detail::binary16_value(h);
    const double brain = ebla::detail::bfloat16_value(h);
    if (!std::isnan(half)) {
      ASSERT_EQ(ebla::detail::binary16_bits(half), h) << std::hex << w;
      ASSERT_TRUE(same(ebla::round_to(half, ebla::formats::binary16(), ebla::Rounding::nearest_even), half)) << std::hex << w;
      ++checked;
    }
    if (!std::isnan(brain)) {
      ASSERT_EQ(ebla::detail::bfloat16_bits(brain), h) << std::hex << w;
      ASSERT_TRUE(same(ebla::round_to(brain, ebla::formats::bfloat16(), ebla::Rounding::nearest_even), brain)) << std::hex << w;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 65536 - 2 * 1023 - 2 * 127);  // every pattern but the NaNs
}

TEST(StoredVector, FloatingFormatsRoundOnceToNearestWithTheVectorScale) {
  const struct {
    Storage storage;
    ebla::Format format;
  } cases[] = {{Storage::binary32, ebla::formats::binary32()},
               {Storage::bfloat16, ebla::formats::bfloat16()},
               {Storage::binary16, ebla::formats::binary16()}};
  for (const auto& c : cases)
    for (int lo : {-1070, -60, -20, 200}) {  // subnormal doubles, tiny, moderate, huge vectors
      // 25 binades: inside binary16's normal range (30 binades) once scaled
      const std::vector<double> v = random_values(100003, lo, lo + 25, static_cast<std::uint64_t>(lo + 5000));
      ebla::StoreSums sums;
      ebla::StoredVector p;
      const std::vector<double> s = stored_values(c.storage, v, &sums, &p);
      const double scale = std::ldexp(1.0, p.scale_exponent);
      double amax = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double expected = ebla::round_to(v[i] / scale, c.format, ebla::Rounding::nearest_even) * scale;  // one rounding
        ASSERT_TRUE(same(s[i], expected)) << ebla::to_string(c.storage) << " lo " << lo << " i " << i;
        amax = std::max(amax, std::fabs(s[i]));
      }
      EXPECT_FALSE(sums.bad);
      EXPECT_EQ(sums.amax, amax);
      const double err2 = exact_err2(v, s);
      EXPECT_LE(std::fabs(sums.err2 - err2), 1e-13 * err2) << ebla::to_string(c.storage) << " lo " << lo;
      // the scale keeps every value in the format's normal range: relative error <= u (but
      // the scale stops at 2^-1022, which leaves binary16 vectors below 2^-1000 subnormal)
      if (c.storage == Storage::binary16 && lo < -1000) continue;
      const double u = ebla::storage_unit(c.storage);
      int violations = 0;
      for (std::size_t i = 0; i < v.size(); ++i) violations += std::fabs(v[i] - s[i]) <= u * std::fabs(v[i]) ? 0 : 1;
      EXPECT_EQ(violations, 0) << ebla::to_string(c.storage) << " lo " << lo;
    }
}

TEST(StoredVector, ScaleKeepsWhatAnUnscaledFormatLoses) {
  // 2^-170 (7e-52) to 2^-155: below binary32's smallest subnormal, so unscaled binary32 would store 0
  std::vector<double> v = random_values(4096, -170, -155, 7);
  for (double x : v) ASSERT_EQ(static_cast<float>(x), 0.0f);
  for (Storage s : {Storage::binary32, Storage::bfloat16, Storage::binary16}) {
    const std::vector<double> got = stored_values(s, v);
    for (std::size_t i = 0; i < v.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - v[i]), ebla::storage_unit(s) * std::fabs(v[i])) << ebla::to_string(s) << " " << i;
  }
  // 1e300: beyond every narrow format's range, so unscaled storage would overflow
  v = random_values(4096, 990, 996, 8);
  for (Storage s : {Storage::binary32, Storage::bfloat16, Storage::binary16}) {
    ebla::StoreSums sums;
    const std::vector<double> got = stored_values(s, v, &sums);
    EXPECT_FALSE(sums.bad);
    for (std::size_t i = 0; i < v.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - v[i]), ebla::storage_unit(s) * std::fabs(v[i])) << ebla::to_string(s) << " " << i;
  }
}

// Blocks built to test the exponent: a largest value that rounds up to 2^b' (and must move
// the exponent up), values that span the double range inside one block, subnormal blocks,
// zero blocks, and a vector whose last block is short.
std::vector<double> adversarial_blocks(std::size_t blocks, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v;
  for (std::size_t b = 0; b < blocks; ++b) {
    const int kind = static_cast<int>(b % 6);
    const int e = static_cast<int>(gen() % 1000) - 500;  // squares stay finite
    for (int i = 0; i < ebla::storage_block; ++i) {
      const double r = (gen() & 1 ? -1.0 : 1.0) * (1.0 + (gen() >> 11) * 0x1p-53);
      switch (kind) {
        case 0: v.push_back(std::ldexp(r, e)); break;                                     // one binade
        case 1: v.push_back(std::ldexp(r, e - static_cast<int>(gen() % 60))); break;      // 60 binades
        case 2: v.push_back(i == 5 ? std::ldexp(1 - 0x1p-17, e) : std::ldexp(r, e - 3)); break;  // rounds up
        case 3: v.push_back(i == 9 ? std::ldexp(1 - 0x1p-9, e) : std::ldexp(r, e - 1)); break;   // rounds up (8 bits)
        case 4: v.push_back(std::ldexp(r, -1074 + static_cast<int>(gen() % 40))); break;  // subnormal
        default: v.push_back(i % 7 == 0 ? std::ldexp(r, e) : 0.0); break;                  // mostly zeros
      }
    }
  }
  v.resize(v.size() - 11);  // a short last block
  return v;
}

TEST(StoredVector, BlockFormatsMeetTheirBoundOnRandomAndAdversarialBlocks) {
  for (Storage s : {Storage::block16, Storage::block8}) {
    const int b = s == Storage::block16 ? 15 : 7;
    std::vector<double> v = adversarial_blocks(40000, s == Storage::block16 ? 1 : 2);
    ebla::StoreSums sums;
    ebla::StoredVector p;
    const std::vector<double> got = stored_values(s, v, &sums, &p);
    const auto words16 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.i16);
    const auto words8 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.i8);
    const auto exps = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.exponent);
    long violations = 0, words_out_of_range = 0;
    for (std::size_t b0 = 0; b0 < v.size(); b0 += ebla::storage_block) {
      const std::size_t end = std::min(v.size(), b0 + ebla::storage_block);
      double amax = 0;
      for (std::size_t i = b0; i < end; ++i) amax = std::max(amax, std::fabs(v[i]));
      // half a unit relative to the block's largest value, or 2^-1075 where the unit is 2^-1074
      const double bound = std::max(std::ldexp(amax, -b) / (1 - std::ldexp(1.0, -b)), 0x1p-1074);
      for (std::size_t i = b0; i < end; ++i) {
        violations += std::fabs(v[i] - got[i]) <= bound ? 0 : 1;
        const long w = s == Storage::block16 ? words16(i) : words8(i);
        words_out_of_range += std::labs(w) <= (1L << b) - 1 ? 0 : 1;
        if (!same(got[i], static_cast<double>(w) * std::ldexp(1.0, exps(b0 / ebla::storage_block)))) ++violations;
      }
    }
    EXPECT_EQ(violations, 0) << ebla::to_string(s);
    EXPECT_EQ(words_out_of_range, 0) << ebla::to_string(s);
    EXPECT_FALSE(sums.bad);
    const double err2 = exact_err2(v, got);
    EXPECT_LE(std::fabs(sums.err2 - err2), 1e-13 * err2 + 0x1p-1074) << ebla::to_string(s);
  }
}

TEST(StoredVector, StoredValuesStoreExactly) {
  // a stored vector stored again is the same vector, for every format
  const std::vector<double> v = random_values(5000, -30, 30, 11);
  for (Storage s : ebla::storage_formats()) {
    const std::vector<double> once = stored_values(s, v);
    ebla::StoreSums sums;
    const std::vector<double> twice = stored_values(s, once, &sums);
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(same(once[i], twice[i])) << ebla::to_string(s) << " " << i;
    EXPECT_EQ(sums.err2, 0.0) << ebla::to_string(s);
  }
}

#if EBLA_TEST_FP16
__attribute__((target("avx512fp16,avx512vl"))) std::uint16_t hardware_binary16(double x) {
  const __m128h h = _mm_cvt_roundsd_sh(_mm_setzero_ph(), _mm_set_sd(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return static_cast<std::uint16_t>(_mm_extract_epi16(_mm_castph_si128(h), 0));
}

TEST(StoredVector, Binary16WordsMatchTheCpusConversion) {
  if (!__builtin_cpu_supports("avx512fp16") || !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "this CPU has no AVX-512 FP16 (vcvtsd2sh)";
  // largest magnitude in [2^14, 2^15): the vector scale is 2^0, so the words are binary16's own
  std::vector<double> v = random_values(200000, -26, 13, 5);
  v[17] = 0x1.8p14;
  ebla::StoredVector p;
  stored_values(Storage::binary16, v, nullptr, &p);
  ASSERT_EQ(p.scale_exponent, 0);
  const auto words = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.u16);
  long mismatches = 0;
  for (std::size_t i = 0; i < v.size(); ++i) mismatches += words(i) == hardware_binary16(v[i]) ? 0 : 1;
  EXPECT_EQ(mismatches, 0);
}
#endif

TEST(StoredVector, NonFiniteValuesAreReportedAndSizesChecked) {
  std::vector<double> v(100, 1.0);
  v[40] = std::nan("");
  for (Storage s : ebla::storage_formats()) {
    ebla::StoreSums sums;
    stored_values(s, v, &sums);
    EXPECT_TRUE(sums.bad) << ebla::to_string(s);
  }
  ebla::StoredVector p = ebla::make_stored_vector(Storage::block8, 10, "p");
  ebla_test::expect_invalid([&] { ebla::store(p, Kokkos::View<double*>("v", 11)); }, {"ebla::store", "11", "10"});
  ebla_test::expect_invalid([&] { ebla::load(p, Kokkos::View<double*>("w", 9)); }, {"ebla::load", "9", "10"});
}

TEST(StoredVector, NamesAndBytes) {
  for (Storage s : ebla::storage_formats()) EXPECT_EQ(ebla::storage_by_name(ebla::to_string(s)), s);
  EXPECT_EQ(ebla::storage_by_name("half"), Storage::binary16);
  EXPECT_EQ(ebla::storage_by_name("BF16"), Storage::bfloat16);
  ebla_test::expect_invalid([] { ebla::storage_by_name("block4", "ebla cg --storage"); },
                            {"ebla cg --storage", "block4", "block16"});
  EXPECT_EQ(ebla::storage_bytes(Storage::block8, 64), 64 + 4);   // 64 bytes, two 16-bit exponents
  EXPECT_EQ(ebla::storage_bytes(Storage::binary32, 10), 40);
}

}  // namespace

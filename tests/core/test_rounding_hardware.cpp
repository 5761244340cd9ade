// Compares ebla::round_to with this CPU's own conversion instructions.
//
// round_to is integer arithmetic on bit patterns; the instructions below are
// independent IEEE 754 implementations in silicon, so agreement on hundreds of
// millions of inputs (every binary32 input that matters for binary16, whole
// binades for bfloat16, midpoints for binary32) is strong evidence that the bit
// manipulation is right. Each instruction set is detected at run time with cpuid
// (__builtin_cpu_supports), and the functions using it are compiled with
// __attribute__((target)), so the file builds without -march flags and the tests
// skip, saying why, on a CPU without the instructions.
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <gtest/gtest.h>

#include <cfenv>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#define EBLA_TEST_X86 1
#include <immintrin.h>
#else
#define EBLA_TEST_X86 0
#endif

// The AVX-512 FP16 intrinsics arrived in GCC 12 and Clang 14.
#if EBLA_TEST_X86 && defined(__has_include)
#if __has_include(<avx512fp16intrin.h>) && (defined(__clang__) || __GNUC__ >= 12)
#define EBLA_TEST_FP16_INTRINSICS 1
#endif
#endif
#ifndef EBLA_TEST_FP16_INTRINSICS
#define EBLA_TEST_FP16_INTRINSICS 0
#endif

namespace {

using ebla::Rounding;

// ---------------------------------------------------------------------------
// Bookkeeping shared by all comparisons

std::uint64_t bits_of(double x) { return ebla::bit_cast<std::uint64_t>(x); }
std::uint32_t bits_of(float x) { return ebla::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t bits) { return ebla::bit_cast<float>(bits); }

/// Same bit pattern, or both NaN (payloads and quiet bits differ between
/// implementations and carry no meaning here).
bool same_value(double expected, double actual) {
  return bits_of(expected) == bits_of(actual) || (expected != expected && actual != actual);
}

std::string hex(std::uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

/// A bit pattern and the format it encodes, for mismatch messages.
struct Encoded {
  std::uint64_t bits;
  int hex_digits;
  const char* format;
  std::string text() const { return hex(bits, hex_digits) + " (" + format + ")"; }
};

/// Counts of one comparison, with the first few mismatches spelled out.
struct Tally {
  static constexpr std::size_t max_reported = 8;
  std::uint64_t total = 0;     ///< inputs generated
  std::uint64_t compared = 0;  ///< inputs whose two results were compared
  std::uint64_t mismatches = 0;
  std::vector<std::string> first;

  /// Kept out of line and cheap to call: it runs only on a mismatch, and formats
  /// just the first few (a broken round_to may disagree on every input).
  __attribute__((noinline, cold)) void mismatch(Encoded input, Rounding mode, Encoded hardware,
                                                double expected, double actual) {
    ++mismatches;
    if (first.size() >= max_reported) return;
    first.push_back("input " + input.text() + ", mode " + ebla::to_string(mode) +
                    ": hardware " + hardware.text() + " = double " + hex(bits_of(expected), 16) +
                    ", round_to " + hex(bits_of(actual), 16));
  }

  void add(const Tally& other) {
    total += other.total;
    compared += other.compared;
    mismatches += other.mismatches;
    for (const auto& s : other.first)
      if (first.size() < max_reported) first.push_back(s);
  }

  std::string summary() const {
    std::string s = std::to_string(mismatches) + " mismatches in " + std::to_string(compared) +
                    " compared of " + std::to_string(total) + " inputs";
    for (const auto& m : first) s += "\n  " + m;
    return s;
  }

  double compared_fraction() const {
    return total == 0 ? 0.0 : static_cast<double>(compared) / static_cast<double>(total);
  }
};

/// Prints the counts and records them in the XML report, then asserts that nothing
/// differed and that almost every input was really compared (a comparison whose
/// filter rejected everything must not pass silently).
void expect_clean(const std::string& name, const Tally& t, double min_fraction) {
  std::cout << "[ counts   ] " << name << ": " << t.compared << " compared of " << t.total
            << " inputs, " << t.mismatches << " mismatches\n";
  ::testing::Test::RecordProperty(name + "_total", std::to_string(t.total));
  ::testing::Test::RecordProperty(name + "_compared", std::to_string(t.compared));
  ::testing::Test::RecordProperty(name + "_mismatches", std::to_string(t.mismatches));
  EXPECT_EQ(t.mismatches, 0u) << name << ": " << t.summary();
  EXPECT_GT(t.total, 0u) << name;
  EXPECT_GE(t.compared_fraction(), min_fraction) << name << ": " << t.summary();
}

/// Wall-clock seconds since construction, for the log.
struct Stopwatch {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

std::mt19937_64 make_rng() { return std::mt19937_64(20240531); }

/// A random double: random sign and fraction, exponent uniform in [lo, hi].
double random_double(std::mt19937_64& rng, int lo, int hi) {
  const std::uint64_t r = rng();
  const int e = lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  const double m = ebla::bit_cast<double>((r & ebla::binary64::fraction_mask) |
                                          0x3ff0000000000000ull);  // in [1, 2)
  const double x = std::ldexp(m, e);
  return (r >> 63) != 0 ? -x : x;
}

/// A value and its neighbours one and two binary64 ulps away, both signs.
void push_with_neighbours(std::vector<double>& v, double x) {
  const double inf = std::numeric_limits<double>::infinity();
  const double down = std::nextafter(x, -inf);
  const double up = std::nextafter(x, inf);
  for (double y : {x, down, up, std::nextafter(down, -inf), std::nextafter(up, inf)}) {
    v.push_back(y);
    v.push_back(-y);
  }
}

/// All bit patterns of binary32 values whose exponent field lies in [field_lo,
/// field_hi), with the given sign bit.
struct Binades {
  std::uint32_t first;
  std::uint32_t last;  ///< one past the end
};
Binades binades(std::uint32_t sign, std::uint32_t field_lo, std::uint32_t field_hi) {
  return {sign | (field_lo << 23), sign | (field_hi << 23)};
}

#if EBLA_TEST_X86

// ---------------------------------------------------------------------------
// Decoders of the narrow results (our own, so that the hardware under test does
// not also decode its own answers)

/// The exact value of a binary16 encoding: 1 sign, 5 exponent, 10 fraction bits.
double decode_binary16(std::uint16_t h) {
  const int field = (h >> 10) & 0x1f;
  const int fraction = h & 0x3ff;
  double magnitude;
  if (field == 0x1f)
    magnitude = fraction != 0 ? std::numeric_limits<double>::quiet_NaN()
                              : std::numeric_limits<double>::infinity();
  else if (field == 0)
    magnitude = std::ldexp(fraction, -24);  // subnormal: fraction 2^(-14 - 10)
  else
    magnitude = std::ldexp(fraction + 1024, field - 25);  // 1.fraction 2^(field - 15)
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

/// decode_binary16 of every pattern: the hot loops look results up.
const std::vector<double>& binary16_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) t[h] = decode_binary16(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table;
}

/// A bfloat16 encoding is the top half of a binary32 one.
double decode_bfloat16(std::uint16_t b) {
  return static_cast<double>(float_of(static_cast<std::uint32_t>(b) << 16));
}

/// Clears MXCSR's flush-to-zero and denormals-are-zero bits for the scope, so that
/// the conversions are the IEEE ones whatever some library set; restores them after.
/// (Threads started inside the scope inherit the setting.)
class IeeeMxcsr {
 public:
  IeeeMxcsr() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ & ~(ftz | daz)); }
  ~IeeeMxcsr() { _mm_setcsr(saved_); }
  IeeeMxcsr(const IeeeMxcsr&) = delete;
  IeeeMxcsr& operator=(const IeeeMxcsr&) = delete;

 private:
  static constexpr unsigned ftz = 1u << 15;
  static constexpr unsigned daz = 1u << 6;
  unsigned saved_;
};

// ---------------------------------------------------------------------------
// 1. binary16 vs F16C (vcvtps2ph)

bool has_f16c() { return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c"); }

/// Converts n binary32 values to binary16, 8 per instruction, rounding as `imm` says.
template <int imm>
__attribute__((target("avx,f16c"))) void f16c_convert(const float* in, std::uint16_t* out,
                                                      std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), imm));
  if (i == n) return;
  float tail_in[8] = {};
  std::uint16_t tail_out[8];
  std::memcpy(tail_in, in + i, (n - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tail_out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(tail_in), imm));
  std::memcpy(out + i, tail_out, (n - i) * sizeof(std::uint16_t));
}

/// The exact binary32 value of a binary16 pattern, by the F16C instruction.
__attribute__((target("avx,f16c"))) float f16c_to_float(std::uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/// Whether round_to agrees with the F16C result for input i.
template <Rounding mode>
bool binary16_agrees(const float* in, const std::uint16_t* hardware, std::size_t i,
                     const double* table, const ebla::Format& f) {
  return same_value(table[hardware[i]], ebla::round_to<mode>(static_cast<double>(in[i]), f));
}

/// Compares n binary32 inputs against their F16C conversions. A tight counting pass
/// first (a local copy of the format keeps its fields in registers); the
/// mismatches are described in a second pass, which normally never runs.
template <Rounding mode>
void compare_binary16(const float* in, const std::uint16_t* hardware, std::size_t n,
                      const ebla::Format& format, Tally& tally) {
  const ebla::Format f = format;
  const double* table = binary16_table().data();
  std::size_t agree = 0;
  for (std::size_t i = 0; i < n; ++i) agree += binary16_agrees<mode>(in, hardware, i, table, f);
  tally.total += n;
  tally.compared += n;
  if (agree == n) return;
  for (std::size_t i = 0; i < n; ++i)
    if (!binary16_agrees<mode>(in, hardware, i, table, f))
      tally.mismatch({bits_of(in[i]), 8, "binary32"}, mode, {hardware[i], 4, "binary16"},
                     table[hardware[i]],
                     ebla::round_to<mode>(static_cast<double>(in[i]), f));
}

/// Converts and compares a batch of binary32 inputs in one mode.
template <Rounding mode, int imm>
void f16c_batch(const std::vector<float>& in, const ebla::Format& f, Tally& tally) {
  std::vector<std::uint16_t> out(in.size());
  f16c_convert<imm>(in.data(), out.data(), in.size());
  compare_binary16<mode>(in.data(), out.data(), in.size(), f, tally);
}

/// Every binary32 pattern in [first, last), a block at a time.
template <Rounding mode, int imm>
void f16c_range(Binades range, const ebla::Format& f, Tally& tally) {
  constexpr std::uint32_t block = 1u << 14;
  std::vector<float> in(block);
  std::vector<std::uint16_t> out(block);
  for (std::uint32_t start = range.first; start < range.last; start += block) {
    const std::uint32_t n = range.last - start < block ? range.last - start : block;
    for (std::uint32_t i = 0; i < n; ++i) in[i] = float_of(start + i);
    f16c_convert<imm>(in.data(), out.data(), n);
    compare_binary16<mode>(in.data(), out.data(), n, f, tally);
  }
}

/// Inputs outside the exhaustive range: signed zeros, infinities, NaNs (quiet and
/// signalling), the largest floats, every power of two and its neighbours, and a
/// strided sweep over all 2^32 patterns.
std::vector<float> binary16_special_inputs() {
  std::vector<std::uint32_t> bits = {0x00000000, 0x7f800000, 0x7fc00000, 0x7f800001,
                                     0x7fffffff, 0x7fa00000, 0x00000001, 0x007fffff,
                                     0x00800000};
  for (std::uint32_t k = 1; k <= 64; ++k) bits.push_back(0x7f800000 - k);  // up to FLT_MAX
  for (std::uint32_t field = 1; field < 255; ++field)
    for (std::uint32_t frac : {0u, 1u, 0x7fffffu, 0x400000u, 0x2000u, 0x1000u, 0x1001u})
      bits.push_back((field << 23) | frac);
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099)
    bits.push_back(static_cast<std::uint32_t>(b));
  std::vector<float> in;
  for (std::uint32_t b : bits) {
    in.push_back(float_of(b));
    in.push_back(float_of(b ^ 0x80000000u));
  }
  return in;
}

template <Rounding mode, int imm>
Tally f16c_mode(const ebla::Format& f) {
  // [2^-27, 2^17): exponent fields 100..143 (bias 127). round_to, not the
  // instruction, is nearly all the cost, so the two signs run on two threads.
  Tally positive, negative;
  std::thread worker([&] { f16c_range<mode, imm>(binades(0, 100, 144), f, positive); });
  f16c_range<mode, imm>(binades(0x80000000u, 100, 144), f, negative);
  worker.join();
  f16c_batch<mode, imm>(binary16_special_inputs(), f, positive);
  positive.add(negative);
  return positive;
}

TEST(RoundingHardware, Binary16DecoderMatchesF16c) {
  if (!has_f16c()) GTEST_SKIP() << "this CPU has no F16C (or the OS does not enable AVX)";
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double ours = decode_binary16(static_cast<std::uint16_t>(h));
    const double theirs = static_cast<double>(f16c_to_float(static_cast<std::uint16_t>(h)));
    ASSERT_TRUE(same_value(theirs, ours)) << "binary16 pattern " << hex(h, 4);
  }
}

TEST(RoundingHardware, Binary16MatchesF16c) {
  if (!has_f16c()) GTEST_SKIP() << "this CPU has no F16C (or the OS does not enable AVX)";
  const IeeeMxcsr ieee;
  const ebla::Format f = ebla::formats::binary16();
  constexpr int no_exc = _MM_FROUND_NO_EXC;
  const Stopwatch clock;
  Tally all;
  // The immediate selects the rounding (bit 2 clear: not MXCSR's), so no global state.
  all.add(f16c_mode<Rounding::nearest_even, _MM_FROUND_TO_NEAREST_INT | no_exc>(f));
  all.add(f16c_mode<Rounding::downward, _MM_FROUND_TO_NEG_INF | no_exc>(f));
  all.add(f16c_mode<Rounding::upward, _MM_FROUND_TO_POS_INF | no_exc>(f));
  all.add(f16c_mode<Rounding::toward_zero, _MM_FROUND_TO_ZERO | no_exc>(f));
  std::cout << "[ time     ] binary16 vs F16C: " << clock.seconds() << " s\n";
  expect_clean("binary16_f16c", all, 1.0);
}

// ---------------------------------------------------------------------------
// 2. binary16 vs AVX-512 FP16 (vcvtsd2sh: binary64 input, no binary32 step)

#if EBLA_TEST_FP16_INTRINSICS

/// Doubles for binary16: every binary16 value, every midpoint between neighbours
/// (ties), each +-1 and +-2 ulps of binary64, the overflow threshold 65520, the
/// underflow points, specials and random values across and around the range.
std::vector<double> binary16_double_inputs(std::size_t random_count) {
  std::vector<double> v;
  const std::vector<double>& table = binary16_table();
  for (std::uint32_t h = 0; h < 0x7c00; ++h) push_with_neighbours(v, table[h]);
  for (std::uint32_t h = 0; h < 0x7bff; ++h)
    push_with_neighbours(v, (table[h] + table[h + 1]) / 2);  // a tie; exact: 12 bits
  for (double x : {65504.0, 65520.0, 65536.0, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26, 0x1p-14,
                   0x1.ffcp-15, 1e300, 0x1p-1074})
    push_with_neighbours(v, x);
  for (double x : {0.0, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), DBL_MAX}) {
    v.push_back(x);
    v.push_back(-x);
  }
  auto rng = make_rng();
  for (std::size_t i = 0; i < random_count; ++i) v.push_back(random_double(rng, -30, 17));
  for (std::size_t i = 0; i < random_count / 8; ++i)
    v.push_back(ebla::bit_cast<double>(rng()));  // any pattern, NaNs included
  return v;
}

bool has_avx512fp16() {
  return __builtin_cpu_supports("avx512fp16") && __builtin_cpu_supports("avx512vl");
}

/// One binary64 -> binary16 conversion with embedded rounding `imm`. (GCC 12 puts
/// _mm_castph_si128 under avx512vl as well.)
template <int imm>
__attribute__((target("avx512fp16,avx512vl"))) std::uint16_t fp16_convert(double x) {
  const __m128h h = _mm_cvt_roundsd_sh(_mm_setzero_ph(), _mm_set_sd(x), imm);
  return static_cast<std::uint16_t>(_mm_extract_epi16(_mm_castph_si128(h), 0));
}

template <Rounding mode, int imm>
void fp16_mode(const std::vector<double>& in, const ebla::Format& f, Tally& tally) {
  const std::vector<double>& table = binary16_table();
  for (double x : in) {
    const std::uint16_t h = fp16_convert<imm>(x);
    const double expected = table[h];
    const double actual = ebla::round_to<mode>(x, f);
    if (!same_value(expected, actual))
      tally.mismatch({bits_of(x), 16, "binary64"}, mode, {h, 4, "binary16"}, expected, actual);
  }
  tally.total += in.size();
  tally.compared += in.size();
}

TEST(RoundingHardware, Binary16MatchesAvx512Fp16) {
  if (!has_avx512fp16()) GTEST_SKIP() << "this CPU has no AVX-512 FP16 (vcvtsd2sh)";
  const IeeeMxcsr ieee;
  const ebla::Format f = ebla::formats::binary16();
  const std::vector<double> in = binary16_double_inputs(2000000);
  constexpr int no_exc = _MM_FROUND_NO_EXC;
  const Stopwatch clock;
  Tally all;
  fp16_mode<Rounding::nearest_even, _MM_FROUND_TO_NEAREST_INT | no_exc>(in, f, all);
  fp16_mode<Rounding::downward, _MM_FROUND_TO_NEG_INF | no_exc>(in, f, all);
  fp16_mode<Rounding::upward, _MM_FROUND_TO_POS_INF | no_exc>(in, f, all);
  fp16_mode<Rounding::toward_zero, _MM_FROUND_TO_ZERO | no_exc>(in, f, all);
  std::cout << "[ time     ] binary16 vs AVX-512 FP16: " << clock.seconds() << " s\n";
  expect_clean("binary16_avx512fp16", all, 1.0);
}

#else

TEST(RoundingHardware, Binary16MatchesAvx512Fp16) {
  GTEST_SKIP() << "this compiler has no AVX-512 FP16 intrinsics (needs GCC >= 12 or Clang >= 14)";
}

#endif  // EBLA_TEST_FP16_INTRINSICS

// ---------------------------------------------------------------------------
// 3. bfloat16 vs AVX-512 BF16 (vcvtneps2bf16)
//
// The instruction rounds to nearest even, ignoring MXCSR, but it is not a full
// IEEE conversion: it treats subnormal inputs as zero (DAZ), flushes subnormal
// results to zero (FTZ) and quiets NaNs. round_to keeps subnormals, so only
// inputs that are normal binary32 numbers whose round_to result is a normal
// bfloat16 or +-inf (overflow) are compared; the others are counted as skipped.

bool has_avx512bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/// Converts n binary32 values to bfloat16, 16 per instruction.
__attribute__((target("avx512f,avx512bf16"))) void bf16_convert(const float* in,
                                                                 std::uint16_t* out,
                                                                 std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    float chunk[16] = {};
    const std::size_t m = n - i < 16 ? n - i : 16;
    std::memcpy(chunk, in + i, m * sizeof(float));
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(chunk));
    std::uint16_t converted[16];
    std::memcpy(converted, &r, sizeof converted);
    std::memcpy(out + i, converted, m * sizeof(std::uint16_t));
  }
}

/// Whether the instruction's DAZ/FTZ simplifications leave this comparison exact.
bool bf16_comparable(float x, double rounded) {
  const std::uint32_t field = (bits_of(x) >> 23) & 0xff;
  const bool normal_input = field != 0 && field != 0xff;
  const double a = std::fabs(rounded);
  return normal_input && (a >= 0x1p-126);  // a normal result, or inf
}

void compare_bfloat16(const float* in, const std::uint16_t* hardware, std::size_t n,
                      const ebla::Format& f, Tally& tally) {
  for (std::size_t i = 0; i < n; ++i) {
    const double actual = ebla::round_to<Rounding::nearest_even>(static_cast<double>(in[i]), f);
    if (!bf16_comparable(in[i], actual)) continue;
    ++tally.compared;
    const double expected = decode_bfloat16(hardware[i]);
    if (!same_value(expected, actual))
      tally.mismatch({bits_of(in[i]), 8, "binary32"}, Rounding::nearest_even,
                     {hardware[i], 4, "bfloat16"}, expected, actual);
  }
  tally.total += n;
}

/// Converts and compares binary32 patterns produced by next(), a block at a time.
template <class Next>
void bf16_stream(std::uint64_t count, Next next, const ebla::Format& f, Tally& tally) {
  constexpr std::size_t block = 1u << 14;
  std::vector<float> in(block);
  std::vector<std::uint16_t> out(block);
  while (count > 0) {
    const std::size_t n = count < block ? static_cast<std::size_t>(count) : block;
    for (std::size_t i = 0; i < n; ++i) in[i] = float_of(next());
    bf16_convert(in.data(), out.data(), n);
    compare_bfloat16(in.data(), out.data(), n, f, tally);
    count -= n;
  }
}

void bf16_binades(Binades range, const ebla::Format& f, Tally& tally) {
  std::uint32_t b = range.first;
  bf16_stream(range.last - range.first, [&b] { return b++; }, f, tally);
}

/// Every stride-th bit pattern of all 2^32 (normal or not: the filter decides).
void bf16_strided(std::uint32_t stride, const ebla::Format& f, Tally& tally) {
  std::uint64_t b = 0;
  const std::uint64_t count = ((std::uint64_t{1} << 32) + stride - 1) / stride;
  bf16_stream(count, [&b, stride] {
    const auto r = static_cast<std::uint32_t>(b);
    b += stride;
    return r;
  }, f, tally);
}

void bf16_random(std::uint64_t count, const ebla::Format& f, Tally& tally) {
  auto rng = make_rng();
  bf16_stream(count, [&rng] { return static_cast<std::uint32_t>(rng()); }, f, tally);
}

TEST(RoundingHardware, Bfloat16MatchesAvx512Bf16) {
  if (!has_avx512bf16()) GTEST_SKIP() << "this CPU has no AVX-512 BF16 (vcvtneps2bf16)";
  const ebla::Format f = ebla::formats::bfloat16();
  const Stopwatch clock;
  Tally all;
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    bf16_binades(binades(sign, 127, 128), f, all);  // [1, 2)
    bf16_binades(binades(sign, 253, 255), f, all);  // [2^126, 2^128), overflow to inf
    bf16_binades(binades(sign, 1, 3), f, all);      // [2^-126, 2^-124), the bottom
  }
  bf16_strided(97, f, all);
  bf16_random(4000000, f, all);
  std::cout << "[ time     ] bfloat16 vs AVX-512 BF16: " << clock.seconds() << " s\n";
  // Only patterns with exponent field 0 or 255 are skipped: under 1% of the sweeps.
  expect_clean("bfloat16_avx512bf16", all, 0.98);
}

#endif  // EBLA_TEST_X86

// ---------------------------------------------------------------------------
// 4. binary32 vs the CPU's binary64 -> binary32 conversion (on x86 cvtsd2ss or
//    cvtpd2ps, which round as MXCSR says; fesetround sets MXCSR).

/// Converts with the current rounding direction set to fe_mode. GCC 12 ignores
/// #pragma STDC FENV_ACCESS (with a warning), so -frounding-math is what stops it
/// assuming round to nearest here; the inputs are run-time data, so nothing can be
/// constant-folded, and fesetround is an opaque call the loads and stores cannot
/// cross. noinline keeps the attribute in force.
__attribute__((noinline, optimize("rounding-math"))) void convert_to_float(const double* in,
                                                                           float* out,
                                                                           std::size_t n,
                                                                           int fe_mode) {
  const int saved = std::fegetround();
  std::fesetround(fe_mode);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
  std::fesetround(saved);
}

struct FeMode {
  Rounding mode;
  int fe;
};
const FeMode fe_modes[] = {{Rounding::nearest_even, FE_TONEAREST},
                           {Rounding::downward, FE_DOWNWARD},
                           {Rounding::upward, FE_UPWARD},
                           {Rounding::toward_zero, FE_TOWARDZERO}};

template <Rounding mode>
void compare_binary32(const std::vector<double>& in, const std::vector<float>& hardware,
                      const ebla::Format& f, Tally& tally) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double expected = static_cast<double>(hardware[i]);
    const double actual = ebla::round_to<mode>(in[i], f);
    if (!same_value(expected, actual))
      tally.mismatch({bits_of(in[i]), 16, "binary64"}, mode, {bits_of(hardware[i]), 8, "binary32"},
                     expected, actual);
  }
  tally.total += in.size();
  tally.compared += in.size();
}

void binary32_mode(const FeMode& m, const std::vector<double>& in, const ebla::Format& f,
                   Tally& tally) {
  std::vector<float> out(in.size());
  convert_to_float(in.data(), out.data(), in.size(), m.fe);
  ebla::dispatch_rounding(m.mode, [&](auto mode) {
    compare_binary32<decltype(mode)::value>(in, out, f, tally);
  });
}

/// A binary32 value as a double, its successor's midpoint (a tie) and the
/// binary64 neighbours of both, both signs.
void push_float_adversaries(std::vector<double>& v, std::uint32_t b) {
  const double x = static_cast<double>(float_of(b));
  const double next = static_cast<double>(float_of(b + 1));
  push_with_neighbours(v, x);
  push_with_neighbours(v, x + (next - x) / 2);  // exact: 25 significant bits
}

/// Random doubles over binary32's range and beyond (2^-160 .. 2^130), and the
/// adversarial ones: ties and their neighbours for random binary32 values and at
/// every power of two, the overflow threshold FLT_MAX + ulp/2, the underflow
/// threshold FLT_TRUE_MIN/2, and specials.
std::vector<double> binary32_inputs(std::size_t random_count, std::size_t tie_count) {
  std::vector<double> v;
  auto rng = make_rng();
  for (std::size_t i = 0; i < random_count; ++i) v.push_back(random_double(rng, -160, 130));
  for (std::size_t i = 0; i < tie_count; ++i) {
    const auto b = static_cast<std::uint32_t>(rng()) & 0x7fffffffu;
    if (b < 0x7f7fffffu) push_float_adversaries(v, b);  // finite with a finite successor
  }
  for (std::uint32_t field = 0; field < 255; ++field)
    for (std::uint32_t frac : {0u, 1u, 0x7ffffeu}) push_float_adversaries(v, (field << 23) | frac);
  for (double x : {static_cast<double>(FLT_MAX), 0x1.ffffffp127 /* FLT_MAX + ulp/2 */, 0x1p128,
                   0x1p-150 /* FLT_TRUE_MIN/2 */, 0x1p-149, 0x1.8p-149, 0x1p-151, 0x1p-1074,
                   0x1p-1022, DBL_MAX, static_cast<double>(FLT_MIN)})
    push_with_neighbours(v, x);
  for (double x : {0.0, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    v.push_back(x);
    v.push_back(-x);
  }
  return v;
}

TEST(RoundingHardware, FesetroundChangesConversion) {
  // If the rounding mode did not reach the conversion, every directed-mode
  // comparison below would be against round to nearest.
  volatile double one = 1.0;
  const double third = one / 3.0;
  float up = 0, down = 0;
  convert_to_float(&third, &up, 1, FE_UPWARD);
  convert_to_float(&third, &down, 1, FE_DOWNWARD);
  EXPECT_NE(bits_of(up), bits_of(down));
  EXPECT_EQ(bits_of(up), bits_of(down) + 1);
}

TEST(RoundingHardware, Binary32MatchesCpuConversion) {
#if EBLA_TEST_X86
  const IeeeMxcsr ieee;
#endif
  const ebla::Format f = ebla::formats::binary32();
  const std::vector<double> in = binary32_inputs(4000000, 300000);
  const Stopwatch clock;
  Tally all;
  for (const FeMode& m : fe_modes) binary32_mode(m, in, f, all);
  std::cout << "[ time     ] binary32 vs CPU conversion: " << clock.seconds() << " s\n";
  expect_clean("binary32_cpu", all, 1.0);
}

// ---------------------------------------------------------------------------
// No comparison may pass by skipping: on cheap samples, check that the share of
// inputs really compared is high for each instruction this CPU has.

TEST(RoundingHardware, ComparedFractionIsLarge) {
  Tally b32;
  {
#if EBLA_TEST_X86
    const IeeeMxcsr ieee;
#endif
    binary32_mode(fe_modes[0], binary32_inputs(100000, 10000), ebla::formats::binary32(), b32);
  }
  EXPECT_GE(b32.compared_fraction(), 0.99) << "binary32: " << b32.summary();
  std::cout << "[ counts   ] binary32 sample: " << b32.compared << " of " << b32.total << "\n";
#if EBLA_TEST_X86
  if (has_f16c()) {
    Tally h;
    std::vector<float> in;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65537)
      in.push_back(float_of(static_cast<std::uint32_t>(b)));
    f16c_batch<Rounding::nearest_even, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC>(
        in, ebla::formats::binary16(), h);
    EXPECT_GE(h.compared_fraction(), 0.99) << "binary16/F16C: " << h.summary();
    std::cout << "[ counts   ] binary16/F16C sample: " << h.compared << " of " << h.total << "\n";
  }
  if (has_avx512bf16()) {
    Tally b;
    bf16_strided(4099, ebla::formats::bfloat16(), b);
    // every pattern except exponent fields 0 and 255: 254/256 of them
    EXPECT_GE(b.compared_fraction(), 0.98) << "bfloat16/BF16: " << b.summary();
    std::cout << "[ counts   ] bfloat16/BF16 sample: " << b.compared << " of " << b.total << "\n";
  }
#endif
}

}  // namespace

#include <ebla/core/error.hpp>
#include <ebla/kernels/quantize_host.hpp>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace ebla::detail {

namespace {

// The loops are forced inline into each variant below, so that each is compiled for
// that variant's instruction set (round_to then vectorises with its 64-bit shifts).
template <Rounding mode>
[[gnu::always_inline]] inline void loop(const double* __restrict x, double* __restrict y,
                                        std::size_t n, const RoundingConstants c) {
  for (std::size_t i = 0; i < n; ++i) y[i] = round_to<mode>(x[i], c);
}

template <Rounding mode>
[[gnu::always_inline]] inline void loop_in_place(double* y, std::size_t n, const RoundingConstants c) {
  for (std::size_t i = 0; i < n; ++i) y[i] = round_to<mode>(y[i], c);
}

template <Rounding mode>
[[gnu::always_inline]] inline void run(const double* x, double* y, std::size_t n,
                                       const RoundingConstants& c) {
  if (x == y)
    loop_in_place<mode>(y, n, c);
  else
    loop<mode>(x, y, n, c);
}

[[gnu::always_inline]] inline void run_mode(const double* x, double* y, std::size_t n,
                                            const RoundingConstants& c, Rounding mode) {
  switch (mode) {
    case Rounding::nearest_even: run<Rounding::nearest_even>(x, y, n, c); return;
    case Rounding::toward_zero: run<Rounding::toward_zero>(x, y, n, c); return;
    case Rounding::upward: run<Rounding::upward>(x, y, n, c); return;
    case Rounding::downward: run<Rounding::downward>(x, y, n, c); return;
    case Rounding::stochastic: break;
  }
  throw_invalid("ebla::detail::quantize_host", "stochastic rounding has no host specialisation");
}

void run_baseline(const double* x, double* y, std::size_t n, const RoundingConstants& c, Rounding mode) {
  run_mode(x, y, n, c, mode);
}

#if defined(__x86_64__) && defined(__GNUC__)
constexpr bool x86 = true;

__attribute__((target("avx2,bmi,bmi2,fma"))) void run_avx2(const double* x, double* y, std::size_t n,
                                                           const RoundingConstants& c, Rounding mode) {
  run_mode(x, y, n, c, mode);
}

__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma"))) void run_avx512(
    const double* x, double* y, std::size_t n, const RoundingConstants& c, Rounding mode) {
  run_mode(x, y, n, c, mode);
}

// A bit of CPUID's leaf (subleaf 0): register 0-3 for EAX, EBX, ECX, EDX. F16C and
// AVX512-FP16 are read here, not by __builtin_cpu_supports, which clang 14 does not
// give those names.
bool cpuid_bit(unsigned leaf, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf, 0, &r[0], &r[1], &r[2], &r[3])) return false;  // leaf beyond the CPU's
  return ((r[reg] >> bit) & 1u) != 0;
}

HostFeatures read_features() {
  HostFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  f.f16c = __builtin_cpu_supports("avx") && cpuid_bit(1, 2, 29);  // CPUID.1:ECX.F16C[bit 29]
  f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  f.avx512_fp16 = f.avx512 && cpuid_bit(7, 3, 23);  // CPUID.(EAX=7,ECX=0):EDX.AVX512-FP16[bit 23]
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  return f;
}
#else
HostFeatures read_features() { return {}; }
constexpr bool x86 = false;
void run_avx2(const double* x, double* y, std::size_t n, const RoundingConstants& c, Rounding mode) {
  run_mode(x, y, n, c, mode);
}
void run_avx512(const double* x, double* y, std::size_t n, const RoundingConstants& c, Rounding mode) {
  run_mode(x, y, n, c, mode);
}
#endif
bool cpu_has_avx2() { return host_features().avx2; }
bool cpu_has_avx512() { return host_features().avx512; }

}  // namespace

const HostFeatures& host_features() {
  static const HostFeatures f = read_features();
  return f;
}

std::vector<HostIsa> supported_host_isas() {
  std::vector<HostIsa> isas = {HostIsa::baseline};
  if (x86 && cpu_has_avx2()) isas.push_back(HostIsa::avx2);
  if (x86 && cpu_has_avx512()) isas.push_back(HostIsa::avx512);
  return isas;
}

HostIsa best_host_isa() {
  static const HostIsa best = supported_host_isas().back();
  return best;
}

const char* to_string(HostIsa isa) {
  switch (isa) {
    case HostIsa::baseline: return "baseline";
    case HostIsa::avx2: return "avx2";
    case HostIsa::avx512: return "avx512";
  }
  return "?";
}

void quantize_host(const double* x, double* y, std::size_t n, const RoundingConstants& c,
                   Rounding mode, HostIsa isa) {
  switch (isa) {
    case HostIsa::avx512: run_avx512(x, y, n, c, mode); return;
    case HostIsa::avx2: run_avx2(x, y, n, c, mode); return;
    case HostIsa::baseline: run_baseline(x, y, n, c, mode); return;
  }
}

}  // namespace ebla::detail

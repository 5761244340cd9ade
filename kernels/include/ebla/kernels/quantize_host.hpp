// Host specialisation of quantize: contiguous arrays in host memory, rounded by a loop
// compiled for several instruction sets (AVX-512, AVX2, baseline x86-64 or any other
// CPU) and chosen at run time from what the CPU supports. The loop body is the same
// round_to as the generic Kokkos kernel; tests compare every variant with it.
#pragma once

#include <ebla/core/rounding.hpp>

#include <cstddef>
#include <vector>

namespace ebla::detail {

/// The instruction sets quantize_host is compiled for.
enum class HostIsa { baseline, avx2, avx512 };

/// What this CPU runs, read once from cpuid: the variants' instruction sets and the
/// conversions some kernels use within them (F16C's vcvtph2ps/vcvtps2ph beside AVX2).
struct HostFeatures {
  bool avx2 = false;    ///< AVX2, BMI2 (HostIsa::avx2)
  bool f16c = false;    ///< F16C
  bool avx512 = false;  ///< AVX-512 F, VL, DQ, BW (HostIsa::avx512)
  bool avx512_fp16 = false;
  bool avx512_bf16 = false;
};
const HostFeatures& host_features();

/// The best variant this CPU can run (cpuid, checked once).
HostIsa best_host_isa();
/// Every variant this CPU can run, baseline first.
std::vector<HostIsa> supported_host_isas();
const char* to_string(HostIsa isa);

/// y[i] = round_to(x[i], c, mode) for i < n, with the variant `isa` (which this CPU must
/// support). x and y are identical or do not overlap. Deterministic modes only.
void quantize_host(const double* x, double* y, std::size_t n, const RoundingConstants& c,
                   Rounding mode, HostIsa isa);

}  // namespace ebla::detail

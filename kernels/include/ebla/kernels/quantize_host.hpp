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

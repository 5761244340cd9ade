// Host specialisation of qdot for contiguous arrays in host memory: the arithmetic of
// the generic kernels of qdot_views.hpp (the AVX-512 variant rounds by Veltkamp's
// splitting, so a tie may round the other way), in loops compiled for several
// instruction sets (see quantize_host.hpp); `isa` defaults to the best this CPU runs.
#pragma once

#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <cstddef>

namespace ebla::detail {

QdotPlan qdot_select_host(const double* x, const double* y, std::size_t n, const QdotOptions& options,
                          HostIsa isa = best_host_isa());
QdotPlan qdot_select_host(const float* x, const float* y, std::size_t n, const QdotOptions& options,
                          HostIsa isa = best_host_isa());
/// count_levels = false only for the very data the plan was selected on (qdot itself):
/// the components per level are then the plan's, and the kernel skips counting them and
/// checking that each bin lies inside the plan (other data would be computed wrongly).
QdotResult qdot_compute_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan,
                             HostIsa isa = best_host_isa(), bool count_levels = true);
QdotResult qdot_compute_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan,
                             HostIsa isa = best_host_isa(), bool count_levels = true);


/// The pieces of the two phases, for callers that combine them across processes (ebla::mpi):
/// the exponent histogram of x and y into out[0, qdot_hist_size) (overwritten), and the
/// raw accumulation of the products under `plan` (counting levels; no check of the plan's
/// length against n), which finish_result turns into a value and a bound. float input is
/// read as the serial qdot on float arrays reads it: widened (exactly) to double.
void qdot_histogram_host(const double* x, const double* y, std::size_t n, std::int64_t* out,
                         HostIsa isa = best_host_isa());
void qdot_histogram_host(const float* x, const float* y, std::size_t n, std::int64_t* out,
                         HostIsa isa = best_host_isa());
QdotAccum qdot_accumulate_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa = best_host_isa());
QdotAccum qdot_accumulate_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa = best_host_isa());

}  // namespace ebla::detail

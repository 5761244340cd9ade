// Host specialisation of qdot for contiguous arrays in host memory: the same arithmetic
// as the generic kernels of qdot_views.hpp, in loops compiled for several instruction
// sets and chosen at run time (see quantize_host.hpp).
#pragma once

#include <ebla/kernels/qdot.hpp>

#include <cstddef>

namespace ebla::detail {

QdotPlan qdot_select_host(const double* x, const double* y, std::size_t n, const QdotOptions& options);
QdotPlan qdot_select_host(const float* x, const float* y, std::size_t n, const QdotOptions& options);
QdotResult qdot_compute_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan);
QdotResult qdot_compute_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan);

}  // namespace ebla::detail

#include <ebla/kernels/qdot_host.hpp>

namespace ebla::detail {

namespace {

template <class T>
using HostArray = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace

QdotPlan qdot_select_host(const double* x, const double* y, std::size_t n, const QdotOptions& options) {
  return qdot_select_kokkos(HostArray<double>(x, n), HostArray<double>(y, n), options);
}
QdotPlan qdot_select_host(const float* x, const float* y, std::size_t n, const QdotOptions& options) {
  return qdot_select_kokkos(HostArray<float>(x, n), HostArray<float>(y, n), options);
}
QdotResult qdot_compute_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan) {
  return qdot_compute_kokkos(HostArray<double>(x, n), HostArray<double>(y, n), plan);
}
QdotResult qdot_compute_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan) {
  return qdot_compute_kokkos(HostArray<float>(x, n), HostArray<float>(y, n), plan);
}

}  // namespace ebla::detail

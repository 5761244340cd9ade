// The split matrix of SGS and IC(0) (preconditioner.hpp): its bytes, its copy to the device
// and the triangular sweep both preconditioners run over it.
#include "preconditioner_host.hpp"

#include <ebla/core/error.hpp>

#include <string>

namespace ebla {

double detail::SplitRows::bytes() const {
  const std::size_t entries = lower_col.extent(0) + upper_col.extent(0);
  const std::size_t starts = lower_ptr.extent(0) + upper_ptr.extent(0);
  return static_cast<double>(entries * (sizeof(double) + sizeof(int)) + starts * sizeof(std::size_t) +
                             diagonal.extent(0) * sizeof(double));
}

namespace detail {

SplitRows to_device(const HostSplit& s, const std::string& name) {
  return {device_copy(s.lower_ptr, name + " lower_ptr"), device_copy(s.upper_ptr, name + " upper_ptr"),
          device_copy(s.lower_col, name + " lower_col"), device_copy(s.upper_col, name + " upper_col"),
          device_copy(s.lower_val, name + " lower_val"), device_copy(s.upper_val, name + " upper_val"),
          device_copy(s.diagonal, name + " diagonal")};
}

void check_apply_sizes(const char* function, ConstVector r, Vector z, std::size_t n) {
  if (r.extent(0) != n || z.extent(0) != n)
    throw_invalid(function, "r has " + std::to_string(r.extent(0)) + " entries, z " + std::to_string(z.extent(0)) +
                                ", the preconditioner " + std::to_string(n) + " rows");
}

void triangular_sweep(const char* label, const std::vector<std::size_t>& start, const Kokkos::View<int*>& order,
                      const Kokkos::View<std::size_t*>& ptr, const Kokkos::View<int*>& col,
                      const Kokkos::View<double*>& val, const Kokkos::View<double*>& d, ConstVector in, Vector z) {
  grouped_rows(label, start, false, col.extent(0), KOKKOS_LAMBDA(const std::size_t k) {
    const std::size_t i = static_cast<std::size_t>(order(k));
    double s = in(i);
    for (std::size_t e = ptr(i); e < ptr(i + 1); ++e) s -= val(e) * z(col(e));  // in_i - sum_j t_ij z_j
    z(i) = s / d(i);                                                              // z_i
  });
}

}  // namespace detail

}  // namespace ebla

// What the preconditioners (preconditioner.hpp) share when they are built: A's arrays on
// the host, host vectors copied to the device, and a number written in full.
#pragma once

#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace ebla::detail {

// A's arrays on the host.
struct HostRows {
  Kokkos::View<const std::size_t*, Kokkos::HostSpace> ptr;
  Kokkos::View<const int*, Kokkos::HostSpace> col;
  Kokkos::View<const double*, Kokkos::HostSpace> val;
};

inline HostRows host_rows(const CsrMatrix& A) {
  return {Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map),
          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries),
          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values)};
}

// A host vector in a new View of the default memory space.
template <class T>
Kokkos::View<T*> device_copy(const std::vector<T>& v, const char* label) {
  Kokkos::View<T*> d(std::string(label), v.size());
  Kokkos::deep_copy(d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  return d;
}

// All 17 significant digits.
inline std::string number_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

// Six significant digits.
inline std::string short_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

}  // namespace ebla::detail

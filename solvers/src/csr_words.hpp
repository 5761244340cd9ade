// Reading a CSR matrix's entries from whichever words hold them (operators.hpp, CsrWords):
// value(k) and column(i, k), for the kernels of operators.cpp and cg_steps.cpp.
#pragma once

#include <ebla/core/storage.hpp>
#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>

namespace ebla::detail {

struct Values64 {
  Kokkos::View<const double*> v;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return v(k); }
};
struct Values32 {
  Kokkos::View<const float*> v;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return v(k); }
};
struct Values16 {  // bfloat16 bits
  Kokkos::View<const std::uint16_t*> v;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return bfloat16_value(v(k)); }
};
struct Columns {
  CsrMatrix::index_type::const_type c;
  KOKKOS_INLINE_FUNCTION std::size_t operator()(std::size_t, std::size_t k) const { return static_cast<std::size_t>(c(k)); }
};
struct Offsets {  // column - row in 16 bits
  Kokkos::View<const std::int16_t*> o;
  KOKKOS_INLINE_FUNCTION std::size_t operator()(std::size_t i, std::size_t k) const {
    return i + static_cast<std::size_t>(static_cast<std::ptrdiff_t>(o(k)));
  }
};

/// f(value) with the reader of A's values (A a csr RowsOf).
template <class F>
decltype(auto) with_values(const RowsOf& A, F&& f) {
  if (A.values16.extent(0)) return f(Values16{A.values16});
  if (A.values32.extent(0)) return f(Values32{A.values32});
  return f(Values64{A.A.values});
}

/// f(value, column) with the readers of A's values and columns.
template <class F>
decltype(auto) with_entries(const RowsOf& A, F&& f) {
  return with_values(A, [&](auto value) -> decltype(auto) {
    if (A.offsets16.extent(0)) return f(value, Offsets{A.offsets16});
    return f(value, Columns{A.A.graph.entries});
  });
}

}  // namespace ebla::detail

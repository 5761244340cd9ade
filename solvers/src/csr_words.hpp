// Reading a CSR matrix's entries from whichever words hold them (operators.hpp, CsrWords):
// value(k) and column(i, k) of the word k that RowEntries finds for an entry of row i, for
// the kernels of operators.cpp and cg_steps.cpp.
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

/// Where row i's entries lie in the words: count(i) of them from first(i), stride apart (1 in
/// the order of the rows' entries, 8 in slices of eight rows: CsrWords).
struct RowEntries {
  CsrMatrix::row_map_type::const_type row_map;
  Kokkos::View<const std::size_t*> slices;
  std::size_t stride = 1;
  KOKKOS_INLINE_FUNCTION std::size_t count(std::size_t i) const { return row_map(i + 1) - row_map(i); }
  KOKKOS_INLINE_FUNCTION std::size_t first(std::size_t i) const {
    return stride == 1 ? row_map(i) : slices(i / 8) + i % 8;
  }
};

/// The entries of A (a csr RowsOf) as its words hold them.
inline RowEntries entries_of(const RowsOf& A) {
  return {A.A.graph.row_map, A.slices, A.slices.extent(0) ? std::size_t{8} : std::size_t{1}};
}

/// The slice offsets (CsrWords::slices) of the rows whose offsets row_map gives.
Kokkos::View<std::size_t*> slice_offsets(CsrMatrix::row_map_type::const_type row_map);

/// The bytes of `nnz` entries' words in `slices` (values of value_bytes, 16-bit offsets, and
/// the slices' own offsets) over those of binary64 CSR values and int columns (12 a nonzero).
double slice_growth(std::size_t nnz, Kokkos::View<const std::size_t*> slices, double value_bytes);

/// Where in_slices puts the word of entry m of a row (lane `lane` of the slice from `from`).
template <class T>
struct SliceWriter {
  Kokkos::View<T*> out;
  std::size_t from, lane;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t m, T word) const { out(from + 8 * m + lane) = word; }
};

/// The words of A's entries laid out in the slices of `at` (stride 8), each slice's words
/// past a row's end zero: row(i, put) calls put(m, word) for the entries m of row i (put a
/// SliceWriter<T>).
template <class T, class Row>
Kokkos::View<T*> in_slices(const RowEntries& at, const char* label, Row row) {
  const std::size_t rows = at.row_map.extent(0) - 1, slices = at.slices.extent(0) - 1;
  std::size_t words = 0;
  Kokkos::deep_copy(Kokkos::View<std::size_t, Kokkos::HostSpace>(&words), Kokkos::subview(at.slices, slices));
  Kokkos::View<T*> out(Kokkos::ViewAllocateWithoutInitializing(label), words);
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, slices), KOKKOS_LAMBDA(const std::size_t s) {
        const std::size_t from = at.slices(s), width = (at.slices(s + 1) - from) / 8;
        for (std::size_t lane = 0; lane < 8; ++lane) {
          const std::size_t i = 8 * s + lane, count = i < rows ? at.count(i) : 0;
          if (count > 0) row(i, SliceWriter<T>{out, from, lane});
          for (std::size_t m = count; m < width; ++m) out(from + 8 * m + lane) = T(0);
        }
      });
  return out;
}

/// f(value) with the reader of A's values (A a csr RowsOf).
template <class F>
decltype(auto) with_values(const RowsOf& A, F&& f) {
  if (A.values16.extent(0)) return f(Values16{A.values16});
  if (A.values32.extent(0)) return f(Values32{A.values32});
  if (A.values64.extent(0)) return f(Values64{A.values64});
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

#include "cg_steps.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/exact.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "csr_words.hpp"
#include "stored_simd.hpp"

namespace ebla::detail {

namespace {

using Fields = TileFields<6>;
// fields 3 and 4 (max |v|, max |z|) are maxima, the others sums
constexpr unsigned max_fields = (1u << 3) | (1u << 4);

StepSums sums_of(const Fields& f) { return {f.v[0], f.v[1], f.v[2], f.v[3], f.v[4], f.v[5] != 0}; }

KOKKOS_INLINE_FUNCTION void add_store(Fields& f, const StoreSums& s) {
  f.v[2] += s.err2;
  f.v[3] = max_nan(f.v[3], s.amax);
  if (s.bad) f.v[5] = 1;
}

// r^T r, r^T z (z = D^-1 r or r) and max |z| over the stored r of the tile [b, e), into
// fields 0, 1 and 4.
// (r holds the tile's stored values).
KOKKOS_INLINE_FUNCTION void residual_sums(const double* r, const ConstVector& dinv, bool jacobi, std::size_t b,
                                          std::size_t e, Fields& f) {
  LaneSums rr, rz;
  LaneMax zmax;
  if (jacobi) {
    in_lanes(e - b, [&](std::size_t i, int j) {
      const double zi = dinv(b + i) * r[i];
      rr.s[j] += r[i] * r[i];
      rz.s[j] += r[i] * zi;
      zmax.add(j, zi);
    });
    f.v[1] = rz.total();
  } else {
    in_lanes(e - b, [&](std::size_t i, int j) {
      rr.s[j] += r[i] * r[i];
      zmax.add(j, r[i]);
    });
    f.v[1] = rr.total();
  }
  f.v[0] = rr.total();
  f.v[4] = zmax.total();
}

// (A p)_i for the rows [b, e) of HPCCG's 27-point stencil, in out[0, e - b): per grid line,
// the column sums t over the (up to 9) neighbouring lines, then 28 p_i - (t_(i-1) + t_i +
// t_(i+1)) = 27 p_i - the neighbours, the same operations in the same order as
// stencil27_apply (operators.cpp), so binary64 storage gives its bits.
struct StencilRows {
  int nx, ny, nz;
  template <class P>
  KOKKOS_INLINE_FUNCTION void rows(const P& p, std::size_t b, std::size_t e, double* out) const {
    double t[stored_tile + 2];
    const std::size_t line_length = static_cast<std::size_t>(nx);
    for (std::size_t i = b; i < e;) {
      const std::size_t line = i / line_length;
      const int ix0 = static_cast<int>(i % line_length);
      const int ix1 = static_cast<int>(ix0 + (e - i) < line_length ? ix0 + (e - i) : line_length);  // exclusive
      const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
      const int lo = ix0 > 0 ? ix0 - 1 : 0, hi = ix1 < nx ? ix1 : nx - 1;  // columns [lo, hi]
      for (int ix = lo; ix <= hi; ++ix) t[ix - lo] = 0;
      // with one scale for the vector, sum the words and scale once: the same bits
      for (int dz = iz > 0 ? -1 : 0; dz <= (iz < nz - 1 ? 1 : 0); ++dz)
        for (int dy = iy > 0 ? -1 : 0; dy <= (iy < ny - 1 ? 1 : 0); ++dy) {
          const std::size_t row = (static_cast<std::size_t>(iz + dz) * ny + static_cast<std::size_t>(iy + dy)) * line_length;
          if constexpr (P::vector_scale)
            for (int ix = lo; ix <= hi; ++ix) t[ix - lo] += p.raw(row + ix);
          else
            for (int ix = lo; ix <= hi; ++ix) t[ix - lo] += p.load(row + ix);
        }
      const std::size_t base = line * line_length;
      for (int ix = ix0; ix < ix1; ++ix) {
        const double left = ix > 0 ? t[ix - 1 - lo] : 0.0, right = ix < nx - 1 ? t[ix + 1 - lo] : 0.0;
        if constexpr (P::vector_scale)
          out[base + ix - b] = (28.0 * p.raw(base + ix) - (left + t[ix - lo] + right)) * p.scale;
        else
          out[base + ix - b] = 28.0 * p.load(base + ix) - (left + t[ix - lo] + right);
      }
      i = base + ix1;
    }
  }
};

// (A p)_i for the rows [b, e) of a CSR matrix whose values are read by Value (csr_words.hpp:
// binary64, or binary32 or bfloat16 words that hold them exactly, see narrow_values) and whose
// columns are read as 16-bit offsets from the row where A has them (2 bytes an entry instead
// of 4), each entry where RowEntries finds it (in row order, or in slices of eight rows,
// which the host form computes eight rows at a time): each row's products in four running
// sums by entry index mod 4, added as (s0 + s1) + (s2 + s3), a fixed order that does not wait
// on one chain of additions.
template <class Value>
struct CsrRows {
  RowEntries at;
  Value value;
  Columns columns;
  Offsets offsets;
  template <class P, class Column>
  KOKKOS_INLINE_FUNCTION double row(const P& p, std::size_t i, const Column& column) const {
    double s[4] = {0, 0, 0, 0};
    const std::size_t count = at.count(i), stride = at.stride;
    std::size_t m = 0, k = at.first(i);
    for (; m + 4 <= count; m += 4, k += 4 * stride)
      for (std::size_t j = 0; j < 4; ++j) s[j] += value(k + j * stride) * p.load(column(i, k + j * stride));
    for (int j = 0; m < count; ++m, ++j, k += stride) s[j] += value(k) * p.load(column(i, k));
    return (s[0] + s[1]) + (s[2] + s[3]);
  }
  template <class P>
  KOKKOS_INLINE_FUNCTION void rows(const P& p, std::size_t b, std::size_t e, double* out) const {
    if (offsets.o.extent(0))
      for (std::size_t i = b; i < e; ++i) out[i - b] = row(p, i, offsets);
    else
      for (std::size_t i = b; i < e; ++i) out[i - b] = row(p, i, columns);
  }
};

// f(rows) with the row computer of A.
template <class F>
decltype(auto) with_rows(const RowsOf& A, const char* function, F&& f) {
  switch (A.kind) {
    case RowsOf::Kind::stencil: return f(StencilRows{A.nx, A.ny, A.nz});
    case RowsOf::Kind::csr:
      return with_values(A, [&](auto value) -> decltype(auto) {
        return f(CsrRows<decltype(value)>{entries_of(A), value, Columns{A.A.graph.entries}, Offsets{A.offsets16}});
      });
    case RowsOf::Kind::none: break;
  }
  throw_invalid(function, "the operator cannot read stored vectors (only csr and stencil can)");
}

// The reading of a binary64 View through the accessor interface.
struct DoubleRead {
  static constexpr bool vector_scale = true;
  ConstVector v;
  double scale = 1;
  KOKKOS_INLINE_FUNCTION double load(std::size_t i) const { return v(i); }
  KOKKOS_INLINE_FUNCTION double raw(std::size_t i) const { return v(i); }
};

// The pieces of a tile in either form: the generic code (the specification), or its host
// form (stored_simd.hpp), which gives the same bits.
template <class Rows, class P>
KOKKOS_INLINE_FUNCTION void compute_rows(GenericIsa, const Rows& rows, const P& p, std::size_t b, std::size_t e,
                                         double* out) {
  rows.rows(p, b, e, out);
}
template <Storage S>
KOKKOS_INLINE_FUNCTION void store(GenericIsa, const StoredAccess<S>& a, std::size_t begin, std::size_t count,
                                  double* v, StoreSums& sums) {
  a.store_tile(begin, count, v, sums);
}

#if EBLA_STORED_SIMD
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
using simd::d8;

EBLA_SIMD d8 raw8(const DoubleRead& r, std::size_t i) {
  return simd::load<d8>(r.v.data() + i);
}
EBLA_SIMD d8 load8(const DoubleRead& r, std::size_t i) { return raw8(r, i); }
using simd::load8;

template <class P>
EBLA_SIMD void compute_rows(SimdIsa, const StencilRows& rows, const P& p, std::size_t b, std::size_t e, double* out) {
  simd::stencil_rows(p, rows.nx, rows.ny, rows.nz, b, e, out);
}
// CsrRows on words in slices of eight rows (CsrWords), with AVX-512: lane l of a vector is
// row i0 + l of the slice, its four running sums those of the generic code (entry m into sum
// m mod 4), so every sum takes the same operations in the same order. Entry m of the eight
// rows: their values widened exactly, p at their columns (one load where the eight columns
// are neighbours, as the eight offsets are equal, else a gather of the rows that have an
// m-th entry), the products added into the lanes of those rows only.
#define EBLA_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,avx,f16c,bmi,bmi2")))

// The words of the values and of p that the slice kernel reads (ok), and p's scale.
template <class T>
struct SliceWords {
  static constexpr bool ok = false;
};
template <>
struct SliceWords<Values16> {
  static constexpr bool ok = true;
  static const std::uint16_t* words(const Values16& v) { return v.v.data(); }
};
template <>
struct SliceWords<Values32> {
  static constexpr bool ok = true;
  static const float* words(const Values32& v) { return v.v.data(); }
};
template <>
struct SliceWords<Values64> {
  static constexpr bool ok = true;
  static const double* words(const Values64& v) { return v.v.data(); }
};
template <>
struct SliceWords<DoubleRead> {
  static constexpr bool ok = true, scaled = false;
  static const double* words(const DoubleRead& p) { return p.v.data(); }
};
template <>
struct SliceWords<StoredAccess<Storage::binary64>> {
  static constexpr bool ok = true, scaled = false;
  static const double* words(const StoredAccess<Storage::binary64>& p) { return p.w.data(); }
};
template <>
struct SliceWords<StoredAccess<Storage::binary32>> {
  static constexpr bool ok = true, scaled = true;  // load(i) = w(i) 2^s
  static const float* words(const StoredAccess<Storage::binary32>& p) { return p.w.data(); }
};

// Entry m of the slice's eight rows (values v, offsets o from the slice's start), into s.
template <class VW, class PW, bool Scaled>
EBLA_AVX512 inline __attribute__((always_inline)) void slice_entry(const VW* v, const std::int16_t* o, const PW* p,
                                                                   std::size_t i0, __m256i row, __m256i length,
                                                                   __m512d scale, int m, __m512d& s) {
  const __mmask8 has = _mm256_cmpgt_epi32_mask(length, _mm256_set1_epi32(m));  // rows with an m-th entry
  const __m256i offset = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(o + 8 * m)));
  const std::int16_t first = o[8 * m];
  const bool neighbours = has == 0xff && _mm256_cmpeq_epi32_mask(offset, _mm256_set1_epi32(first)) == 0xff;
  const PW* at = p + (static_cast<std::ptrdiff_t>(i0) + first);  // lane l's column is i0 + l + first
  __m512d pj;
  if constexpr (std::is_same_v<PW, double>) {
    if (neighbours) pj = _mm512_loadu_pd(at);
    else pj = _mm512_mask_i32gather_pd(_mm512_setzero_pd(), has, _mm256_add_epi32(row, offset), p, 8);
  } else {
    __m256 w;
    if (neighbours) w = _mm256_loadu_ps(at);
    else w = _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), has, _mm256_add_epi32(row, offset), p, 4);
    pj = _mm512_cvtps_pd(w);
  }
  if constexpr (Scaled) pj = _mm512_mul_pd(pj, scale);
  __m512d a;
  if constexpr (std::is_same_v<VW, std::uint16_t>) {  // bfloat16: the top half of a binary32
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8 * m));
    a = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16)));
  } else if constexpr (std::is_same_v<VW, double>) {
    a = _mm512_loadu_pd(v + 8 * m);
  } else {
    a = _mm512_cvtps_pd(_mm256_loadu_ps(v + 8 * m));
  }
  s = _mm512_mask_add_pd(s, has, s, _mm512_mul_pd(a, pj));
}

// (A p)_i for the whole slices of rows [b, e) (b and e multiples of 8), into out[0, e - b).
template <class VW, class PW, bool Scaled>
EBLA_AVX512 __attribute__((noinline)) void slice_rows_avx512(const std::size_t* row_map, const std::size_t* slices,
                                                             const VW* v, const std::int16_t* o, const PW* p,
                                                             double scale, std::size_t b, std::size_t e, double* out) {
  const __m512d sc = _mm512_set1_pd(scale);
  for (std::size_t i0 = b; i0 < e; i0 += 8) {
    const std::size_t from = slices[i0 / 8];
    const int width = static_cast<int>((slices[i0 / 8 + 1] - from) / 8);
    const __m512i starts = _mm512_loadu_si512(row_map + i0), ends = _mm512_loadu_si512(row_map + i0 + 1);
    const __m256i length = _mm512_cvtepi64_epi32(_mm512_sub_epi64(ends, starts));
    const __m256i row = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i0)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const VW* vs = v + from;
    const std::int16_t* os = o + from;
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int m = 0;
    for (; m + 4 <= width; m += 4) {
      slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m, s0);
      slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m + 1, s1);
      slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m + 2, s2);
      slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m + 3, s3);
    }
    if (m < width) slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m, s0);
    if (m + 1 < width) slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m + 1, s1);
    if (m + 2 < width) slice_entry<VW, PW, Scaled>(vs, os, p, i0, row, length, sc, m + 2, s2);
    _mm512_storeu_pd(out + (i0 - b), _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
  }
}

template <class Value, class P>
EBLA_SIMD void compute_rows(SimdIsa, const CsrRows<Value>& rows, const P& p, std::size_t b, std::size_t e, double* out) {
  if constexpr (SliceWords<Value>::ok && SliceWords<P>::ok) {
    if (rows.at.stride == 8 && b % 8 == 0 && stored_isa() == HostIsa::avx512) {
      const std::size_t whole = b + (e - b) / 8 * 8;  // a matrix's last slice may have fewer rows
      double scale = 1;
      if constexpr (SliceWords<P>::scaled) scale = p.scale;
      slice_rows_avx512<std::remove_const_t<std::remove_pointer_t<decltype(SliceWords<Value>::words(rows.value))>>,
                        std::remove_const_t<std::remove_pointer_t<decltype(SliceWords<P>::words(p))>>,
                        SliceWords<P>::scaled>(rows.at.row_map.data(), rows.at.slices.data(),
                                               SliceWords<Value>::words(rows.value), rows.offsets.o.data(),
                                               SliceWords<P>::words(p), scale, b, whole, out);
      rows.rows(p, whole, e, out + (whole - b));
      return;
    }
  }
  rows.rows(p, b, e, out);  // the generic code, compiled for the host's instruction set
}
template <Storage S>
EBLA_SIMD void store(SimdIsa, const StoredAccess<S>& a, std::size_t begin, std::size_t count, double* v, StoreSums& sums) {
  simd::store_tile(a, begin, count, v, sums);
}

// residual_sums, eight lanes at a time.
EBLA_SIMD void residual_sums_simd(const double* r, const double* dinv, std::size_t count, Fields& f) {
  const std::size_t groups = count / 8 * 8;
  d8 rr = simd::zero(), rz = simd::zero(), zmax = simd::zero();
  for (std::size_t i = 0; i < groups; i += 8) {
    const d8 ri = simd::load<d8>(r + i);
    rr += ri * ri;
    if (dinv) {
      const d8 zi = simd::load<d8>(dinv + i) * ri;
      rz += ri * zi;
      zmax = simd::lane_max(zmax, zi);
    } else {
      zmax = simd::lane_max(zmax, ri);
    }
  }
  LaneSums lrr, lrz;
  LaneMax lz;
  simd::to_lanes(rr, lrr);
  simd::to_lanes(rz, lrz);
  simd::to_lanes(zmax, lz);
  for (std::size_t i = groups, j = 0; i < count; ++i, ++j) {
    lrr.s[j] += r[i] * r[i];
    if (dinv) {
      const double zi = dinv[i] * r[i];
      lrz.s[j] += r[i] * zi;
      lz.add(static_cast<int>(j), zi);
    } else {
      lz.add(static_cast<int>(j), r[i]);
    }
  }
  f.v[0] = lrr.total();
  f.v[1] = dinv ? lrz.total() : lrr.total();
  f.v[4] = lz.total();
}
#pragma GCC diagnostic pop

// A tile's host form, compiled for AVX2 with F16C or for AVX-512 (F, VL, DQ, BW): the host
// form's functions (EBLA_SIMD) are inlined into it and take its instruction set, 8-lane
// vectors becoming two AVX2 registers or one AVX-512 register. No FMA: the passes' products
// and sums are rounded one by one, as in the generic code.
template <class Tile, int K>
__attribute__((target("avx2,avx,f16c,bmi,bmi2"))) void tile_avx2(const Tile& tile, std::size_t b,
                                                                         std::size_t e, TileFields<K>& f) {
  tile(SimdIsa{}, b, e, f);
}
template <class Tile, int K>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,avx,f16c,bmi,bmi2"))) void tile_avx512(
    const Tile& tile, std::size_t b, std::size_t e, TileFields<K>& f) {
  tile(SimdIsa{}, b, e, f);
}
#endif

// over_tiles with a tile of both forms: the host form where the default execution space is
// the host's and stored_isa() is AVX2 or AVX-512, else the generic one. Either way the same
// tiles, merged in the same order.
template <int K, class Tile>
TileFields<K> run_tiles(const char* label, std::size_t n, unsigned max_mask, const Tile& tile) {
#if EBLA_STORED_SIMD
  if constexpr (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>) {
    const HostIsa isa = stored_isa();
    if (isa == HostIsa::avx512)
      return over_tiles<K>(label, n, max_mask,
                           [=](std::size_t b, std::size_t e, TileFields<K>& f) { tile_avx512(tile, b, e, f); });
    if (isa == HostIsa::avx2)
      return over_tiles<K>(label, n, max_mask,
                           [=](std::size_t b, std::size_t e, TileFields<K>& f) { tile_avx2(tile, b, e, f); });
  }
#endif
  return over_tiles<K>(label, n, max_mask,
                       KOKKOS_LAMBDA(std::size_t b, std::size_t e, TileFields<K>& f) { tile(GenericIsa{}, b, e, f); });
}

}  // namespace

namespace {
bool isa_forced = false;
HostIsa forced_isa = HostIsa::baseline;
}  // namespace

HostIsa stored_isa() {
  if (isa_forced) return forced_isa;
  static const HostIsa best = [] {
    HostIsa isa = best_host_isa();
    if (!EBLA_STORED_SIMD || (isa == HostIsa::avx2 && !host_features().f16c)) isa = HostIsa::baseline;
    // EBLA_ISA caps it: generic (or baseline), avx2, avx512
    const char* cap = std::getenv("EBLA_ISA");
    const std::string c = cap ? cap : "";
    HostIsa limit = HostIsa::avx512;
    if (c == "generic" || c == "baseline") limit = HostIsa::baseline;
    else if (c == "avx2") limit = HostIsa::avx2;
    else if (!c.empty() && c != "avx512")
      throw_invalid("ebla", "EBLA_ISA is '" + c + "': give generic, baseline, avx2 or avx512");
    return static_cast<int>(limit) < static_cast<int>(isa) ? limit : isa;
  }();
  return best;
}

void set_stored_isa(HostIsa isa) {
  bool supported = false;
  for (HostIsa s : supported_host_isas()) supported = supported || s == isa;
  if (!supported || (isa == HostIsa::avx2 && !host_features().f16c))
    throw_invalid("ebla::detail::set_stored_isa", std::string("this CPU cannot run ") + to_string(isa));
  isa_forced = true;
  forced_isa = isa;
}

void reset_stored_isa() { isa_forced = false; }

namespace {

// The widest |column - row| of A's int columns.
double band_of(const RowsOf& A) {
  const auto row_map = A.A.graph.row_map;
  const auto entries = A.A.graph.entries;
  return over_tiles<1>("ebla::cg_stored matrix band", static_cast<std::size_t>(A.A.numRows()), 1u,
                       KOKKOS_LAMBDA(std::size_t b, std::size_t e, TileFields<1>& t) {
                         for (std::size_t i = b; i < e; ++i)
                           for (std::size_t k = row_map(i); k < row_map(i + 1); ++k) {
                             const double d = static_cast<double>(entries(k)) - static_cast<double>(i);
                             t.v[0] = t.v[0] > magnitude(d) ? t.v[0] : magnitude(d);
                           }
                       })
      .v[0];
}

// The columns as offsets from their row, in the order of the rows' entries.
void narrow_columns(RowsOf& A) {
  const auto row_map = A.A.graph.row_map;
  const auto entries = A.A.graph.entries;
  Kokkos::View<std::int16_t*> offsets("ebla::cg matrix columns (16-bit offsets)", A.A.nnz());
  Kokkos::parallel_for("ebla::cg_stored column offsets",
                       Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, A.A.numRows()),
                       KOKKOS_LAMBDA(const std::size_t i) {
                         for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
                           offsets(k) = static_cast<std::int16_t>(entries(k) - static_cast<int>(i));
                       });
  A.offsets16 = offsets;
}

enum class ValueWords { binary64, binary32, bfloat16 };

// The narrowest format that holds each of A's binary64 values exactly.
ValueWords value_words(const RowsOf& A) {
  const auto vals = A.A.values;
  const std::size_t nnz = vals.extent(0);
  // how many values bfloat16 and binary32 hold exactly
  const auto held = over_tiles<2>("ebla::cg_stored matrix formats", nnz, 0u,
                                  KOKKOS_LAMBDA(std::size_t b, std::size_t e, TileFields<2>& t) {
                                    for (std::size_t k = b; k < e; ++k) {
                                      const float f = static_cast<float>(vals(k));
                                      t.v[1] += static_cast<double>(f) == vals(k) ? 1 : 0;
                                      t.v[0] += bfloat16_value(bfloat16_bits(f)) == vals(k) ? 1 : 0;
                                    }
                                  });
  if (held.v[0] == static_cast<double>(nnz)) return ValueWords::bfloat16;
  if (held.v[1] == static_cast<double>(nnz)) return ValueWords::binary32;
  return ValueWords::binary64;
}

// The values in `format`, in the order of the rows' entries.
void narrow_values_in_order(RowsOf& A, ValueWords format) {
  const auto vals = A.A.values;
  const std::size_t nnz = vals.extent(0);
  if (format == ValueWords::bfloat16) {
    Kokkos::View<std::uint16_t*> v16("ebla::cg matrix values (bfloat16)", nnz);
    Kokkos::parallel_for("ebla::cg_stored bfloat16 values", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, nnz),
                         KOKKOS_LAMBDA(const std::size_t k) { v16(k) = bfloat16_bits(vals(k)); });
    A.values16 = v16;
  } else if (format == ValueWords::binary32) {
    Kokkos::View<float*> v32("ebla::cg matrix values (binary32)", nnz);
    Kokkos::parallel_for("ebla::cg_stored binary32 values", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, nnz),
                         KOKKOS_LAMBDA(const std::size_t k) { v32(k) = static_cast<float>(vals(k)); });
    A.values32 = v32;
  }
}

// The values in `format` and the columns as offsets, in slices of eight rows (CsrWords):
// binary64 values too, for the slice kernel's eight rows at a time (10 bytes a nonzero where
// the CSR arrays take 12, when the operator holds the slices instead of them).
void narrow_in_slices(RowsOf& A, ValueWords format, Kokkos::View<const std::size_t*> slices) {
  const auto row_map = A.A.graph.row_map;
  const auto entries = A.A.graph.entries;
  const auto vals = A.A.values;
  A.slices = slices;
  const RowEntries at = entries_of(A);
  A.offsets16 = in_slices<std::int16_t>(at, "ebla::cg matrix columns (16-bit offsets, slices of 8 rows)",
                                        KOKKOS_LAMBDA(std::size_t i, const SliceWriter<std::int16_t>& put) {
                                          for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
                                            put(k - row_map(i), static_cast<std::int16_t>(entries(k) - static_cast<int>(i)));
                                        });
  if (format == ValueWords::bfloat16)
    A.values16 = in_slices<std::uint16_t>(at, "ebla::cg matrix values (bfloat16, slices of 8 rows)",
                                          KOKKOS_LAMBDA(std::size_t i, const SliceWriter<std::uint16_t>& put) {
                                            for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
                                              put(k - row_map(i), bfloat16_bits(vals(k)));
                                          });
  else if (format == ValueWords::binary32)
    A.values32 = in_slices<float>(at, "ebla::cg matrix values (binary32, slices of 8 rows)",
                                  KOKKOS_LAMBDA(std::size_t i, const SliceWriter<float>& put) {
                                    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
                                      put(k - row_map(i), static_cast<float>(vals(k)));
                                  });
  else
    A.values64 = in_slices<double>(at, "ebla::cg matrix values (binary64, slices of 8 rows)",
                                   KOKKOS_LAMBDA(std::size_t i, const SliceWriter<double>& put) {
                                     for (std::size_t k = row_map(i); k < row_map(i + 1); ++k) put(k - row_map(i), vals(k));
                                   });
}

double word_bytes(ValueWords format) {
  return format == ValueWords::bfloat16 ? 2 : format == ValueWords::binary32 ? 4 : 8;
}

}  // namespace

void narrow_values(RowsOf& A, double max_growth) {
  if (A.kind != RowsOf::Kind::csr) return;
  const std::size_t nnz = A.nonzeros();
  const bool int_columns = A.offsets16.extent(0) == 0 && A.A.graph.entries.extent(0) == nnz;
  const bool offsets = int_columns && band_of(A) <= 32767;
  if (A.A.values.extent(0) != nnz || A.values16.extent(0) + A.values32.extent(0) + A.values64.extent(0) > 0) {
    // A is held in narrow values already (CsrOperator::narrowest, or a caller's parts)
    if (offsets) narrow_columns(A);
    return;
  }
  const ValueWords format = value_words(A);
  if (offsets) {
    // slices pad each row to the longest of its eight: only where that stays within bounds
    const Kokkos::View<const std::size_t*> slices = slice_offsets(A.A.graph.row_map);
    if (slice_growth(A.nonzeros(), slices, word_bytes(format)) <= max_growth) return narrow_in_slices(A, format, slices);
  }
  narrow_values_in_order(A, format);
  if (offsets) narrow_columns(A);
}

double value_bytes(const RowsOf& A) { return A.values16.extent(0) ? 2 : A.values32.extent(0) ? 4 : 8; }

double column_bytes(const RowsOf& A) { return A.offsets16.extent(0) ? 2 : sizeof(int); }

double matrix_bytes(const RowsOf& A) {
  if (A.kind != RowsOf::Kind::csr) return 0;  // the stencil has no matrix
  // the words, a slice's words past a shorter row's end included
  const double words = A.slices.extent(0) ? static_cast<double>(A.offsets16.extent(0)) : static_cast<double>(A.nonzeros());
  return words * (value_bytes(A) + column_bytes(A)) +
         static_cast<double>(A.A.numRows() + 1 + A.slices.extent(0)) * sizeof(std::size_t);
}

RowsOf narrowed(RowsOf A, double max_growth) {
  narrow_values(A, max_growth);
  return A;
}

namespace {

// max_i sum_k |value(k)| over A's rows.
template <class Value>
double largest_row_sum(const RowsOf& A, Value value) {
  const RowEntries at = entries_of(A);
  return over_tiles<1>("ebla::cg_stored norm", static_cast<std::size_t>(A.A.numRows()), 1u,
                       KOKKOS_LAMBDA(std::size_t b, std::size_t e, TileFields<1>& t) {
                         for (std::size_t i = b; i < e; ++i) {
                           double s = 0;
                           for (std::size_t m = 0, k = at.first(i); m < at.count(i); ++m, k += at.stride)
                             s += magnitude(value(k));
                           t.v[0] = max_nan(t.v[0], s);
                         }
                       })
      .v[0];
}

}  // namespace

double infinity_norm_bound(const RowsOf& A) {
  constexpr double slack = 1 + 0x1p-30;  // the rounding of a computed row sum, with room to spare
  if (A.kind == RowsOf::Kind::stencil) return 53 * slack;  // |27| + 26 |-1|
  if (A.kind != RowsOf::Kind::csr) return 0;
  return with_values(A, [&](auto value) { return largest_row_sum(A, value); }) * slack;
}

namespace {

#if EBLA_STORED_SIMD
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#define EBLA_HOST_TILE EBLA_SIMD void operator()(SimdIsa, std::size_t b, std::size_t e, Fields& f) const
#endif

// apply: q = A p stored (line 6), p^T q and |p|^T |q| of the stored q.
template <class Rows, Storage SP, Storage SQ>
struct ApplyTile {
  Rows rows;
  StoredAccess<SP> in;
  StoredAccess<SQ> out;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t b, std::size_t e, Fields& f) const {
    double local[stored_tile];
    double* v = out.tile_buffer(b, local);
    compute_rows(isa, rows, in, b, e, v);  // q = A p (line 6)
    StoreSums st;
    store(isa, out, b, e - b, v, st);
    add_store(f, st);
    LaneSums pq, abs_pq;  // p^T q of the stored q
    in_lanes(e - b, [&](std::size_t i, int j) {
      const double t = in.load(b + i) * v[i];
      pq.s[j] += t;
      abs_pq.s[j] += magnitude(t);
    });
    f.v[0] = pq.total();
    f.v[1] = abs_pq.total();
  }
#if EBLA_STORED_SIMD
  EBLA_HOST_TILE {
    double local[stored_tile];
    double* v = out.tile_buffer(b, local);
    compute_rows(SimdIsa{}, rows, in, b, e, v);
    StoreSums st;
    store(SimdIsa{}, out, b, e - b, v, st);
    add_store(f, st);
    const std::size_t count = e - b, groups = count / 8 * 8;
    d8 pq = simd::zero(), abs_pq = simd::zero();
    for (std::size_t i = 0; i < groups; i += 8) {
      const d8 t = load8(in, b + i) * simd::load<d8>(v + i);
      pq += t;
      abs_pq += simd::magnitude(t);
    }
    LaneSums lpq, labs;
    simd::to_lanes(pq, lpq);
    simd::to_lanes(abs_pq, labs);
    for (std::size_t i = groups, j = 0; i < count; ++i, ++j) {
      const double t = in.load(b + i) * v[i];
      lpq.s[j] += t;
      labs.s[j] += magnitude(t);
    }
    f.v[0] = lpq.total();
    f.v[1] = labs.total();
  }
#endif
};

// update: r = r - alpha q stored (line 9), r^T r, r^T z (line 10). x += alpha p (line 8) waits
// for the direction pass, which reads p anyway: one read of p an iteration instead of two.
template <Storage R>
struct UpdateTile {
  double alpha;
  StoredAccess<R> qa, r_old, ra;
  ConstVector dinv;
  bool jacobi;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t b, std::size_t e, Fields& f) const {
    double local[stored_tile];
    double* v = ra.tile_buffer(b, local);  // r in place where binary64
    for (std::size_t i = b; i < e; ++i) v[i - b] = r_old.load(i) - alpha * qa.load(i);  // r = r - alpha q (line 9)
    StoreSums st;
    store(isa, ra, b, e - b, v, st);
    add_store(f, st);
    residual_sums(v, dinv, jacobi, b, e, f);  // r^T r, r^T z (line 10)
  }
#if EBLA_STORED_SIMD
  EBLA_HOST_TILE {
    double local[stored_tile];
    double* v = ra.tile_buffer(b, local);
    const std::size_t count = e - b, groups = count / 8 * 8;
    const d8 a = simd::splat(alpha);
    for (std::size_t i = 0; i < groups; i += 8) simd::put(v + i, load8(r_old, b + i) - a * load8(qa, b + i));
    for (std::size_t i = groups; i < count; ++i) v[i] = r_old.load(b + i) - alpha * qa.load(b + i);
    StoreSums st;
    store(SimdIsa{}, ra, b, count, v, st);
    add_store(f, st);
    residual_sums_simd(v, jacobi ? dinv.data() + b : nullptr, count, f);
  }
#endif
};

// direction: x += alpha p with the p of this iteration (line 8, where advance), then z = D^-1 r
// or r, p = z + beta p stored (line 12).
template <Storage P, Storage R>
struct DirectionTile {
  double beta;
  StoredAccess<R> ra;
  StoredAccess<P> p_old, pa;
  ConstVector dinv;
  bool jacobi;
  double alpha;
  Vector x;
  bool advance;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t b, std::size_t e, Fields& f) const {
    double local[stored_tile];
    double* v = pa.tile_buffer(b, local);  // p in place where binary64: p_i read before v_i is written
    for (std::size_t i = b; i < e; ++i) {
      double z = ra.load(i);
      if (jacobi) z = dinv(i) * z;                 // z = D^-1 r
      if (beta != 0 || advance) {
        const double pi = p_old.load(i);
        if (advance) x(i) += alpha * pi;           // x = x + alpha p (line 8)
        if (beta != 0) z += beta * pi;             // p = z + beta p (line 12)
      }
      v[i - b] = z;
    }
    StoreSums st;
    store(isa, pa, b, e - b, v, st);
    add_store(f, st);
  }
#if EBLA_STORED_SIMD
  EBLA_HOST_TILE {
    double local[stored_tile];
    double* v = pa.tile_buffer(b, local);
    const std::size_t count = e - b, groups = count / 8 * 8;
    double* xb = advance ? x.data() + b : nullptr;
    const d8 bt = simd::splat(beta), a = simd::splat(alpha);
    for (std::size_t i = 0; i < groups; i += 8) {
      d8 z = load8(ra, b + i);
      if (jacobi) z = simd::load<d8>(dinv.data() + b + i) * z;
      if (beta != 0 || advance) {
        const d8 pi = load8(p_old, b + i);
        if (advance) simd::put(xb + i, simd::load<d8>(xb + i) + a * pi);
        if (beta != 0) z += bt * pi;
      }
      simd::put(v + i, z);
    }
    for (std::size_t i = groups; i < count; ++i) {
      double z = ra.load(b + i);
      if (jacobi) z = dinv(b + i) * z;
      if (beta != 0 || advance) {
        const double pi = p_old.load(b + i);
        if (advance) xb[i] += alpha * pi;
        if (beta != 0) z += beta * pi;
      }
      v[i] = z;
    }
    StoreSums st;
    store(SimdIsa{}, pa, b, count, v, st);
    add_store(f, st);
  }
#endif
};

// replace, first pass: max |b - A x|.
template <class Rows>
struct ResidualMaxTile {
  Rows rows;
  DoubleRead xr;
  ConstVector bv;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t lo, std::size_t hi, TileFields<1>& t) const {
    double v[stored_tile];
    compute_rows(isa, rows, xr, lo, hi, v);
    LaneMax m;
    in_lanes(hi - lo, [&](std::size_t i, int j) { m.add(j, bv(lo + i) - v[i]); });
    t.v[0] = m.total();
  }
#if EBLA_STORED_SIMD
  EBLA_SIMD void operator()(SimdIsa, std::size_t lo, std::size_t hi, TileFields<1>& t) const {
    double v[stored_tile];
    compute_rows(SimdIsa{}, rows, xr, lo, hi, v);
    const std::size_t count = hi - lo, groups = count / 8 * 8;
    const double* bb = bv.data() + lo;
    d8 m = simd::zero();
    for (std::size_t i = 0; i < groups; i += 8) m = simd::lane_max(m, simd::load<d8>(bb + i) - simd::load<d8>(v + i));
    LaneMax lm;
    simd::to_lanes(m, lm);
    for (std::size_t i = groups, j = 0; i < count; ++i, ++j) lm.add(static_cast<int>(j), bb[i] - v[i]);
    t.v[0] = lm.total();
  }
#endif
};

// replace: r = b - A x stored, with update's sums.
template <class Rows, Storage R>
struct ReplaceTile {
  Rows rows;
  DoubleRead xr;
  ConstVector bv;
  StoredAccess<R> ra;
  ConstVector dinv;
  bool jacobi;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t lo, std::size_t hi, Fields& f) const {
    double v[stored_tile];
    compute_rows(isa, rows, xr, lo, hi, v);
    for (std::size_t i = lo; i < hi; ++i) v[i - lo] = bv(i) - v[i - lo];  // r = b - A x
    StoreSums st;
    store(isa, ra, lo, hi - lo, v, st);
    add_store(f, st);
    residual_sums(v, dinv, jacobi, lo, hi, f);
  }
#if EBLA_STORED_SIMD
  EBLA_SIMD void operator()(SimdIsa, std::size_t lo, std::size_t hi, Fields& f) const {
    double v[stored_tile];
    compute_rows(SimdIsa{}, rows, xr, lo, hi, v);
    const std::size_t count = hi - lo;
    for (std::size_t i = 0; i < count; ++i) v[i] = bv(lo + i) - v[i];
    StoreSums st;
    store(SimdIsa{}, ra, lo, count, v, st);
    add_store(f, st);
    residual_sums_simd(v, jacobi ? dinv.data() + lo : nullptr, count, f);
  }
#endif
};

// power: w = 2^-e A v stored; fields v^T w, v^T v, err2, max |w|, w^T w, bad, |v|^T |w|.
template <class Rows, Storage SV, Storage SW>
struct PowerTile {
  Rows rows;
  StoredAccess<SV> in;
  StoredAccess<SW> out;
  double down;
  KOKKOS_INLINE_FUNCTION static void finish(const StoreSums& st, const LaneSums& vw, const LaneSums& vv,
                                            const LaneSums& ww, const LaneSums& abs_vw, TileFields<7>& t) {
    t.v[0] = vw.total();
    t.v[1] = vv.total();
    t.v[2] = st.err2;
    t.v[3] = st.amax;
    t.v[4] = ww.total();
    t.v[5] = st.bad ? 1 : 0;
    t.v[6] = abs_vw.total();
  }
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t b, std::size_t e_, TileFields<7>& t) const {
    double local[stored_tile];
    double* y = out.tile_buffer(b, local);
    compute_rows(isa, rows, in, b, e_, y);  // y = A v
    LaneSums vw, vv, ww, abs_vw;
    in_lanes(e_ - b, [&](std::size_t i, int j) {
      const double vi = in.load(b + i), wi = y[i] * down;  // w = 2^-e A v, exact
      y[i] = wi;
      vw.s[j] += vi * wi;
      vv.s[j] += vi * vi;
      ww.s[j] += wi * wi;
      abs_vw.s[j] += magnitude(vi * wi);
    });
    StoreSums st;
    store(isa, out, b, e_ - b, y, st);  // the next iterate, stored
    finish(st, vw, vv, ww, abs_vw, t);
  }
#if EBLA_STORED_SIMD
  EBLA_SIMD void operator()(SimdIsa, std::size_t b, std::size_t e_, TileFields<7>& t) const {
    double local[stored_tile];
    double* y = out.tile_buffer(b, local);
    compute_rows(SimdIsa{}, rows, in, b, e_, y);
    const std::size_t count = e_ - b, groups = count / 8 * 8;
    const d8 dn = simd::splat(down);
    d8 vw = simd::zero(), vv = simd::zero(), ww = simd::zero(), abs_vw = simd::zero();
    for (std::size_t i = 0; i < groups; i += 8) {
      const d8 vi = load8(in, b + i), wi = simd::load<d8>(y + i) * dn;
      simd::put(y + i, wi);
      vw += vi * wi;
      vv += vi * vi;
      ww += wi * wi;
      abs_vw += simd::magnitude(vi * wi);
    }
    LaneSums lvw, lvv, lww, labs;
    simd::to_lanes(vw, lvw);
    simd::to_lanes(vv, lvv);
    simd::to_lanes(ww, lww);
    simd::to_lanes(abs_vw, labs);
    for (std::size_t i = groups, j = 0; i < count; ++i, ++j) {
      const double vi = in.load(b + i), wi = y[i] * down;
      y[i] = wi;
      lvw.s[j] += vi * wi;
      lvv.s[j] += vi * vi;
      lww.s[j] += wi * wi;
      labs.s[j] += magnitude(vi * wi);
    }
    StoreSums st;
    store(SimdIsa{}, out, b, count, y, st);
    finish(st, lvw, lvv, lww, labs, t);
  }
#endif
};

// store: p := v, rounded (the tiles' store alone).
template <Storage S>
struct StoreTile {
  ConstVector vv;
  StoredAccess<S> out;
  KOKKOS_INLINE_FUNCTION void operator()(GenericIsa isa, std::size_t b, std::size_t e, Fields& f) const {
    double local[stored_tile];
    double* v = out.tile_buffer(b, local);
    for (std::size_t i = b; i < e; ++i) v[i - b] = vv(i);
    StoreSums st;
    store(isa, out, b, e - b, v, st);
    add_store(f, st);
  }
#if EBLA_STORED_SIMD
  EBLA_HOST_TILE {
    double local[stored_tile];
    double* v = out.tile_buffer(b, local);
    for (std::size_t i = b; i < e; ++i) v[i - b] = vv(i);
    StoreSums st;
    store(SimdIsa{}, out, b, e - b, v, st);
    add_store(f, st);
  }
#endif
};

#if EBLA_STORED_SIMD
#undef EBLA_HOST_TILE
#pragma GCC diagnostic pop
#endif

}  // namespace

StepSums apply_stored(const RowsOf& A, double a_norm, const StoredVector& p, StoredVector& q, double p_max,
                      bool q_max_needed) {
  q.scale_exponent = store_scale_exponent(q.format, a_norm * p_max);
  return with_rows(A, "ebla::cg", [&](const auto& rows) {
    return dispatch_storage(p.format, q.format, [&](auto sp, auto sq) {
      constexpr Storage SP = decltype(sp)::value, SQ = decltype(sq)::value;
      ApplyTile<std::decay_t<decltype(rows)>, SP, SQ> tile{rows, StoredAccess<SP>(p), StoredAccess<SQ>(q)};
      tile.out.track_max = q_max_needed;
      return sums_of(run_tiles<6>("ebla::cg_stored apply", q.n, max_fields, tile));
    });
  });
}

StepSums update_stored(double alpha, const StoredVector& q, StoredVector& r, ConstVector dinv, double q_max,
                       double r_max) {
  if (q.format != r.format) throw_invalid("ebla::cg", "q and r must share a storage format");
  // |r_i - alpha q_i| <= max |r| + |alpha| max |q|, with room for the rounding
  const int old_scale = r.scale_exponent;
  r.scale_exponent = store_scale_exponent(r.format, (r_max + std::fabs(alpha) * q_max) * (1 + 0x1p-40));
  const bool jacobi = dinv.extent(0) > 0;
  return dispatch_storage(r.format, [&](auto sr) {
    constexpr Storage R = decltype(sr)::value;
    UpdateTile<R> tile{alpha, StoredAccess<R>(q), StoredAccess<R>(r, old_scale), StoredAccess<R>(r), dinv, jacobi};
    tile.ra.track_max = r.format != Storage::binary64;
    return sums_of(run_tiles<6>("ebla::cg_stored update", r.n, max_fields, tile));
  });
}

StepSums direction_stored(double beta, const StoredVector& r, ConstVector dinv, StoredVector& p, double z_max,
                          double p_max, double alpha, Vector x) {
  // |z_i + beta p_i| <= max |z| + |beta| max |p|, with room for the rounding
  const double bound = (z_max + std::fabs(beta) * p_max) * (1 + 0x1p-40);
  const int old_scale = p.scale_exponent;
  p.scale_exponent = store_scale_exponent(p.format, bound);
  const bool jacobi = dinv.extent(0) > 0, advance = x.extent(0) > 0;
  if (advance && x.extent(0) != p.n) throw_invalid("ebla::cg", "x and p differ in length");
  // p's rounding opens no gap (storage_rule.hpp): nothing to measure, but for binary16,
  // whose narrow range wants the scale of the true max |p| rather than of its bound
  const bool measure = p.format == Storage::binary16;
  StepSums sums = dispatch_storage(p.format, r.format, [&](auto sp, auto sr) {
    constexpr Storage P = decltype(sp)::value, R = decltype(sr)::value;
    DirectionTile<P, R> tile{beta, StoredAccess<R>(r), StoredAccess<P>(p, old_scale), StoredAccess<P>(p), dinv, jacobi,
                             alpha, x,    advance};
    tile.pa.track_max = measure;
    return sums_of(run_tiles<6>("ebla::cg_stored direction", p.n, max_fields, tile));
  });
  if (!measure && !is_block(p.format)) sums.amax = bound;  // then max |p| is at most its bound
  return sums;
}

StepSums replace_stored(const RowsOf& A, ConstVector b, ConstVector x, StoredVector& r, ConstVector dinv) {
  const bool jacobi = dinv.extent(0) > 0;
  return with_rows(A, "ebla::cg", [&](const auto& rows) {
    using Rows = std::decay_t<decltype(rows)>;
    const DoubleRead xr{x, 1.0};
    // max |b - A x| first: a bound on r from b and x alone can be far too wide for narrow range
    const double r_max = run_tiles<1>("ebla::cg_stored residual max", r.n, 1u, ResidualMaxTile<Rows>{rows, xr, b}).v[0];
    r.scale_exponent = store_scale_exponent(r.format, r_max);
    return dispatch_storage(r.format, [&](auto sr) {
      constexpr Storage R = decltype(sr)::value;
      const ReplaceTile<Rows, R> tile{rows, xr, b, StoredAccess<R>(r), dinv, jacobi};
      return sums_of(run_tiles<6>("ebla::cg_stored replace", r.n, max_fields, tile));
    });
  });
}

StoreSums store_stored(StoredVector& p, ConstVector v) {
  const StepSums s = dispatch_storage(p.format, [&](auto sp) {
    constexpr Storage S = decltype(sp)::value;
    return sums_of(run_tiles<6>("ebla::cg_stored store", p.n, max_fields, StoreTile<S>{v, StoredAccess<S>(p)}));
  });
  return {s.err2, s.amax, s.bad};
}

PowerSums power_stored(const RowsOf& A, double a_norm, const StoredVector& v, StoredVector& w, double v_max, int e) {
  const double down = std::ldexp(1.0, -e);
  w.scale_exponent = store_scale_exponent(w.format, down * a_norm * v_max);
  const auto f = with_rows(A, "ebla::power_method", [&](const auto& rows) {
    return dispatch_storage(v.format, w.format, [&](auto sv, auto sw) {
      constexpr Storage SV = decltype(sv)::value, SW = decltype(sw)::value;
      const PowerTile<std::decay_t<decltype(rows)>, SV, SW> tile{rows, StoredAccess<SV>(v), StoredAccess<SW>(w), down};
      return run_tiles<7>("ebla::power_stored", w.n, 1u << 3, tile);
    });
  });
  return {f.v[0], f.v[1], f.v[4], f.v[6], f.v[2], f.v[3], f.v[5] != 0};
}

}  // namespace ebla::detail

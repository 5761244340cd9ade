#include <ebla/kernels/stored_vector.hpp>

#include <ebla/core/error.hpp>

#include <string>

namespace ebla {

StoredVector make_stored_vector(Storage format, std::size_t n, const std::string& label) {
  StoredVector v;
  v.format = format;
  v.n = n;
  switch (format) {
    case Storage::binary64: v.f64 = Kokkos::View<double*>(label, n); break;
    case Storage::binary32: v.f32 = Kokkos::View<float*>(label, n); break;
    case Storage::bfloat16:
    case Storage::binary16: v.u16 = Kokkos::View<std::uint16_t*>(label, n); break;
    case Storage::block16: v.i16 = Kokkos::View<std::int16_t*>(label, n); break;
    case Storage::block8: v.i8 = Kokkos::View<std::int8_t*>(label, n); break;
  }
  if (is_block(format))
    v.exponent = Kokkos::View<std::int16_t*>(label + " exponents", (n + storage_block - 1) / storage_block);
  return v;
}

namespace {

double max_abs(Kokkos::View<const double*> v) {
  return detail::over_tiles<1>("ebla::store max", v.extent(0), 1u,
                               KOKKOS_LAMBDA(std::size_t b, std::size_t e, detail::TileFields<1>& f) {
                                 detail::LaneMax m;
                                 detail::in_lanes(e - b, [&](std::size_t i, int j) { m.add(j, v(b + i)); });
                                 f.v[0] = m.total();
                               }).v[0];
}

// The tiles of v stored in p's words of format S. (Kernels sit in named functions of their
// own, not in the generic lambdas of dispatch_storage: CUDA allows no extended lambda there.)
template <Storage S>
StoreSums store_tiles(StoredVector& p, Kokkos::View<const double*> v) {
  const detail::StoredAccess<S> out(p);
  const auto f = detail::over_tiles<3>(
      "ebla::store", p.n, 2u, KOKKOS_LAMBDA(std::size_t b, std::size_t e, detail::TileFields<3>& t) {
        double buf[detail::stored_tile];
        for (std::size_t i = b; i < e; ++i) buf[i - b] = v(i);
        StoreSums s;
        out.store_tile(b, e - b, buf, s);
        t.v[0] = s.err2;
        t.v[1] = s.amax;
        t.v[2] = s.bad ? 1 : 0;
      });
  return StoreSums{f.v[0], f.v[1], f.v[2] != 0};
}

// w = the values p's words of format S hold.
template <Storage S>
void load_words(const StoredVector& p, Kokkos::View<double*> w) {
  const detail::StoredAccess<S> in(p);
  Kokkos::parallel_for(
      "ebla::load", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, p.n),
      KOKKOS_LAMBDA(const std::size_t i) { w(i) = in.load(i); });
}

}  // namespace

StoreSums store(StoredVector& p, Kokkos::View<const double*> v, double bound) {
  if (v.extent(0) != p.n)
    throw_invalid("ebla::store", "v has " + std::to_string(v.extent(0)) + " entries, the stored vector " +
                                     std::to_string(p.n));
  if (bound < 0) bound = max_abs(v);
  p.scale_exponent = store_scale_exponent(p.format, bound);
  return detail::dispatch_storage(p.format, [&](auto s) { return store_tiles<decltype(s)::value>(p, v); });
}

void load(const StoredVector& p, Kokkos::View<double*> w) {
  if (w.extent(0) != p.n)
    throw_invalid("ebla::load", "w has " + std::to_string(w.extent(0)) + " entries, the stored vector " +
                                    std::to_string(p.n));
  detail::dispatch_storage(p.format, [&](auto s) { load_words<decltype(s)::value>(p, w); });
}

}  // namespace ebla

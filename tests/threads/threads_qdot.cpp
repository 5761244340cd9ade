// qdot on every path (raw pointers and views, double and float, selection, computation
// and both) at lengths around the chunk size, with a bin layout that changes along the
// vectors so that chunks see different bins.
#include "digest.hpp"
#include "qdot_record.hpp"

#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_stored.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <random>

namespace {

using ebla_threads::Digest;
using ebla_threads::Register;
using ebla_threads::record;

// s 2^p with s ~ U[0.5, 1), p ~ N(0, spread) rounded (seed 002's distribution B for
// spread = t/2), the spread growing along the vector, random signs.
template <class T>
std::vector<T> vector_of(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::normal_distribution<double> p(0.0, 1.0 + 8.0 * static_cast<double>(i) / static_cast<double>(n));
    v[i] = static_cast<T>((gen() & 1 ? -1 : 1) * s(gen) * std::exp2(std::round(p(gen))));
  }
  return v;
}

const std::size_t lengths[] = {1000, 16383, 16384, 16385, 100000, 1000003};

template <class T>
void pointers(Digest& d) {
  for (const auto policy : {ebla::QdotPolicy::budget, ebla::QdotPolicy::paper})
    for (const std::size_t n : lengths) {
      const auto x = vector_of<T>(n, 2 * n + 1), y = vector_of<T>(n, 2 * n + 2);
      ebla::QdotOptions o;
      o.tolerance = 1e-6;
      o.policy = policy;
      const auto plan = ebla::qdot_select(x.data(), y.data(), n, o);
      record(d, plan);
      record(d, ebla::qdot_compute(x.data(), y.data(), n, plan));
      record(d, ebla::qdot(x.data(), y.data(), n, o));
    }
}

template <class T>
void views(Digest& d) {
  for (const std::size_t n : lengths) {
    const auto hx = vector_of<T>(n, 3 * n + 1), hy = vector_of<T>(n, 3 * n + 2);
    Kokkos::View<T*> x("x", n), y("y", n);
    for (std::size_t i = 0; i < n; ++i) {
      x(i) = hx[i];
      y(i) = hy[i];
    }
    ebla::QdotOptions o;
    o.tolerance = 1e-8;
    const auto plan = ebla::qdot_select(x, y, o);
    record(d, plan);
    record(d, ebla::qdot_compute(x, y, plan));
    record(d, ebla::qdot(x, y, o));
    // a strided view takes the generic Kokkos kernels
    Kokkos::View<T*, Kokkos::LayoutStride> xs(x.data(), Kokkos::LayoutStride(n / 2, 2));
    Kokkos::View<T*, Kokkos::LayoutStride> ys(y.data(), Kokkos::LayoutStride(n / 2, 2));
    record(d, ebla::qdot(xs, ys, o));
  }
}

// The stored vector: qdot_store at tolerances that give binary64, binary32, 16-bit and
// perforated tiles, and dot products with two vectors, on pointers and views.
void stored(Digest& d) {
  for (const std::size_t n : lengths)
    for (const double tol : {1e-12, 1e-6, 1e-3, 1e-1}) {
      const auto x = vector_of<double>(n, 5 * n + 1), y = vector_of<double>(n, 5 * n + 2), z = vector_of<double>(n, 5 * n + 3);
      ebla::QdotOptions o;
      o.tolerance = tol;
      const ebla::QdotStored s = ebla::qdot_store(x.data(), n, o);
      d.add(s.host_level);
      d.add(s.rest);
      d.add(s.error_l1);
      d.add(ebla::qdot_stored_values(s));
      record(d, ebla::qdot(s, y.data(), n));
      record(d, ebla::qdot(s, z.data(), n));
      Kokkos::View<double*> vz("z", n);
      auto hz = Kokkos::create_mirror_view(vz);
      for (std::size_t i = 0; i < n; ++i) hz(i) = z[i];
      Kokkos::deep_copy(vz, hz);
      record(d, ebla::qdot(s, Kokkos::View<const double*>(vz)));
    }
}

const Register stored_double("qdot.stored.double", stored);
const Register pointers_double("qdot.pointers.double", pointers<double>);
const Register pointers_float("qdot.pointers.float", pointers<float>);
const Register views_double("qdot.views.double", views<double>);
const Register views_float("qdot.views.float", views<float>);

}  // namespace

// The vectors of the dot-product benchmarks: distribution B of seed 002, x_i and y_i each
// s 2^p with s ~ U[0.5, 1), p ~ N(0, t/2) rounded (t = 9) and a random sign, drawn from one
// seeded generator so that every program times the same data.
#pragma once

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <random>

/// Fills x and y (of one length) with distribution B: drawn in host memory, then copied to
/// the Views' memory (a device's, on a CUDA build).
inline void fill_distribution_b(const Kokkos::View<double*>& x, const Kokkos::View<double*>& y) {
  auto hx = Kokkos::create_mirror_view(x);
  auto hy = Kokkos::create_mirror_view(y);
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::normal_distribution<double> p(0.0, 4.5);
  for (std::size_t i = 0; i < x.extent(0); ++i) {
    hx(i) = (gen() & 1 ? -1 : 1) * s(gen) * std::exp2(std::round(p(gen)));
    hy(i) = (gen() & 1 ? -1 : 1) * s(gen) * std::exp2(std::round(p(gen)));
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(y, hy);
}

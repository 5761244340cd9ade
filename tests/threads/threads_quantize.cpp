// quantize on the host specialisation (contiguous doubles), the generic kernel (a strided
// view) and stochastic rounding, at lengths around the chunk sizes.
#include "digest.hpp"

#include <ebla/kernels/quantize.hpp>

#include <Kokkos_Core.hpp>

#include <random>

namespace {

using ebla_threads::Digest;

void quantize_cases(Digest& d) {
  for (const std::size_t n : {4095u, 4096u, 70001u, 1000000u}) {
    Kokkos::View<double*> x("x", n), y("y", n);
    std::mt19937_64 gen(n);
    std::normal_distribution<double> v(0.0, 100.0);
    for (std::size_t i = 0; i < n; ++i) x(i) = v(gen);
    for (const auto mode : {ebla::Rounding::nearest_even, ebla::Rounding::toward_zero, ebla::Rounding::stochastic}) {
      ebla::quantize(x, y, ebla::formats::bfloat16(), mode, 7);
      d.add(y.data(), n);
    }
    Kokkos::View<double*, Kokkos::LayoutStride> xs(x.data(), Kokkos::LayoutStride(n / 3, 3));
    Kokkos::View<double*, Kokkos::LayoutStride> ys(y.data(), Kokkos::LayoutStride(n / 3, 3));
    ebla::quantize(xs, ys, ebla::formats::fp8_e4m3(), ebla::Rounding::nearest_even);
    d.add(y.data(), n);
  }
}

const ebla_threads::Register quantize_case("quantize", quantize_cases);

}  // namespace

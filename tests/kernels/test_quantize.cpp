// quantize: the Kokkos kernel agrees with the scalar round_to it is built on.
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/quantize.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using ebla::Rounding;

Kokkos::View<double*> random_view(std::size_t n, std::uint64_t seed) {
  Kokkos::View<double*> x("x", n);
  auto h = Kokkos::create_mirror_view(x);
  std::mt19937_64 gen(seed);
  for (std::size_t i = 0; i < n; ++i)
    h(i) = std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, static_cast<int>(gen() % 60) - 40) *
           (gen() & 1 ? -1.0 : 1.0);
  Kokkos::deep_copy(x, h);
  return x;
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         ebla::bit_cast<std::uint64_t>(a) == ebla::bit_cast<std::uint64_t>(b);
}

TEST(Quantize, MatchesScalarRoundToInEveryDeterministicMode) {
  for (std::size_t n : {0u, 13u, 1024u, 100000u}) {
    const auto x = random_view(n, n);
    const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    for (const auto& entry : ebla::format_catalogue())
      for (Rounding mode : {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward,
                            Rounding::downward}) {
        Kokkos::View<double*> y("y", n);
        ebla::quantize(x, y, entry.format, mode);
        const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(hy(i), ebla::round_to(hx(i), entry.format, mode)))
              << entry.name << " " << ebla::to_string(mode) << " i = " << i;
      }
  }
}

TEST(Quantize, StochasticPicksANeighbourAndIsReproducible) {
  const std::size_t n = 50000;
  const auto x = random_view(n, 77);
  const auto f = ebla::formats::bfloat16();
  Kokkos::View<double*> y1("y1", n), y2("y2", n);
  ebla::quantize(x, y1, f, Rounding::stochastic, 42);
  ebla::quantize(x, y2, f, Rounding::stochastic, 42);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y1);
  const auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y2);
  std::size_t up = 0, inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double down = ebla::round_to(hx(i), f, Rounding::toward_zero);
    const double away = ebla::round_to(hx(i), f, hx(i) < 0 ? Rounding::downward : Rounding::upward);
    ASSERT_TRUE(same(h1(i), down) || same(h1(i), away)) << i;
    ASSERT_TRUE(same(h1(i), h2(i))) << i;
    if (down != away) ++inexact;
    if (down != away && same(h1(i), away)) ++up;
  }
  // both directions occur: the random numbers are used
  EXPECT_GT(up, inexact / 4);
  EXPECT_LT(up, 3 * inexact / 4);
}

TEST(Quantize, ThrowsOnExtentMismatch) {
  Kokkos::View<double*> x("x", 3), y("y", 4);
  try {
    ebla::quantize(x, y, ebla::formats::binary16(), Rounding::nearest_even);
    FAIL() << "no exception";
  } catch (const ebla::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("x has 3 elements but y has 4"), std::string::npos);
  }
}

}  // namespace

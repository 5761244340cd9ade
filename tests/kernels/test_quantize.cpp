// quantize: the Kokkos kernel agrees with the scalar round_to it is built on.
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/quantize.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "checks.hpp"

namespace {
using ebla_test::same;

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

// Adversarial magnitudes for the host variants: every exponent of binary64, subnormals,
// ties of the narrow formats, infinities and NaN.
std::vector<double> adversarial_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: v[i] = ebla::bit_cast<double>(gen()); break;  // any bit pattern
      case 1: v[i] = std::ldexp(1.0 + (gen() >> 11) * 0x1p-53, static_cast<int>(gen() % 80) - 40); break;
      case 2: v[i] = std::ldexp(static_cast<double>(gen() % 4096) + 0.5, static_cast<int>(gen() % 60) - 40); break;
      default: v[i] = (gen() & 1 ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>(gen() % 2100) - 1075); break;
    }
  }
  v[0] = std::numeric_limits<double>::infinity();
  v[1] = -0.0;
  v[2] = std::numeric_limits<double>::quiet_NaN();
  return v;
}

TEST(Quantize, EveryHostVariantMatchesTheGenericKernel) {
  const std::size_t n = 200003;  // not a multiple of any vector width
  const auto values = adversarial_values(n, 11);
  Kokkos::View<double*> x("x", n), generic("generic", n);
  auto hx = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < n; ++i) hx(i) = values[i];
  Kokkos::deep_copy(x, hx);
  std::vector<double> out(n), in_place(n);
  const auto isas = ebla::detail::supported_host_isas();
  std::size_t compared = 0;
  for (const auto& entry : ebla::format_catalogue())
    for (Rounding mode : {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward,
                          Rounding::downward}) {
      ebla::detail::quantize_kokkos(x, generic, entry.format, mode, 0);
      const auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), generic);
      const auto c = ebla::rounding_constants(entry.format);
      for (auto isa : isas) {
        ebla::detail::quantize_host(values.data(), out.data(), n, c, mode, isa);
        in_place = values;
        ebla::detail::quantize_host(in_place.data(), in_place.data(), n, c, mode, isa);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_TRUE(same(out[i], hg(i))) << entry.name << " " << ebla::to_string(mode) << " "
                                           << ebla::detail::to_string(isa) << " i = " << i;
          ASSERT_TRUE(same(in_place[i], hg(i))) << "in place, " << ebla::detail::to_string(isa);
        }
        compared += n;
      }
    }
  std::cout << "variants on this CPU:";
  for (auto isa : isas) std::cout << " " << ebla::detail::to_string(isa);
  std::cout << "; " << compared << " values compared\n";
  EXPECT_GE(compared, 40u * n);
}

TEST(Quantize, RoundsInPlaceAndThroughStridedViews) {
  const std::size_t n = 1000;
  Kokkos::View<double*> x = random_view(n, 5);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const auto f = ebla::formats::fp8_e5m2();
  ebla::quantize(x, x, f, Rounding::nearest_even);  // in place
  const auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(same(h1(i), ebla::round_to(hx(i), f, Rounding::nearest_even)));
  // every other element of a 2-D view's column: not contiguous, the generic kernel runs
  Kokkos::View<double**, Kokkos::LayoutRight> m("m", n, 2);
  auto col = Kokkos::subview(m, Kokkos::ALL(), 0);
  Kokkos::deep_copy(col, x);
  Kokkos::View<double*> y("y", n);
  ebla::quantize(col, y, ebla::formats::fp4_e2m1(), Rounding::upward);
  const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_TRUE(same(hy(i), ebla::round_to(h1(i), ebla::formats::fp4_e2m1(), Rounding::upward)));
}

TEST(Quantize, ThrowsOnPartialOverlap) {
  Kokkos::View<double*> x("x", 10);
  auto a = Kokkos::subview(x, std::make_pair(0, 6));
  auto b = Kokkos::subview(x, std::make_pair(3, 9));
  EXPECT_THROW(ebla::quantize(a, b, ebla::formats::binary16(), Rounding::nearest_even), ebla::InvalidArgument);
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

// Element i's random number is a function of (seed, i) alone: the result does not depend
// on the thread count or on which thread rounds element i.
TEST(Quantize, StochasticTakesElementIsNumberFromTheCounterGenerator) {
  const std::size_t n = 20000;
  const auto x = random_view(n, 5);
  const auto f = ebla::formats::binary16();
  Kokkos::View<double*> y("y", n);
  ebla::quantize(x, y, f, Rounding::stochastic, 1234);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  const auto c = ebla::rounding_constants(f);
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = ebla::detail::counter_uniform(1234, i);
    ASSERT_TRUE(r >= 0 && r < 1) << i;
    mean += r;
    ASSERT_TRUE(same(hy(i), ebla::round_to<Rounding::stochastic>(hx(i), c, r))) << i;
  }
  EXPECT_NEAR(mean / n, 0.5, 0.01);  // uniform: mean 1/2, standard error 0.002
  // another seed gives other numbers
  EXPECT_NE(ebla::detail::counter_uniform(1234, 0), ebla::detail::counter_uniform(1235, 0));
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

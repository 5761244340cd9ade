// quantize: y(i) = round_to(x(i), format, mode) over Kokkos views.
//
// The elementwise kernel every approximate kernel starts with (rounding inputs to a
// narrow format). The rounding mode is made a template argument once, outside the
// loop, so each mode gets its own branch-free loop body. Stochastic rounding takes
// element i's uniform number from a counter-based generator, a function of (seed, i)
// alone, so a run gives the same bits for a fixed seed on any backend and thread count.
//
// Where it runs: in y's execution space, so Views in a device's memory on the device;
// contiguous Views of doubles in host memory take the host kernel (quantize_host.hpp) on
// every thread of the default host execution space. round_to (ebla/core/rounding.hpp) is a
// KOKKOS_INLINE_FUNCTION for kernels of one's own, on the host or a device.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace ebla {

namespace detail {

template <Rounding mode, class InView, class OutView>
struct QuantizeFunctor {
  InView x;
  OutView y;
  RoundingConstants c;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    y(i) = round_to<mode>(x(i), c);
  }
};

/// The uniform number in [0, 1) of element i for seed s: the top 53 bits of SplitMix64's
/// output for the state s + (i + 1) * 0x9e3779b97f4a7c15 (Steele, Lea and Flood, "Fast
/// splittable pseudorandom number generators", OOPSLA 2014), which passes BigCrush for
/// consecutive counters.
KOKKOS_INLINE_FUNCTION double counter_uniform(std::uint64_t s, std::uint64_t i) {
  std::uint64_t z = s + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-53;
}

template <class InView, class OutView>
struct StochasticQuantizeFunctor {
  InView x;
  OutView y;
  RoundingConstants c;
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    y(i) = round_to<Rounding::stochastic>(x(i), c, counter_uniform(seed, i));
  }
};

/// The generic Kokkos kernel: one round_to per element, on any backend.
template <class InView, class OutView>
void quantize_kokkos(const InView& x, const OutView& y, const Format& f, Rounding mode,
                     std::uint64_t seed) {
  using exec = typename OutView::execution_space;
  const Kokkos::RangePolicy<exec> range(0, x.extent(0));
  const RoundingConstants c = rounding_constants(f);
  if (mode == Rounding::stochastic) {
    Kokkos::parallel_for("ebla::quantize(stochastic)", range, StochasticQuantizeFunctor<InView, OutView>{x, y, c, seed});
    return;
  }
  dispatch_rounding(mode, [&](auto m) {
    Kokkos::parallel_for("ebla::quantize", range,
                         QuantizeFunctor<decltype(m)::value, InView, OutView>{x, y, c});
  });
}

/// Whether the views hold doubles in memory the host can read and write.
template <class InView, class OutView>
constexpr bool host_doubles() {
  return std::is_same<typename InView::non_const_value_type, double>::value &&
         std::is_same<typename OutView::value_type, double>::value &&
         Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename InView::memory_space>::accessible &&
         Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename OutView::memory_space>::accessible;
}

/// The host specialisation: chunks of the arrays in parallel on the host execution
/// space, each rounded by the variant compiled for this CPU's instruction set.
inline void quantize_host_parallel(const double* x, double* y, std::size_t n,
                                   const RoundingConstants& c, Rounding mode) {
  const std::size_t chunk = stream_chunk(n);
  const HostIsa isa = best_host_isa();
  for_each_chunk(chunk_count(n, chunk), [=](const std::size_t k) {
    const std::size_t begin = k * chunk;
    quantize_host(x + begin, y + begin, n - begin < chunk ? n - begin : chunk, c, mode, isa);
  });
}

}  // namespace detail

/// Rounds every element of the rank-1 view x to the format f into y (y may be x itself,
/// but must not overlap it otherwise). Contiguous host arrays of doubles in a
/// deterministic mode take the host specialisation (vectorised for the CPU at run
/// time); everything else runs the generic Kokkos kernel. Both give the same bits.
/// Throws InvalidArgument if the extents differ, the arrays overlap partially or the
/// format is invalid.
template <class InView, class OutView>
void quantize(const InView& x, const OutView& y, const Format& f, Rounding mode,
              std::uint64_t seed = 0) {
  static_assert(InView::rank == 1 && OutView::rank == 1, "ebla::quantize: views must be rank 1");
  const std::size_t n = x.extent(0);
  if (n != y.extent(0))
    throw_invalid("ebla::quantize", "x has " + std::to_string(n) + " elements but y has " +
                                        std::to_string(y.extent(0)));
  validate(f, "ebla::quantize");
  const auto* xb = reinterpret_cast<const char*>(x.data());
  const auto* yb = reinterpret_cast<const char*>(y.data());
  const std::size_t bytes = n * sizeof(typename OutView::value_type);
  if (n != 0 && xb != yb && xb < yb + bytes && yb < xb + bytes)
    throw_invalid("ebla::quantize", "x and y overlap without being the same array");
  if constexpr (detail::host_doubles<InView, OutView>()) {
    if (mode != Rounding::stochastic && x.span_is_contiguous() && y.span_is_contiguous()) {
      detail::quantize_host_parallel(x.data(), y.data(), n, rounding_constants(f), mode);
      return;
    }
  }
  detail::quantize_kokkos(x, y, f, mode, seed);
}

}  // namespace ebla

// quantize: y(i) = round_to(x(i), format, mode) over Kokkos views.
//
// The elementwise kernel every approximate kernel starts with (rounding inputs to a
// narrow format). The rounding mode is made a template argument once, outside the
// loop, so each mode gets its own branch-free loop body. Stochastic rounding draws
// one uniform number per element from a Kokkos random pool seeded with `seed`, so a
// run is reproducible for a fixed seed and backend.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

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

template <class InView, class OutView, class Pool>
struct StochasticQuantizeFunctor {
  InView x;
  OutView y;
  RoundingConstants c;
  Pool pool;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    auto gen = pool.get_state();
    const double r = gen.drand(0.0, 1.0);  // uniform in [0, 1)
    pool.free_state(gen);
    y(i) = round_to<Rounding::stochastic>(x(i), c, r);
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
    using pool_type = Kokkos::Random_XorShift64_Pool<exec>;
    Kokkos::parallel_for("ebla::quantize(stochastic)", range,
                         StochasticQuantizeFunctor<InView, OutView, pool_type>{x, y, c, pool_type(seed)});
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
  constexpr std::size_t chunk = 1 << 14;
  const std::size_t chunks = (n + chunk - 1) / chunk;
  const HostIsa isa = best_host_isa();
  Kokkos::parallel_for("ebla::quantize(host)",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, chunks),
                       [=](const std::size_t k) {
                         const std::size_t begin = k * chunk;
                         const std::size_t len = n - begin < chunk ? n - begin : chunk;
                         quantize_host(x + begin, y + begin, len, c, mode, isa);
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

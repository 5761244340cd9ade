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

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include <cstdint>
#include <string>

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

}  // namespace detail

/// Rounds every element of the rank-1 view x to the format f into y (y may alias x).
/// Throws InvalidArgument if the extents differ or the format is invalid.
template <class InView, class OutView>
void quantize(const InView& x, const OutView& y, const Format& f, Rounding mode,
              std::uint64_t seed = 0) {
  static_assert(InView::rank == 1 && OutView::rank == 1, "ebla::quantize: views must be rank 1");
  if (x.extent(0) != y.extent(0))
    throw_invalid("ebla::quantize", "x has " + std::to_string(x.extent(0)) + " elements but y has " +
                                        std::to_string(y.extent(0)));
  validate(f, "ebla::quantize");
  using exec = typename OutView::execution_space;
  const Kokkos::RangePolicy<exec> range(0, x.extent(0));
  if (mode == Rounding::stochastic) {
    using pool_type = Kokkos::Random_XorShift64_Pool<exec>;
    Kokkos::parallel_for("ebla::quantize(stochastic)", range,
                         detail::StochasticQuantizeFunctor<InView, OutView, pool_type>{
                             x, y, rounding_constants(f), pool_type(seed)});
    return;
  }
  dispatch_rounding(mode, [&](auto m) {
    Kokkos::parallel_for("ebla::quantize", range,
                         detail::QuantizeFunctor<decltype(m)::value, InView, OutView>{
                             x, y, rounding_constants(f)});
  });
}

}  // namespace ebla

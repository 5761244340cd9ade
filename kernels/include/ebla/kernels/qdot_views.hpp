// qdot over Kokkos views: the generic kernels (any backend) behind qdot.hpp.
//
// Selection is a parallel_reduce whose value is the exponent histogram (an array
// reduction: counts merge by addition, across threads as across processes, in any order).
// Computation cuts the vectors into chunks of qdot_generic_chunk components; each chunk's
// QdotAccum (compensated sum, bound terms, counts) is computed on its own and the chunks
// merge exactly by TwoSum in chunk order, so that the result is the same bits for any
// number of threads. Contiguous host arrays take the host specialisation in qdot_host.cpp
// (same arithmetic, vectorised and threaded the same way; tested against these kernels).
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/exact.hpp>
#include <ebla/kernels/qdot.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>
#include <type_traits>

namespace ebla {
namespace detail {

/// Histogram slots: bin e lives at index e + qdot_offset; two more slots count
/// non-finite components and zero products.
constexpr int qdot_offset = 2152;     // e = fexp(x) + fexp(y) in [-2148, 2046]
constexpr int qdot_bins = 4200;
constexpr int qdot_slot_nonfinite = qdot_bins;
constexpr int qdot_slot_zero = qdot_bins + 1;
constexpr int qdot_hist_size = qdot_bins + 2;
constexpr int qdot_max_levels = 8;

// Masks (all ones or zero) from integer arithmetic alone: selections by mask keep the
// loops free of branches, and avoiding bool values lets compilers vectorise them.
/// All ones if v == 0.
KOKKOS_INLINE_FUNCTION std::uint64_t mask_zero(std::uint64_t v) { return ((v | (0 - v)) >> 63) - 1; }
/// All ones if a == b.
KOKKOS_INLINE_FUNCTION std::uint64_t mask_eq(std::uint64_t a, std::uint64_t b) { return mask_zero(a ^ b); }
/// All ones if a < b (|a - b| < 2^63).
KOKKOS_INLINE_FUNCTION std::uint64_t mask_lt(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>((a - b) >> 63);
}

/// Exponent floor(log2|v|) of a finite nonzero double from its magnitude bits, subnormals
/// normalised by an exact scaling by 2^64 (no branch, no count of leading zeros).
KOKKOS_INLINE_FUNCTION std::int64_t qdot_exponent(std::uint64_t a) {
  const std::uint64_t field = a >> 52;
  const double scaled = bit_cast<double>(a) * 18446744073709551616.0;  // 2^64
  const std::uint64_t sfield = (bit_cast<std::uint64_t>(scaled) >> 52) - 64;
  const std::uint64_t sub = mask_zero(field);
  return static_cast<std::int64_t>((sfield & sub) | (field & ~sub)) - 1023;
}

/// x rounded to nearest (ties to even) to t = 53 - k significant bits relative to its own
/// exponent: no overflow or underflow. Factors with |x| < 2^-963 (subnormals included) or
/// |x| >= 2^970 are left unchanged (exact, so the error bound still holds); the host
/// kernels round by Veltkamp's splitting, which needs that margin, and every path keeps the
/// same rule so that they compute the same products.
KOKKOS_INLINE_FUNCTION double round_significand(double x, std::int64_t k) {
  const std::uint64_t bits = bit_cast<std::uint64_t>(x);
  const std::uint64_t a = bits & binary64::abs_mask;
  const std::uint64_t kept = a >> k;
  const std::uint64_t tail = ((a - (kept << k)) << 1) << (63 - k);  // rounding bit at bit 63
  // up: rounding bit set, and a sticky bit below it or an odd kept part (ties to even)
  const std::uint64_t sticky = (mask_zero(tail << 1) & 1) ^ 1;
  const std::uint64_t up = (tail >> 63) & (sticky | (kept & 1));
  const std::uint64_t r = (kept + up) << k;
  const std::uint64_t field = a >> 52;
  const std::uint64_t keep = mask_lt(static_cast<std::int64_t>(field), 60) | ~mask_lt(static_cast<std::int64_t>(field), 1993);
  return bit_cast<double>((bits & keep) | ((r | (bits & binary64::sign_mask)) & ~keep));
}


/// The ladder as the kernels see it (plain data).
struct QdotKernelLevels {
  int count = 1;
  int perforate = -1;                        ///< index of the perforate level, or -1
  std::int64_t shift[qdot_max_levels] = {};  ///< 53 - t (0: no rounding)
  double c[qdot_max_levels] = {};            ///< bound constant per |q_i| (perforate: per |x_i y_i|)
  int e_min = 0, e_max = -1;                 ///< bins of the plan
};

/// Reduction value of the computation phase.
struct QdotAccum {
  double s, c;     ///< compensated sum of the products: s + c
  double q;        ///< sum |q_i|
  double b;        ///< sum c_l |q_i| (quantization bound terms)
  std::int64_t count[qdot_max_levels];
  std::int64_t zeros, outside, nonfinite;
};

KOKKOS_INLINE_FUNCTION void qdot_accum_init(QdotAccum& v) {
  v.s = v.c = v.q = v.b = 0;
  for (int l = 0; l < qdot_max_levels; ++l) v.count[l] = 0;
  v.zeros = v.outside = v.nonfinite = 0;
}

template <class Dst, class Src>
KOKKOS_INLINE_FUNCTION void qdot_accum_join(Dst& d, const Src& s) {
  double sum, err;
  two_sum(d.s, s.s, sum, err);  // exact merge of the two running sums
  d.s = sum;
  d.c = d.c + s.c + err;
  d.q = d.q + s.q;
  d.b = d.b + s.b;
  for (int l = 0; l < qdot_max_levels; ++l) d.count[l] = d.count[l] + s.count[l];
  d.zeros = d.zeros + s.zeros;
  d.outside = d.outside + s.outside;
  d.nonfinite = d.nonfinite + s.nonfinite;
}

/// Selection: the exponent histogram of the products (Algorithm 3.2, lines 3-6).
template <class XView, class YView>
struct QdotHistogram {
  using value_type = std::int64_t[];
  using size_type = std::size_t;
  XView x;
  YView y;
  unsigned value_count = qdot_hist_size;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i, value_type h) const {
    const std::uint64_t ax = bit_cast<std::uint64_t>(static_cast<double>(x(i))) & binary64::abs_mask;
    const std::uint64_t ay = bit_cast<std::uint64_t>(static_cast<double>(y(i))) & binary64::abs_mask;
    if ((ax >> 52) == 0x7ff || (ay >> 52) == 0x7ff) {
      h[qdot_slot_nonfinite] += 1;
    } else if (ax == 0 || ay == 0) {
      h[qdot_slot_zero] += 1;
    } else {
      h[qdot_exponent(ax) + qdot_exponent(ay) + qdot_offset] += 1;
    }
  }
  KOKKOS_INLINE_FUNCTION void init(value_type h) const {
    for (unsigned j = 0; j < value_count; ++j) h[j] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type d, const value_type s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#if KOKKOS_VERSION < 30700  // older Kokkos joins through volatile references
  KOKKOS_INLINE_FUNCTION void join(volatile std::int64_t* d, const volatile std::int64_t* s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#endif
};

/// Selection on a device: each component adds one to its slot of a histogram in device
/// memory with an atomic increment (integer counts, so the same counts in any order). An
/// array reduction of qdot_hist_size counts per thread, as on the host, would not fit a GPU
/// block's shared memory.
template <class XView, class YView, class Histogram>
struct QdotHistogramAtomic {
  XView x;
  YView y;
  Histogram h;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    const std::uint64_t ax = bit_cast<std::uint64_t>(static_cast<double>(x(i))) & binary64::abs_mask;
    const std::uint64_t ay = bit_cast<std::uint64_t>(static_cast<double>(y(i))) & binary64::abs_mask;
    int slot;
    if ((ax >> 52) == 0x7ff || (ay >> 52) == 0x7ff) {
      slot = qdot_slot_nonfinite;
    } else if (ax == 0 || ay == 0) {
      slot = qdot_slot_zero;
    } else {
      slot = static_cast<int>(qdot_exponent(ax) + qdot_exponent(ay) + qdot_offset);
    }
    Kokkos::atomic_increment(&h(slot));
  }
};

/// Computation: Algorithm 3.1 with compensated accumulation and bound terms, one
/// component at a time into an accumulator.
template <class XView, class YView, class LevelView>
struct QdotCompute {
  XView x;
  YView y;
  LevelView level;  ///< ladder index of bin e_min + j
  QdotKernelLevels L;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i, QdotAccum& acc) const {
    const double xi = static_cast<double>(x(i)), yi = static_cast<double>(y(i));
    const std::uint64_t ax = bit_cast<std::uint64_t>(xi) & binary64::abs_mask;
    const std::uint64_t ay = bit_cast<std::uint64_t>(yi) & binary64::abs_mask;
    if ((ax >> 52) == 0x7ff || (ay >> 52) == 0x7ff) {
      acc.nonfinite += 1;
      return;
    }
    if (ax == 0 || ay == 0) {
      acc.zeros += 1;
      return;
    }
    const std::int64_t e = qdot_exponent(ax) + qdot_exponent(ay);
    const bool inside = e >= L.e_min && e <= L.e_max;
    const int l = inside ? static_cast<int>(level(e - L.e_min)) : 0;
    acc.outside += inside ? 0 : 1;
    acc.count[l] += 1;
    if (l == L.perforate) {  // skipped: contributes |x_i y_i| to the bounds only
      const double ap = magnitude(xi * yi);
      acc.q += ap;
      acc.b += L.c[l] * ap;
      return;
    }
    const double q = round_significand(xi, L.shift[l]) * round_significand(yi, L.shift[l]);
    const double aq = magnitude(q);
    acc.q += aq;
    acc.b += L.c[l] * aq;
    double s, err;
    two_sum(acc.s, q, s, err);
    acc.s = s;
    acc.c += err;
  }
};

/// Components per chunk of the generic computation (fixed: the merge tree depends on n only).
constexpr std::size_t qdot_generic_chunk = 4096;

/// Accumulates each chunk of components into part(c).
template <class Compute, class PartView>
struct QdotComputeChunks {
  Compute step;
  PartView part;
  std::size_t n;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t c) const {
    QdotAccum acc;
    qdot_accum_init(acc);
    const std::size_t end = (c + 1) * qdot_generic_chunk < n ? (c + 1) * qdot_generic_chunk : n;
    for (std::size_t i = c * qdot_generic_chunk; i < end; ++i) step(i, acc);
    part(c) = acc;
  }
};

/// Plain dot product sum x_i y_i (for inputs with NaN or Inf), chunk by chunk, the chunks'
/// sums added in chunk order.
template <class XView, class YView>
double plain_dot(const XView& x, const YView& y) {
  using exec = typename XView::execution_space;
  const std::size_t n = x.extent(0), chunks = (n + qdot_generic_chunk - 1) / qdot_generic_chunk;
  Kokkos::View<double*, typename XView::memory_space> part("ebla::qdot(plain) chunks", chunks);
  Kokkos::parallel_for(
      "ebla::qdot(plain)", Kokkos::RangePolicy<exec>(0, chunks), KOKKOS_LAMBDA(const std::size_t c) {
        const std::size_t end = (c + 1) * qdot_generic_chunk < n ? (c + 1) * qdot_generic_chunk : n;
        double s = 0;
        for (std::size_t i = c * qdot_generic_chunk; i < end; ++i) s += static_cast<double>(x(i)) * static_cast<double>(y(i));
        part(c) = s;
      });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
  double sum = 0;
  for (std::size_t c = 0; c < chunks; ++c) sum += host(c);
  return sum;
}

// Non-template parts (qdot.cpp).
std::vector<QdotLevel> resolve_ladder(const QdotOptions& options, int input_t, const char* function);
/// The a-priori error of one component of bin e, in units of 2^e, that the budget policy
/// charges: `format` u for a format of unit roundoff u = 2^-t (below the input precision),
/// `perforate` for a skipped component. The default is that of a product x_i y_i of bin
/// e = fexp(x_i) + fexp(y_i) whose two factors are rounded (4 u and 4, see a_priori_error in
/// qdot.cpp); a stored vector's bins are those of x_i alone (qdot_stored.hpp: u and 2).
struct QdotErrorModel {
  long double format = 4;
  long double perforate = 4;
};
QdotPlan plan_from_histogram(const std::int64_t* histogram, std::size_t n, int input_t,
                             const QdotOptions& options, const QdotErrorModel& model = {});
QdotKernelLevels kernel_levels(const QdotPlan& plan);
void check_plan(const QdotPlan& plan, std::size_t n, int input_t, const char* function);
QdotResult finish_result(const QdotPlan& plan, const QdotAccum& acc, std::size_t n);

template <class V>
constexpr int input_precision() {
  using T = typename V::non_const_value_type;
  static_assert(std::is_same<T, double>::value || std::is_same<T, float>::value,
                "ebla::qdot: views must hold double or float");
  return std::is_same<T, double>::value ? 53 : 24;
}

template <class XView, class YView>
void check_views(const XView& x, const YView& y, const char* function) {
  static_assert(XView::rank == 1 && YView::rank == 1, "ebla::qdot: views must be rank 1");
  static_assert(input_precision<XView>() == input_precision<YView>(),
                "ebla::qdot: x and y must hold the same type");
  if (x.extent(0) != y.extent(0))
    throw_invalid(function, "x has " + std::to_string(x.extent(0)) + " elements but y has " +
                                std::to_string(y.extent(0)));
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The generic selection kernel.
template <class XView, class YView>
QdotPlan qdot_select_kokkos(const XView& x, const YView& y, const QdotOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  resolve_ladder(options, input_precision<XView>(), "ebla::qdot_select");  // before any work
  using exec = typename XView::execution_space;
  using mem = typename XView::memory_space;
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> histogram("ebla::qdot histogram", qdot_hist_size);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, mem>::accessible) {
    // host threads: a histogram per thread, merged by addition
    Kokkos::parallel_reduce("ebla::qdot_select", Kokkos::RangePolicy<exec>(0, x.extent(0)),
                            QdotHistogram<XView, YView>{x, y}, histogram);
  } else {
    // a device: one histogram in its memory, atomic increments, then copied to the host
    Kokkos::View<std::int64_t*, mem> device_histogram("ebla::qdot histogram", qdot_hist_size);
    Kokkos::parallel_for("ebla::qdot_select", Kokkos::RangePolicy<exec>(0, x.extent(0)),
                         QdotHistogramAtomic<XView, YView, decltype(device_histogram)>{x, y, device_histogram});
    Kokkos::deep_copy(histogram, device_histogram);
  }
  QdotPlan plan = plan_from_histogram(histogram.data(), x.extent(0), input_precision<XView>(), options);
  plan.select_seconds = seconds_since(t0);
  return plan;
}

/// The generic computation kernel.
template <class XView, class YView>
QdotResult qdot_compute_kokkos(const XView& x, const YView& y, const QdotPlan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  using exec = typename XView::execution_space;
  using mem = typename XView::memory_space;
  Kokkos::View<std::uint8_t*, mem> level("ebla::qdot levels", plan.level.size());
  auto host_level = Kokkos::create_mirror_view(level);
  for (std::size_t j = 0; j < plan.level.size(); ++j) host_level(j) = plan.level[j];
  Kokkos::deep_copy(level, host_level);
  const std::size_t n = x.extent(0), chunks = (n + qdot_generic_chunk - 1) / qdot_generic_chunk;
  Kokkos::View<QdotAccum*, mem> part("ebla::qdot chunks", chunks);
  using Compute = QdotCompute<XView, YView, decltype(level)>;
  Kokkos::parallel_for("ebla::qdot_compute", Kokkos::RangePolicy<exec>(0, chunks),
                       QdotComputeChunks<Compute, decltype(part)>{Compute{x, y, level, kernel_levels(plan)}, part, n});
  const auto host_part = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
  QdotAccum acc;
  qdot_accum_init(acc);
  for (std::size_t c = 0; c < chunks; ++c) qdot_accum_join(acc, host_part(c));  // chunk order
  QdotResult result = finish_result(plan, acc, x.extent(0));
  if (result.stats.nonfinite) result.value = plain_dot(x, y);
  result.stats.compute_seconds = seconds_since(t0);
  return result;
}

/// Whether the views are contiguous arrays in host memory (host specialisation).
template <class V>
constexpr bool host_view() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;
}

}  // namespace detail

/// qdot_select over views (see qdot.hpp). Throws InvalidArgument on a length mismatch
/// or invalid options.
template <class XView, class YView>
QdotPlan qdot_select(const XView& x, const YView& y, const QdotOptions& options) {
  detail::check_views(x, y, "ebla::qdot_select");
  if constexpr (detail::host_view<XView>() && detail::host_view<YView>()) {
    if (x.span_is_contiguous() && y.span_is_contiguous())
      return qdot_select(x.data(), y.data(), x.extent(0), options);
  }
  return detail::qdot_select_kokkos(x, y, options);
}

/// qdot_compute over views. Throws InvalidArgument if the plan was selected for
/// another length or input type.
template <class XView, class YView>
QdotResult qdot_compute(const XView& x, const YView& y, const QdotPlan& plan) {
  detail::check_views(x, y, "ebla::qdot_compute");
  detail::check_plan(plan, x.extent(0), detail::input_precision<XView>(), "ebla::qdot_compute");
  if constexpr (detail::host_view<XView>() && detail::host_view<YView>()) {
    if (x.span_is_contiguous() && y.span_is_contiguous())
      return qdot_compute(x.data(), y.data(), x.extent(0), plan);
  }
  return detail::qdot_compute_kokkos(x, y, plan);
}

/// qdot over views: selection then computation.
template <class XView, class YView>
QdotResult qdot(const XView& x, const YView& y, const QdotOptions& options) {
  detail::check_views(x, y, "ebla::qdot");
  if constexpr (detail::host_view<XView>() && detail::host_view<YView>()) {
    if (x.span_is_contiguous() && y.span_is_contiguous()) return qdot(x.data(), y.data(), x.extent(0), options);
  }
  const QdotPlan plan = qdot_select(x, y, options);
  QdotResult result = qdot_compute(x, y, plan);
  result.stats.select_seconds = plan.select_seconds;
  return result;
}

}  // namespace ebla

// The weak-form kernel of seed 004 (Xie, "Rounding error analysis in weak form kernel for 1D
// equation on GPU", 2024), Algorithm 1, and its layer-wise error bounds.
//
//   A[i, j, k] += sum_{ii < n} B[i, ii, k] C[j, ii]      i < ni, j < nj, k < nk
//
// as a Kokkos parallel_for over (i, j, k), every entry one inner product through a matrix-multiply
// unit (matrix_unit.hpp): B and C are rounded to the unit's input format, A's initial value to its
// accumulation format, and the sum is the unit's chain of operations (an FMA chain for
// weakform_unit) in the accumulation format, bit-exactly as unit_dot computes it.
//
//   MatrixUnit unit = weakform_unit(formats::binary16(), formats::binary32());
//   WeakformBounds b = weakform_bounds(unit, A, B, C);  // before: A holds its initial value
//   weakform(unit, A, B, C);                             // A = A + B C, layer by layer
//
// Where it runs: weakform in the execution space of A's View (on the device for Views in its
// memory); weakform_bounds on the host, on Views in host memory (copy a device's Views to
// host mirrors first: Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A)).
//
// The bounds (seed 004, (14) and (15)). Per layer k, with A0 the initial value of A,
//   B'(k) = [B(k) | A0(k)]       (ni x (n + nj): the seed's (9), B(k) next to A(k))
//   C'    = [C^T ; I_nj]         ((n + nj) x nj: the seed's (10); the seed has nj = n)
// so that A0(k) + B(k) C^T = B'(k) C' and each entry is an inner product of length n + 1 in
// effect (the seed's "essentially size n + 1"). The printed bounds are
//   (14)  |A_hat(k) - A(k)| <= gamma_{n+1} |B'(k)| |C'|
//   (15)  ||A_hat(k) - A(k)||_p <= gamma_{n+1} ||B'(k)||_p ||C'||_p,   p = 1, inf, F,
// gamma_{n+1} = (n+1) u / (1 - (n+1) u) with u the unit roundoff of the arithmetic. They assume
// inputs already in the format, no underflow, rounding to nearest and a product rounded before
// each addition. weakform_bounds certifies instead, against the exact A0 + B C of the data as
// given (doubles):
//   (14')  |A_hat - A|_ij <= kappa_p (|B| |C|^T)_ij + kappa_a |A0|_ij + T_ij
//   (15')  ||A_hat - A||_p <= kappa ||B'||_p ||C'||_p + ||T||_p,   kappa = max(kappa_p, kappa_a)
// For a unit whose every operation rounds once (below), with r roundings per entry (n for an
// FMA chain: fl(s + b c) rounds once; ceil(n / b) for a block unit with one rounding per
// operation), u_s the unit roundoff of the sums (2^-t to nearest, 2^(1-t) toward zero),
// gamma_r = r u_s / (1 - r u_s), and
//   kappa_p = (1 + gamma_r)(1 + u_p)(1 + u_in)^2 - 1  (u_in = 2^-t_in, 0 if B(k) and C are in the
//                                                   format; u_p = 2^-t_p for products rounded to
//                                                   a format t_p, else 0)
//   kappa_a = (1 + gamma_r)(1 + u_a) - 1        (u_a = 2^-t_acc, 0 if A0(k) is in the format)
//   T_ij = (1 + gamma_r) [(1 + u_p)(eta_in (1 + u_in)(sum_ii |B_i,ii| + sum_ii |C_j,ii|) + n eta_in^2)
//          + n eta_p + eta_a] + r eta_s (1 + gamma_r)
// where eta_in, eta_a, eta_p, eta_s are the absolute errors of underflow (half the subnormal spacing to
// nearest, the spacing toward zero, fmin when subnormals are flushed or read as zero; eta_in and
// eta_a are 0 when the data are in the format). docs/weakform.md derives them. The norms of the
// (14') matrix, ||M||_p, are reported too: ||A_hat - A||_p <= ||M||_p <= (15'). The bound is
// +infinity where the format's range could be exceeded (inputs that overflow, or
// (1 + kappa)(|B'| |C'|)_ij + T_ij beyond fmax), or r u_s >= 1.
//
// Which bound a unit gets. Units whose every operation rounds once, exactly, get the bound
// above: nothing dropped in alignment (extra_bits unbounded), the addend joining the products,
// one chain, sums in the accumulation format's own precision, and products exact or rounded
// one at a time (b = 1, each_addition: the seed's model). Every other valid unit (truncated or
// exponent-sum alignment with its floor, sum_precision below t, after_products, several chains,
// rounded products in blocks: the tensor-core presets, amx_bf16, ...) gets the general bound:
// the same formulas with gamma_r replaced by g = (1 + delta)^d - 1 and r eta_s (1 + gamma_r) by
// N G (1 + g), where delta, d, N and G are ebla::accumulation_model's (gemm.hpp) for the unit
// with exact products (a rounded product keeps its u_p and eta_p above), and A0's rounded value
// is one more leaf of its accumulation tree, no deeper than a product. For a unit aligned on
// exponent sums with subnormal inputs, G is that of the unit reading no subnormal input, and an
// entry with a subnormal factor among its products adds N (b + 1) 2^(E - T_s + 1 - extra_bits)
// (1 + g), E the largest exponent sum of such a product (at most N G (1 + g) with the model's G for
// subnormal inputs). The overflow threshold is the smaller of fmax and the largest value of
// T_s bits. Bad input (mismatched extents, non-finite entries, an invalid unit) throws
// ebla::InvalidArgument naming the function and the value.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla {

/// The unit of the seed's kernel: inputs in `input`, sums in `accumulation` rounded by
/// `rounding` (nearest_even or toward_zero); without `product` an FMA chain, with it each
/// product rounded to nearest-even in `product` before it is added (the seed's own model (1)-(2):
/// fl(s + fl(b c))). Validated.
MatrixUnit weakform_unit(const Format& input, const Format& accumulation,
                         Rounding rounding = Rounding::nearest_even,
                         const std::optional<Format>& product = std::nullopt);

/// The bounds of one layer k.
struct WeakformLayerBound {
  double kappa = 0;          ///< max(kappa_p, kappa_a): the relative coefficient of (15')
  double norm_b1 = 0, norm_binf = 0, norm_bf = 0;  ///< ||B'(k)||_1, _inf, _F
  double bound1 = 0, bound_inf = 0, bound_f = 0;   ///< (15'), certified
  double paper1 = 0, paper_inf = 0, paper_f = 0;   ///< (15) as printed: gamma_{n+1} ||B'|| ||C'||
  /// ||M||_1, _inf, _F of the layer's (14') matrix M: ||A_hat - A||_p <= ||M||_p <= (15'),
  /// the tighter norm bounds.
  double entry1 = 0, entry_inf = 0, entry_f = 0;
};

/// weakform_bounds' result: the certified and the printed bounds, per entry and per layer.
struct WeakformBounds {
  int roundings = 0;          ///< r: roundings per entry (general: N)
  double unit_roundoff = 0;   ///< u_s of the sums (2^-T_s, or 2^(1-T_s) toward zero)
  double product_roundoff = 0;  ///< u_p of the products (0: exact products)
  double gamma = 0;           ///< gamma_r (general: g = (1 + delta)^d - 1)
  bool general = false;       ///< the general bound (accumulation_model), not r roundings
  double delta = 0;           ///< relative error of one step (r roundings: u_s)
  double depth = 0;           ///< d: steps from a product or from A0 to the result (r)
  double steps = 0;           ///< N: steps with an absolute underflow error (r)
  double underflow = 0;       ///< G of one step on inputs without subnormals (r roundings: eta_s)
  double underflow_subnormal = 0;  ///< G of one step at most, subnormal inputs included
  double paper_gamma = 0;     ///< the seed's gamma_{n+1} with u = 2^-t_acc
  double norm_c1 = 0, norm_cinf = 0, norm_cf = 0;  ///< ||C'||_1, _inf, _F
  Kokkos::View<double***, Kokkos::HostSpace> componentwise;  ///< (14'), ni x nj x nk
  Kokkos::View<double***, Kokkos::HostSpace> paper;          ///< (14) as printed
  std::vector<WeakformLayerBound> layers;                    ///< (15') and (15), per k
};

/// The bounds of weakform(unit, A, B, C) for A holding its initial value A0 (A: ni x nj x nk,
/// B: ni x n x nk, C: nj x n, host views), for any valid unit. Throws InvalidArgument for bad
/// extents, non-finite entries or an invalid unit.
WeakformBounds weakform_bounds(const MatrixUnit& unit,
                               const Kokkos::View<const double***, Kokkos::HostSpace>& A,
                               const Kokkos::View<const double***, Kokkos::HostSpace>& B,
                               const Kokkos::View<const double**, Kokkos::HostSpace>& C);

/// A = A + B C layer by layer: A(i, j, k) = unit_dot(unit, B(i, :, k), C(j, :), n, A(i, j, k)),
/// as a Kokkos parallel_for over (i, j, k). A is ni x nj x nk, B ni x n x nk, C nj x n (views
/// of double). Throws InvalidArgument naming the extents if they do not match, the first entry
/// that is not finite, or the unit's bad field.
template <class AView, class BView, class CView>
void weakform(const MatrixUnit& unit, const AView& A, const BView& B, const CView& C);

namespace detail {

/// Validates the unit (as `function`) and the extents of weakform.
void check_weakform(const char* function, const MatrixUnit& unit, std::size_t ani,
                    std::size_t anj, std::size_t ank, std::size_t bni, std::size_t bn,
                    std::size_t bnk, std::size_t cnj, std::size_t cn);

/// Throws InvalidArgument "function: name(i, j, k) = value is not finite".
[[noreturn]] void throw_nonfinite(const char* function, const char* name, std::size_t i,
                                  std::size_t j, std::size_t k, double value);

/// Checks every entry of a rank-2 or rank-3 view (copied to the host) for finiteness.
template <class View>
void check_finite(const char* function, const char* name, const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  if constexpr (View::rank == 3) {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j)
        for (std::size_t k = 0; k < h.extent(2); ++k)
          if (!is_finite(h(i, j, k))) throw_nonfinite(function, name, i, j, k, h(i, j, k));
  } else {
    static_assert(View::rank == 2, "ebla::weakform: C must be a rank-2 view");
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j)
        if (!is_finite(h(i, j))) throw_nonfinite(function, name, i, j, ~std::size_t{0}, h(i, j));
  }
}

template <class AView, class BView, class CView>
struct WeakformFunctor {
  struct Row {  // B(i, :, k)
    BView B;
    int i, k;
    KOKKOS_INLINE_FUNCTION double operator()(std::size_t l) const { return B(i, l, k); }
  };
  struct Column {  // C(j, :): the seed's C[j, ii]
    CView C;
    int j;
    KOKKOS_INLINE_FUNCTION double operator()(std::size_t l) const { return C(j, l); }
  };
  AView A;
  BView B;
  CView C;
  PreparedUnit p;

  KOKKOS_INLINE_FUNCTION void operator()(const int i, const int j, const int k) const {
    A(i, j, k) = unit_dot_prepared(p, Row{B, i, k}, Column{C, j}, B.extent(1), A(i, j, k));
  }
};

}  // namespace detail

template <class AView, class BView, class CView>
void weakform(const MatrixUnit& unit, const AView& A, const BView& B, const CView& C) {
  static_assert(AView::rank == 3 && BView::rank == 3 && CView::rank == 2,
                "ebla::weakform: A and B must be rank-3 views, C a rank-2 view");
  static_assert(std::is_same<typename AView::value_type, double>::value,
                "ebla::weakform: A must be a view of (non-const) double");
  detail::check_weakform("ebla::weakform", unit, A.extent(0), A.extent(1), A.extent(2),
                         B.extent(0), B.extent(1), B.extent(2), C.extent(0), C.extent(1));
  detail::check_finite("ebla::weakform", "A", A);
  detail::check_finite("ebla::weakform", "B", B);
  detail::check_finite("ebla::weakform", "C", C);
  if (A.extent(0) == 0 || A.extent(1) == 0 || A.extent(2) == 0) return;
  using exec = typename AView::execution_space;
  const Kokkos::MDRangePolicy<exec, Kokkos::Rank<3>> range(
      {0, 0, 0}, {static_cast<std::int64_t>(A.extent(0)), static_cast<std::int64_t>(A.extent(1)),
                  static_cast<std::int64_t>(A.extent(2))});
  Kokkos::parallel_for(
      "ebla::weakform", range,
      detail::WeakformFunctor<AView, BView, CView>{A, B, C, detail::prepare(unit)});
  exec().fence();
}

}  // namespace ebla

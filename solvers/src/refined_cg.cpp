#include <ebla/solvers/refined_cg.hpp>

#include <ebla/core/error.hpp>

#include "vector_range.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace ebla {

namespace {

using exec = Kokkos::DefaultExecutionSpace;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- reductions in fixed chunks -------------------------------------------------------------
//
// Every sum below is taken chunk by chunk: chunk c holds entries [c B, (c + 1) B) with
// B = 1024, summed by one work item in `lanes` interleaved partial sums (entry i into lane
// (i - c B) mod lanes: independent additions the compiler can keep in one vector register),
// the lanes added in a fixed tree; the chunks' sums are added in chunk order on the host.
// Nothing depends on which thread takes which chunk: the same bits on any thread count.

constexpr std::size_t block = 1024;

template <class T>
constexpr int lanes_of = 64 / sizeof(T);  // one 512-bit register: 16 floats, 8 doubles

// lanes added pairwise: ((s0 + s1) + (s2 + s3)) + ...
template <class T, int L>
KOKKOS_INLINE_FUNCTION T lane_total(T (&s)[L]) {
  for (int width = L / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) s[k] = s[2 * k] + s[2 * k + 1];
  return s[0];
}

// The chunks' partial sums of one kind of reduction, kept between calls (no allocation per
// iteration), and their sum in chunk order.
template <class T>
class ChunkSums {
public:
  ChunkSums() = default;
  explicit ChunkSums(std::size_t n)
      : n_(n), part_("ebla::refined_cg chunks", (n + block - 1) / block), host_(Kokkos::create_mirror_view(part_)) {}
  std::size_t n() const { return n_; }
  std::size_t chunks() const { return part_.extent(0); }
  const Kokkos::View<T*>& part() const { return part_; }
  T total() const {
    exec().fence();
    Kokkos::deep_copy(host_, part_);
    T sum = 0;
    for (std::size_t c = 0; c < host_.extent(0); ++c) sum += host_(c);
    return sum;
  }

private:
  std::size_t n_ = 0;
  Kokkos::View<T*> part_;
  typename Kokkos::View<T*>::HostMirror host_;
};

// sum over i of term(i), T the arithmetic of every addition.
template <class T, class Term>
T chunked_sum(const ChunkSums<T>& sums, Term term) {
  constexpr int L = lanes_of<T>;
  const std::size_t n = sums.n();
  const auto part = sums.part();
  Kokkos::parallel_for(
      "ebla::refined_cg sum", Kokkos::RangePolicy<exec>(0, sums.chunks()), KOKKOS_LAMBDA(const std::size_t c) {
        const std::size_t begin = c * block, end = begin + block < n ? begin + block : n;
        T s[L] = {};
        std::size_t i = begin;
        for (; i + L <= end; i += L)
          for (int k = 0; k < L; ++k) s[k] += term(i + k);
        for (int k = 0; i < end; ++i, ++k) s[k] += term(i);
        part(c) = lane_total(s);
      });
  return sums.total();
}

// ---- the float operators --------------------------------------------------------------------

// to = from rounded to float; throws on the first finite value above float's range. (A
// function of its own: a device lambda may not be defined in a constructor.)
void round_values(const decltype(CsrMatrix().values)& from, const Kokkos::View<float*>& to) {
  // the first value whose float overflows (a finite double above float's range)
  std::size_t first = from.extent(0);
  Kokkos::parallel_reduce(
      "ebla::refined_cg float matrix", Kokkos::RangePolicy<exec>(0, from.extent(0)),
      KOKKOS_LAMBDA(const std::size_t k, std::size_t& bad) {
        const float v = static_cast<float>(from(k));
        to(k) = v;
        if (std::isinf(v) && !std::isinf(from(k)) && k < bad) bad = k;
      },
      Kokkos::Min<std::size_t>(first));
  if (first < from.extent(0)) {
    double value = 0;
    Kokkos::deep_copy(Kokkos::View<double, Kokkos::HostSpace>(&value), Kokkos::subview(from, first));
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    throw_invalid("ebla::refined_cg", "matrix value " + std::string(text) + " (entry " + std::to_string(first) +
                                          " of the CSR values) overflows float");
  }
}

// CSR with the values rounded to float, the graph of the binary64 matrix shared.
class FloatCsr {
public:
  explicit FloatCsr(const CsrOperator& A) : FloatCsr(A.matrix()) {}
  explicit FloatCsr(const CsrMatrix& A)
      : rows_(A.graph.row_map), cols_(A.graph.entries), vals_("ebla::refined_cg float values", A.values.extent(0)) {
    round_values(A.values, vals_);
  }
  // y = A x, each row summed in float in the order of its entries
  void apply(ConstFloatVector x, FloatVector y) const {
    const auto rows = rows_;
    const auto cols = cols_;
    const auto vals = vals_;
    Kokkos::parallel_for(
        "ebla::refined_cg float spmv", Kokkos::RangePolicy<exec>(0, y.extent(0)), KOKKOS_LAMBDA(const std::size_t i) {
          float s = 0;
          for (std::size_t k = rows(i); k < rows(i + 1); ++k) s += vals(k) * x(cols(k));
          y(i) = s;
        });
  }

private:
  decltype(CsrMatrix().graph.row_map) rows_;
  decltype(CsrMatrix().graph.entries) cols_;
  Kokkos::View<float*> vals_;
};

class FloatStencil {
public:
  explicit FloatStencil(const StencilOperator& A) : nx_(A.nx()), ny_(A.ny()), nz_(A.nz()) {}
  void apply(ConstFloatVector x, FloatVector y) const { detail::stencil27_apply(nx_, ny_, nz_, x, y); }

private:
  int nx_, ny_, nz_;
};

// ---- the inner float CG ---------------------------------------------------------------------

struct InnerResult {
  int iterations = 0;
  float relative_residual = 1;  // sqrt(r^T r / r_0^T r_0) at exit (recursive)
  bool breakdown = false;
};

// The float vectors of the inner solve, allocated once per call.
struct InnerSpace {
  FloatVector rhs, d, r, p, q;
  ChunkSums<float> sums;
  explicit InnerSpace(std::size_t n)
      : rhs("ebla::refined_cg rhs", n), d("ebla::refined_cg d", n), r("ebla::refined_cg r", n),
        p("ebla::refined_cg p", n), q("ebla::refined_cg q", n), sums(n) {}
};

// CG in float on A d = rhs from d = 0, until ||r_k|| <= tol ||r_0|| (recursive) or max_it.
template <class FloatOp>
InnerResult inner_cg(const FloatOp& A, InnerSpace& s, float tol, int max_it) {
  const std::size_t n = s.rhs.extent(0);
  const FloatVector d = s.d, r = s.r, p = s.p, q = s.q;
  const ConstFloatVector rhs = s.rhs;
  Kokkos::parallel_for(
      "ebla::refined_cg inner start", Kokkos::RangePolicy<exec>(0, n), KOKKOS_LAMBDA(const std::size_t i) {
        d(i) = 0;
        r(i) = rhs(i);
        p(i) = rhs(i);
      });
  float rr = chunked_sum(s.sums, KOKKOS_LAMBDA(const std::size_t i) { return r(i) * r(i); });
  const float rr0 = rr, target = tol * tol * rr0;
  InnerResult res;
  while (rr > target && res.iterations < max_it) {
    A.apply(p, q);
    const float pq = chunked_sum(s.sums, KOKKOS_LAMBDA(const std::size_t i) { return p(i) * q(i); });
    if (!(pq > 0) || !std::isfinite(pq) || !std::isfinite(rr)) {
      res.breakdown = true;
      break;
    }
    const float alpha = rr / pq;
    // d += alpha p, r -= alpha q, and the new r^T r, in one pass
    const float rr_next = chunked_sum(s.sums, KOKKOS_LAMBDA(const std::size_t i) {
      d(i) += alpha * p(i);
      const float ri = r(i) - alpha * q(i);
      r(i) = ri;
      return ri * ri;
    });
    const float beta = rr_next / rr;
    Kokkos::parallel_for(
        "ebla::refined_cg inner direction", Kokkos::RangePolicy<exec>(0, n),
        KOKKOS_LAMBDA(const std::size_t i) { p(i) = r(i) + beta * p(i); });
    rr = rr_next;
    ++res.iterations;
  }
  res.relative_residual = rr0 > 0 ? std::sqrt(rr / rr0) : 0.0f;
  return res;
}

// ---- the outer loop -------------------------------------------------------------------------

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

void check(std::size_t n, ConstVector b, ConstVector x0, const RefinedCgOptions& o) {
  const char* f = "ebla::refined_cg";
  if (b.extent(0) != n) throw_invalid(f, "b has " + std::to_string(b.extent(0)) + " entries, A " + std::to_string(n) + " rows");
  if (x0.extent(0) != n)
    throw_invalid(f, "x0 has " + std::to_string(x0.extent(0)) + " entries, A " + std::to_string(n) + " rows");
  if (!(o.tolerance > 0) || !std::isfinite(o.tolerance))
    throw_invalid(f, "tolerance " + number(o.tolerance) + " must be positive and finite");
  if (!(o.inner_tolerance > 0 && o.inner_tolerance < 1))
    throw_invalid(f, "inner_tolerance " + number(o.inner_tolerance) + " must lie in (0, 1)");
  if (o.max_outer < 0) throw_invalid(f, "max_outer " + std::to_string(o.max_outer) + " is negative");
  if (o.inner_max_iterations < 1)
    throw_invalid(f, "inner_max_iterations " + std::to_string(o.inner_max_iterations) + " must be at least 1");
  if (!detail::finite_vector(b)) throw_invalid(f, "b has a NaN or infinite entry");
  if (!detail::finite_vector(x0)) throw_invalid(f, "x0 has a NaN or infinite entry");
}

// An upper bound on the exact ||b - A x|| from its double-double evaluation (as ebla::cg
// certifies its result: the sum of squares and its square root rounded once each, within
// 1 + 2^-50 of the norm; squares below the subnormal range add at most sqrt(2 n) 2^-537).
double residual_bound(double computed, std::size_t n) {
  return computed * (1 + 0x1p-50) + std::sqrt(2.0 * static_cast<double>(n)) * 0x1p-537;
}

template <class Op, class FloatOp>
RefinedCgResult refine(const Op& A, const FloatOp& A32, ConstVector b, ConstVector x0, const RefinedCgOptions& o,
                       Clock::time_point t0) {
  const std::size_t n = A.size();
  RefinedCgResult res;
  res.x = Vector("ebla::refined_cg x", n);
  const Vector x = res.x;
  Kokkos::deep_copy(x, x0);
  const ChunkSums<double> squares(n);
  const double bb = chunked_sum(squares, KOKKOS_LAMBDA(const std::size_t i) { return b(i) * b(i); });
  if (bb == 0) {  // b = 0: x = 0 solves it exactly
    Kokkos::deep_copy(x, 0.0);
    res.status = SolverStatus::converged;
    res.stop_reason = "b = 0: x = 0";
    res.seconds = seconds_since(t0);
    return res;
  }
  if (!(bb >= 0x1p-600 && bb <= 0x1p600))
    throw_invalid("ebla::refined_cg", "||b||^2 = " + number(bb) +
                                          " lies outside [2^-600, 2^600], where the residual norms lose their "
                                          "digits: scale the system");
  res.b_norm = std::sqrt(bb);
  res.tolerance_used = o.tolerance * res.b_norm;
  Vector ax("ebla::refined_cg A x", n);
  InnerSpace inner(n);
  const FloatVector rhs = inner.rhs, d = inner.d;
  double previous = std::numeric_limits<double>::infinity();
  bool met = false;  // the binary64 test passed
  for (;;) {
    // r = b - A x in binary64, and its norm: the stopping test
    A.apply(x, ax);
    const double rnorm =
        std::sqrt(chunked_sum(squares, KOKKOS_LAMBDA(const std::size_t i) { return (b(i) - ax(i)) * (b(i) - ax(i)); }));
    if (rnorm <= res.tolerance_used) {
      met = true;
      res.status = SolverStatus::converged;
      res.stop_reason = "||b - A x|| <= tolerance ||b||";
      break;
    }
    if (!std::isfinite(rnorm)) {
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: ||b - A x|| is " + number(rnorm) + " in binary64 after " +
                        std::to_string(res.outer_iterations) + " corrections";
      break;
    }
    if (!(rnorm < previous)) {
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: correction " + std::to_string(res.outer_iterations) +
                        " did not reduce ||b - A x|| (" + number(rnorm) + ", before it " + number(previous) +
                        "): the float inner solve attains no more";
      break;
    }
    if (res.outer_iterations >= o.max_outer) {
      res.status = SolverStatus::max_iterations;
      res.stop_reason = "max_outer corrections made";
      break;
    }
    previous = rnorm;
    // the inner right-hand side: r times 2^-e with ||r|| in [2^(e-1), 2^e), rounded to float
    int e = 0;
    std::frexp(rnorm, &e);
    const double down = std::ldexp(1.0, -e), up = std::ldexp(1.0, e);
    Kokkos::parallel_for(
        "ebla::refined_cg residual", Kokkos::RangePolicy<exec>(0, n),
        KOKKOS_LAMBDA(const std::size_t i) { rhs(i) = static_cast<float>((b(i) - ax(i)) * down); });
    const auto t1 = Clock::now();
    const InnerResult in = inner_cg(A32, inner, static_cast<float>(o.inner_tolerance), o.inner_max_iterations);
    exec().fence();
    res.inner_seconds += seconds_since(t1);
    res.history.push_back(RefinementStep{rnorm, in.iterations, in.relative_residual});
    res.inner_iterations += in.iterations;
    if (in.breakdown && in.iterations == 0) {  // broke down at once: no correction to make
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: the float CG of correction " + std::to_string(res.outer_iterations + 1) +
                        " found p^T A p not positive or not finite at its first iteration";
      break;
    }
    Kokkos::parallel_for(
        "ebla::refined_cg correction", Kokkos::RangePolicy<exec>(0, n),
        KOKKOS_LAMBDA(const std::size_t i) { x(i) += static_cast<double>(d(i)) * up; });
    ++res.outer_iterations;
  }
  // the certificate: the true residual in double-double, with its rounding allowance
  res.true_residual = A.residual_norm(x, b);
  if (met && !(residual_bound(res.true_residual, n) <= res.tolerance_used)) {
    res.status = SolverStatus::unconfirmed;
    res.stop_reason = "the binary64 residual met tolerance ||b|| = " + number(res.tolerance_used) +
                      ", the true residual " + number(res.true_residual) + " did not";
  }
  res.relative_residual = res.true_residual / res.b_norm;
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace

RefinedCgResult refined_cg(const CsrOperator& A, ConstVector b, ConstVector x0, const RefinedCgOptions& o) {
  const auto t0 = Clock::now();
  check(A.size(), b, x0, o);
  return refine(A, FloatCsr(A), b, x0, o, t0);
}

RefinedCgResult refined_cg(const StencilOperator& A, ConstVector b, ConstVector x0, const RefinedCgOptions& o) {
  const auto t0 = Clock::now();
  check(A.size(), b, x0, o);
  return refine(A, FloatStencil(A), b, x0, o, t0);
}

}  // namespace ebla

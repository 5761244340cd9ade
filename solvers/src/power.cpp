#include <ebla/solvers/power.hpp>

#include <ebla/core/error.hpp>
#include <ebla/kernels/qdot_host.hpp>

#include "accurate_dots.hpp"
#include "power_stored.hpp"
#include "vector_range.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ebla {

namespace {

using exec = Kokkos::DefaultExecutionSpace;

// v = s u.
void scaled(ConstVector u, double s, Vector v) {
  Kokkos::parallel_for(
      "ebla::scale", Kokkos::RangePolicy<exec>(0, u.extent(0)), KOKKOS_LAMBDA(const std::size_t i) { v(i) = s * u(i); });
}

// Checks the arguments on every process (they agree: all throw or none).
void validate(const SolverSpace& A, ConstVector x0, const PowerOptions& o) {
  const char* f = "ebla::power_method";
  const std::size_t n = A.size();
  std::string problem;
  if (x0.extent(0) != n) problem = "x0 has " + std::to_string(x0.extent(0)) + " entries, A " + std::to_string(n) + " rows";
  else if (!(o.tolerance > 0) || !std::isfinite(o.tolerance)) problem = "tolerance " + std::to_string(o.tolerance) + " must be positive and finite";
  else if (o.max_iterations < 1) problem = "max_iterations " + std::to_string(o.max_iterations) + " must be at least 1";
  if (!A.all(problem.empty()))
    throw_invalid(f, problem.empty() ? std::string("invalid input on another process") : problem);
  if (const std::string s = detail::power_storage_problem(A, o); !s.empty()) throw_invalid(f, s);
  const double top = detail::max_abs(A, x0);
  if (!std::isfinite(top)) throw_invalid(f, "x0 has a NaN or infinite entry");
  if (top == 0) throw_invalid(f, "x0 is the zero vector: the power method needs a nonzero start");
}

// x = x0 / ||x0|| (line 1): where sum x0_i^2 leaves double's range (x0 of 1e160 or 1e-200),
// of 2^-e x0 with 2^-e max |x0_i| in [1/2, 1), the same direction.
void normalise_start(const SolverSpace& A, ConstVector x0, Vector x) {
  double squares = A.sum(plain_dot(x0, x0));
  if (detail::squares_in_range(squares)) {
    scaled(x0, 1 / std::sqrt(squares), x);
    return;
  }
  detail::times_power_of_two(x0, -detail::range_exponent_of(A, x0), x);
  squares = A.sum(plain_dot(x, x));
  scaled(x, 1 / std::sqrt(squares), x);
}

// A certified bound on |lambda~ - lambda| where lambda~ = value(xy) was computed from the
// normalisation c~ = value(yy) (lambda = x^T A x for the exactly normalised x): with
// relative errors e_yy, e_xy within eps = bound / (|value| - bound), lambda~ = lambda (1 + e_xy)
// / (1 + e_yy), so |lambda~ - lambda| <= |lambda~| (eps_xy + eps_yy) (1 + eps_yy) /
// ((1 - eps_yy) (1 - eps_xy)). Exact calls (tolerance 0) count as the exact power method's.
double deviation(const DotRecord& yy, const DotRecord& xy) {
  const auto eps = [](const DotRecord& d) {
    if (d.tolerance == 0) return 0.0;
    const double floor = std::fabs(d.value) - d.bound;
    return floor > 0 && std::isfinite(d.bound) ? d.bound / floor : std::numeric_limits<double>::infinity();
  };
  const double e_yy = eps(yy), e_xy = eps(xy);
  if (e_yy == 0 && e_xy == 0) return 0;
  if (!(e_yy < 1 && e_xy < 1)) return std::numeric_limits<double>::infinity();
  return std::fabs(xy.value) * (e_xy + e_yy) * (1 + e_yy) / ((1 - e_yy) * (1 - e_xy));
}

// The automatic policy's prediction of how far the next two changes will be from tau (the
// lambda of the next step enters both decisions), from the last two changes (geometric
// convergence): min |c^_j - tau| over c^_1 = c_k r, c^_2 = c_k r^2, r = min(1, c_k / c_(k-1))
// (r = 1 while c_k is the only change known); 0 (not known) before the first change.
double predicted_margin(const std::vector<PowerIteration>& history, double tau) {
  const std::size_t k = history.size();
  if (k < 2) return 0;  // history[0] is the start (no change)
  const double last = history[k - 1].change;
  const double before = k < 3 ? last : history[k - 2].change;  // one change known: no decay
  if (!(last > 0) || !(before > 0) || !std::isfinite(last) || !std::isfinite(before)) return 0;
  const double r = std::min(1.0, last / before);
  return std::min(std::fabs(last * r - tau), std::fabs(last * r * r - tau));
}

// A step of the automatic policy again with exact dot products: x (computed as y_k / sqrt(c~))
// normalised exactly, y = A x scaled with it, lambda = x^T y; y_k^T y_k = c~ x^T x is the
// record of the exact normalisation. The records keep the time of both attempts.
void repeat_exactly(const SolverSpace& A, double c, double lambda_before, Vector x, Vector y, PowerIteration& it,
                    bool record_levels) {
  DotRecord xx = A.dot(DotPolicy::exact(), x, x, nullptr);
  const double s2 = xx.value;
  xx.value *= c;
  xx.bound *= c;
  xx.seconds += it.yy.seconds;
  it.yy = xx;
  scaled(x, 1 / std::sqrt(s2), x);
  scaled(y, 1 / std::sqrt(s2), y);
  const double xy_seconds = it.xy.seconds;
  it.xy = A.dot(DotPolicy::exact(), x, y, record_levels ? &it.xy_levels : nullptr);
  it.xy.seconds += xy_seconds;
  it.eigenvalue = it.xy.value;
  it.change = std::fabs(it.eigenvalue - lambda_before);
}

// ||A x - lambda x|| in double-double for the unit x: where |lambda| leaves [2^-400, 2^400],
// as 2^-e ||A (2^e x) - lambda (2^e x)|| with 2^e |lambda| near 1, so that the squares of
// the residual of an operator of 1e-200 neither underflow to a residual of 0 nor (of 1e200)
// overflow.
double residual_of(const SolverSpace& A, Vector x, double lambda) {
  int e = 0;
  const double size = std::fabs(lambda);
  if (size > 0 && (size < 0x1p-400 || size > 0x1p400)) {
    std::frexp(size, &e);
    e = -e;
  }
  Vector sx = x, lx("ebla::power lambda x", x.extent(0));
  if (e != 0) {  // only then a scaled copy of x
    sx = Vector("ebla::power 2^e x", x.extent(0));
    detail::times_power_of_two(x, e, sx);
  }
  scaled(sx, lambda, lx);
  return std::ldexp(A.residual_norm(sx, lx), -e);
}

}  // namespace

// Every scalar the loop branches on comes from a global reduction of the space.
PowerResult power_method(const SolverSpace& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = A.size();
  validate(A, x0, o);
  PowerResult res;
  Vector x("ebla::power x", n);
  if (o.storage.narrow()) {  // one pass per iteration over the stored iterate: no binary64 y
    normalise_start(A, x0, x);
    detail::stored_power(A, x, o, res);
    normalise_start(A, x, x);  // the last iterate, of unit norm
    res.eigenvector = x;
    res.residual = std::isfinite(res.eigenvalue) ? residual_of(A, x, res.eigenvalue) : std::nan("");
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }
  Vector y("ebla::power y", n);
  for (const Vector& v : {x, y}) detail::forget_plans(v.data());  // plans of this solve only
  // No plan margin unless one is given (QdotOptions::automatic_margin is 0 here): near the
  // eigenvector x_k hardly changes, so the plan selected for it does not either, and
  // lambda_k settles to the bits that the stopping test |lambda_k - lambda_(k-1)| <= tau
  // needs; with a widened plan tried first, the plan each product is computed under
  // depends on the last calls, and lambda_k can wander by up to the qdot tolerance from one
  // iteration to the next (`ebla power --n 500 --degree 8 --seed 8 --qdot-tol 1e-6 --tol
  // 1e-8 --max-iter 2000` converged after 57 iterations without a margin, not after 2000
  // with one of 8).
  std::vector<std::uint8_t>* no_map = nullptr;
  auto levels = [&](std::vector<std::uint8_t>& v) { return o.record_levels ? &v : no_map; };

  // the automatic policy: each dot product to the accuracy its rule asks (accurate_dots.hpp),
  // relative to |lambda_k|
  detail::AccurateDots dot(dots, default_power_rule(), res.events);
  auto request = [&](DotRole role, int k, double lambda, double margin) {
    DotRequest q{role, k, o.tolerance, std::fabs(lambda), std::fabs(lambda)};
    q.margin = margin;
    return q;
  };
  double deviation_before = 0;  // the certified bound on |lambda_k - lambda_PM,k| of the last step

  normalise_start(A, x0, x);                               // x_1 = x_0 / ||x_0|| (line 1)
  A.apply(x, y);                                           // y_1 = A x_1
  PowerIteration start;
  if (dot.automatic()) {  // lambda_1 = x_1^T A x_1 (line 3), as rough as the rule allows
    start.xy = dot.dot(A, request(DotRole::power_rayleigh, 0, 0.0, 0.0), x, y, levels(start.xy_levels), false);
    DotRecord unit;  // x_1 is normalised in double: x_1^T x_1 = 1 as the exact method has it
    unit.value = 1;
    deviation_before = deviation(unit, start.xy);
  } else {
    start.xy = A.dot(dots, x, y, levels(start.xy_levels));  // lambda_1 = x_1^T A x_1 (line 3)
  }
  start.eigenvalue = start.xy.value;
  start.change = std::nan("");
  double lambda = start.eigenvalue;
  res.history.push_back(std::move(start));
  res.status = SolverStatus::max_iterations;
  res.stop_reason = "maximum iterations reached";
  int k = 0;
  while (k < o.max_iterations) {
    PowerIteration it;
    const double margin = dot.automatic() ? predicted_margin(res.history, o.tolerance) : 0.0;
    it.yy = dot.dot(A, request(DotRole::power_norm, k, lambda, margin), y, y, levels(it.yy_levels), true);  // c = y_k^T y_k (line 6)
    if (!detail::squares_in_range(it.yy.value) && std::isfinite(lambda)) {  // ||A x||^2 outside double's range:
      const int e = detail::range_exponent_of(A, y);                         //   c of 2^-e y_k, the same x_{k+1}
      if (e != 0) {
        detail::times_power_of_two(y, -e, y);
        it.yy = dot.dot(A, request(DotRole::power_norm, k, lambda, margin), y, y, levels(it.yy_levels), true);
        res.events.push_back({k, "y scaled by 2^" + std::to_string(-e) +
                                     " before its norm: ||A x||^2 is outside double's range (the record is of the "
                                     "scaled y)"});
      }
    }
    const double c = it.yy.value;
    if (!(c > 0) || !std::isfinite(c) || !std::isfinite(lambda)) {
      res.breakdown = !std::isfinite(lambda) ? "x^T A x = " + std::to_string(lambda)
                                             : "||A x||^2 = " + std::to_string(c) + " (A x in the null space, or NaN)";
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: " + res.breakdown;
      break;
    }
    scaled(y, 1 / std::sqrt(c), x);                        // x_{k+1} = y_k / sqrt(c) (line 7)
    A.apply(x, y);                                         // y_{k+1} = A x_{k+1} (line 5)
    // lambda_{k+1} = x_{k+1}^T A x_{k+1}: the Rayleigh quotient of the unit iterate. (Seed
    // 002's line 8, qdot(x_k, x_{k+1}) / c, is x_k^T A x_k / c^(3/2): see power.hpp.)
    it.xy = dot.dot(A, request(DotRole::power_rayleigh, k, lambda, margin), x, y, levels(it.xy_levels), false);
    it.eigenvalue = it.xy.value;
    it.change = std::fabs(it.eigenvalue - lambda);
    if (dot.automatic()) {  // the stopping decision and the final lambda, certified
      double dev = deviation(it.yy, it.xy);
      const double gap = std::fabs(it.change - o.tolerance);  // the decision's distance from tau
      if (dev > 0 && (gap <= dev + deviation_before || (it.change <= o.tolerance && dev > o.tolerance / 2))) {
        std::ostringstream why;
        why.precision(2);
        why << "|lambda_k - lambda_(k-1)| = " << it.change << ", " << gap << " from tau, within the bound "
            << dev + deviation_before << " (or the final lambda not within tau / 2): the step repeated exactly";
        repeat_exactly(A, c, lambda, x, y, it, o.record_levels);
        dev = 0;
        if (std::fabs(it.change - o.tolerance) <= deviation_before)
          why << "; the decision stays open by the last step's bound " << deviation_before;
        res.events.push_back({k, why.str()});
      }
      deviation_before = dev;
    }
    lambda = it.eigenvalue;
    res.history.push_back(std::move(it));
    ++k;                                                   // line 9
    if (o.progress) o.progress(k, lambda);
    if (res.history.back().change <= o.tolerance) {        // line 4
      res.status = SolverStatus::converged;
      res.stop_reason = "|lambda_k - lambda_(k-1)| <= tau";
      break;
    }
  }
  res.iterations = k;
  res.eigenvalue = lambda;
  res.eigenvector = x;
  res.residual = std::isfinite(lambda) ? residual_of(A, x, lambda) : std::nan("");
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

PowerResult power_method(const CsrOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o) {
  return power_method(LocalSpace<CsrOperator>(A), x0, dots, o);
}
PowerResult power_method(const StencilOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o) {
  return power_method(LocalSpace<StencilOperator>(A), x0, dots, o);
}
PowerResult power_method(const DenseOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o) {
  return power_method(LocalSpace<DenseOperator>(A), x0, dots, o);
}
PowerResult power_method(const FunctionOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o) {
  return power_method(LocalSpace<FunctionOperator>(A), x0, dots, o);
}

}  // namespace ebla

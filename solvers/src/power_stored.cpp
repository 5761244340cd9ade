// The power method with a stored iterate (power.hpp): one pass per iteration,
//   v_(k+1) = fl_S(2^-e A v_k),   lambda_k = v_k^T A v_k / v_k^T v_k,
// the Rayleigh quotient of the stored v_k, taken in the same pass (cg_steps.hpp: power).
#include "power_stored.hpp"

#include "cg_steps.hpp"

#include <ebla/core/bounds.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace ebla::detail {

namespace {

// gamma_m of the pass's sums: 64 additions per lane in a tile, 3 to add the lanes, one per
// tile merged, one for the product.
double sum_gamma(std::size_t n) {
  const double tiles = std::ceil(static_cast<double>(n) / stored_tile);
  return bounds::gamma(64 + 3 + tiles + 1, 0x1p-53);
}

// The records of a pass, as the plain power method keeps them: x^T y = lambda_k for the unit
// x = v / ||v||, and y^T y = ||A x||^2, the normalisation of the next step. Binary64 sums
// (tolerance 0); the bounds cover the sums' rounding.
DotRecord rayleigh_record(const PowerSums& s, int e, double g) {
  DotRecord d;
  d.value = std::ldexp(s.vw / s.vv, e);
  d.abs_sum = std::ldexp(s.abs_vw / s.vv, e);
  // |vw~ - vw| <= g |v|^T|w|, |vv~ - vv| <= g vv
  d.bound = std::ldexp((g * s.abs_vw + std::fabs(s.vw) * g / (1 - g)) / (s.vv * (1 - g)), e) * (1 + 0x1p-50);
  d.fraction = {1.0};
  return d;
}

DotRecord norm_record(const PowerSums& s, int e, double g) {
  DotRecord d;
  d.value = std::ldexp(s.ww / s.vv, 2 * e);
  d.abs_sum = d.value;
  d.bound = d.value * (2 * g / (1 - g)) / (1 - g) * (1 + 0x1p-50);
  d.fraction = {1.0};
  return d;
}

// How far storing the next iterate y = 2^-e A v as y~ = y + d can move its Rayleigh
// quotient, for symmetric A: lambda(y + d) - lambda(y) = (2 d^T r(y) + d^T (A - lambda I) d)
// / ||y + d||^2 with r(y) = A y - lambda(y) y, so with eta = ||d|| / ||y|| (measured: err2)
//   |delta| <= (2 eta ||r(y)|| / ||y|| + 2 ||A|| eta^2) / (1 - eta)^2,
// and ||r(y)|| <= ||A y - lambda(v) y|| = ||A r(v)|| <= ||A|| ||r(v)|| (lambda(y) minimises
// the residual's norm over the shifts), so ||r(y)|| / ||y|| <= ||A|| ||r(v)|| / ||A v||,
// where ||r(v)||^2 = ||A v||^2 - lambda(v)^2 ||v||^2 = 2^2e (y^T y - (v^T y)^2 / v^T v) up to
// the sums' rounding (4 g y^T y added). ||A||_2 <= a_norm (the row-sum bound; A symmetric).
double storage_shift(const PowerSums& s, double a_norm, double g) {
  if (!(s.ww > 0)) return 0;
  const double eta = std::sqrt(s.err2 / s.ww);
  if (!(eta < 1)) return std::numeric_limits<double>::infinity();
  const double r2 = std::max(0.0, s.ww - s.vw * (s.vw / s.vv)) + 4 * g * s.ww;
  const double rho = a_norm * std::sqrt(r2 / s.ww);  // ||r(y)|| / ||y||
  return (2 * eta * rho + 2 * a_norm * eta * eta) / ((1 - eta) * (1 - eta));
}

std::string shift_text(double value) {
  std::ostringstream t;
  t.precision(2);
  t << value;
  return t.str();
}

}  // namespace

std::string power_storage_problem(const SolverSpace& A, const PowerOptions& o) {
  if (!o.storage.narrow()) return {};
  const std::string what = "storage " + to_string(o.storage);
  if (A.rows().kind == RowsOf::Kind::none)
    return what + " needs an operator that reads stored vectors: csr or stencil, on one process";
  if (o.storage.kind == StoragePolicy::Kind::fixed && o.storage.fixed.p != o.storage.fixed.r)
    return what + ": the power method stores one vector, give one format";
  if (o.record_levels) return what + " computes its dot products in the pass: no ladder maps to record";
  return {};
}

void stored_power(const SolverSpace& A, Vector x1, const PowerOptions& o, PowerResult& res) {
  const std::size_t n = A.size();
  const RowsOf rows = narrowed(A.rows());
  const double a_norm = infinity_norm_bound(rows), g = sum_gamma(n);
  const bool automatic = o.storage.kind == StoragePolicy::Kind::automatic;
  Storage next = automatic ? Storage::binary32 : o.storage.fixed.p;  // the format of v_(k+1)
  res.storage = to_string(o.storage);
  if (rows.kind == RowsOf::Kind::csr && value_bytes(rows) < 8)
    res.events.push_back({0, std::string("A's values are exact in ") + (rows.values16.extent(0) ? "bfloat16" : "binary32") +
                                 (rows.A.values.extent(0) != rows.nonzeros() ? ": the operator holds them so (no binary64 copy)"
                                                                              : ": the passes read that copy")});
  if (rows.kind == RowsOf::Kind::csr && column_bytes(rows) < sizeof(int))
    res.events.push_back({0, "A's columns lie within 32767 of the diagonal: the passes read them as 16-bit offsets from the row"});

  StoredVector v = make_stored_vector(next, n, "ebla::power v"), w = make_stored_vector(next, n, "ebla::power w");
  double v_max = store(v, x1).amax;  // v_0 = fl_S(x_1)
  double lambda = 0;
  DotRecord c_next;  // ||A x_k||^2 of the last pass: the next iteration's y^T y
  res.status = SolverStatus::max_iterations;
  res.stop_reason = "maximum iterations reached";
  int k = 0;
  for (;;) {
    int e = 0;
    std::frexp(a_norm * v_max, &e);  // a_norm max |v| < 2^e: |w_i| < 1
    if (w.format != next) w = make_stored_vector(next, n, "ebla::power w");
    const PowerSums s = power_stored(rows, a_norm, v, w, v_max, e);  // v_(k+1) = fl_S(2^-e A v_k)
    PowerIteration it;
    it.storage = v.format;
    it.bytes = v.bytes() + w.bytes() + matrix_bytes(rows);
    res.bytes_moved += it.bytes;
    it.xy = rayleigh_record(s, e, g);  // lambda_k = v_k^T A v_k / v_k^T v_k
    it.yy = c_next;
    it.eigenvalue = it.xy.value;
    it.perturbation = s.ww > 0 ? std::sqrt(s.err2 / s.ww) : 0.0;
    if (s.bad || !std::isfinite(it.eigenvalue)) {
      res.breakdown = "x^T A x = " + std::to_string(it.eigenvalue) + " (a value of A x is not finite)";
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: " + res.breakdown;
      break;
    }
    const bool first = res.history.empty();
    it.change = first ? std::nan("") : std::fabs(it.eigenvalue - lambda);
    lambda = it.eigenvalue;
    res.history.push_back(it);
    if (!first) {
      ++k;
      if (o.progress) o.progress(k, lambda);
      if (it.change <= o.tolerance) {  // |lambda_k - lambda_(k-1)| <= tau
        res.status = SolverStatus::converged;
        res.stop_reason = "|lambda_k - lambda_(k-1)| <= tau";
        break;
      }
      if (k >= o.max_iterations) break;
    }
    if (!(s.ww > 0)) {  // A v_k = 0: v_k in the null space
      res.breakdown = "||A x||^2 = 0 (A x in the null space)";
      res.status = SolverStatus::breakdown;
      res.stop_reason = "breakdown: " + res.breakdown;
      break;
    }
    c_next = norm_record(s, e, g);
    // the rule: narrow while the rounding of v_(k+1) moves lambda by at most an eighth of
    // the change it is to be told from (tau, or the last change; |lambda| at the start)
    if (automatic && next != Storage::binary64) {
      const double shift = storage_shift(s, a_norm, g);
      const double scale = std::max(o.tolerance, first ? std::fabs(lambda) : it.change);
      if (!(shift <= scale / 8)) {
        res.events.push_back({k, std::string("storage ") + to_string(next) + " -> binary64: storing the iterate could move lambda by " +
                                     shift_text(shift) + ", more than 1/8 of " + shift_text(scale)});
        next = Storage::binary64;
      }
    }
    std::swap(v, w);
    v_max = s.amax;
  }
  res.iterations = k;
  res.eigenvalue = lambda;
  load(v, x1);  // the iterate lambda is the Rayleigh quotient of
}

}  // namespace ebla::detail

#include "accurate_dots.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

namespace ebla::detail {

namespace {

constexpr double delta_cap = 0.5;        // a value within half of itself: sign and magnitude right
constexpr double exact_below = 0x1p-40;  // tolerances below: the exact dot product (qdot would
                                         // keep nearly every bin in binary64 anyway)

// A number in short scientific notation, for the events.
std::string sci(double v) {
  std::ostringstream s;
  s.precision(2);
  s << v;
  return s.str();
}

// The largest power of 2^(1/4) at most v (v > 0, finite): a coarse grid, so that consecutive
// calls share a tolerance (and qdot's plan reuse can serve them), fine enough to give away
// at most 16% of the accuracy asked.
double grid_below(double v) { return std::exp2(std::floor(4 * std::log2(v)) / 4); }

}  // namespace

DotPolicy in_solver(const DotPolicy& given, const SolverSpace& A) {
  DotPolicy p = given;
  if (p.qdot.plan_margin == QdotOptions::automatic_margin)
    p.qdot.plan_margin = A.single_process() && p.kind == DotKind::qdot ? QdotOptions::solver_margin : 0;
  return p;
}

AccurateDots::AccurateDots(const DotPolicy& policy, std::shared_ptr<const DotRule> fallback,
                           std::vector<SolverEvent>& events)
    : policy_(policy), automatic_(policy.kind == DotKind::automatic), events_(events) {
  if (automatic_) rule_ = policy.rule ? policy.rule : std::move(fallback);
}

double AccurateDots::accuracy(const DotRequest& request) const {
  const double delta = rule_->accuracy(request) * tightening_;
  return std::isfinite(delta) && delta > 0 ? std::min(delta, delta_cap) : 0.0;
}

QdotOptions AccurateDots::options_for(DotRole role, double delta) const {
  QdotOptions o = policy_.qdot;
  // tol |x|^T|y| = delta |x^T y| / (1 + delta), less 10% for the rounding of the double
  // accumulation (gamma_n |x|^T|y|, far smaller) and for a kappa that moved since the last call
  const double tol = 0.9 * delta / ((1 + delta) * kappa_[static_cast<int>(role)]);
  o.tolerance = tol >= exact_below ? grid_below(tol) : 0.0;
  return o;
}

bool AccurateDots::meets(const DotRecord& d, double delta, bool positive) {
  if (!std::isfinite(d.value) || !std::isfinite(d.bound)) return false;
  const double floor = std::fabs(d.value) - d.bound;  // |x^T y| >= |value| - bound
  if (positive && !(d.value - d.bound > 0)) return false;
  return floor > 0 && d.bound <= delta * floor;
}

void AccurateDots::observe(DotRole role, const DotRecord& d) {
  if (!(d.abs_sum > 0) || !std::isfinite(d.abs_sum) || !(std::fabs(d.value) > 0)) return;
  kappa_[static_cast<int>(role)] = std::max(1.0, d.abs_sum / std::fabs(d.value));  // |x|^T|y| / |x^T y|
}

DotRecord AccurateDots::exact(const SolverSpace& A, ConstVector x, ConstVector y,
                              std::vector<std::uint8_t>* levels) const {
  return A.dot(DotPolicy::exact(), x, y, levels);
}

DotRecord AccurateDots::dot(const SolverSpace& A, const DotRequest& request, ConstVector x, ConstVector y,
                            std::vector<std::uint8_t>* levels, bool positive) {
  if (!automatic_) return A.dot(policy_, x, y, levels);
  const double delta = accuracy(request);
  const QdotOptions o = options_for(request.role, delta);
  DotRecord d;
  if (o.tolerance == 0) {
    d = exact(A, x, y, levels);
  } else {
    d = A.dot(DotPolicy::approximate(o), x, y, levels);
    observe(request.role, d);
    if (!meets(d, delta, positive)) d = retry(A, request, delta, d, x, y, levels, positive);
  }
  d.accuracy = delta;
  return d;
}

DotRecord AccurateDots::check(const SolverSpace& A, const DotRequest& request, double delta, DotRecord d,
                              ConstVector x, ConstVector y, bool positive) {
  observe(request.role, d);
  if (!meets(d, delta, positive)) d = retry(A, request, delta, d, x, y, nullptr, positive);
  d.accuracy = delta;
  return d;
}

// Once more with the tolerance cut by the factor the bound missed by (and 4 more), then exact.
DotRecord AccurateDots::retry(const SolverSpace& A, const DotRequest& request, double delta, const DotRecord& missed,
                              ConstVector x, ConstVector y, std::vector<std::uint8_t>* levels, bool positive) {
  const auto t0 = std::chrono::steady_clock::now();
  const char* role = to_string(request.role);
  const double floor = std::fabs(missed.value) - missed.bound;
  double tol = 0;
  if (std::isfinite(missed.bound) && missed.bound > 0 && floor > 0)
    tol = missed.tolerance * std::min(0.25, delta * floor / missed.bound / 4);
  DotRecord d;
  bool done = false;
  if (tol >= exact_below) {
    QdotOptions o = policy_.qdot;
    o.tolerance = grid_below(tol);
    d = A.dot(DotPolicy::approximate(o), x, y, levels);
    observe(request.role, d);
    done = meets(d, delta, positive);
    events_.push_back({request.iteration, std::string(role) + ": bound " + sci(missed.bound) + " on value " +
                                              sci(missed.value) + " missed accuracy " + sci(delta) +
                                              "; repeated at tolerance " + sci(o.tolerance) +
                                              (done ? "" : ", missed again: exact")});
  } else {
    events_.push_back({request.iteration, std::string(role) + ": bound " + sci(missed.bound) + " on value " +
                                              sci(missed.value) + " missed accuracy " + sci(delta) +
                                              (positive && !(missed.value - missed.bound > 0)
                                                   ? " (not certified positive)"
                                                   : "") +
                                              "; repeated exactly"});
  }
  if (!done) d = exact(A, x, y, levels);
  d.seconds += missed.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

void AccurateDots::tighten(double factor, int iteration, const std::string& why) {
  tightening_ *= factor;
  events_.push_back({iteration, why + ": accuracy tightened by " + sci(factor) + " (now " + sci(tightening_) +
                                    " times the rule's)"});
}

}  // namespace ebla::detail

#include <ebla/solvers/dots.hpp>

#include "chunk_dot.hpp"

#include <ebla/core/bits.hpp>
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>

#include <ebla/core/parallel.hpp>

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace ebla {

DotPolicy DotPolicy::exact() { return DotPolicy{}; }

DotPolicy DotPolicy::approximate(const QdotOptions& options) {
  DotPolicy p;
  p.kind = DotKind::qdot;
  p.qdot = options;
  return p;
}

DotPolicy DotPolicy::automatic(std::shared_ptr<const DotRule> rule, const QdotOptions& base) {
  if (base.policy != QdotPolicy::budget)
    throw_invalid("ebla::DotPolicy::automatic", std::string("the base options have policy ") +
                                                    ebla::to_string(base.policy) +
                                                    ": only the budget policy guarantees its tolerance");
  DotPolicy p;
  p.kind = DotKind::automatic;
  p.qdot = base;
  p.rule = std::move(rule);
  return p;
}

DotPolicy DotPolicy::fixed(const Format& format) {
  validate(format, "ebla::DotPolicy::fixed");
  if (format.t >= 53)
    throw_invalid("ebla::DotPolicy::fixed", "format " + format_name(format) +
                                                " is as precise as double: use DotPolicy::exact()");
  DotPolicy p;
  p.kind = DotKind::fixed;
  p.format = format;
  p.qdot.ladder = {QdotLevel::of(format_by_name("binary64")), QdotLevel::of(format)};
  return p;
}

std::vector<std::string> DotPolicy::level_names() const {
  if (kind == DotKind::exact) return {"binary64"};
  std::vector<std::string> names;
  std::vector<QdotLevel> ladder = qdot.ladder;
  if (ladder.empty()) ladder = qdot_ladder_by_names("binary64,binary32,binary16,perforate");
  for (const auto& l : ladder) names.push_back(l.perforate ? "perforate" : format_name(l.format));
  return names;
}

std::string DotPolicy::to_string() const {
  std::ostringstream s;
  switch (kind) {
    case DotKind::exact: s << "exact"; break;
    case DotKind::qdot:
      s << "qdot(tol=" << qdot.tolerance << ", policy=" << ebla::to_string(qdot.policy);
      if (!qdot.ladder.empty()) s << ", ladder=" << ebla::to_string(qdot.ladder);
      if (qdot.plan_margin >= 0) s << ", plan_margin=" << qdot.plan_margin;
      s << ")";
      break;
    case DotKind::fixed: s << "fixed(" << format_name(format) << ")"; break;
    case DotKind::automatic:
      s << "auto(" << (rule ? rule->to_string() : std::string("default rule"));
      if (!qdot.ladder.empty()) s << ", ladder=" << ebla::to_string(qdot.ladder);
      if (qdot.plan_margin >= 0) s << ", plan_margin=" << qdot.plan_margin;
      s << ")";
      break;
  }
  return s.str();
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void detail::level_map(const QdotPlan& plan, ConstVector x, ConstVector y, std::vector<std::uint8_t>& levels) {
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  levels.assign(x.extent(0), 255);
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::uint64_t ax = bit_cast<std::uint64_t>(hx(i)) & binary64::abs_mask;
    const std::uint64_t ay = bit_cast<std::uint64_t>(hy(i)) & binary64::abs_mask;
    if (ax == 0 || ay == 0) continue;
    if ((ax >> 52) == 0x7ff || (ay >> 52) == 0x7ff) continue;
    const std::int64_t j = detail::qdot_exponent(ax) + detail::qdot_exponent(ay) - plan.e_min;
    levels[i] = j >= 0 && j < static_cast<std::int64_t>(plan.level.size()) ? plan.level[j] : 0;
  }
}

DotRecord detail::record_of(const QdotResult& r, std::size_t n) {
  DotRecord d;
  d.value = r.value;
  d.bound = r.bound;
  const double nn = n ? static_cast<double>(n) : 1.0;
  for (auto c : r.stats.count_per_level) d.fraction.push_back(static_cast<double>(c) / nn);
  d.zero_fraction = static_cast<double>(r.stats.zeros) / nn;
  d.abs_sum = r.abs_sum;
  return d;
}

namespace {

double plain_dot_kokkos(ConstVector x, ConstVector y) {
  constexpr std::size_t block = 1024;
  const std::size_t n = x.extent(0), chunks = (n + block - 1) / block;
  Kokkos::View<double*> part("ebla::plain_dot chunks", chunks);
  Kokkos::parallel_for(
      "ebla::plain_dot", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, chunks),
      KOKKOS_LAMBDA(const std::size_t c) {
        const std::size_t end = (c + 1) * block < n ? (c + 1) * block : n;
        double s = 0;
        for (std::size_t i = c * block; i < end; ++i) s += x(i) * y(i);
        part(c) = s;
      });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
  double sum = 0;
  for (std::size_t c = 0; c < chunks; ++c) sum += host(c);
  return sum;
}

}  // namespace

double plain_dot(ConstVector x, ConstVector y) {
  if (x.extent(0) != y.extent(0))
    throw_invalid("ebla::plain_dot", "x has " + std::to_string(x.extent(0)) + " entries, y " + std::to_string(y.extent(0)));
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, ConstVector::memory_space>::accessible) {
    const std::size_t n = x.extent(0), chunk = detail::stream_chunk(n), chunks = detail::chunk_count(n, chunk);
    const double* xp = x.data();
    const double* yp = y.data();
    if (chunks == 1) return 0.0 + detail::chunk_dot(xp, yp, 0, n);  // (the sum below, without its buffer)
    std::vector<double> part(chunks, 0.0);
    detail::for_each_chunk(chunks, [&](std::size_t c) { part[c] = detail::chunk_dot(xp, yp, c * chunk, std::min(n, (c + 1) * chunk)); });
    double sum = 0;
    for (double v : part) sum += v;
    return sum;
  } else {
    return plain_dot_kokkos(x, y);
  }
}

namespace {

DotRecord exact_dot(ConstVector x, ConstVector y) {
  const double value = plain_dot(x, y);
  if (x.data() == y.data()) return exact_squares_record(value, x.extent(0));
  return detail::exact_dot_record(value);
}

}  // namespace

DotRecord detail::exact_dot_record(double value) {
  DotRecord d;  // for x != y, |x|^T|y| is not known
  d.value = value;
  d.bound = std::numeric_limits<double>::quiet_NaN();
  d.abs_sum = std::numeric_limits<double>::quiet_NaN();
  d.fraction = {1.0};
  return d;
}

DotRecord exact_squares_record(double s, std::size_t n) {
  DotRecord d;
  d.value = s;
  // v^T v = |v|^T|v| <= s / (1 - gamma_n), so |s - v^T v| <= gamma_n s / (1 - gamma_n)
  // (times 1 + 2^-50 for the rounding of this expression itself)
  const double g = bounds::gamma(static_cast<double>(n), 0x1p-53);
  d.bound = g * s / (1 - g) * (1 + 0x1p-50);
  d.abs_sum = s;
  d.fraction = {1.0};
  return d;
}

DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y, std::vector<std::uint8_t>* levels) {
  if (x.extent(0) != y.extent(0))
    throw_invalid("ebla::dot", "x has " + std::to_string(x.extent(0)) + " entries, y " + std::to_string(y.extent(0)));
  if (policy.kind == DotKind::automatic)
    throw_invalid("ebla::dot", "the automatic policy chooses each tolerance inside a solver (ebla::cg, "
                               "ebla::power_method); a dot product alone takes DotPolicy::approximate");
  const auto t0 = std::chrono::steady_clock::now();
  DotRecord d;
  if (policy.kind == DotKind::exact) {
    d = exact_dot(x, y);
    if (levels) levels->assign(x.extent(0), 0);
  } else if (policy.kind == DotKind::qdot && !levels) {
    d = detail::record_of(qdot(x, y, policy.qdot), x.extent(0));
  } else {
    QdotPlan plan = qdot_select(x, y, policy.qdot);
    if (policy.kind == DotKind::fixed)  // a plan is plain data: every bin at the format
      std::fill(plan.level.begin(), plan.level.end(), std::uint8_t{1});
    d = detail::record_of(qdot_compute(x, y, plan), x.extent(0));
    if (levels) detail::level_map(plan, x, y, *levels);
  }
  if (policy.kind == DotKind::qdot) d.tolerance = policy.qdot.tolerance;
  d.seconds = seconds_since(t0);
  return d;
}

// ---- rules ---------------------------------------------------------------------------------

const char* to_string(DotRole role) {
  switch (role) {
    case DotRole::cg_curvature: return "p^T A p";
    case DotRole::cg_residual: return "r^T z";
    case DotRole::power_norm: return "y^T y";
    case DotRole::power_rayleigh: return "x^T A x";
  }
  return "?";
}

namespace {

void check_positive(const char* function, const char* name, double v) {
  if (!(v > 0) || !std::isfinite(v))
    throw_invalid(function, std::string(name) + " = " + std::to_string(v) + " must be positive and finite");
}

void check_delta_max(const char* function, double delta_max) {
  if (!(delta_max > 0) || !(delta_max <= 1))
    throw_invalid(function, "delta_max = " + std::to_string(delta_max) + " must lie in (0, 1]");
}

}  // namespace

RelaxedAccuracy::RelaxedAccuracy(double eta, double theta, double delta_max)
    : eta_(eta), theta_(theta), delta_max_(delta_max) {
  check_positive("ebla::RelaxedAccuracy", "eta", eta);
  check_positive("ebla::RelaxedAccuracy", "theta", theta);
  check_delta_max("ebla::RelaxedAccuracy", delta_max);
}

double RelaxedAccuracy::accuracy(const DotRequest& r) const {
  double delta = delta_max_;
  if (r.scale > 0 && std::isfinite(r.scale)) delta = std::min(delta, eta_ * r.target / r.scale);  // eta tau / scale
  if (r.condition > 1) delta = std::min(delta, theta_ / r.condition);                             // theta / kappa
  return delta;
}

std::string RelaxedAccuracy::to_string() const {
  std::ostringstream s;
  s << "relaxed(eta=" << eta_ << ", theta=" << theta_ << ", max=" << delta_max_ << ")";
  return s.str();
}

PhasedAccuracy::PhasedAccuracy(double eta, double theta, double eta_late, double settle, double delta_max)
    : eta_(eta), theta_(theta), eta_late_(eta_late), settle_(settle), delta_max_(delta_max) {
  check_positive("ebla::PhasedAccuracy", "eta", eta);
  check_positive("ebla::PhasedAccuracy", "theta", theta);
  check_positive("ebla::PhasedAccuracy", "eta_late", eta_late);
  if (!(settle >= 1) || !std::isfinite(settle))
    throw_invalid("ebla::PhasedAccuracy", "settle = " + std::to_string(settle) + " must be at least 1 and finite");
  check_delta_max("ebla::PhasedAccuracy", delta_max);
}

double PhasedAccuracy::accuracy(const DotRequest& r) const {
  const auto usable = [](double v) { return v > 0 && std::isfinite(v); };
  const double inf = std::numeric_limits<double>::infinity();
  const bool has_peak = usable(r.peak);
  // eta tau / (rho_k sqrt(kappa)) and theta / kappa, for kappa = kappa^_k or kappa_k
  const auto early = [&](double kappa, double none) {
    return has_peak ? eta_ * r.target / (r.peak * std::sqrt(kappa)) : none;
  };
  if (!(r.condition_growth <= settle_)) {  // kappa_k still climbs: the smaller, with kappa^_k
    const double kappa = std::max(1.0, r.condition_ahead);
    return std::min({delta_max_, early(kappa, inf), theta_ / kappa});
  }
  const double kappa = std::max(1.0, r.condition);  // settled: the larger, or the relaxation
  const double late = usable(r.scale) ? eta_late_ * r.target / r.scale : 0.0;  // eta_late tau / ||r_k||
  return std::min(delta_max_, std::max({early(kappa, 0.0), theta_ / kappa, late}));
}

std::string PhasedAccuracy::to_string() const {
  std::ostringstream s;
  s << "phased(eta=" << eta_ << ", theta=" << theta_ << ", late=" << eta_late_ << ", settle=" << settle_
    << ", max=" << delta_max_ << ")";
  return s.str();
}

std::shared_ptr<const DotRule> default_cg_rule() {
  static const auto rule = std::make_shared<const PhasedAccuracy>();
  return rule;
}

DecisionAccuracy::DecisionAccuracy(double eta, double tie, double delta_max)
    : eta_(eta), tie_(tie), delta_max_(delta_max) {
  check_positive("ebla::DecisionAccuracy", "eta", eta);
  check_positive("ebla::DecisionAccuracy", "tie", tie);
  check_delta_max("ebla::DecisionAccuracy", delta_max);
}

double DecisionAccuracy::accuracy(const DotRequest& r) const {
  // No margin known yet (the first steps): any accuracy; the solver certifies the decision
  // with the bound that comes out and repeats the step exactly if it is left open.
  if (!(r.margin > 0)) return delta_max_;
  if (!(r.scale > 0) || !std::isfinite(r.scale)) return 0;  // lambda_k = 0 or not finite: exact
  // A near tie: exact, for this step's lambda and for the next's (the margin covers the
  // next two changes), since a decision that falls within the bound of tau can be repeated
  // exactly only for the step that makes it, not for the lambda before.
  if (!(r.margin >= tie_ * r.target)) return 0;
  return std::min(delta_max_, eta_ * r.margin / r.scale);  // eta margin / |lambda_k|
}

std::string DecisionAccuracy::to_string() const {
  std::ostringstream s;
  s << "decision(eta=" << eta_ << ", tie=" << tie_ << ", max=" << delta_max_ << ")";
  return s.str();
}

std::shared_ptr<const DotRule> default_power_rule() {
  static const auto rule = std::make_shared<const DecisionAccuracy>();
  return rule;
}

}  // namespace ebla

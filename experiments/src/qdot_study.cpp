#include <ebla/experiments/qdot_study.hpp>

#include <ebla/core/exact_sum.hpp>
#include <ebla/core/format.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace ebla::experiments {

const char* to_string(QdotStudyKind kind) {
  switch (kind) {
    case QdotStudyKind::run: return "run";
    case QdotStudyKind::tightness: return "tightness";
    case QdotStudyKind::effectiveness: return "effectiveness";
    case QdotStudyKind::speedup: return "speedup";
    case QdotStudyKind::compare_policies: return "compare_policies";
  }
  return "?";
}

namespace {

std::vector<double> arithmetic(double first, double last, double step) {
  std::vector<double> v;
  for (double t = first; t <= last; t += step) v.push_back(t);
  return v;
}

std::vector<double> decades(int first, int last) {
  std::vector<double> v;
  for (int k = first; k <= last; ++k) v.push_back(std::pow(10.0, k));
  return v;
}

std::vector<std::int64_t> sizes(const std::vector<double>& v) {
  return std::vector<std::int64_t>(v.begin(), v.end());
}

}  // namespace

QdotStudySpec qdot_study_defaults(QdotStudyKind kind) {
  using K = QdotStudyKind;
  QdotStudySpec s;
  s.kind = kind;
  s.dists = kind == K::run || kind == K::compare_policies ? std::vector<QdotDist>{QdotDist::B}
                                                          : std::vector<QdotDist>{QdotDist::A, QdotDist::B};
  s.sizes = kind == K::run                ? std::vector<std::int64_t>{1000000}
            : kind == K::speedup          ? sizes(decades(4, 6))
            : kind == K::tightness        ? sizes(decades(2, 5))
            : kind == K::compare_policies ? std::vector<std::int64_t>{100000}
                                          : sizes(decades(3, 5));
  s.tolerances = kind == K::run ? std::vector<double>{1e-8} : kind == K::tightness ? std::vector<double>{1e-16}
                                                                                   : decades(-15, -1);
  s.policies = kind == K::compare_policies ? std::vector<QdotPolicy>{QdotPolicy::budget, QdotPolicy::paper}
                                           : std::vector<QdotPolicy>{QdotPolicy::budget};
  s.samples = kind == K::run ? 1 : kind == K::speedup ? 3 : 5;
  return s;
}

int qdot_auto_reps(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>(2000000 / std::max<std::int64_t>(n, 1), 3, 1000));
}

int QdotStudySpec::reps_for(std::int64_t n) const { return !timed() ? 0 : reps > 0 ? reps : qdot_auto_reps(n); }

// Fig. 1 of the seed: A with t in {5i : 2 <= i <= 20}, B with t in {2i : 1 <= i <= 15};
// Figs. 2 and 3: t in {5, 9, 13}.
std::vector<double> QdotStudySpec::t_for(QdotDist d) const {
  if (!t_given.empty()) return t_given;
  if (kind == QdotStudyKind::tightness) return d == QdotDist::A ? arithmetic(10, 100, 5) : arithmetic(2, 30, 2);
  if (kind == QdotStudyKind::run) return {9};
  return {5, 9, 13};
}

namespace {

QdotOptions qdot_options(const QdotStudySpec& s, double tolerance, QdotPolicy policy) {
  QdotOptions o;
  o.tolerance = tolerance;
  o.policy = policy;
  o.ladder = s.ladder;
  return o;
}

// ---- measurements --------------------------------------------------------------------------

// Best (least) wall time of `reps` calls: the least disturbed by the machine.
template <class F>
double best_seconds(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const Stopwatch watch;
    f();
    best = std::min(best, watch.seconds());
  }
  return best;
}

volatile double sink;  // keeps timed calls from being optimised away

template <class T>
using HostArray = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The plain dot product: Kokkos Kernels' BLAS dot on the same arrays.
template <class T>
double plain_dot(const QdotData<T>& d) {
  return static_cast<double>(KokkosBlas::dot(HostArray<T>(d.x.data(), d.n()), HostArray<T>(d.y.data(), d.n())));
}

/// The exact dot product and the plain one of a sample.
struct Reference {
  ExactSum sum;
  double exact = 0;
  double dot_value = 0;
  double dot_seconds = 0;
};

template <class T>
Reference reference(const QdotData<T>& d, int reps) {
  Reference r;
  r.sum = exact_dot_sum(d.x.data(), d.y.data(), d.n());  // products of floats are exact doubles
  r.exact = r.sum.to_double();
  r.dot_value = plain_dot(d);
  if (reps > 0) r.dot_seconds = best_seconds(reps, [&] { sink = plain_dot(d); });
  return r;
}

/// One qdot on one sample.
struct Eval {
  QdotResult result;
  double relerr = 0, relerr_dot = 0, bound_rel = 0;
  double select_seconds = 0, compute_seconds = 0;  // best of reps (0 if not timed)
};

template <class T>
Eval evaluate(const QdotData<T>& d, const Reference& ref, const QdotOptions& options, int reps) {
  Eval e;
  const QdotPlan plan = qdot_select(d.x.data(), d.y.data(), d.n(), options);
  e.result = qdot_compute(d.x.data(), d.y.data(), d.n(), plan);
  e.result.stats.select_seconds = plan.select_seconds;
  const double value = e.result.value;
  e.relerr = ref.sum.relative_error(value);
  e.relerr_dot = value == ref.dot_value ? 0.0 : std::fabs(value - ref.dot_value) / std::fabs(ref.dot_value);
  e.bound_rel = e.result.bound / std::fabs(ref.exact);
  if (reps > 0) {
    e.select_seconds =
        best_seconds(reps, [&] { sink = qdot_select(d.x.data(), d.y.data(), d.n(), options).tolerance; });
    e.compute_seconds = best_seconds(reps, [&] { sink = qdot_compute(d.x.data(), d.y.data(), d.n(), plan).value; });
  }
  return e;
}

// ---- sweeps: every study is a loop over (dist, t, n) x samples x tolerances x policies ----

QdotRow make_row(const QdotPoint& p, double tolerance, QdotPolicy policy) {
  QdotRow r;
  r.point = p;
  r.tolerance = tolerance;
  r.policy = policy;
  return r;
}

double fraction_of(std::size_t count, std::int64_t n) {
  return static_cast<double>(count) / static_cast<double>(std::max<std::int64_t>(n, 1));
}

void record(QdotRow& row, const Eval& e, const Reference& ref, std::int64_t n, bool timed) {
  row.relerr.add(e.relerr);
  row.relerr_dot.add(e.relerr_dot);
  row.bound_rel.add(e.bound_rel);
  row.gap.add(e.bound_rel - e.relerr);
  row.bins.add(e.result.stats.bins);
  const auto& counts = e.result.stats.count_per_level;
  row.fraction.resize(counts.size());
  for (std::size_t l = 0; l < counts.size(); ++l) row.fraction[l].add(fraction_of(counts[l], n));
  if (!timed) return;
  row.select_s.add(e.select_seconds);
  row.compute_s.add(e.compute_seconds);
  row.dot_s.add(ref.dot_seconds);
  row.speedup.add(ref.dot_seconds / e.compute_seconds);                      // (2.6)
  row.efficiency.add(ref.dot_seconds / (e.select_seconds + ref.dot_seconds));  // (2.5)
}

// The progress of a sweep: a step per vector pair (all its tolerances and policies).
struct SweepSteps {
  std::size_t done = 0, total = 0;
};

std::string step_text(const QdotPoint& p, int sample) {
  std::ostringstream s;
  s << to_string(p.dist) << ", t = " << p.t << ", n = " << p.n << ", sample " << sample + 1;
  return s.str();
}

template <class T>
void sweep_point(const QdotStudySpec& s, const QdotPoint& p, std::vector<QdotRow>& rows, SweepSteps& steps) {
  const std::size_t first = rows.size();
  for (double tol : s.tolerances)
    for (QdotPolicy policy : s.policies) rows.push_back(make_row(p, tol, policy));
  const int reps = s.reps_for(p.n);
  for (int k = 0; k < s.samples; ++k) {
    const QdotData<T> data = qdot_data<T>(p.dist, p.t, p.n, qdot_data_seed(s.seed, p.dist, p.t, p.n, k));
    const Reference ref = reference(data, reps);
    for (std::size_t r = first; r < rows.size(); ++r) {
      const Eval e = evaluate(data, ref, qdot_options(s, rows[r].tolerance, rows[r].policy), reps);
      record(rows[r], e, ref, p.n, s.timed());
    }
    report(s.progress, ++steps.done, steps.total, step_text(p, k));
  }
}

std::vector<QdotRow> sweep(const QdotStudySpec& s) {
  std::vector<QdotRow> rows;
  SweepSteps steps;
  for (QdotDist d : s.dists) steps.total += s.t_for(d).size() * s.sizes.size() * static_cast<std::size_t>(s.samples);
  for (QdotDist d : s.dists)
    for (double t : s.t_for(d))
      for (std::int64_t n : s.sizes) {
        const QdotPoint p{d, t, n};
        if (s.use_float) sweep_point<float>(s, p, rows, steps);
        else sweep_point<double>(s, p, rows, steps);
      }
  return rows;
}

// One qdot in detail: sample 0 of the first (dist, t, n), the first tolerance and policy.
template <class T>
void run_single(QdotStudy& study) {
  const QdotStudySpec& s = study.spec;
  const QdotPoint p{s.dists[0], s.t_for(s.dists[0])[0], s.sizes[0]};
  const int reps = s.reps_for(p.n);
  const QdotData<T> data = qdot_data<T>(p.dist, p.t, p.n, qdot_data_seed(s.seed, p.dist, p.t, p.n, 0));
  const Reference ref = reference(data, reps);
  const Eval e = evaluate(data, ref, qdot_options(s, s.tolerances[0], s.policies[0]), reps);
  QdotSingle& r = study.single;
  r.result = e.result;
  r.exact = ref.exact;
  r.relerr = e.relerr;
  r.bound_rel = e.bound_rel;
  r.dot = ref.dot_value;
  r.dot_relerr = ref.sum.relative_error(ref.dot_value);
  r.select_seconds = e.select_seconds;
  r.compute_seconds = e.compute_seconds;
  r.dot_seconds = ref.dot_seconds;
  r.reps = reps;
  r.speedup = ref.dot_seconds / e.compute_seconds;                      // (2.6)
  r.efficiency = ref.dot_seconds / (e.select_seconds + ref.dot_seconds);  // (2.5)
  for (std::size_t count : e.result.stats.count_per_level)
    r.fraction.push_back(p.n > 0 ? static_cast<double>(count) / static_cast<double>(p.n) : 0.0);
  study.rows = {make_row(p, s.tolerances[0], s.policies[0])};
  record(study.rows[0], e, ref, p.n, true);
}

}  // namespace

// Validates the qdot options (tolerances, ladder) before any work, and names the levels.
std::vector<std::string> qdot_study_levels(const QdotStudySpec& spec) {
  const double one[1] = {1.0};
  const float onef[1] = {1.0f};
  std::vector<std::string> levels;
  for (QdotPolicy p : spec.policies)
    for (double tol : spec.tolerances) {
      const QdotPlan plan = spec.use_float ? qdot_select(onef, onef, 1, qdot_options(spec, tol, p))
                                           : qdot_select(one, one, 1, qdot_options(spec, tol, p));
      levels.clear();
      for (const auto& l : plan.ladder) levels.push_back(l.perforate ? "perforate" : format_name(l.format));
    }
  return levels;
}

std::string QdotStudy::ladder() const {
  std::string s;
  for (const auto& l : levels) s += (s.empty() ? "" : ",") + l;
  return s;
}

QdotStudy run_qdot_study(const QdotStudySpec& spec) {
  QdotStudy study;
  study.spec = spec;
  study.levels = qdot_study_levels(spec);
  if (spec.kind != QdotStudyKind::run) study.rows = sweep(spec);
  else if (spec.use_float) run_single<float>(study);
  else run_single<double>(study);
  return study;
}

std::vector<std::pair<std::size_t, std::size_t>> qdot_point_blocks(const std::vector<QdotRow>& rows) {
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].point.dist == rows[i].point.dist && rows[j].point.t == rows[i].point.t &&
           rows[j].point.n == rows[i].point.n)
      ++j;
    blocks.emplace_back(i, j);
    i = j;
  }
  return blocks;
}

// Fig. 1: the gap bound/|x^T y| - relerr, over all t of a distribution, per n.
std::vector<QdotTightness> qdot_tightness(const QdotStudy& study, QdotDist d, double tolerance) {
  std::vector<QdotTightness> out;
  for (std::int64_t n : study.spec.sizes) {
    QdotTightness k;
    k.n = n;
    for (const QdotRow& r : study.rows)
      if (r.point.dist == d && r.point.n == n && r.tolerance == tolerance) {
        for (double v : r.gap.values()) k.gap.add(v);
        for (double v : r.relerr.values()) k.relerr.add(v);
        for (double v : r.bound_rel.values()) k.bound_rel.add(v);
      }
    k.violations = static_cast<std::size_t>(
        std::count_if(k.gap.values().begin(), k.gap.values().end(), [](double g) { return g < 0; }));
    out.push_back(k);
  }
  return out;
}

}  // namespace ebla::experiments

// A qdot study stated as text, checked into its spec (see qdot_study.hpp).
#include <ebla/experiments/qdot_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/parse.hpp>

#include <algorithm>
#include <cmath>

namespace ebla::experiments {

namespace {

using Kind = QdotStudyKind;

Kind study_kind(const QdotStudyChoice& c) {
  if (c.experiment.empty()) return c.compare_policies ? Kind::compare_policies : Kind::run;
  Kind k;
  if (c.experiment == "tightness") k = Kind::tightness;
  else if (c.experiment == "effectiveness") k = Kind::effectiveness;
  else if (c.experiment == "speedup") k = Kind::speedup;
  else if (c.experiment == "compare-policies") k = Kind::compare_policies;
  else
    throw_invalid(c.named("--experiment"), "unknown experiment '" + c.experiment +
                                               "' (known: tightness, effectiveness, speedup, compare-policies)");
  if (c.compare_policies && k != Kind::compare_policies)
    throw_invalid(c.named("--compare-policies"),
                  "is an experiment of its own; it cannot run with --experiment " + c.experiment);
  return k;
}

double t_value(const QdotStudyChoice& c, const std::string& text) {
  const double t = parse_double(text, c.named("--t"));
  if (!(t > 0 && t <= 2000))
    throw_invalid(c.named("--t"), "t = '" + text + "' is outside (0, 2000] (exponents must stay in range)");
  return t;
}

std::int64_t length(const QdotStudyChoice& c, const std::string& text, Kind kind) {
  const std::string option = c.named("--n");
  const double v = parse_double(text, option);
  if (v < 0) throw_invalid(option, "n = " + text + " is negative");
  if (!(v == std::floor(v))) throw_invalid(option, "n = " + text + " is not a whole number");
  if (v > 1e9) throw_invalid(option, "n = " + text + " exceeds 1e9");
  if (v == 0 && kind != Kind::run) throw_invalid(option, "n = 0 in an experiment (relative errors need x^T y != 0)");
  return static_cast<std::int64_t>(v);
}

double tolerance(const QdotStudyChoice& c, const std::string& text) {
  const double v = parse_double(text, c.named("--tol"));
  if (!(v > 0) || !std::isfinite(v))
    throw_invalid(c.named("--tol"), "tolerance " + text + " is not a positive finite number");
  return v;
}

void set_values(const QdotStudyChoice& c, QdotStudySpec& s) {
  if (!c.dists.empty()) s.dists.clear();
  for (const auto& d : c.dists) s.dists.push_back(under_option(c.named("--dist"), [&] { return qdot_dist_by_name(d); }));
  for (const auto& text : c.t_values) s.t_given.push_back(t_value(c, text));
  if (!c.sizes.empty()) s.sizes.clear();
  for (const auto& text : c.sizes) s.sizes.push_back(length(c, text, s.kind));
  if (!c.tolerances.empty()) s.tolerances.clear();
  for (const auto& text : c.tolerances) s.tolerances.push_back(tolerance(c, text));
}

// A single run takes one value of each parameter; sweeps are experiments.
void require_single(const QdotStudyChoice& c, const QdotStudySpec& s) {
  auto one = [&](std::size_t count, const char* option) {
    if (count != 1)
      throw_invalid(c.named(option),
                    "a single run takes one value (got " + std::to_string(count) + "); use --experiment to sweep");
  };
  one(s.dists.size(), "--dist");
  one(s.t_for(QdotDist::B).size(), "--t");
  one(s.sizes.size(), "--n");
  one(s.tolerances.size(), "--tol");
}

}  // namespace

std::string QdotStudyChoice::named(const std::string& option) const {
  return name ? name(option) : "ebla::QdotStudyChoice " + option;
}

QdotStudySpec make_qdot_study_spec(const QdotStudyChoice& c) {
  QdotStudySpec s = qdot_study_defaults(study_kind(c));
  set_values(c, s);
  if (s.kind != Kind::compare_policies) s.policies = {qdot_policy_by_name(c.policy)};
  if (!c.ladder.empty()) s.ladder = qdot_ladder_by_names(c.ladder);
  s.seed = c.seed;
  if (c.samples != QdotStudyChoice::default_samples) s.samples = c.samples;
  if (s.samples < 1 || (s.kind == Kind::run && s.samples != 1))
    throw_invalid(c.named("--samples"), std::to_string(c.samples) + (s.kind == Kind::run
                                                                         ? ": a single run has one sample"
                                                                         : " is not a positive number of samples"));
  if (c.reps < 0 || c.reps > 100000)  // the automatic choice takes 3..1000
    throw_invalid(c.named("--reps"), std::to_string(c.reps) + " is not in 0..100000 (0: automatic)");
  s.reps = c.reps;
  s.use_float = c.use_float;
  if (s.kind == Kind::run) require_single(c, s);
  // x and y of the largest n, in the input's type, before anything is drawn
  const std::int64_t n = *std::max_element(s.sizes.begin(), s.sizes.end());
  detail::check_memory(c.named("--n"), "n = " + std::to_string(n) + " (x and y)",
                       2.0 * (s.use_float ? sizeof(float) : sizeof(double)) * static_cast<double>(n));
  return s;
}

}  // namespace ebla::experiments

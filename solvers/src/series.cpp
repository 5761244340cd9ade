// Per-iteration series, runs, sweeps and the auto study's report (series.hpp, sweep.hpp,
// auto_report.hpp).
#include <ebla/solvers/auto_report.hpp>
#include <ebla/solvers/series.hpp>
#include <ebla/solvers/sweep.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace ebla {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

}  // namespace

// ---- series ------------------------------------------------------------------------------

void FractionSeries::add(const DotRecord* record) {
  for (std::size_t l = 0; l < rungs; ++l)
    // an exact dot product of the automatic policy records binary64 alone: the other rungs 0
    values.push_back(record == nullptr ? nan : l < record->fraction.size() ? record->fraction[l] : 0.0);
  zero.push_back(record != nullptr ? record->zero_fraction : nan);
}

std::vector<double> FractionSeries::mean() const {
  std::vector<double> sum(rungs, 0.0);
  std::size_t count = 0;
  for (std::size_t r = 0; r < rows(); ++r) {
    if (std::isnan(zero[r])) continue;
    for (std::size_t l = 0; l < rungs; ++l) sum[l] += values[r * rungs + l];
    ++count;
  }
  for (double& v : sum) v = count ? v / static_cast<double>(count) : nan;
  return sum;
}

double FractionSeries::zero_mean() const {
  double sum = 0;
  std::size_t count = 0;
  for (double z : zero)
    if (!std::isnan(z)) {
      sum += z;
      ++count;
    }
  return count ? sum / static_cast<double>(count) : nan;
}

void LevelSeries::add(const std::vector<std::uint8_t>& map) {
  if (map.empty()) values.insert(values.end(), n, std::uint8_t{255});
  else values.insert(values.end(), map.begin(), map.end());
  ++rows;
}

// ---- runs --------------------------------------------------------------------------------

namespace {

// A run of `result` under `policy`: its rungs, and its series a and b empty, as wide.
template <class Run, class Result>
Run start_run(const DotPolicy& policy, Result&& result, FractionSeries Run::*a, FractionSeries Run::*b) {
  Run run;
  run.policy = policy;
  run.rungs = policy.level_names();
  run.result = std::forward<Result>(result);
  run.*a = FractionSeries(run.rungs.size());
  run.*b = FractionSeries(run.rungs.size());
  return run;
}

}  // namespace

CgRun record_run(const DotPolicy& policy, CgResult result) {
  CgRun run = start_run(policy, std::move(result), &CgRun::rr, &CgRun::pq);
  run.dot_seconds = run.result.rr0.seconds;
  for (const CgIteration& it : run.result.history) {
    run.rr.add(&it.rr);
    run.pq.add(&it.pq);
    run.dot_seconds += it.rr.seconds + it.pq.seconds;
  }
  return run;
}

PowerRun record_run(const DotPolicy& policy, PowerResult result) {
  PowerRun run = start_run(policy, std::move(result), &PowerRun::yy, &PowerRun::xy);
  for (std::size_t k = 0; k < run.result.history.size(); ++k) {
    const PowerIteration& it = run.result.history[k];
    run.yy.add(k == 0 ? nullptr : &it.yy);  // the start computes no y^T y
    run.xy.add(&it.xy);
    run.dot_seconds += it.yy.seconds + it.xy.seconds;
  }
  return run;
}

double last_change(const PowerResult& r) { return r.history.empty() ? nan : r.history.back().change; }

NamedValues result_values(const CgRun& run) {
  const CgResult& r = run.result;
  NamedValues v{{"tolerance_used", r.tolerance_used},         {"initial_residual", r.initial_residual},
                {"recursive_residual", r.recursive_residual}, {"true_residual", r.true_residual},
                {"b_norm", r.b_norm},                         {"max_error", run.max_error},
                {"seconds", r.seconds},                       {"dot_seconds", run.dot_seconds},
                {"iteration_seconds", r.iteration_seconds}};  // the iterations alone: no set-up, no true residual
  if (r.pc == "jacobi" || r.pc == "block-jacobi") v.push_back({"pc_blocks", static_cast<double>(r.pc_blocks)});
  if (r.pc == "sgs") v.push_back({"pc_colours", static_cast<double>(r.pc_colours)});
  if (r.pc == "ic0") {  // the levels of its solves, the shift it needed and its restarts
    v.push_back({"pc_levels", static_cast<double>(r.pc_levels)});
    v.push_back({"pc_shift", r.pc_shift});
    v.push_back({"pc_restarts", static_cast<double>(r.pc_restarts)});
  }
  if (r.pc != "none" && r.pc != "function") v.push_back({"pc_bytes", r.pc_bytes});  // what it stores
  if (r.pc == "block-jacobi") {  // its blocks' formats, what binary64 would take, and d
    v.push_back({"pc_binary64_bytes", r.pc_binary64_bytes});
    v.push_back({"pc_blocks_bfloat16", static_cast<double>(r.pc_blocks_in[static_cast<int>(Storage::bfloat16)])});
    v.push_back({"pc_blocks_binary32", static_cast<double>(r.pc_blocks_in[static_cast<int>(Storage::binary32)])});
    v.push_back({"pc_blocks_binary64", static_cast<double>(r.pc_blocks_in[static_cast<int>(Storage::binary64)])});
    v.push_back({"pc_delta", r.pc_delta});
  }
  if (r.storage != "binary64") {  // narrow storage: the replacements and the traffic (model)
    const double iterations = r.iterations > 0 ? r.iterations : 1;
    v.push_back({"replacements", static_cast<double>(r.replacements)});
    v.push_back({"bytes_per_iteration", r.bytes_moved / iterations});
    v.push_back({"GBps", r.iteration_seconds > 0 ? r.bytes_moved / r.iteration_seconds * 1e-9 : 0.0});
    if (r.nonzero_bytes > 0) v.push_back({"bytes_per_nonzero", r.nonzero_bytes});
  }
  return v;
}

NamedValues result_values(const PowerRun& run) {
  const PowerResult& r = run.result;
  NamedValues v{{"eigenvalue", r.eigenvalue}, {"change", last_change(r)}, {"residual", r.residual},
                {"seconds", r.seconds}, {"dot_seconds", run.dot_seconds}};
  if (r.storage != "binary64") {  // the stored iterate: the traffic (model)
    const double passes = static_cast<double>(r.history.size() > 0 ? r.history.size() : 1);
    v.push_back({"bytes_per_iteration", r.bytes_moved / passes});
    v.push_back({"GBps", r.seconds > 0 ? r.bytes_moved / r.seconds * 1e-9 : 0.0});
  }
  return v;
}

NamedSeries dot_series(const CgRun& run) { return {{{"rr", &run.rr}, {"pq", &run.pq}}}; }
NamedSeries dot_series(const PowerRun& run) { return {{{"yy", &run.yy}, {"xy", &run.xy}}}; }

// ---- sweeps ------------------------------------------------------------------------------

std::vector<double> decade_tolerances(int first, int last) {
  std::vector<double> tolerances;
  for (int k = first; k <= last; ++k) tolerances.push_back(std::strtod(("1e" + std::to_string(k)).c_str(), nullptr));
  return tolerances;
}

std::string tolerance_text(double tolerance) {
  char s[64];
  std::snprintf(s, sizeof s, "%.0e", tolerance);
  if (std::strtod(s, nullptr) == tolerance) return s;
  std::snprintf(s, sizeof s, "%.6g", tolerance);
  return s;
}

double largest_where(const std::vector<double>& tolerances, const std::vector<bool>& flags) {
  double best = nan;
  for (std::size_t i = 0; i < tolerances.size(); ++i)
    if (flags[i] && !(tolerances[i] <= best)) best = tolerances[i];
  return best;
}

std::vector<double> eigenvalue_errors(const QdotSweep<PowerRun>& s) {
  std::vector<double> error;
  for (const PowerRun& r : s.runs) error.push_back(std::fabs(r.result.eigenvalue - s.reference.result.eigenvalue));
  return error;
}

// ---- the auto study ----------------------------------------------------------------------

AutoReport::AutoReport(std::string problem_name, std::string problem, std::string stop_rule, std::string ref,
                       const char* dot_a, const char* dot_b)
    : name(std::move(problem_name)), description(std::move(problem)), setting(std::move(stop_rule)),
      reference(std::move(ref)), dots{dot_a, dot_b} {}

void AutoReport::add(const std::string& label, SolverStatus run_status, bool ok, int iterations, double tolerance,
                     const DotMix& a, const DotMix& b, double extra_value) {
  PolicyOutcome o;
  o.tolerance = tolerance;
  o.iterations = iterations;
  o.ok = ok;
  o.below = (a.below + b.below) / 2;
  o.bytes = (a.bytes + b.bytes) / 2;
  labels.push_back(label);
  status.push_back(to_string(run_status));
  outcomes.push_back(o);
  mix[0].push_back(a);
  mix[1].push_back(b);
  extra.push_back(extra_value);
}

std::vector<PolicyOutcome> AutoReport::fixed() const {
  return outcomes.size() < 2 ? std::vector<PolicyOutcome>{}
                             : std::vector<PolicyOutcome>(outcomes.begin() + 1, outcomes.end() - 1);
}

AutoReport::Columns AutoReport::fixed_columns() const {
  Columns c;
  for (const PolicyOutcome& f : fixed()) {
    c.iterations.push_back(f.iterations);
    c.below.push_back(f.below);
    c.bytes.push_back(f.bytes);
  }
  return c;
}

void AutoReport::judge() { verdict = judge_automatic(outcomes.front(), fixed(), outcomes.back(), slack); }

}  // namespace ebla

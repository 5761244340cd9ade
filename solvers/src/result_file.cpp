// The solvers' HDF5 result files (see result_file.hpp, docs/solver-output.md).
#include <ebla/solvers/result_file.hpp>

#include <ebla/core/format.hpp>

#include <array>
#include <cstdint>
#include <type_traits>
#include <limits>

namespace ebla {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
  return s;
}

void write_fractions(const Hdf5Group& g, const std::string& name, const FractionSeries& s,
                     const std::vector<std::string>& rungs) {
  g.dataset(name + "_fraction", s.values, s.rows(), s.rungs)
      .attribute("rungs", joined(rungs))
      .attribute("meaning", "fraction of the n components computed at each rung; NaN: no such dot product");
  g.dataset(name + "_zero_fraction", s.zero).attribute("meaning", "fraction of components with a zero product");
}

void write_levels(const Hdf5Group& g, const std::string& name, const LevelSeries& s,
                  const std::vector<std::string>& rungs) {
  g.dataset(name + "_levels", s.values, s.rows, s.n)
      .attribute("rungs", joined(rungs))
      .attribute("meaning", "rung index of each component (0 = first rung); 255: zero product or no dot product");
}

// One dot product over the iterations: its records (null: not computed) and rung maps.
struct DotColumns {
  std::vector<const DotRecord*> records;
  std::vector<const std::vector<std::uint8_t>*> maps;
  void add(const DotRecord* record, const std::vector<std::uint8_t>& map) {
    records.push_back(record);
    maps.push_back(&map);
  }
};

// <name>_value, _bound and _tolerance per iteration (NaN where not computed), the fractions
// and, with `levels`, the rung maps.
void write_dot_columns(const Hdf5Group& g, const std::string& name, const DotColumns& d, const FractionSeries& f,
                       const std::vector<std::string>& rungs, std::size_t n, bool levels,
                       const std::string& tolerance_meaning) {
  std::vector<double> value, bound, tolerance;
  for (const DotRecord* r : d.records) {
    value.push_back(r != nullptr ? r->value : nan);
    bound.push_back(r != nullptr ? r->bound : nan);
    tolerance.push_back(r != nullptr ? r->tolerance : nan);
  }
  g.dataset(name + "_value", value);
  g.dataset(name + "_bound", bound);
  g.dataset(name + "_tolerance", tolerance).attribute("meaning", tolerance_meaning);
  write_fractions(g, name, f, rungs);
  if (!levels) return;
  LevelSeries maps{n};
  for (const std::vector<std::uint8_t>* m : d.maps) maps.add(*m);
  write_levels(g, name, maps, rungs);
}

// The storage formats' codes in the HDF5 columns: "0 binary64, 1 binary32, ...".
std::string storage_codes() {
  std::string codes;
  for (Storage s : storage_formats())
    codes += (codes.empty() ? "" : ", ") + std::to_string(static_cast<int>(s)) + " " + to_string(s);
  return codes;
}

// The events of a stored run, one line each, as the attribute storage_events (none: no attribute).
void write_storage_events(const Hdf5Group& g, const std::vector<SolverEvent>& events) {
  std::string lines;
  for (const SolverEvent& e : events) lines += std::to_string(e.iteration) + ": " + e.what + "\n";
  if (!lines.empty()) g.attribute("storage_events", lines);
}

// Narrow storage: per iteration the format of p, q and r, the gap bound, whether the residual
// was replaced before it, and the bytes moved (model); the events say why.
void write_storage_columns(const Hdf5Group& g, const CgResult& r) {
  std::vector<std::int64_t> storage_p, storage_r, replaced;
  std::vector<double> gap, bytes;
  for (const CgIteration& it : r.history) {
    storage_p.push_back(static_cast<std::int64_t>(it.storage.p));
    storage_r.push_back(static_cast<std::int64_t>(it.storage.r));
    replaced.push_back(it.replaced ? 1 : 0);
    gap.push_back(it.gap);
    bytes.push_back(it.bytes);
  }
  const std::string codes = storage_codes();
  g.dataset("storage_p", storage_p).attribute("codes", codes).attribute("meaning", "the format of p");
  g.dataset("storage_r", storage_r).attribute("codes", codes).attribute("meaning", "the format of q and r");
  g.dataset("gap", gap).attribute("meaning", "G_k: ||b - A x_k - r_k|| <= G_k (and binary64 rounding)");
  g.dataset("replaced", replaced).attribute("meaning", "1: r replaced by b - A x before the iteration");
  g.dataset("bytes", bytes).attribute("meaning", "bytes the iteration read and wrote (model)");
  write_storage_events(g, r.events);
}

// The stored iterate: per iteration the format it was read from, the relative rounding of
// the next one and the bytes moved (model); the events say when the format changed.
void write_storage_columns(const Hdf5Group& g, const PowerResult& r) {
  std::vector<std::int64_t> storage;
  std::vector<double> perturbation, bytes;
  for (const PowerIteration& it : r.history) {
    storage.push_back(static_cast<std::int64_t>(it.storage));
    perturbation.push_back(it.perturbation);
    bytes.push_back(it.bytes);
  }
  const std::string codes = storage_codes();
  g.dataset("storage_x", storage).attribute("codes", codes).attribute("meaning", "the format x_k was read from");
  g.dataset("perturbation", perturbation).attribute("meaning", "||fl(y) - y|| / ||y|| of the next iterate, stored");
  g.dataset("bytes", bytes).attribute("meaning", "bytes the iteration read and wrote (model)");
  write_storage_events(g, r.events);
}

// The --stop value of a stopping test.
const char* stop_name(StopTest s) { return s == StopTest::exact_norm ? "exact" : to_string(s); }

// A run's result: the policy, the outcome and its numbers (result_values), CG's c_0.
template <class Run>
void write_result(const Hdf5Object& g, const Run& run) {
  const auto& r = run.result;
  write_dot_attributes(g, run.policy, run.rungs);
  g.attribute("iterations", r.iterations).attribute("status", to_string(r.status));
  g.attribute("stop_reason", r.stop_reason).attribute("breakdown", r.breakdown);
  for (const auto& [name, value] : result_values(run)) g.attribute(name, value);
  if constexpr (std::is_same_v<Run, CgRun>) g.attribute("rr0_value", r.rr0.value).attribute("rr0_bound", r.rr0.bound);
}

// What every sweep writes: the reference and each run in their groups, and per tolerance
// the iterations, the status and the mean fractions of the two dot products.
template <class Run>
void write_sweep_runs(const Hdf5Group& root, const QdotSweep<Run>& s, QdotPolicy policy,
                      const std::vector<std::string>& rungs, std::size_t n, bool levels) {
  root.attribute("mode", "sweep").attribute("qdot_policy", to_string(policy));
  root.attribute("rungs", joined(rungs)).attribute("reference_iterations", s.reference.result.iterations);
  root.attribute("largest_tolerance_same_iterations", s.largest_same);
  write_run(root.group("reference"), s.reference, n, levels);
  std::vector<std::string> groups;
  std::vector<std::int64_t> iterations, status;
  std::array<FractionSeries, 2> means{FractionSeries{rungs.size()}, FractionSeries{rungs.size()}};
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const Run& run = s.runs[i];
    groups.push_back(sweep_group_name(s.tolerances[i]));
    write_run(root.group(groups.back()), run, n, levels);
    iterations.push_back(run.result.iterations);
    status.push_back(static_cast<std::int64_t>(run.result.status));
    for (std::size_t d = 0; d < 2; ++d) {
      DotRecord mean;
      mean.fraction = dot_series(run)[d].second->mean();
      means[d].add(&mean);
    }
  }
  root.attribute("groups", joined(groups));
  root.dataset("tolerance", s.tolerances);
  root.dataset("iterations", iterations);
  root.dataset("status", status).attribute("codes", "0 converged, 1 max_iterations, 2 breakdown, 3 unconfirmed");
  for (std::size_t d = 0; d < 2; ++d)
    root.dataset(std::string(dot_series(s.reference)[d].first) + "_fraction_mean", means[d].values, means[d].rows(),
                 means[d].rungs)
        .attribute("rungs", joined(rungs));
}

}  // namespace

std::string sweep_group_name(double tolerance) { return "qdot_tol_" + tolerance_text(tolerance); }

void write_problem(const Hdf5Object& g, const ProblemData& p, ProblemUse use) {
  g.attribute("problem", p.name)
      .attribute("problem_description", p.description)
      .attribute("operator", p.operator_name)
      .attribute("n", p.n)
      .attribute("nnz", p.nnz)
      .attribute("x0", p.x0_source);
  if (use == ProblemUse::cg) g.attribute("b", p.b_source).attribute("x_exact", p.x_exact_source);
  if (p.name == "hpccg" || p.name == "diffusion") g.attribute("nx", p.nx).attribute("ny", p.ny).attribute("nz", p.nz);
}

void write_dot_attributes(const Hdf5Object& g, const DotPolicy& policy, const std::vector<std::string>& rungs) {
  const char* kinds[] = {"exact", "qdot", "fixed", "auto"};
  g.attribute("dot", kinds[static_cast<int>(policy.kind)]).attribute("dot_policy", policy.to_string());
  g.attribute("rungs", joined(rungs));
  if (policy.kind == DotKind::qdot)
    g.attribute("qdot_tolerance", policy.qdot.tolerance).attribute("qdot_policy", to_string(policy.qdot.policy));
  if (policy.kind == DotKind::fixed) g.attribute("format", format_name(policy.format));
}

void write_options(const Hdf5Object& g, const CgOptions& o) {
  g.attribute("tolerance", o.tolerance).attribute("norm", to_string(o.norm));
  g.attribute("stop", stop_name(o.stop));
  g.attribute("max_iterations", o.max_iterations).attribute("jacobi", std::int64_t{o.jacobi});
  g.attribute("pc", to_string(o.jacobi ? PcKind::jacobi : o.pc));
  if (o.pc == PcKind::block_jacobi)
    g.attribute("pc_block_size", o.pc_block_size).attribute("pc_storage", to_string(o.pc_storage));
  g.attribute("storage", to_string(o.storage));
}

void write_options(const Hdf5Object& g, const PowerOptions& o) {
  g.attribute("tolerance", o.tolerance).attribute("max_iterations", o.max_iterations);
  g.attribute("storage", to_string(o.storage));
}

void write_run(const Hdf5Group& g, const CgRun& run, std::size_t n, bool levels) {
  write_result(g, run);
  std::vector<std::int64_t> iteration;
  std::vector<double> residual, alpha, beta;
  DotColumns rr, pq;
  for (const CgIteration& it : run.result.history) {
    iteration.push_back(static_cast<std::int64_t>(iteration.size()) + 1);
    residual.push_back(it.residual);
    alpha.push_back(it.alpha);
    beta.push_back(it.beta);
    rr.add(&it.rr, it.rr_levels);
    pq.add(&it.pq, it.pq_levels);
  }
  g.dataset("iteration", iteration);
  g.dataset("residual", residual).attribute("meaning", "||r_k|| as the stopping test saw it");
  g.dataset("alpha", alpha);
  g.dataset("beta", beta);
  const std::vector<std::string>& rungs = run.rungs;
  write_dot_columns(g, "rr", rr, run.rr, rungs, n, levels, "qdot tolerance of c_(k+1) (0: exact)");
  write_dot_columns(g, "pq", pq, run.pq, rungs, n, levels, "qdot tolerance of p^T q (0: exact)");
  if (run.result.storage != "binary64") write_storage_columns(g, run.result);
}

void write_run(const Hdf5Group& g, const PowerRun& run, std::size_t n, bool levels) {
  write_result(g, run);
  std::vector<std::int64_t> iteration;
  std::vector<double> eigenvalue, change;
  DotColumns yy, xy;
  for (const PowerIteration& it : run.result.history) {
    const bool start = iteration.empty();  // x_1 = x0 / ||x0||: no y^T y
    iteration.push_back(static_cast<std::int64_t>(iteration.size()));
    eigenvalue.push_back(it.eigenvalue);
    change.push_back(it.change);
    yy.add(start ? nullptr : &it.yy, it.yy_levels);
    xy.add(&it.xy, it.xy_levels);
  }
  g.dataset("iteration", iteration).attribute("meaning", "0: the start x_1 = x0 / ||x0||");
  g.dataset("eigenvalue", eigenvalue);
  g.dataset("change", change).attribute("meaning", "|lambda_k - lambda_(k-1)|; NaN at the start");
  write_dot_columns(g, "yy", yy, run.yy, run.rungs, n, levels, "qdot tolerance of y^T y (0: exact); NaN at the start");
  write_dot_columns(g, "xy", xy, run.xy, run.rungs, n, levels, "qdot tolerance of x^T A x (0: exact)");
  if (run.result.storage != "binary64") write_storage_columns(g, run.result);
}

void write_sweep(const Hdf5Group& root, const QdotSweep<CgRun>& s, QdotPolicy policy,
                 const std::vector<std::string>& rungs, std::size_t n, bool levels) {
  write_sweep_runs(root, s, policy, rungs, n, levels);
  std::vector<double> true_residual;
  for (const CgRun& run : s.runs) true_residual.push_back(run.result.true_residual);
  root.dataset("true_residual", true_residual);
}

void write_sweep(const Hdf5Group& root, const QdotSweep<PowerRun>& s, double largest_within, QdotPolicy policy,
                 const std::vector<std::string>& rungs, std::size_t n, bool levels) {
  write_sweep_runs(root, s, policy, rungs, n, levels);
  root.attribute("reference_eigenvalue", s.reference.result.eigenvalue);
  root.attribute("largest_tolerance_within_tau", largest_within);
  std::vector<double> eigenvalue;
  for (const PowerRun& run : s.runs) eigenvalue.push_back(run.result.eigenvalue);
  root.dataset("eigenvalue", eigenvalue);
  root.dataset("eigenvalue_error", eigenvalue_errors(s)).attribute("meaning", "|lambda - lambda_PM|");
}

void write_auto_summary(const Hdf5Group& g, const AutoReport& r, const std::vector<double>& tolerances) {
  const AutoReport::Columns fixed = r.fixed_columns();
  const PolicyOutcome& a = r.outcomes.back();
  std::vector<std::string> groups;  // the fixed runs' groups, as the sweeps name them
  for (double t : tolerances) groups.push_back(sweep_group_name(t));
  g.attribute("name", r.name).attribute("setting", r.setting).attribute("groups", joined(groups));
  g.dataset("tolerance", tolerances);
  g.dataset("iterations", fixed.iterations);
  g.dataset("below_binary64", fixed.below).attribute("meaning", "mean share of components below binary64 (dot_mix.hpp)");
  g.dataset("bytes", fixed.bytes).attribute("meaning", "modelled bytes read by the dot products / exact (dot_mix.hpp)");
  g.attribute("exact_iterations", r.outcomes.front().iterations).attribute("auto_iterations", a.iterations);
  g.attribute("auto_below_binary64", a.below).attribute("auto_bytes", a.bytes);
  g.attribute("iteration_ratio", r.verdict.iteration_ratio);
  g.attribute("iterations_met", std::int64_t{r.verdict.iterations_met});
  g.attribute("share_met", std::int64_t{r.verdict.share_met});
  g.attribute("best_fixed_same_iterations",
              r.verdict.same_count >= 0 ? r.outcomes[r.verdict.same_count + 1].tolerance : nan);
  g.attribute("best_fixed_within_auto_iterations",
              r.verdict.within >= 0 ? r.outcomes[r.verdict.within + 1].tolerance : nan);
}

}  // namespace ebla

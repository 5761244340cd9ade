// ebla gemm's four modes: one run, the selection for a tolerance, seed 001's narrow-range
// experiment and seed 000's tensor-core experiment; each calls the library (ebla::gemm,
// ebla::gemm_select, ebla/experiments/gemm_study.hpp), prints and writes what it returns.
#include "gemm_print.hpp"

#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>

namespace ebla::cli::gemm_command {

namespace {

using namespace ebla::experiments;

std::string sci(double v) { return std::isnan(v) ? "-" : fmt::format("{:.3e}", v); }

double fraction(std::int64_t count, std::int64_t total) {
  return total > 0 ? static_cast<double>(count) / static_cast<double>(total) : 0.0;
}

// The attributes common to every group of the file.
Hdf5Stamp stamp(const Config& c) {
  return [seed = c.data.seed](const Hdf5Object& g) {
    g.attribute("creator", "ebla gemm")
        .attribute("ebla_version", EBLA_VERSION)
        .attribute("command_line", command_line())
        .attribute("seed", static_cast<std::int64_t>(seed));
  };
}

// The root group: the stamp and the experiment's name.
Hdf5Group root_of(Hdf5Writer& out, const Config& c, const char* experiment) {
  const Hdf5Group root = out.root();
  stamp(c)(root);
  root.attribute("experiment", experiment);
  return root;
}

// A and B of a run; an entry that --given cannot hold is bad input.
std::pair<HostMatrix, HostMatrix> operands(const Config& c) {
  return under_option("ebla gemm --given", [&] { return draw_operands(c.data); });
}

void print_data_header(const Config& c, const char* what) {
  const GemmData& d = c.data;
  std::printf("ebla gemm: %s: A %lld x %lld, B %lld x %lld, entries %s, seed %llu\n", what,
              static_cast<long long>(d.m), static_cast<long long>(d.k), static_cast<long long>(d.k),
              static_cast<long long>(d.n), data_text(d).c_str(), static_cast<unsigned long long>(d.seed));
}

// Prints a result's bounds, times and (with the reference) its error; returns the number of
// violations of the certified bound (normwise, entrywise: 0, 1 or 2).
std::int64_t print_result(const GemmResult& r) {
  const double scale = r.norm_a * r.norm_b;
  const AccumulationModel& a = r.model;
  std::printf("  theta %.6g; accumulation: T = %d, delta = %.3e, depth d = %g, steps N = %g, G = %.3e%s\n", r.theta,
              a.T, a.delta, a.depth, a.steps, a.G, a.unbiased ? "" : " (biased: probable bound = certified)");
  std::printf("  ||A||_inf = %.6e, ||B||_inf = %.6e\n\n", r.norm_a, r.norm_b);
  Table table({"", "||.||_inf", "relative to ||A|| ||B||"});
  table.add({"certified bound", sci(r.normwise_bound), sci(r.normwise_bound / scale)});
  table.add({"paper's bound (Mary & Mikaitis)", sci(r.paper.normwise), sci(r.paper.normwise / scale)});
  if (r.observed_normwise >= 0)
    table.add({"observed ||C - AB||", sci(r.observed_normwise), sci(r.observed_normwise / scale)});
  table.print();
  if (r.observed_max_ratio >= 0) std::printf("largest entrywise |C - AB| / bound: %.3e\n", r.observed_max_ratio);
  std::printf("times (s): split %.4f, products %.4f, bounds %.4f\n", r.split_seconds, r.product_seconds,
              r.bound_seconds);
  if (r.observed_normwise < 0) return 0;  // nothing to check without the reference
  // an infinite bound states nothing; a NaN error (a NaN in C) meets no finite bound
  const bool normwise = std::isfinite(r.normwise_bound) && !(r.observed_normwise <= r.normwise_bound);
  const bool entrywise = r.observed_max_ratio > 1;
  if (normwise)
    std::printf("violation: ||C - AB||_inf = %.6e > certified bound %.6e\n", r.observed_normwise, r.normwise_bound);
  if (entrywise) std::printf("violation: an entry has |C - AB| = %.6e times its certified bound\n", r.observed_max_ratio);
  const int violations = (normwise ? 1 : 0) + (entrywise ? 1 : 0);
  std::printf("certified bound: %d violations%s\n", violations, violations == 0 ? " (normwise and entrywise)" : "");
  if (violations > 0) spdlog::error("the certified bound was violated");
  return violations;
}

void print_narrow_table(const NarrowFigure& f, const std::vector<std::int64_t>& ks, const char* title,
                        double NarrowPoint::*field, bool narrow_only) {
  std::printf("\nFig. %s: %s\n", f.figure.c_str(), title);
  std::vector<std::string> header = {"input -> accumulation", "subnormals", "p", "range"};
  for (std::int64_t k : ks) header.push_back(fmt::format("k = {}", k));
  Table table(header, {}, 2);
  for (std::size_t i = 0; i < f.cases.size(); ++i) {
    const NarrowCase& nc = f.cases[i];
    if (narrow_only && nc.unbounded) continue;
    std::vector<std::string> row = {nc.label(), nc.subnormals ? "on" : "off", std::to_string(nc.words),
                                    nc.unbounded ? "unbounded" : "narrow"};
    for (const NarrowPoint& p : f.points[i]) row.push_back(sci(p.*field));
    table.add(row);
  }
  table.print();
}

/// "42 s", "5 min", "3 h", "2 days".
std::string age_text(std::int64_t seconds) {
  if (seconds < 120) return fmt::format("{} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{} h", seconds / 3600);
  return fmt::format("{} days", seconds / 86400);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

GemmCosts costs_for(const std::string& path, bool remeasure) {
  GemmCosts costs = gemm_costs(path.empty() ? default_gemm_profile_path() : path, remeasure);
  for (const std::string& w : costs.warnings) spdlog::warn("{}", w);
  if (!costs.noisy.empty())
    spdlog::warn("the timings of {} disagree (median more than {:g} times the fastest in {} attempts): used for "
                 "this run, not stored",
                 joined(costs.noisy), GemmTimingRule{}.spread, GemmTimingRule{}.attempts);
  return costs;
}

std::string costs_origin(const GemmCosts& c) {
  std::string out;
  if (c.read) out = fmt::format("profile {}, written {} ago", c.path, age_text(c.age));
  if (!c.measured.empty() || !c.noisy.empty()) {
    std::vector<std::string> now = c.measured;
    now.insert(now.end(), c.noisy.begin(), c.noisy.end());
    out += out.empty() ? "measured now" : fmt::format("; measured now: {}", joined(now));
    if (c.stored) out += c.read ? " (added to it)" : fmt::format(", stored in profile {}", c.path);
    else if (c.path.empty()) out += " (no profile: neither XDG_CACHE_HOME nor HOME is set)";
    else out += " (not stored)";
    if (!c.noisy.empty()) out += fmt::format("; noisy: {}", joined(c.noisy));
  }
  return out;
}

int run_single(const Config& c, Hdf5Writer* out) {
  const auto [A, B] = operands(c);
  const Stopwatch watch;
  const GemmResult r = gemm(A, B, c.gemm);
  const double total = watch.seconds();
  print_data_header(c, "one run");
  std::printf("  config %s\n", gemm_config_text(c.gemm, c.unit_name).c_str());
  const std::int64_t violations = print_result(r);
  std::printf("total %.4f s%s\n", total, c.reference ? " (with the exact reference)" : "");
  if (out != nullptr) write_gemm_run(root_of(*out, c, "run").group("run"), c.data, c.unit_name, c.gemm, r, stamp(c));
  return violations > 0 ? 1 : 0;
}

int run_select(const Config& c, Hdf5Writer* out) {
  const auto [A, B] = operands(c);
  GemmOptions opt;
  opt.tolerance = c.tolerance;
  opt.scaling = c.scaling;
  opt.subnormals = c.subnormals;
  opt.failure = c.failure;
  opt.componentwise = c.reference;  // as in a single run: entrywise only against the reference
  const GemmCosts costs = costs_for(c.profile, false);
  opt.cost = costs.model;
  const Stopwatch watch;
  const GemmPlan plan = gemm_select(A, B, opt);
  const double select_seconds = watch.seconds();
  print_data_header(c, "selection");
  std::printf("  tolerance %g: wanted ||C - AB||_inf <= %g ||A||_inf ||B||_inf; selection took %.4f s\n",
              c.tolerance, c.tolerance, select_seconds);
  std::printf("  throughputs: %s\n\n", costs_origin(costs).c_str());
  Table table({"candidate", "relative bound", "modelled ms", "meets", ""});
  for (const GemmCandidateReport& rep : plan.candidates) {
    const bool chosen = describe(rep.config) == describe(plan.config);
    table.add({describe(rep.config), sci(rep.relative_bound), fmt::format("{:.3f}", 1e3 * rep.seconds),
               rep.relative_bound <= c.tolerance ? "yes" : "no", chosen && plan.meets_tolerance ? "<- chosen" : ""});
  }
  table.print();
  if (out != nullptr) {
    const Hdf5Group g = root_of(*out, c, "select").group("select");
    write_gemm_selection(g, c.data, opt, plan, select_seconds, stamp(c));
    g.attribute("throughputs", costs_origin(costs));
  }
  if (!plan.meets_tolerance) {
    std::printf("\nno candidate meets tolerance %g: the smallest certified relative bound is %.3e (%s)\n",
                c.tolerance, plan.relative_bound, describe(plan.config).c_str());
    spdlog::error("no candidate meets tolerance {:g} (best: {}, relative bound {:.3e})", c.tolerance,
                  describe(plan.config), plan.relative_bound);
    return 1;
  }
  GemmConfig chosen = plan.config;
  chosen.reference = c.reference;
  const GemmResult r = gemm(A, B, chosen);
  std::printf("\nchosen: %s, modelled %.3f ms\n", describe(plan.config).c_str(), 1e3 * plan.seconds);
  const std::int64_t violations = print_result(r);
  if (out != nullptr) write_gemm_run(out->root().group("run"), c.data, "-", plan.config, r, stamp(c));
  return violations > 0 ? 1 : 0;
}

int run_narrow(const Config& c, Hdf5Writer* out) {
  NarrowRangeSpec spec;
  spec.m = c.data.m;
  spec.n = c.data.n;
  spec.k_list = c.k_list;
  spec.figures = c.figures;
  spec.range = c.data.range;
  spec.seed = c.data.seed;
  spec.threads = c.threads;
  spec.progress = progress_lines("ebla gemm: narrow-range", c.progress);
  const NarrowRangeResult result = narrow_range_study(spec);
  std::printf("ebla gemm: Mary & Mikaitis, section 5: narrow range against unbounded range\n");
  std::printf("  A %lld x k, B k x %lld, entries %s, seed %llu; AB exact (correctly rounded)\n",
              static_cast<long long>(spec.m), static_cast<long long>(spec.n),
              distribution_text(GemmDistribution::logscale, spec.range).c_str(),
              static_cast<unsigned long long>(spec.seed));
  std::printf("  FMA chain in the accumulation format; relative to ||A||_inf ||B||_inf (Mary & Mikaitis (5.1))\n");
  for (const NarrowFigure& f : result.figures) {
    print_narrow_table(f, spec.k_list, "normwise relative error ||C - AB||_inf / (||A||_inf ||B||_inf)",
                       &NarrowPoint::error, false);
    print_narrow_table(f, spec.k_list, "certified bound / (||A||_inf ||B||_inf)", &NarrowPoint::certified, false);
    print_narrow_table(f, spec.k_list, "Mary & Mikaitis' bound (Theorem 3.1, p = 1; 4.1, p > 1) / (||A||_inf ||B||_inf)",
                       &NarrowPoint::paper, true);
    for (std::size_t i = 0; i < f.cases.size(); ++i)
      for (std::size_t ik = 0; ik < spec.k_list.size(); ++ik) {
        const NarrowPoint& p = f.points[i][ik];
        if (!p.violation) continue;
        const NarrowCase& nc = f.cases[i];
        std::printf("violation: Fig. %s, %s, subnormals %s, p = %d, %s range, k = %lld: ||C - AB|| = %.6e > bound %.6e\n",
                    f.figure.c_str(), nc.label().c_str(), nc.subnormals ? "on" : "off", nc.words,
                    nc.unbounded ? "unbounded" : "narrow", static_cast<long long>(spec.k_list[ik]), p.abs_error,
                    p.bound);
      }
  }
  std::printf("\ntimes: data and exact AB %.2f s", result.data_seconds);
  for (const NarrowFigure& f : result.figures)
    std::printf(", Fig. %s %.2f s (%zu configs x %zu k)", f.figure.c_str(), f.seconds, f.cases.size(),
                spec.k_list.size());
  std::printf(" on %d thread%s\n", spec.threads, spec.threads == 1 ? "" : "s");
  const std::int64_t violations = result.violations();
  std::printf("certified bound: %lld violations in %lld runs%s\n", static_cast<long long>(violations),
              static_cast<long long>(result.runs()), violations == 0 ? " (error <= bound on every run)" : "");
  if (out != nullptr) write_narrow_range(root_of(*out, c, "narrow-range"), spec, result, stamp(c));
  if (violations == 0) return 0;
  spdlog::error("the certified bound was violated in {} runs", violations);
  return 1;
}

int run_tensor_core(const Config& c, Hdf5Writer* out) {
  TensorCoreSpec spec;
  spec.data = c.data;
  spec.gemm = c.gemm;
  spec.progress = progress_lines("ebla gemm: tensor-core", c.progress);
  // the options are checked: an InvalidArgument now is an entry that --given cannot hold
  const TensorCoreResult t = under_option("ebla gemm --given", [&] { return tensor_core_study(spec); });
  const GemmResult& r = t.gemm;
  for (const EntryViolation& v : t.first_violations)
    std::printf("violation: entry (%zu, %zu): |C - AB| = %.6e > bound %.6e\n", v.i, v.j, v.error, v.bound);
  const GemmData& d = c.data;
  std::printf("ebla gemm: Bhola & Duraisamy, section 4.2 (Fig. 6): A %lld x %lld, B %lld x %lld, entries %s, seed %llu\n",
              static_cast<long long>(d.m), static_cast<long long>(d.k), static_cast<long long>(d.k),
              static_cast<long long>(d.n), data_text(d).c_str(), static_cast<unsigned long long>(d.seed));
  std::printf("  %s (the matrices as given, as the seed's cuBLAS call)\n",
              gemm_config_text(r.config, c.unit_name).c_str());
  std::printf("  unit %s: %s\n", c.unit_name.c_str(), to_string(r.config.unit).c_str());
  const bool exact = r.paper.inputs_exact;  // A and B in the input format: Theorems 3.7 and 3.9
  std::printf("  relative to |AB| (exact, correctly rounded), per entry; the probable bound fails with "
              "probability <= %g per entry,\n  VIBEA with probability <= %g per entry (lambda = %.2f) or for the "
              "whole product (lambda = %.2f)\n\n",
              c.failure, c.failure, r.paper.vibea_lambda, r.paper.vibea_lambda_matrix);
  Table table({"per entry, relative to |AB|", "max", "median"});
  const auto row = [&](const std::string& label, const Sample& s) { table.add({label, sci(s.max()), sci(s.median())}); };
  row("forward error |C - AB| / |AB|", t.error);
  row("certified bound", t.certified);
  row("probable bound", t.probable);
  row(exact ? "DBEA (Bhola & Duraisamy, Theorem 3.7)" : "DBEA (Bhola & Duraisamy, Theorem 3.8)", t.dbea);
  const std::string vibea = exact ? "VIBEA (Bhola & Duraisamy, Theorem 3.9)" : "VIBEA (Bhola & Duraisamy, Theorem 3.10)";
  row(vibea + ", per entry", t.vibea);
  row(vibea + ", whole product", t.vibea_matrix);
  table.print();
  if (!t.dbea_over_vibea.empty())
    std::printf("\nDBEA / VIBEA per entry (Bhola & Duraisamy: \"nearly an order of magnitude\"): median %.2f with the "
                "per-entry lambda, %.2f with the whole-product one\n",
                t.dbea_over_vibea.median(), t.dbea_over_vibea_matrix.median());
  const Sample& ratio = t.certified_over_dbea;
  if (!ratio.empty())
    std::printf("\ncertified / DBEA per entry: min %.3f, median %.3f, max %.3f\n", ratio.min(), ratio.median(),
                ratio.max());
  std::printf("\nerror > probable bound on %.5f of the entries (failure probability %g%s)\n",
              fraction(t.above_probable, t.entries), c.failure,
              r.model.unbiased ? "" : "; the unit is biased: probable bound = certified");
  std::printf("error > DBEA on %.5f of the entries (%lld of %lld)\n", fraction(t.above_dbea, t.entries),
              static_cast<long long>(t.above_dbea), static_cast<long long>(t.entries));
  std::printf("error > VIBEA on %.5f of the entries (%lld of %lld; whole-product lambda: %lld)\n",
              fraction(t.above_vibea, t.entries), static_cast<long long>(t.above_vibea),
              static_cast<long long>(t.entries), static_cast<long long>(t.above_vibea_matrix));
  if (t.zero > 0) std::printf("%lld entries with AB = 0 left out of the relative values\n", static_cast<long long>(t.zero));
  std::printf("times (s): data %.2f, ebla::gemm %.2f (split %.2f, products %.2f, bounds %.2f), exact AB %.2f\n",
              t.data_seconds, t.gemm_seconds, r.split_seconds, r.product_seconds, r.bound_seconds, t.exact_seconds);
  std::printf("certified bound: %lld violations in %lld entries%s\n", static_cast<long long>(t.violations),
              static_cast<long long>(t.entries), t.violations == 0 ? " (error <= bound on every entry)" : "");
  if (out != nullptr) write_tensor_core(root_of(*out, c, "tensor-core"), spec, c.unit_name, t, stamp(c));
  if (t.violations == 0) return 0;
  spdlog::error("the certified bound was violated on {} entries", t.violations);
  return 1;
}

}  // namespace ebla::cli::gemm_command

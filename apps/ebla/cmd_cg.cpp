// ebla cg: conjugate gradients with exact, qdot or fixed-format dot products (seed 002,
// section 4.2, Algorithm 4.1), on HPCCG's problem, a shifted graph Laplacian, or a matrix
// from a Matrix Market or HDF5 file.
//
// One run prints a summary (or one JSON line) and with --output writes the parameters and
// every iteration's residual, alpha, beta and dot records to an HDF5 file. A sweep
// (--sweep-qdot-tol A:B) runs CG with exact dot products, then ACG at each tolerance
// A, 10 A, ..., B, and reports the largest tolerance that keeps CG's iteration count.
#include "commands.hpp"
#include "distributed.hpp"
#include "solver_common.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dot_mix.hpp>

#include <Kokkos_Core.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

constexpr Solver me = Solver::cg;

struct CgCli {
  ProblemCli problem;
  DotCli dots;
  OutputCli out;
  double tol = 1e-8;
  std::string norm = "absolute", stop = "exact";
  int max_iter = 10000;
  bool jacobi = false;
  std::string experiment;  // "auto" or empty
  std::string matrix_dir = EBLA_MATRIX_DIR;
};

struct CgConfig {
  ProblemSpec problem;
  DotSpec dots;
  OutputCli out;
  CgOptions solver;  // without the progress callback
  bool progress_given = false;
  bool experiment = false;     // --experiment auto
  bool problem_given = false;  //   on the problem of the options, not the built-in set
  std::string matrix_dir;
};

Norm parse_norm(const std::string& s) {
  if (s == "absolute") return Norm::absolute;
  if (s == "relative") return Norm::relative;
  throw_invalid(option_name(me, "--norm"), "unknown norm '" + s + "' (known: absolute, relative)");
}

StopTest parse_stop(const std::string& s) {
  if (s == "exact") return StopTest::exact_norm;
  if (s == "certified") return StopTest::certified;
  if (s == "approximate") return StopTest::approximate;
  throw_invalid(option_name(me, "--stop"), "unknown stopping test '" + s + "' (known: exact, certified, approximate)");
}


CgConfig make_config(const CgCli& c) {
  CgConfig cfg;
  cfg.problem = make_problem_spec(c.problem, me);
  cfg.experiment = !c.experiment.empty();
  if (cfg.experiment) cfg.problem_given = check_experiment(c.experiment, c.problem, c.dots, c.out, me);
  cfg.matrix_dir = c.matrix_dir;
  cfg.dots = cfg.experiment ? experiment_dot_spec(c.dots, me) : make_dot_spec(c.dots, me);
  check_output(c.out, me);
  cfg.out = c.out;
  cfg.progress_given = c.out.progress_option->count() > 0;
  if (!(c.tol > 0) || !std::isfinite(c.tol))
    throw_invalid(option_name(me, "--tol"), strf("%g is not a positive finite tolerance", c.tol));
  if (c.max_iter < 0) throw_invalid(option_name(me, "--max-iter"), std::to_string(c.max_iter) + " is negative");
  cfg.solver.tolerance = c.tol;
  cfg.solver.norm = parse_norm(c.norm);
  cfg.solver.stop = parse_stop(c.stop);
  cfg.solver.max_iterations = c.max_iter;
  cfg.solver.jacobi = c.jacobi;
  cfg.solver.record_levels = c.out.levels;
  if (cfg.solver.jacobi && cfg.solver.stop != StopTest::exact_norm)
    throw_invalid(option_name(me, "--stop " + c.stop),
                  "needs r^T r, which Jacobi-preconditioned CG does not compute: drop --jacobi or use --stop exact");
  return cfg;
}

// ---- one run ------------------------------------------------------------------------

struct CgRun {
  DotPolicy policy;
  std::vector<std::string> rungs;
  CgResult result;
  double max_error = std::numeric_limits<double>::quiet_NaN();  // NaN: the solution is not known
  FractionSeries rr, pq;
  double dot_seconds = 0;
};

const char* rr_label(const CgConfig& c) { return c.solver.jacobi ? "r^T z" : "r^T r"; }

CgRun solve(const Problem& p, const CgConfig& c, const DotPolicy& policy, const std::string& label, int every) {
  CgRun run;
  run.policy = policy;
  run.rungs = policy.level_names();
  CgOptions o = c.solver;
  o.progress = [&](int k, double r) {
    if (progress_due(k, every)) spdlog::info("{}cg iteration {}: ||r|| = {:.3e}", label, k, r);
  };
  run.result = std::visit([&](const auto& A) { return solve_cg(A, p.b, p.x0, policy, o, c.dots.collectives); }, p.op);
  // every rank takes part in the max, also one that owns no rows (its x_exact is empty)
  if (!p.x_exact_source.empty()) run.max_error = global_max(max_difference(run.result.x, p.x_exact));
  if (o.record_levels)  // under mpirun: the global maps, on rank 0
    for (CgIteration& it : run.result.history) {
      gather_to_root(it.rr_levels);
      gather_to_root(it.pq_levels);
    }
  run.rr.rungs = run.pq.rungs = run.rungs.size();
  run.dot_seconds = run.result.rr0.seconds;
  for (const CgIteration& it : run.result.history) {
    run.rr.add(&it.rr);
    run.pq.add(&it.pq);
    run.dot_seconds += it.rr.seconds + it.pq.seconds;
  }
  return run;
}

bool converged(const CgRun& r) { return r.result.status == SolverStatus::converged; }

// ---- text ---------------------------------------------------------------------------

// The --stop value of a stopping test.
const char* stop_name(StopTest s) { return s == StopTest::exact_norm ? "exact" : to_string(s); }

void print_problem(const Problem& p, const CgConfig& c) {
  const CgOptions& o = c.solver;
  std::printf("ebla cg: %s\n", p.description.c_str());
  std::printf("  n = %zu, nnz = %zu, operator %s, b = %s, x0 = %s\n", p.n, p.nnz, p.operator_name.c_str(),
              p.b_source.c_str(), p.x0_source.c_str());
  std::printf("  stopping rule: %s <= %s (%s), %s, at most %d iterations%s\n",
              o.stop == StopTest::exact_norm ? "||r||" : o.stop == StopTest::certified ? "sqrt(c + bound(c))" : "sqrt(c)",
              tolerance_text(o.tolerance).c_str(), o.norm == Norm::absolute ? "absolute" : "relative to ||b||",
              o.stop == StopTest::exact_norm  ? "exact norm"
              : o.stop == StopTest::certified ? "certified qdot bound"
                                              : "approximate c_k as in Algorithm 4.1 (not certified)",
              o.max_iterations,
              o.jacobi ? ", Jacobi preconditioner" : "");
}

std::string status_text(const CgResult& r) {
  return strf("%s after %d iteration%s (%s)", to_string(r.status), r.iterations, r.iterations == 1 ? "" : "s",
                     r.stop_reason.c_str());
}

void print_mixes(const CgRun& run, const CgConfig& c) {
  if (run.result.history.empty()) return;
  std::printf("precision mix, mean over iterations (%% of components):\n");
  print_mix(run.rungs, {{rr_label(c), &run.rr}, {"p^T q", &run.pq}});
}

void print_run(const Problem& p, const CgConfig& c, const CgRun& run) {
  const CgResult& r = run.result;
  print_problem(p, c);
  std::printf("  dots: %s\n", run.policy.to_string().c_str());
  std::printf("status              %s\n", status_text(r).c_str());
  std::printf("recursive residual  %.3e  (initial %.3e, tau %.3e)\n", r.recursive_residual, r.initial_residual,
              r.tolerance_used);
  std::printf("true residual       %.3e  (||b - A x|| in double-double)\n", r.true_residual);
  if (p.x_exact_source == "1")
    std::printf("max |x - 1|         %.3e  (b = A 1: the solution is ones)\n", run.max_error);
  else if (!p.x_exact_source.empty())
    std::printf("max |x - x*|        %.3e  (b = A x*, x* = %s)\n", run.max_error, p.x_exact_source.c_str());
  std::printf("time                %.3g s (dot products %.3g s)\n", r.seconds, run.dot_seconds);
  print_events(r.events);
  print_mixes(run, c);
}

// ---- JSON ---------------------------------------------------------------------------

JsonObject problem_json(const Problem& p, const CgConfig& c) {
  JsonObject j;
  j.field("command", "cg");
  add_problem_json(j, p);
  j.field("b", p.b_source).field("x0", p.x0_source);
  j.field("tolerance", c.solver.tolerance).field("norm", to_string(c.solver.norm));
  j.field("stop", stop_name(c.solver.stop));
  j.field("max_iterations", c.solver.max_iterations).field("jacobi", c.solver.jacobi);
  return j;
}

JsonObject run_json(const Problem& p, const CgConfig& c, const CgRun& run) {
  const CgResult& r = run.result;
  JsonObject j = problem_json(p, c);
  add_dot_json(j, run.policy, run.rungs);
  j.field("iterations", r.iterations).field("status", to_string(r.status)).field("stop_reason", r.stop_reason);
  j.field("breakdown", r.breakdown).field("tolerance_used", r.tolerance_used);
  j.field("initial_residual", r.initial_residual).field("recursive_residual", r.recursive_residual);
  j.field("true_residual", r.true_residual).field("b_norm", r.b_norm).field("max_error", run.max_error);
  j.field("seconds", r.seconds).field("dot_seconds", run.dot_seconds);
  j.field("rr_fraction_mean", run.rr.mean()).field("pq_fraction_mean", run.pq.mean());
  return j;
}

// ---- HDF5 ---------------------------------------------------------------------------

void write_parameters(const Hdf5Object& g, const Problem& p, const CgConfig& c) {
  write_problem_attributes(g, p, me);
  g.attribute("tolerance", c.solver.tolerance).attribute("norm", to_string(c.solver.norm));
  g.attribute("stop", stop_name(c.solver.stop));
  g.attribute("max_iterations", c.solver.max_iterations).attribute("jacobi", std::int64_t{c.solver.jacobi});
}

void write_result_attributes(const Hdf5Object& g, const CgRun& run) {
  const CgResult& r = run.result;
  write_dot_attributes(g, run.policy, run.rungs);
  g.attribute("iterations", r.iterations).attribute("status", to_string(r.status));
  g.attribute("stop_reason", r.stop_reason).attribute("breakdown", r.breakdown);
  g.attribute("tolerance_used", r.tolerance_used).attribute("initial_residual", r.initial_residual);
  g.attribute("recursive_residual", r.recursive_residual).attribute("true_residual", r.true_residual);
  g.attribute("b_norm", r.b_norm).attribute("max_error", run.max_error);
  g.attribute("seconds", r.seconds).attribute("dot_seconds", run.dot_seconds);
  g.attribute("rr0_value", r.rr0.value).attribute("rr0_bound", r.rr0.bound);
}

void write_series(const Hdf5Group& g, const Problem& p, const CgRun& run, bool levels) {
  std::vector<std::int64_t> iteration;
  std::vector<double> residual, alpha, beta, rr_value, rr_bound, pq_value, pq_bound, rr_tolerance, pq_tolerance;
  LevelSeries rr_levels{p.n}, pq_levels{p.n};
  for (const CgIteration& it : run.result.history) {
    iteration.push_back(static_cast<std::int64_t>(iteration.size()) + 1);
    residual.push_back(it.residual);
    alpha.push_back(it.alpha);
    beta.push_back(it.beta);
    rr_value.push_back(it.rr.value);
    rr_bound.push_back(it.rr.bound);
    pq_value.push_back(it.pq.value);
    pq_bound.push_back(it.pq.bound);
    rr_tolerance.push_back(it.rr.tolerance);
    pq_tolerance.push_back(it.pq.tolerance);
    if (levels) {
      rr_levels.add(it.rr_levels);
      pq_levels.add(it.pq_levels);
    }
  }
  g.dataset("iteration", iteration);
  g.dataset("residual", residual).attribute("meaning", "||r_k|| as the stopping test saw it");
  g.dataset("alpha", alpha);
  g.dataset("beta", beta);
  g.dataset("rr_value", rr_value);
  g.dataset("rr_bound", rr_bound);
  g.dataset("pq_value", pq_value);
  g.dataset("pq_bound", pq_bound);
  g.dataset("rr_tolerance", rr_tolerance).attribute("meaning", "qdot tolerance of c_(k+1) (0: exact)");
  g.dataset("pq_tolerance", pq_tolerance).attribute("meaning", "qdot tolerance of p^T q (0: exact)");
  write_fractions(g, "rr", run.rr, run.rungs);
  write_fractions(g, "pq", run.pq, run.rungs);
  if (levels) {
    write_levels(g, "rr", rr_levels, run.rungs);
    write_levels(g, "pq", pq_levels, run.rungs);
  }
}

void write_run(const Hdf5Group& g, const Problem& p, const CgConfig& c, const CgRun& run) {
  write_result_attributes(g, run);
  write_series(g, p, run, c.out.levels);
}

// ---- a single run -------------------------------------------------------------------

int single(const Problem& p, const CgConfig& c, Hdf5Writer* out) {
  const CgRun run = solve(p, c, c.dots.policy, "", c.out.progress);
  const int code = converged(run) ? exit_converged : exit_not_converged;
  if (c.out.json) std::printf("%s\n", run_json(p, c, run).field("exit_code", code).text().c_str());
  else print_run(p, c, run);
  if (out != nullptr) {
    const Hdf5Group root = out->root();
    write_parameters(root, p, c);
    root.attribute("mode", "run");
    write_run(root, p, c, run);
  }
  return code;
}

// ---- a sweep ------------------------------------------------------------------------

struct Sweep {
  CgRun reference;
  std::vector<double> tolerances;
  std::vector<CgRun> runs;
  double largest_same = std::numeric_limits<double>::quiet_NaN();
};

Sweep sweep(const Problem& p, const CgConfig& c) {
  Sweep s;
  const int every = c.progress_given ? c.out.progress : 0;  // per-iteration lines only when asked for
  s.reference = solve(p, c, DotPolicy::exact(), "[exact] ", every);
  if (c.out.progress > 0)
    spdlog::info("sweep: exact CG: {}", status_text(s.reference.result));
  s.tolerances = c.dots.sweep;
  std::vector<bool> same;
  for (double tol : s.tolerances) {
    s.runs.push_back(solve(p, c, c.dots.at(tol), "[" + tolerance_text(tol) + "] ", every));
    // the same count means something only when both converged (not both stopped at the limit)
    const CgResult& r = s.runs.back().result;
    same.push_back(r.status == SolverStatus::converged && s.reference.result.status == SolverStatus::converged &&
                   r.iterations == s.reference.result.iterations);
    if (c.out.progress > 0)
      spdlog::info("sweep: qdot tolerance {}: {}", tolerance_text(tol), status_text(s.runs.back().result));
  }
  s.largest_same = largest_where(s.tolerances, same);
  return s;
}

std::string largest_text(double tol) { return std::isnan(tol) ? "none" : tolerance_text(tol); }

std::vector<std::string> percents(const std::vector<double>& fractions) {
  std::vector<std::string> cells;
  for (double f : fractions) cells.push_back(percent_text(f));
  return cells;
}

void print_sweep(const Problem& p, const CgConfig& c, const Sweep& s) {
  print_problem(p, c);
  std::printf("  dots: qdot, policy %s, ladder %s\n", to_string(c.dots.qdot_policy), join_names(c.dots.rungs).c_str());
  std::printf("exact CG: %s, true residual %.3e\n\n", status_text(s.reference.result).c_str(),
              s.reference.result.true_residual);
  std::vector<std::string> header = {"tolerance", "iterations", "status", "true residual"};
  const std::string rr = c.solver.jacobi ? "rz " : "rr ";
  for (const auto& r : c.dots.rungs) header.push_back(rr + short_rung(r) + "%");
  for (const auto& r : c.dots.rungs) header.push_back("pq " + short_rung(r) + "%");
  TextTable t(header);
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const CgRun& run = s.runs[i];
    std::vector<std::string> row = {tolerance_text(s.tolerances[i]), std::to_string(run.result.iterations),
                                    to_string(run.result.status), strf("%.3e", run.result.true_residual)};
    for (const auto& cell : percents(run.rr.mean())) row.push_back(cell);
    for (const auto& cell : percents(run.pq.mean())) row.push_back(cell);
    t.add(row);
  }
  t.print();
  std::printf("\nlargest tolerance with the iteration count of exact CG: %s%s\n", largest_text(s.largest_same).c_str(),
              s.reference.result.status == SolverStatus::converged ? "" : " (exact CG itself did not converge)");
}

void print_sweep_json(const Problem& p, const CgConfig& c, const Sweep& s, int code) {
  std::printf("%s\n", run_json(p, c, s.reference).field("run", "reference").text().c_str());
  for (std::size_t i = 0; i < s.runs.size(); ++i)
    std::printf("%s\n", run_json(p, c, s.runs[i]).field("run", "sweep").text().c_str());
  std::vector<double> iterations;
  std::vector<std::string> statuses;
  for (const CgRun& r : s.runs) {
    iterations.push_back(r.result.iterations);
    statuses.push_back(to_string(r.result.status));
  }
  JsonObject j = problem_json(p, c);
  j.field("summary", true).field("tolerances", s.tolerances).field("iterations", iterations);
  j.field("statuses", statuses).field("reference_iterations", s.reference.result.iterations);
  j.field("reference_status", to_string(s.reference.result.status));
  j.field("largest_tolerance_same_iterations", s.largest_same).field("exit_code", code);
  std::printf("%s\n", j.text().c_str());
}

void write_sweep(const Hdf5Writer& out, const Problem& p, const CgConfig& c, const Sweep& s) {
  const Hdf5Group root = out.root();
  write_parameters(root, p, c);
  root.attribute("mode", "sweep").attribute("qdot_policy", to_string(c.dots.qdot_policy));
  root.attribute("rungs", join_names(c.dots.rungs)).attribute("reference_iterations", s.reference.result.iterations);
  root.attribute("largest_tolerance_same_iterations", s.largest_same);
  write_run(root.group("reference"), p, c, s.reference);
  std::vector<std::string> groups;
  std::vector<std::int64_t> iterations, status;
  std::vector<double> true_residual;
  FractionSeries rr{c.dots.rungs.size()}, pq{c.dots.rungs.size()};
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const CgRun& run = s.runs[i];
    groups.push_back(sweep_group_name(s.tolerances[i]));
    write_run(root.group(groups.back()), p, c, run);
    iterations.push_back(run.result.iterations);
    status.push_back(static_cast<std::int64_t>(run.result.status));
    true_residual.push_back(run.result.true_residual);
    DotRecord mean_rr, mean_pq;
    mean_rr.fraction = run.rr.mean();
    mean_pq.fraction = run.pq.mean();
    rr.add(&mean_rr);
    pq.add(&mean_pq);
  }
  root.attribute("groups", join_names(groups));
  root.dataset("tolerance", s.tolerances);
  root.dataset("iterations", iterations);
  root.dataset("status", status).attribute("codes", "0 converged, 1 max_iterations, 2 breakdown");
  root.dataset("true_residual", true_residual);
  root.dataset("rr_fraction_mean", rr.values, rr.rows(), rr.rungs).attribute("rungs", join_names(c.dots.rungs));
  root.dataset("pq_fraction_mean", pq.values, pq.rows(), pq.rungs).attribute("rungs", join_names(c.dots.rungs));
}

int run_sweep(const Problem& p, const CgConfig& c, Hdf5Writer* out) {
  const Sweep s = sweep(p, c);
  const int code = converged(s.reference) ? exit_converged : exit_not_converged;
  if (c.out.json) print_sweep_json(p, c, s, code);
  else print_sweep(p, c, s);
  if (out != nullptr) write_sweep(*out, p, c, s);
  return code;
}

// ---- --experiment auto --------------------------------------------------------------

// The problems: those of the options, or the built-in set (docs/solvers.md, "Choosing the
// tolerance"): three SuiteSparse matrices with Jacobi, HPCCG 30^3 and a shifted Laplacian,
// each to ||r|| <= 1e-8 ||b||.
using AutoCase = cli::AutoCase<CgOptions>;

std::vector<AutoCase> auto_cases(const CgConfig& c) {
  if (c.problem_given) return {{"", c.problem, c.solver}};
  CgOptions o = c.solver;
  o.tolerance = 1e-8;
  o.norm = Norm::relative;
  std::vector<AutoCase> cases;
  for (const char* name : {"1138_bus", "bcsstk13", "gr_30_30"}) {
    ProblemSpec m;
    m.source = Source::matrix;
    m.matrix = set_matrix(c.matrix_dir, name, me);
    cases.push_back({std::string("HB/") + name, m, o});
    cases.back().solver.jacobi = true;
  }
  ProblemSpec h;
  h.nx = h.ny = h.nz = 30;
  cases.push_back({"HPCCG 30^3", h, o});
  ProblemSpec l;
  l.source = Source::laplacian;
  l.n = 10000;
  l.degree = 10;
  l.shift = 1e-3;
  cases.push_back({"Laplacian n = 1e4, shift 1e-3", l, o});
  return cases;
}

// Runs exact CG, each tolerance of the sweep and auto on one problem; with `out`, writes each
// run (write_run) and the summary into it.
AutoReport study(const AutoCase& a, const CgConfig& config, const Hdf5Group* out) {
  CgConfig c = config;
  c.solver = a.solver;
  const Problem p = load_problem(a.spec, me);
  AutoReport r(a.name, p,
               strf("||r|| <= %s%s%s", tolerance_text(c.solver.tolerance).c_str(),
                    c.solver.norm == Norm::relative ? " ||b||" : "", c.solver.jacobi ? ", Jacobi preconditioner" : ""),
               "exact CG", rr_label(c), "p^T q");
  if (out != nullptr) write_parameters(*out, p, c);
  const int every = c.progress_given ? c.out.progress : 0;
  const AutoRun run = [&](const std::string& label, const DotPolicy& policy, double tolerance,
                          const std::string& group) {
    if (c.out.progress > 0) spdlog::info("{}: {}", r.name, label);
    const CgRun result = solve(p, c, policy, "[" + label + "] ", every);
    DotMixCounter rr(result.rungs), pq(result.rungs);  // the share below binary64, the bytes (dot_mix.hpp)
    for (const CgIteration& it : result.result.history) {
      rr.add(it.rr);
      pq.add(it.pq);
    }
    r.add(label, result.result.status, converged(result), result.result.iterations, tolerance, rr.mix(), pq.mix());
    if (out != nullptr) write_run(out->group(group), p, c, result);
    return result.result.events;
  };
  run_auto_sequence(r, c.dots, me, run, out);
  return r;
}


// ---- the command --------------------------------------------------------------------

// Everything that holds Kokkos views lives in here, inside the KokkosSession of run_cg.
int execute(const CgConfig& c) {
  // Created (and so checked) before the work, committed after it: a bad path fails at
  // once, and a failure half-way leaves no file.
  std::unique_ptr<Hdf5Writer> out;
  if (!c.out.output.empty() && processes().rank == 0)  // rank 0 writes; never over an input
    out = under_option(option_name(me, "--output"),
                       [&] { return std::make_unique<Hdf5Writer>(c.out.output, c.problem.inputs()); });
  check_dot_policy(c.dots, me);
  int code = exit_converged;
  if (c.experiment) {
    const auto one = [&](const AutoCase& a, const Hdf5Group* g) { return study(a, c, g); };
    code = run_auto_experiment(auto_cases(c), one, c.dots, c.out.json, out.get(), me);
  } else {
    const Problem p = processes().ranks > 1 ? load_distributed_problem(c.problem, me) : load_problem(c.problem, me);
    if (c.out.levels && p.n > 1000000)
      spdlog::warn("--levels stores {} bytes per dot product and iteration", p.n);
    code = c.dots.sweep.empty() ? single(p, c, out.get()) : run_sweep(p, c, out.get());
  }
  if (out) {
    out->commit();
    if (!c.out.json) std::printf("wrote %s\n", c.out.output.c_str());
  }
  return code;
}

int run_cg(const CgCli& cli) {
  const CgConfig c = make_config(cli);  // every option checked before any work
  KokkosSession kokkos;
  return execute(c);
}

}  // namespace

Command add_cg(CLI::App& app) {
  auto c = std::make_shared<CgCli>();
  add_problem_options(app, c->problem, me);
  add_dot_options(app, c->dots);
  app.add_option("--tol", c->tol, "CG tolerance tau on ||r||")->capture_default_str();
  app.add_option("--norm", c->norm, "absolute: ||r|| <= tau; relative: ||r|| <= tau ||b||")->capture_default_str();
  app.add_option("--stop", c->stop,
                 "exact: ||r|| from a double dot product (the same rule as exact CG); certified: "
                 "qdot(r, r) + its bound <= tau^2; approximate: sqrt(qdot(r, r)) <= tau as the seed's "
                 "Algorithm 4.1 (reproduction only: guarantees nothing)")
      ->capture_default_str();
  app.add_option("--max-iter", c->max_iter, "Maximum number of iterations")->capture_default_str();
  app.add_flag("--jacobi", c->jacobi, "Precondition with diag(A)^-1");
  app.add_option("--experiment", c->experiment,
                 "auto: for each problem of a set (or the one of --problem/--matrix/--hdf5), exact CG, each "
                 "tolerance of --sweep-qdot-tol (default 1e-12:1e-3) and --qdot-tol auto: iterations, share "
                 "below binary64, modelled bytes (docs/solvers.md)");
  app.add_option("--matrix-dir", c->matrix_dir, "--experiment auto: where the set's matrices are")->capture_default_str();
  add_output_options(app, c->out, me);
  app.footer(
      "Solves A x = b. Problems: --problem hpccg (default, 20 x 20 x 20; b = A 1, x0 = 0), --problem\n"
      "laplacian --shift s (L + s I, L the graph Laplacian; b = A x*, x* = sqrt(n) times the random\n"
      "unit vector of --seed, since A 1 = s 1 would be an eigenvector), --matrix A.mtx [--rhs b.mtx]\n"
      "[--x0 x0.mtx], or --hdf5 in.h5 (/A, optional /b, /x0). Without --rhs (or /b), b = A 1, so the\n"
      "exact solution is the vector of ones and max |x - 1| is reported. A matrix from a file must\n"
      "be symmetric (checked unless --no-symmetry-check).\n"
      "Exit code: 0 converged; 1 not converged (maximum iterations or breakdown; for a sweep: exact\n"
      "CG did not converge); 2 bad input (options, files), with a message on stderr.\n"
      "Output formats: docs/solver-output.md. Figures: apps/plot_solvers.py.\n"
      "Built with MPI and started by mpirun -np P: distributed over the P ranks, --nx/--ny/--nz\n"
      "being one rank's block of HPCCG (global grid nx x ny x P nz); rank 0 prints and writes\n"
      "(docs/mpi.md).");
  return [c] { return run_cg(*c); };
}

}  // namespace ebla::cli

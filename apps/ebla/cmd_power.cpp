// ebla power: the power method with exact, qdot or fixed-format dot products (seed 002,
// section 4.3, Algorithm 4.2 with its eigenvalue update corrected, see power.hpp), on a
// random graph Laplacian (the seed's problem), HPCCG's matrix, or a matrix from a file.
//
// One run prints a summary (or one JSON line) and with --output writes every iteration's
// eigenvalue estimate and dot records to an HDF5 file. A sweep (--sweep-qdot-tol A:B)
// runs the double-precision power method (PM), then APM at each tolerance, and reports
// iterations and |lambda - lambda_PM| per tolerance (seed 002, Figs. 6-7).
#include "commands.hpp"
#include "distributed.hpp"
#include "solver_common.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/power.hpp>

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

constexpr Solver me = Solver::power;

struct PowerCli {
  ProblemCli problem;
  DotCli dots;
  OutputCli out;
  double tol = 1e-6;
  int max_iter = 300;
  std::string experiment;  // "auto" or empty
  std::string matrix_dir = EBLA_MATRIX_DIR;
};

struct PowerConfig {
  ProblemSpec problem;
  DotSpec dots;
  OutputCli out;
  PowerOptions solver;  // without the progress callback
  bool progress_given = false;
  bool experiment = false;     // --experiment auto
  bool problem_given = false;  //   on the problem of the options, not the built-in set
  std::string matrix_dir;
};


PowerConfig make_config(const PowerCli& c) {
  PowerConfig cfg;
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
  if (c.max_iter < 1) throw_invalid(option_name(me, "--max-iter"), std::to_string(c.max_iter) + " is less than 1");
  cfg.solver.tolerance = c.tol;
  cfg.solver.max_iterations = c.max_iter;
  cfg.solver.record_levels = c.out.levels;
  return cfg;
}

// ---- one run ------------------------------------------------------------------------

struct PowerRun {
  DotPolicy policy;
  std::vector<std::string> rungs;
  PowerResult result;
  FractionSeries yy, xy;  // row 0: the start (no y^T y there)
  double dot_seconds = 0;
};

PowerRun solve(const Problem& p, const PowerConfig& c, const DotPolicy& policy, const std::string& label, int every) {
  PowerRun run;
  run.policy = policy;
  run.rungs = policy.level_names();
  PowerOptions o = c.solver;
  double previous = std::numeric_limits<double>::quiet_NaN();
  o.progress = [&](int k, double lambda) {
    if (progress_due(k, every))
      spdlog::info("{}power iteration {}: lambda = {:.12g}, change {:.3e}", label, k, lambda,
                   std::fabs(lambda - previous));
    previous = lambda;
  };
  run.result = std::visit([&](const auto& A) { return solve_power(A, p.x0, policy, o, c.dots.collectives); }, p.op);
  if (o.record_levels)  // under mpirun: the global maps, on rank 0
    for (PowerIteration& it : run.result.history) {
      gather_to_root(it.yy_levels);
      gather_to_root(it.xy_levels);
    }
  run.yy.rungs = run.xy.rungs = run.rungs.size();
  for (std::size_t k = 0; k < run.result.history.size(); ++k) {
    const PowerIteration& it = run.result.history[k];
    run.yy.add(k == 0 ? nullptr : &it.yy);
    run.xy.add(&it.xy);
    run.dot_seconds += it.yy.seconds + it.xy.seconds;
  }
  return run;
}

bool converged(const PowerRun& r) { return r.result.status == SolverStatus::converged; }

double last_change(const PowerResult& r) {
  return r.history.empty() ? std::numeric_limits<double>::quiet_NaN() : r.history.back().change;
}

// ---- text ---------------------------------------------------------------------------

void print_problem(const Problem& p, const PowerConfig& c) {
  std::printf("ebla power: %s\n", p.description.c_str());
  std::printf("  n = %zu, nnz = %zu, operator %s, x0 = %s\n", p.n, p.nnz, p.operator_name.c_str(),
              p.x0_source.c_str());
  std::printf("  stopping rule: |lambda_k - lambda_(k-1)| <= %s, at most %d iterations\n",
              tolerance_text(c.solver.tolerance).c_str(), c.solver.max_iterations);
}

std::string status_text(const PowerResult& r) {
  return strf("%s after %d iteration%s (%s)", to_string(r.status), r.iterations, r.iterations == 1 ? "" : "s",
                     r.stop_reason.c_str());
}

void print_run(const Problem& p, const PowerConfig& c, const PowerRun& run) {
  const PowerResult& r = run.result;
  print_problem(p, c);
  std::printf("  dots: %s\n", run.policy.to_string().c_str());
  std::printf("status       %s\n", status_text(r).c_str());
  std::printf("eigenvalue   %.15g\n", r.eigenvalue);
  std::printf("last change  %.3e\n", last_change(r));
  std::printf("residual     %.3e  (||A x - lambda x||, x of unit norm)\n", r.residual);
  std::printf("time         %.3g s (dot products %.3g s)\n", r.seconds, run.dot_seconds);
  if (r.iterations == 0) return;
  std::printf("precision mix, mean over iterations (%% of components):\n");
  print_mix(run.rungs, {{"y^T y", &run.yy}, {"x^T y", &run.xy}});
}

// ---- JSON ---------------------------------------------------------------------------

JsonObject problem_json(const Problem& p, const PowerConfig& c) {
  JsonObject j;
  j.field("command", "power");
  add_problem_json(j, p);
  j.field("x0", p.x0_source).field("tolerance", c.solver.tolerance);
  j.field("max_iterations", c.solver.max_iterations);
  return j;
}

JsonObject run_json(const Problem& p, const PowerConfig& c, const PowerRun& run) {
  const PowerResult& r = run.result;
  JsonObject j = problem_json(p, c);
  add_dot_json(j, run.policy, run.rungs);
  j.field("iterations", r.iterations).field("status", to_string(r.status)).field("stop_reason", r.stop_reason);
  j.field("breakdown", r.breakdown).field("eigenvalue", r.eigenvalue).field("change", last_change(r));
  j.field("residual", r.residual).field("seconds", r.seconds).field("dot_seconds", run.dot_seconds);
  j.field("yy_fraction_mean", run.yy.mean()).field("xy_fraction_mean", run.xy.mean());
  return j;
}

// ---- HDF5 ---------------------------------------------------------------------------

void write_parameters(const Hdf5Object& g, const Problem& p, const PowerConfig& c) {
  write_problem_attributes(g, p, me);
  g.attribute("tolerance", c.solver.tolerance).attribute("max_iterations", c.solver.max_iterations);
}

void write_result_attributes(const Hdf5Object& g, const PowerRun& run) {
  const PowerResult& r = run.result;
  write_dot_attributes(g, run.policy, run.rungs);
  g.attribute("iterations", r.iterations).attribute("status", to_string(r.status));
  g.attribute("stop_reason", r.stop_reason).attribute("breakdown", r.breakdown);
  g.attribute("eigenvalue", r.eigenvalue).attribute("change", last_change(r)).attribute("residual", r.residual);
  g.attribute("seconds", r.seconds).attribute("dot_seconds", run.dot_seconds);
}

void write_series(const Hdf5Group& g, const Problem& p, const PowerRun& run, bool levels) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::int64_t> iteration;
  std::vector<double> eigenvalue, change, yy_value, yy_bound, xy_value, xy_bound, yy_tolerance, xy_tolerance;
  LevelSeries yy_levels{p.n}, xy_levels{p.n};
  for (const PowerIteration& it : run.result.history) {
    const bool start = iteration.empty();
    iteration.push_back(static_cast<std::int64_t>(iteration.size()));
    eigenvalue.push_back(it.eigenvalue);
    change.push_back(it.change);
    yy_value.push_back(start ? nan : it.yy.value);
    yy_bound.push_back(start ? nan : it.yy.bound);
    xy_value.push_back(it.xy.value);
    xy_bound.push_back(it.xy.bound);
    yy_tolerance.push_back(start ? nan : it.yy.tolerance);
    xy_tolerance.push_back(it.xy.tolerance);
    if (levels) {
      yy_levels.add(it.yy_levels);
      xy_levels.add(it.xy_levels);
    }
  }
  g.dataset("iteration", iteration).attribute("meaning", "0: the start x_1 = x0 / ||x0||");
  g.dataset("eigenvalue", eigenvalue);
  g.dataset("change", change).attribute("meaning", "|lambda_k - lambda_(k-1)|; NaN at the start");
  g.dataset("yy_value", yy_value);
  g.dataset("yy_bound", yy_bound);
  g.dataset("xy_value", xy_value);
  g.dataset("xy_bound", xy_bound);
  g.dataset("yy_tolerance", yy_tolerance).attribute("meaning", "qdot tolerance of y^T y (0: exact); NaN at the start");
  g.dataset("xy_tolerance", xy_tolerance).attribute("meaning", "qdot tolerance of x^T A x (0: exact)");
  write_fractions(g, "yy", run.yy, run.rungs);
  write_fractions(g, "xy", run.xy, run.rungs);
  if (levels) {
    write_levels(g, "yy", yy_levels, run.rungs);
    write_levels(g, "xy", xy_levels, run.rungs);
  }
}

void write_run(const Hdf5Group& g, const Problem& p, const PowerConfig& c, const PowerRun& run) {
  write_result_attributes(g, run);
  write_series(g, p, run, c.out.levels);
}

// ---- a single run -------------------------------------------------------------------

int single(const Problem& p, const PowerConfig& c, Hdf5Writer* out) {
  const PowerRun run = solve(p, c, c.dots.policy, "", c.out.progress);
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
  PowerRun reference;
  std::vector<double> tolerances;
  std::vector<PowerRun> runs;
  std::vector<double> error;  // |lambda - lambda_PM|
  double largest_same = std::numeric_limits<double>::quiet_NaN();
  double largest_within = std::numeric_limits<double>::quiet_NaN();
};

Sweep sweep(const Problem& p, const PowerConfig& c) {
  Sweep s;
  const int every = c.progress_given ? c.out.progress : 0;  // per-iteration lines only when asked for
  s.reference = solve(p, c, DotPolicy::exact(), "[exact] ", every);
  if (c.out.progress > 0) spdlog::info("sweep: PM: {}", status_text(s.reference.result));
  s.tolerances = c.dots.sweep;
  std::vector<bool> same, within;
  for (double tol : s.tolerances) {
    s.runs.push_back(solve(p, c, c.dots.at(tol), "[" + tolerance_text(tol) + "] ", every));
    const PowerResult& r = s.runs.back().result;
    s.error.push_back(std::fabs(r.eigenvalue - s.reference.result.eigenvalue));
    // the same count means something only when both converged (not both stopped at the limit)
    same.push_back(r.status == SolverStatus::converged && s.reference.result.status == SolverStatus::converged &&
                   r.iterations == s.reference.result.iterations);
    within.push_back(s.error.back() <= c.solver.tolerance);
    if (c.out.progress > 0) spdlog::info("sweep: qdot tolerance {}: {}", tolerance_text(tol), status_text(r));
  }
  s.largest_same = largest_where(s.tolerances, same);
  s.largest_within = largest_where(s.tolerances, within);
  return s;
}

std::string largest_text(double tol) { return std::isnan(tol) ? "none" : tolerance_text(tol); }

void print_sweep(const Problem& p, const PowerConfig& c, const Sweep& s) {
  print_problem(p, c);
  std::printf("  dots: qdot, policy %s, ladder %s\n", to_string(c.dots.qdot_policy), join_names(c.dots.rungs).c_str());
  std::printf("PM (exact dots): %s, eigenvalue %.15g\n\n", status_text(s.reference.result).c_str(),
              s.reference.result.eigenvalue);
  std::vector<std::string> header = {"tolerance", "iterations", "status", "eigenvalue", "|lambda - lambda_PM|"};
  for (const auto& r : c.dots.rungs) header.push_back("yy " + short_rung(r) + "%");
  for (const auto& r : c.dots.rungs) header.push_back("xy " + short_rung(r) + "%");
  TextTable t(header);
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const PowerResult& r = s.runs[i].result;
    std::vector<std::string> row = {tolerance_text(s.tolerances[i]), std::to_string(r.iterations),
                                    to_string(r.status), strf("%.12g", r.eigenvalue),
                                    strf("%.3e", s.error[i])};
    for (const auto& series : {s.runs[i].yy.mean(), s.runs[i].xy.mean()})
      for (double f : series) row.push_back(percent_text(f));
    t.add(row);
  }
  t.print();
  std::printf("\nlargest tolerance with the iteration count of the double-precision power method: %s%s\n",
              largest_text(s.largest_same).c_str(),
              s.reference.result.status == SolverStatus::converged ? "" : " (PM itself did not converge)");
  std::printf("largest tolerance with |lambda - lambda_PM| <= %s: %s\n", tolerance_text(c.solver.tolerance).c_str(),
              largest_text(s.largest_within).c_str());
}

void print_sweep_json(const Problem& p, const PowerConfig& c, const Sweep& s, int code) {
  std::printf("%s\n", run_json(p, c, s.reference).field("run", "reference").text().c_str());
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const JsonObject j = run_json(p, c, s.runs[i]).field("run", "sweep").field("eigenvalue_error", s.error[i]);
    std::printf("%s\n", j.text().c_str());
  }
  std::vector<double> iterations;
  for (const PowerRun& r : s.runs) iterations.push_back(r.result.iterations);
  JsonObject j = problem_json(p, c);
  j.field("summary", true).field("tolerances", s.tolerances).field("iterations", iterations);
  j.field("eigenvalue_error", s.error).field("reference_iterations", s.reference.result.iterations);
  j.field("reference_status", to_string(s.reference.result.status));
  j.field("reference_eigenvalue", s.reference.result.eigenvalue);
  j.field("largest_tolerance_same_iterations", s.largest_same);
  j.field("largest_tolerance_within_tau", s.largest_within).field("exit_code", code);
  std::printf("%s\n", j.text().c_str());
}

void write_sweep(const Hdf5Writer& out, const Problem& p, const PowerConfig& c, const Sweep& s) {
  const Hdf5Group root = out.root();
  write_parameters(root, p, c);
  root.attribute("mode", "sweep").attribute("qdot_policy", to_string(c.dots.qdot_policy));
  root.attribute("rungs", join_names(c.dots.rungs)).attribute("reference_iterations", s.reference.result.iterations);
  root.attribute("reference_eigenvalue", s.reference.result.eigenvalue);
  root.attribute("largest_tolerance_same_iterations", s.largest_same);
  root.attribute("largest_tolerance_within_tau", s.largest_within);
  write_run(root.group("reference"), p, c, s.reference);
  std::vector<std::string> groups;
  std::vector<std::int64_t> iterations, status;
  std::vector<double> eigenvalue;
  FractionSeries yy{c.dots.rungs.size()}, xy{c.dots.rungs.size()};
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const PowerRun& run = s.runs[i];
    groups.push_back(sweep_group_name(s.tolerances[i]));
    write_run(root.group(groups.back()), p, c, run);
    iterations.push_back(run.result.iterations);
    status.push_back(static_cast<std::int64_t>(run.result.status));
    eigenvalue.push_back(run.result.eigenvalue);
    DotRecord mean_yy, mean_xy;
    mean_yy.fraction = run.yy.mean();
    mean_xy.fraction = run.xy.mean();
    yy.add(&mean_yy);
    xy.add(&mean_xy);
  }
  root.attribute("groups", join_names(groups));
  root.dataset("tolerance", s.tolerances);
  root.dataset("iterations", iterations);
  root.dataset("status", status).attribute("codes", "0 converged, 1 max_iterations, 2 breakdown");
  root.dataset("eigenvalue", eigenvalue);
  root.dataset("eigenvalue_error", s.error).attribute("meaning", "|lambda - lambda_PM|");
  root.dataset("yy_fraction_mean", yy.values, yy.rows(), yy.rungs).attribute("rungs", join_names(c.dots.rungs));
  root.dataset("xy_fraction_mean", xy.values, xy.rows(), xy.rungs).attribute("rungs", join_names(c.dots.rungs));
}

int run_sweep(const Problem& p, const PowerConfig& c, Hdf5Writer* out) {
  const Sweep s = sweep(p, c);
  const int code = converged(s.reference) ? exit_converged : exit_not_converged;
  if (c.out.json) print_sweep_json(p, c, s, code);
  else print_sweep(p, c, s);
  if (out != nullptr) write_sweep(*out, p, c, s);
  return code;
}

// ---- --experiment auto --------------------------------------------------------------

// The problems: that of the options, or the built-in set (docs/solvers.md): the seed's
// Laplacian (tau 1e-6, 300 iterations at most), a second Laplacian and HPCCG 20^3 to tau
// 1e-8, and SuiteSparse HB/1138_bus to tau 1e-6.
using AutoCase = cli::AutoCase<PowerOptions>;

std::vector<AutoCase> auto_cases(const PowerConfig& c) {
  if (c.problem_given) return {{"", c.problem, c.solver}};
  ProblemSpec seed_laplacian;
  seed_laplacian.source = Source::laplacian;
  seed_laplacian.n = 10000;
  seed_laplacian.degree = 10;
  ProblemSpec laplacian = seed_laplacian;
  laplacian.degree = 8;
  laplacian.seed = 3;
  ProblemSpec hpccg;
  hpccg.nx = hpccg.ny = hpccg.nz = 20;
  ProblemSpec matrix;
  matrix.source = Source::matrix;
  matrix.matrix = set_matrix(c.matrix_dir, "1138_bus", me);
  const auto options = [&](double tol, int max_iterations) {
    PowerOptions o = c.solver;
    o.tolerance = tol;
    o.max_iterations = max_iterations;
    return o;
  };
  return {{"Laplacian n = 1e4, degree 10, seed 1", seed_laplacian, options(1e-6, 300)},
          {"Laplacian n = 1e4, degree 8, seed 3", laplacian, options(1e-8, 1000)},
          {"HPCCG 20^3", hpccg, options(1e-8, 5000)},
          {"HB/1138_bus", matrix, options(1e-6, 5000)}};
}

// Runs PM, each tolerance of the sweep and auto on one problem; with `out`, writes each run
// and the summary into it.
AutoReport study(const AutoCase& a, const PowerConfig& config, const Hdf5Group* out) {
  PowerConfig c = config;
  c.solver = a.solver;
  const Problem p = load_problem(a.spec, me);
  AutoReport r(a.name, p,
               strf("|lambda_k - lambda_(k-1)| <= %s, at most %d iterations", tolerance_text(c.solver.tolerance).c_str(),
                    c.solver.max_iterations),
               "PM", "y^T y", "x^T A x");
  r.extra_name = "|lambda - lambda_PM|";
  r.extra_key = "eigenvalue_error";
  r.slack = 1.0;  // the same iteration count, the eigenvalue within tau
  if (out != nullptr) write_parameters(*out, p, c);
  const int every = c.progress_given ? c.out.progress : 0;
  double lambda_pm = 0;
  const AutoRun run = [&](const std::string& label, const DotPolicy& policy, double tolerance,
                          const std::string& group) {
    if (c.out.progress > 0) spdlog::info("{}: {}", r.name, label);
    const PowerRun result = solve(p, c, policy, "[" + label + "] ", every);
    DotMixCounter yy(result.rungs), xy(result.rungs);
    for (std::size_t k = 0; k < result.result.history.size(); ++k) {
      if (k > 0) yy.add(result.result.history[k].yy);  // entry 0: the start, no y^T y
      xy.add(result.result.history[k].xy);
    }
    if (r.outcomes.empty()) lambda_pm = result.result.eigenvalue;
    const double error = std::fabs(result.result.eigenvalue - lambda_pm);
    r.add(label, result.result.status, converged(result) && error <= c.solver.tolerance, result.result.iterations,
          tolerance, yy.mix(), xy.mix(), error);
    if (out != nullptr) write_run(out->group(group), p, c, result);
    return result.result.events;
  };
  run_auto_sequence(r, c.dots, me, run, out);
  return r;
}


// ---- the command --------------------------------------------------------------------

// Everything that holds Kokkos views lives in here, inside the KokkosSession of run_power.
int execute(const PowerConfig& c) {
  std::unique_ptr<Hdf5Writer> out;  // checked before the work, committed after it
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
    code = c.dots.sweep.empty() ? single(p, c, out.get()) : run_sweep(p, c, out.get());
  }
  if (out) {
    out->commit();
    if (!c.out.json) std::printf("wrote %s\n", c.out.output.c_str());
  }
  return code;
}

int run_power(const PowerCli& cli) {
  const PowerConfig c = make_config(cli);  // every option checked before any work
  KokkosSession kokkos;
  return execute(c);
}

}  // namespace

Command add_power(CLI::App& app) {
  auto c = std::make_shared<PowerCli>();
  add_problem_options(app, c->problem, me);
  add_dot_options(app, c->dots);
  app.add_option("--tol", c->tol, "Tolerance tau on |lambda_k - lambda_(k-1)|")->capture_default_str();
  app.add_option("--max-iter", c->max_iter, "Maximum number of iterations")->capture_default_str();
  app.add_option("--experiment", c->experiment,
                 "auto: for each problem of a set (or the one of --problem/--matrix/--hdf5), PM, each tolerance "
                 "of --sweep-qdot-tol (default 1e-12:1e-3) and --qdot-tol auto: iterations, eigenvalue error, share "
                 "below binary64, modelled bytes (docs/solvers.md)");
  app.add_option("--matrix-dir", c->matrix_dir, "--experiment auto: where the set's matrices are")->capture_default_str();
  add_output_options(app, c->out, me);
  app.footer(
      "Estimates the largest eigenvalue. Problems: --problem laplacian (default: n = 10000, mean\n"
      "degree 10, seed 1), --problem hpccg, --matrix A.mtx, or --hdf5 in.h5 (/A, optional /x0).\n"
      "Start vector: a random unit vector of --seed, or --x0 x0.mtx. The eigenvalue update is the\n"
      "Rayleigh quotient x^T A x of the unit iterate (seed 002 prints a wrong formula; power.hpp).\n"
      "Exit code: 0 converged; 1 not converged (maximum iterations or breakdown; for a sweep: the\n"
      "double-precision run did not converge); 2 bad input (options, files), with a message on stderr.\n"
      "Output formats: docs/solver-output.md. Figures: apps/plot_solvers.py.\n"
      "Built with MPI and started by mpirun -np P: distributed over the P ranks, --nx/--ny/--nz\n"
      "being one rank's block of HPCCG (global grid nx x ny x P nz); rank 0 prints and writes\n"
      "(docs/mpi.md).");
  return [c] { return run_power(*c); };
}

}  // namespace ebla::cli

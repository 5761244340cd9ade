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

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

constexpr Solver me = Solver::power;

struct PowerCli : SolverCli {
  std::string storage = "binary64";
};

struct PowerConfig : SolverSetup {
  PowerOptions solver;  // without the progress callback
};

PowerConfig make_power_config(const PowerCli& c) {
  PowerConfig cfg = make_config<PowerConfig>(c, me, 1);
  cfg.solver.storage = storage_policy_by_name(c.storage, option_name(me, "--storage").c_str());
  if (cfg.solver.storage.narrow()) {
    const StorageFormats f = cfg.solver.storage.fixed;
    if (cfg.solver.storage.kind == StoragePolicy::Kind::fixed && f.p != f.r)
      throw_invalid(option_name(me, "--storage " + c.storage), "the power method stores one vector: give one format");
    if (c.out.levels)
      throw_invalid(option_name(me, "--storage " + c.storage), "computes its dot products in the pass: no --levels maps");
    cfg.problem.narrowest = true;  // a csr A in the words the pass reads, without a binary64 copy
  }
  return cfg;
}

// The largest tolerance whose eigenvalue is within tau of PM's (NaN: none).
double largest_within(const PowerConfig& c, const QdotSweep<PowerRun>& s) {
  std::vector<bool> within;
  for (double e : eigenvalue_errors(s)) within.push_back(e <= c.solver.tolerance);
  return largest_where(s.tolerances, within);
}

// What SolverCommand needs of the power method (solver_common.hpp).
struct Power : CommandBase<PowerConfig, me> {
  static PowerRun solve(const RunProblem& p, const PowerConfig& c, const DotPolicy& policy,
                        const std::string& label, int every) {
    double previous = std::numeric_limits<double>::quiet_NaN();  // the last lambda_k
    PowerOptions o = c.solver;
    o.progress = [&](int k, double lambda) {
      if (progress_due(k, every))
        spdlog::info("{}power iteration {}: lambda = {:.12g}, change {:.3e}", label, k, lambda,
                     std::fabs(lambda - previous));
      previous = lambda;
    };
    PowerResult result =
        std::visit([&](const auto& A) { return solve_power(A, p.x0, policy, o, c.dots.collectives); }, p.op);
    gather_levels(result, o.record_levels, &PowerIteration::yy_levels, &PowerIteration::xy_levels);  // to rank 0
    return record_run(policy, std::move(result));
  }

  static void print_problem(const ProblemData& p, const PowerConfig& c) {
    std::printf("ebla power: %s\n", p.description.c_str());
    std::printf("  n = %zu, nnz = %zu, operator %s, x0 = %s\n", p.n, p.nnz, p.operator_name.c_str(),
                p.x0_source.c_str());
    std::printf("  stopping rule: |lambda_k - lambda_(k-1)| <= %s, at most %d iterations\n",
                tolerance_text(c.solver.tolerance).c_str(), c.solver.max_iterations);
  }

  static void print_result(const ProblemData& p, const PowerConfig&, const PowerRun& run) {
    const PowerResult& r = run.result;
    std::printf("status       %s\n", status_text(r).c_str());
    std::printf("eigenvalue   %.15g\n", r.eigenvalue);
    std::printf("last change  %.3e\n", last_change(r));
    std::printf("residual     %.3e  (||A x - lambda x||, x of unit norm)\n", r.residual);
    std::printf("time         %.3g s (dot products %.3g s)\n", r.seconds, run.dot_seconds);
    if (r.storage != "binary64" && !r.history.empty())
      std::printf("storage      %s: %.1f bytes per row and iteration (model), %.1f GB/s\n", r.storage.c_str(),
                  r.bytes_moved / static_cast<double>(r.history.size()) / static_cast<double>(p.n),
                  r.seconds > 0 ? r.bytes_moved / r.seconds * 1e-9 : 0.0);
    if (r.iterations == 0) return;
    std::printf("precision mix, mean over iterations (%% of components):\n");
    print_mix(run.rungs, {{"y^T y", &run.yy}, {"x^T y", &run.xy}});
  }

  static void add_settings(Json& j, const ProblemData& p, const PowerConfig& c) {
    j["x0"] = p.x0_source;
    j["tolerance"] = c.solver.tolerance;
    j["max_iterations"] = c.solver.max_iterations;
    j["storage"] = to_string(c.solver.storage);
  }

  static void print_reference(const QdotSweep<PowerRun>& s) {
    std::printf("PM (exact dots): %s, eigenvalue %.15g\n\n", status_text(s.reference.result).c_str(),
                s.reference.result.eigenvalue);
  }

  static std::vector<std::string> columns() {
    return {"tolerance", "iterations", "status", "eigenvalue", "|lambda - lambda_PM|"};
  }
  static std::vector<std::string> prefixes(const PowerConfig&) { return {"yy", "xy"}; }

  static std::vector<std::string> cells(const QdotSweep<PowerRun>& s, std::size_t i) {
    const PowerResult& r = s.runs[i].result;
    const double error = eigenvalue_errors(s)[i];
    return {tolerance_text(s.tolerances[i]), std::to_string(r.iterations), to_string(r.status),
            fmt::format("{:.12g}", r.eigenvalue), fmt::format("{:.3e}", error)};
  }

  static void print_largest(const PowerConfig& c, const QdotSweep<PowerRun>& s) {
    std::printf("\nlargest tolerance with the iteration count of the double-precision power method: %s%s\n",
                largest_text(s.largest_same).c_str(),
                s.reference.result.status == SolverStatus::converged ? "" : " (PM itself did not converge)");
    std::printf("largest tolerance with |lambda - lambda_PM| <= %s: %s\n", tolerance_text(c.solver.tolerance).c_str(),
                largest_text(largest_within(c, s)).c_str());
  }

  static void add_line(Json& j, const PowerConfig&, const QdotSweep<PowerRun>& s, std::size_t i) {
    j["eigenvalue_error"] = eigenvalue_errors(s)[i];
  }

  // After the iterations their eigenvalue errors, after the reference its eigenvalue, after
  // the largest tolerance with PM's count the largest within tau.
  static void add_summary(Json& j, const PowerConfig& c, const QdotSweep<PowerRun>& s, SummaryPart part) {
    if (part == SummaryPart::runs) j["eigenvalue_error"] = eigenvalue_errors(s);
    if (part == SummaryPart::reference) j["reference_eigenvalue"] = s.reference.result.eigenvalue;
    if (part == SummaryPart::largest) j["largest_tolerance_within_tau"] = largest_within(c, s);
  }

  static void write_sweep(const Hdf5Group& root, const ProblemData& p, const PowerConfig& c,
                          const QdotSweep<PowerRun>& s) {
    ebla::write_sweep(root, s, largest_within(c, s), c.dots.qdot_policy, c.dots.rungs, p.n, c.out.levels);
  }

  static AutoReport report(const std::string& name, const ProblemData& p, const PowerConfig& c) {
    AutoReport r(name, p.description,
                 fmt::format("|lambda_k - lambda_(k-1)| <= {}, at most {} iterations",
                      tolerance_text(c.solver.tolerance), c.solver.max_iterations),
                 "PM", "y^T y", "x^T A x");
    r.extra_name = "|lambda - lambda_PM|";
    r.extra_key = "eigenvalue_error";
    r.slack = 1.0;  // the same iteration count, the eigenvalue within tau
    return r;
  }

  // The first run is PM: the others' eigenvalue error is against its eigenvalue.
  static void add_run(AutoReport& r, const PowerConfig& c, const PowerRun& run, const std::string& label,
                      double tolerance) {
    const PowerResult& result = run.result;
    DotMixCounter yy(run.rungs), xy(run.rungs);
    for (std::size_t k = 0; k < result.history.size(); ++k) {
      if (k > 0) yy.add(result.history[k].yy);  // entry 0: the start, no y^T y
      xy.add(result.history[k].xy);
    }
    if (r.outcomes.empty()) r.reference_value = result.eigenvalue;
    const double error = std::fabs(result.eigenvalue - r.reference_value);
    r.add(label, result.status, result.status == SolverStatus::converged && error <= c.solver.tolerance,
          result.iterations, tolerance, yy.mix(), xy.mix(), error);
  }
};

using PowerCommand = SolverCommand<Power>;

}  // namespace

Command add_power(CLI::App& app) {
  auto c = std::make_shared<PowerCli>();
  add_solver_options(app, *c, me);
  app.add_option("--max-iter", c->max_iter, "Maximum number of iterations")->capture_default_str()->transform(whole_number());
  app.add_option("--storage", c->storage,
                 "Format of the stored iterate: binary64, binary32, bfloat16, binary16, block16, block8, or auto "
                 "(binary32, then binary64 where its rounding could show in lambda; docs/solvers.md); anything "
                 "but binary64 runs one fused pass per iteration: csr or stencil operator, one process; its dot "
                 "products are binary64 sums in the pass")
      ->capture_default_str();
  add_experiment_options(app, *c,
                         "auto: for each problem of a set (or the one of --problem/--matrix/--hdf5), PM, each tolerance "
                         "of --sweep-qdot-tol (default 1e-12:1e-3) and --qdot-tol auto: iterations, eigenvalue error, "
                         "share below binary64, modelled bytes (docs/solvers.md)");
  add_output_options(app, c->out, me);
  app.footer(R"(Estimates the largest eigenvalue. Problems: --problem laplacian (default: n = 10000, mean
degree 10, seed 1), --problem hpccg, --problem diffusion (k of --seed), --matrix A.mtx, or
--hdf5 in.h5 (/A, optional /x0).
Start vector: a random unit vector of --seed, or --x0 x0.mtx. The eigenvalue update is the
Rayleigh quotient x^T A x of the unit iterate (seed 002 prints a wrong formula; power.hpp).
Exit code: 0 converged; 1 not converged (maximum iterations or breakdown; for a sweep: the
double-precision run did not converge); 2 bad input (options, files), with a message on stderr.
)" + solver_footer());
  // every option checked before any work
  return [c] { return PowerCommand::run(make_power_config(*c)); };
}

}  // namespace ebla::cli

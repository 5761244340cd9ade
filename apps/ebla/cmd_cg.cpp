// ebla cg: conjugate gradients with exact, qdot or fixed-format dot products (seed 002,
// section 4.2, Algorithm 4.1), on HPCCG's problem, a shifted graph Laplacian, or a matrix
// from a Matrix Market or HDF5 file.
//
// One run prints a summary (or one JSON line) and with --output writes the parameters and
// every iteration's residual, alpha, beta and dot records to an HDF5 file. A sweep
// (--sweep-qdot-tol A:B) runs CG with exact dot products, then ACG at each tolerance
// A, 10 A, ..., B, and reports the largest tolerance that keeps CG's iteration count.
#include "cg_experiment.hpp"
#include "commands.hpp"
#include "distributed.hpp"
#include "solver_common.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dot_mix.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

constexpr Solver me = Solver::cg;

struct CgCli : SolverCli {
  std::string norm = "absolute", stop = "exact", storage = "binary64", pc = "none", pc_storage = "binary64";
  bool jacobi = false;
  double atol = 0;
  int pc_block_size = default_pc_block_size;
  CLI::Option* pc_block_size_option = nullptr;
  CLI::Option* pc_storage_option = nullptr;
};

struct CgConfig : SolverSetup {
  CgOptions solver;  // without the progress callback
};

// "bfloat16 12, binary32 3, binary64 1": block-Jacobi's blocks in each format it used.
std::string block_formats(const CgResult& r) {
  std::string out;
  for (Storage s : {Storage::bfloat16, Storage::binary32, Storage::binary64})
    if (const std::size_t k = r.pc_blocks_in[static_cast<int>(s)]; k > 0)
      out += (out.empty() ? "" : ", ") + std::string(to_string(s)) + " " + std::to_string(k);
  return out;
}

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

// --experiment preconditioners chooses the preconditioner, the dots and the storage of each
// run; only --pc-block-size (block-Jacobi's blocks) carries over.
void check_preconditioner_experiment(const CgCli& c) {
  const auto refuse = [](const std::string& option) {
    throw_invalid(option_name(me, option), "--experiment preconditioners runs every preconditioner with exact and with "
                                           "automatic dots and storage: drop " + option);
  };
  if (c.pc != "none") refuse("--pc");
  if (c.jacobi) refuse("--jacobi");
  if (c.storage != "binary64") refuse("--storage");
  if (c.pc_storage_option->count() > 0) refuse("--pc-storage");
  if (c.stop != "exact") refuse("--stop");
}

// The preconditioner of --pc, --jacobi (a synonym of --pc jacobi) and --pc-block-size.
void set_preconditioner(const CgCli& c, CgOptions& o) {
  const PcKind pc = pc_kind_by_name(c.pc, option_name(me, "--pc"));
  if (c.jacobi && pc != PcKind::none && pc != PcKind::jacobi)
    throw_invalid(option_name(me, "--jacobi"), "is --pc jacobi: give one of --jacobi and --pc " + c.pc);
  o.pc = c.jacobi ? PcKind::jacobi : pc;
  o.jacobi = o.pc == PcKind::jacobi;
  if (c.pc_block_size_option->count() > 0 && o.pc != PcKind::block_jacobi && c.experiment != "preconditioners")
    throw_invalid(option_name(me, "--pc-block-size"), "sizes the blocks of --pc block-jacobi, not of --pc " +
                                                          std::string(to_string(o.pc)));
  if (c.pc_block_size < 1)
    throw_invalid(option_name(me, "--pc-block-size"), std::to_string(c.pc_block_size) + " must be at least 1");
  o.pc_block_size = c.pc_block_size;
  o.pc_storage = block_storage_by_name(c.pc_storage, option_name(me, "--pc-storage"));
  if (c.pc_storage_option->count() > 0 && o.pc != PcKind::block_jacobi)
    throw_invalid(option_name(me, "--pc-storage"), "stores the blocks of --pc block-jacobi, not of --pc " +
                                                       std::string(to_string(o.pc)));
}

CgConfig make_config(const CgCli& c) {
  CgConfig cfg = cli::make_config<CgConfig>(c, me, 0);
  cfg.solver.norm = parse_norm(c.norm);
  cfg.solver.stop = parse_stop(c.stop);
  if (cfg.experiment_name == "preconditioners") check_preconditioner_experiment(c);
  set_preconditioner(c, cfg.solver);
  if (!(c.atol >= 0) || !std::isfinite(c.atol))
    throw_invalid(option_name(me, "--atol"), fmt::format("{:g} is not a nonnegative finite tolerance", c.atol));
  cfg.solver.absolute_tolerance = c.atol;
  cfg.solver.storage = storage_policy_by_name(c.storage, option_name(me, "--storage").c_str());
  if (cfg.solver.storage.narrow()) {
    if (cfg.solver.stop != StopTest::exact_norm)
      throw_invalid(option_name(me, "--storage " + c.storage), "needs --stop exact (its dot products ride in the passes)");
    if (c.out.levels)
      throw_invalid(option_name(me, "--storage " + c.storage), "computes its dot products in the passes: no --levels maps");
    if (from_matrix(cfg.solver.pc))
      throw_invalid(option_name(me, "--storage " + c.storage),
                    "preconditions with Jacobi only: --pc " + c.pc + " needs --storage binary64");
    cfg.problem.narrowest = true;  // a csr A in the words the passes read, without a binary64 copy
  }
  if (from_matrix(cfg.solver.pc) && cfg.problem.op == OperatorKind::dense)
    throw_invalid(option_name(me, "--pc " + c.pc), std::string(pc_title(cfg.solver.pc)) +
                                                       " needs the matrix: a csr or stencil operator, on one "
                                                       "process, not --operator dense");
  if (cfg.solver.pc != PcKind::none && cfg.solver.stop != StopTest::exact_norm)
    throw_invalid(option_name(me, "--stop " + c.stop),
                  std::string("needs r^T r, which preconditioned CG does not compute: drop --pc ") +
                      to_string(cfg.solver.pc) + " or use --stop exact");
  return cfg;
}

bool preconditioned(const CgConfig& c) { return c.solver.jacobi || c.solver.pc != PcKind::none; }

const char* rr_label(const CgConfig& c) { return preconditioned(c) ? "r^T z" : "r^T r"; }

// ", Jacobi preconditioner", or empty.
std::string pc_text(const CgOptions& o) {
  switch (o.jacobi ? PcKind::jacobi : o.pc) {
    case PcKind::none: return "";
    case PcKind::jacobi: return ", Jacobi preconditioner";
    case PcKind::block_jacobi:
      return ", block-Jacobi preconditioner (blocks of at most " + std::to_string(o.pc_block_size) + " rows" +
             (o.pc_storage.automatic || o.pc_storage.fixed != Storage::binary64
                  ? ", factors in " + to_string(o.pc_storage) + ")"
                  : std::string(")"));
    case PcKind::sgs: return ", multicolour symmetric Gauss-Seidel preconditioner";
    case PcKind::ic0: return ", IC(0) preconditioner";
  }
  return "";
}

// The --stop value of a stopping test.
const char* stop_name(StopTest s) { return s == StopTest::exact_norm ? "exact" : to_string(s); }

// What SolverCommand needs of CG (solver_common.hpp).
struct Cg : CommandBase<CgConfig, me> {
  static CgRun solve(const RunProblem& p, const CgConfig& c, const DotPolicy& policy, const std::string& label,
                     int every) {
    CgOptions o = c.solver;
    o.progress = [&](int k, double r) {
      if (progress_due(k, every)) spdlog::info("{}cg iteration {}: ||r|| = {:.3e}", label, k, r);
    };
    CgResult result =
        std::visit([&](const auto& A) { return solve_cg(A, p.b, p.x0, policy, o, c.dots.collectives); }, p.op);
    gather_levels(result, o.record_levels, &CgIteration::rr_levels, &CgIteration::pq_levels);  // to rank 0
    CgRun run = record_run(policy, std::move(result));
    // every rank takes part in the max, also one that owns no rows (its x_exact is empty)
    if (!p.x_exact_source.empty()) run.max_error = global_max(max_difference(run.result.x, p.x_exact));
    return run;
  }

  static void print_result(const ProblemData& p, const CgConfig& c, const CgRun& run) {
    const CgResult& r = run.result;
    std::printf("status              %s\n", status_text(r).c_str());
    std::printf("recursive residual  %.3e  (initial %.3e, tau %.3e)\n", r.recursive_residual, r.initial_residual,
                r.tolerance_used);
    std::printf("true residual       %.3e  (||b - A x|| in double-double)\n", r.true_residual);
    if (p.x_exact_source == "1")
      std::printf("max |x - 1|         %.3e  (b = A 1: the solution is ones)\n", run.max_error);
    else if (!p.x_exact_source.empty())
      std::printf("max |x - x*|        %.3e  (b = A x*, x* = %s)\n", run.max_error, p.x_exact_source.c_str());
    std::printf("time                %.3g s (dot products %.3g s)\n", r.seconds, run.dot_seconds);
    if (r.pc == "sgs")
      std::printf("preconditioner      sgs: %zu colours, %.0f bytes\n", r.pc_colours, r.pc_bytes);
    else if (r.pc == "ic0")
      std::printf("preconditioner      ic0: shift %s (%d restart%s), %zu levels, %.0f bytes\n",
                  r.pc_shift == 0 ? "0" : fmt::format("{:g} diag(A)", r.pc_shift).c_str(), r.pc_restarts,
                  r.pc_restarts == 1 ? "" : "s", r.pc_levels, r.pc_bytes);
    else if (r.pc == "block-jacobi" && r.pc_bytes != r.pc_binary64_bytes)
      std::printf("preconditioner      %s: %zu blocks (%s), %.0f bytes (binary64: %.0f), d = %.2e\n", r.pc.c_str(),
                  r.pc_blocks, block_formats(r).c_str(), r.pc_bytes, r.pc_binary64_bytes, r.pc_delta);
    else if (r.pc != "none")
      std::printf("preconditioner      %s: %zu blocks, %.0f bytes\n", r.pc.c_str(), r.pc_blocks, r.pc_bytes);
    if (r.storage != "binary64" && r.iterations > 0)
      std::printf("storage             %s: %d residual replacements, %.1f bytes per row and iteration (model), %.1f GB/s\n",
                  r.storage.c_str(), r.replacements, r.bytes_moved / r.iterations / static_cast<double>(p.n),
                  r.iteration_seconds > 0 ? r.bytes_moved / r.iteration_seconds * 1e-9 : 0.0);
    print_events(r.events);
    if (r.history.empty()) return;
    std::printf("precision mix, mean over iterations (%% of components):\n");
    print_mix(run.rungs, {{rr_label(c), &run.rr}, {"p^T q", &run.pq}});
  }

  static void print_problem(const ProblemData& p, const CgConfig& c) {
    const CgOptions& o = c.solver;
    std::printf("ebla cg: %s\n", p.description.c_str());
    std::printf("  n = %zu, nnz = %zu, operator %s, b = %s, x0 = %s\n", p.n, p.nnz, p.operator_name.c_str(),
                p.b_source.c_str(), p.x0_source.c_str());
    std::printf("  stopping rule: %s <= %s (%s%s), %s, at most %d iterations%s\n",
                o.stop == StopTest::exact_norm ? "||r||" : o.stop == StopTest::certified ? "sqrt(c + bound(c))" : "sqrt(c)",
                tolerance_text(o.tolerance).c_str(), o.norm == Norm::absolute ? "absolute" : "relative to ||b||",
                o.absolute_tolerance > 0 ? fmt::format(", at least {}", tolerance_text(o.absolute_tolerance)).c_str() : "",
                o.stop == StopTest::exact_norm  ? "exact norm"
                : o.stop == StopTest::certified ? "certified qdot bound"
                                                : "approximate c_k as in Algorithm 4.1 (not certified)",
                o.max_iterations, pc_text(o).c_str());
  }

  static void add_settings(Json& j, const ProblemData& p, const CgConfig& c) {
    j["b"] = p.b_source;
    j["x0"] = p.x0_source;
    j["tolerance"] = c.solver.tolerance;
    j["norm"] = to_string(c.solver.norm);
    j["atol"] = c.solver.absolute_tolerance;
    j["stop"] = stop_name(c.solver.stop);
    j["max_iterations"] = c.solver.max_iterations;
    j["jacobi"] = c.solver.jacobi;
    j["pc"] = to_string(c.solver.jacobi ? PcKind::jacobi : c.solver.pc);
    if (c.solver.pc == PcKind::block_jacobi) {
      j["pc_block_size"] = c.solver.pc_block_size;
      j["pc_storage"] = to_string(c.solver.pc_storage);
    }
    j["storage"] = to_string(c.solver.storage);
  }

  static void print_reference(const QdotSweep<CgRun>& s) {
    std::printf("exact CG: %s, true residual %.3e\n\n", status_text(s.reference.result).c_str(),
                s.reference.result.true_residual);
  }

  static std::vector<std::string> columns() { return {"tolerance", "iterations", "status", "true residual"}; }
  static std::vector<std::string> prefixes(const CgConfig& c) { return {preconditioned(c) ? "rz" : "rr", "pq"}; }

  static std::vector<std::string> cells(const QdotSweep<CgRun>& s, std::size_t i) {
    const CgResult& r = s.runs[i].result;
    return {tolerance_text(s.tolerances[i]), std::to_string(r.iterations), to_string(r.status),
            fmt::format("{:.3e}", r.true_residual)};
  }

  static void print_largest(const CgConfig&, const QdotSweep<CgRun>& s) {
    std::printf("\nlargest tolerance with the iteration count of exact CG: %s%s\n", largest_text(s.largest_same).c_str(),
                s.reference.result.status == SolverStatus::converged ? "" : " (exact CG itself did not converge)");
  }

  static void add_line(Json&, const CgConfig&, const QdotSweep<CgRun>&, std::size_t) {}

  // After the iterations: each run's status.
  static void add_summary(Json& j, const CgConfig&, const QdotSweep<CgRun>& s, SummaryPart part) {
    if (part != SummaryPart::runs) return;
    std::vector<std::string> statuses;
    for (const CgRun& run : s.runs) statuses.push_back(to_string(run.result.status));
    j["statuses"] = statuses;
  }

  static void write_sweep(const Hdf5Group& root, const ProblemData& p, const CgConfig& c, const QdotSweep<CgRun>& s) {
    ebla::write_sweep(root, s, c.dots.qdot_policy, c.dots.rungs, p.n, c.out.levels);
  }

  static AutoReport report(const std::string& name, const ProblemData& p, const CgConfig& c) {
    return AutoReport(name, p.description,
                      fmt::format("||r|| <= {}{}{}", tolerance_text(c.solver.tolerance),
                           c.solver.norm == Norm::relative ? " ||b||" : "",
                           pc_text(c.solver)),
                      "exact CG", rr_label(c), "p^T q");
  }

  static void add_run(AutoReport& r, const CgConfig&, const CgRun& run, const std::string& label, double tolerance) {
    DotMixCounter rr(run.rungs), pq(run.rungs);  // the share below binary64, the bytes (dot_mix.hpp)
    for (const CgIteration& it : run.result.history) {
      rr.add(it.rr);
      pq.add(it.pq);
    }
    r.add(label, run.result.status, run.result.status == SolverStatus::converged, run.result.iterations, tolerance,
          rr.mix(), pq.mix());
  }
};

}  // namespace

Command add_cg(CLI::App& app) {
  auto c = std::make_shared<CgCli>();
  add_solver_options(app, *c, me);
  app.add_option("--norm", c->norm, "absolute: ||r|| <= tau; relative: ||r|| <= tau ||b||")->capture_default_str();
  app.add_option("--atol", c->atol,
                 "A floor under tau: ||r|| <= max(tau [times ||b|| with --norm relative], atol), as SciPy's "
                 "rtol and atol")
      ->capture_default_str();
  app.add_option("--stop", c->stop,
                 "exact: ||r|| from a double dot product (the same rule as exact CG); certified: "
                 "qdot(r, r) + its bound <= tau^2; approximate: sqrt(qdot(r, r)) <= tau as the seed's "
                 "Algorithm 4.1 (reproduction only: guarantees nothing)")
      ->capture_default_str();
  app.add_option("--max-iter", c->max_iter, "Maximum number of iterations")->capture_default_str()->transform(whole_number());
  app.add_option("--pc", c->pc,
                 "Preconditioner: none, jacobi (diag(A)^-1), block-jacobi (blockdiag(A)^-1, blocks found from "
                 "A's sparsity pattern, each factorised by Cholesky), sgs (symmetric Gauss-Seidel, rows in a "
                 "greedy multicolour order) or ic0 (incomplete Cholesky with zero fill, diagonal shifts where a "
                 "pivot fails); the last three: csr or stencil operator, one process, --storage binary64; "
                 "docs/solvers.md)")
      ->capture_default_str();
  c->pc_block_size_option =
      app.add_option("--pc-block-size", c->pc_block_size, "--pc block-jacobi: the largest block, in rows")
          ->capture_default_str();
  c->pc_storage_option =
      app.add_option("--pc-storage", c->pc_storage,
                     "--pc block-jacobi: the format of each block's Cholesky factor: binary64, binary32, bfloat16, "
                     "or auto (each block in the narrowest that keeps kappa(M^-1 A) within 1/16 of binary64's; "
                     "docs/solvers.md)")
          ->capture_default_str();
  app.add_flag("--jacobi", c->jacobi, "Precondition with diag(A)^-1 (the same as --pc jacobi)");
  app.add_option("--storage", c->storage,
                 "Format of the Krylov vectors p, q = A p and r: binary64, binary32, bfloat16, binary16, block16, "
                 "block8 (16/8-bit integers, one exponent per 32 values), or auto (the rule of docs/solvers.md); "
                 "narrow storage: csr or stencil operator, one process, --stop exact; the dot products ride in "
                 "the passes in binary64")
      ->capture_default_str();
  add_experiment_options(app, *c,
                         "auto: for each problem of a set (or the one of --problem/--matrix/--hdf5), exact CG, each "
                         "tolerance of --sweep-qdot-tol (default 1e-12:1e-3) and --qdot-tol auto: iterations, share "
                         "below binary64, modelled bytes; preconditioners: for each problem of a set (or the one "
                         "given), every --pc with exact and with automatic dots and storage: iterations, time, "
                         "modelled bytes, true residual (docs/solvers.md)");
  add_output_options(app, c->out, me);
  app.footer(R"(Solves A x = b. Problems: --problem hpccg (default, 20 x 20 x 20; b = A 1, x0 = 0), --problem
diffusion (-div(k grad u) by 7-point finite volumes on the same grid, k of --seed spanning
1e-3..1e3, Dirichlet boundary; b = A 1, x0 = 0; docs/solvers.md), --problem laplacian --shift s
(L + s I, L the graph Laplacian; b = A x*, x* = sqrt(n) times the random unit vector of
--seed, since A 1 = s 1 would be an eigenvector), --matrix A.mtx [--rhs b.mtx]
[--x0 x0.mtx], or --hdf5 in.h5 (/A, optional /b, /x0). Without --rhs (or /b), b = A 1, so the
exact solution is the vector of ones and max |x - 1| is reported. A matrix from a file must
be symmetric (checked unless --no-symmetry-check).
Exit code: 0 converged (the true residual, computed in double-double, within tau); 1 not
converged (maximum iterations, breakdown, or a true residual above tau: status unconfirmed;
for a sweep: exact CG did not converge); 2 bad input (options, files), with a message on
stderr.
)" + solver_footer());
  // every option checked before any work
  return [c] {
    const CgConfig config = make_config(*c);
    if (config.experiment_name != "preconditioners") return SolverCommand<Cg>::run(config);
    KokkosSession kokkos;
    return with_output(config, me, [&](Hdf5Writer* out) { return run_preconditioner_experiment(config, config.solver, out); });
  };
}

}  // namespace ebla::cli

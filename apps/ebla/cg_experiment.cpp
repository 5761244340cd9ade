// ebla cg --experiment preconditioners (see cg_experiment.hpp).
#include "cg_experiment.hpp"

#include "distributed.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/auto_study.hpp>
#include <ebla/solvers/storage_rule.hpp>

#include <cstdio>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace ebla::cli {

namespace {

constexpr Solver me = Solver::cg;

// The SuiteSparse matrices of data/matrices (data/README.md cites each), then HPCCG's and
// the diffusion problem's default grids.
constexpr const char* set_matrices[] = {"LFAT5",   "bcsstk01", "bcsstk02", "nos4",     "494_bus", "662_bus",
                                        "gr_30_30", "nos3",    "1138_bus", "mesh2e1", "bcsstk16", "bcsstk13"};

struct Case {
  std::string name;
  ProblemSpec spec;
};

std::vector<Case> experiment_cases(const SolverSetup& c) {
  if (c.problem_given) return {{"", c.problem}};
  ProblemSpec blank;
  blank.name_field = c.problem.name_field;
  std::vector<Case> cases;
  for (const char* name : set_matrices) {
    ProblemSpec m = blank;
    m.source = ProblemSource::matrix;
    m.matrix = auto_set_matrix(c.matrix_dir, name, option_name(me, "--matrix-dir"));
    cases.push_back({std::string(name), m});
  }
  cases.push_back({"HPCCG 20^3", blank});
  ProblemSpec diffusion = blank;
  diffusion.source = ProblemSource::diffusion;
  cases.push_back({"diffusion 20^3", diffusion});
  return cases;
}

// One run of the table: which preconditioner, exact or automatic, and its outcome.
struct PcRun {
  PcKind pc = PcKind::none;
  bool automatic = false;
  CgRun run;
  double bytes_per_iteration = 0;
};

// exact: binary64 dot products and storage. automatic: --qdot-tol auto, and the narrow
// storage that preconditioner admits: --storage auto for none and Jacobi (the fused stored
// passes), --pc-storage auto for block-Jacobi's factors; SGS and IC(0) keep binary64.
CgOptions run_options(const CgOptions& base, PcKind pc, bool automatic) {
  CgOptions o = base;
  o.pc = pc;
  o.jacobi = pc == PcKind::jacobi;
  o.storage = StoragePolicy();
  o.pc_storage = BlockStorage();
  if (automatic && !from_matrix(pc)) o.storage = storage_policy_by_name("auto");
  if (automatic && pc == PcKind::block_jacobi) o.pc_storage = block_storage_by_name("auto", "ebla cg --experiment");
  return o;
}

// The modelled bytes one iteration of a run moves: the stored solve's own count where the
// Krylov vectors are narrow, else binary64 CG's (docs/solvers.md, "Preconditioners
// compared"): a CSR pass over A (12 bytes per nonzero, 8 per row offset; none for the
// stencil), 104 bytes per row for CG's vectors, 16 more with Jacobi (D^-1 read in two
// passes), and with a preconditioner built from A the bytes it stores plus 8 per row for z
// in CG's passes and 16 (one pass: block-Jacobi) or 32 (two sweeps: SGS, IC(0)) per row
// for its own vectors.
double modelled_bytes_per_iteration(const CgResult& r, std::size_t n, std::size_t nnz, bool csr) {
  if (r.iterations == 0) return 0;
  if (r.storage != "binary64") return r.bytes_moved / r.iterations;  // the stored solve's own count
  const double rows = static_cast<double>(n);
  const double matrix = csr ? 12.0 * static_cast<double>(nnz) + 8.0 * (rows + 1) : 0.0;
  if (r.pc == "none") return matrix + 104 * rows;
  if (r.pc == "jacobi") return matrix + 120 * rows;
  const double own = r.pc == "block-jacobi" ? 16 * rows : 32 * rows;  // one pass, or two sweeps
  return matrix + 112 * rows + r.pc_bytes + own;
}

PcRun solve(const RunProblem& p, const CgOptions& o, const DotPolicy& dots, PcKind pc, bool automatic) {
  PcRun r;
  r.pc = pc;
  r.automatic = automatic;
  CgResult result = std::visit([&](const auto& A) { return solve_cg(A, p.b, p.x0, dots, o, 1); }, p.op);
  r.bytes_per_iteration = modelled_bytes_per_iteration(result, p.n, p.nnz, p.operator_name == "csr");
  r.run = record_run(dots, std::move(result));
  return r;
}

// "12 colours", "shift 0.256 (9 restarts), 577 levels", "64 blocks, 27% of binary64's bytes".
std::string pc_note(const CgResult& r) {
  if (r.pc == "sgs") return fmt::format("{} colours", r.pc_colours);
  if (r.pc == "ic0")
    return fmt::format("shift {:g} ({} restarts), {} levels", r.pc_shift, r.pc_restarts, r.pc_levels);
  if (r.pc == "block-jacobi" && r.pc_binary64_bytes > 0 && r.pc_bytes != r.pc_binary64_bytes)
    return fmt::format("{} blocks, {:.0f}% of binary64's bytes", r.pc_blocks, 100 * r.pc_bytes / r.pc_binary64_bytes);
  if (r.pc == "block-jacobi") return fmt::format("{} blocks", r.pc_blocks);
  if (r.storage != "binary64") return fmt::format("{} replacements", r.replacements);
  return "";
}

std::string iterations_text(const CgResult& r) {
  return r.status == SolverStatus::converged ? std::to_string(r.iterations)
                                             : fmt::format("{} ({})", r.iterations, to_string(r.status));
}

double relative_true_residual(const CgResult& r) { return r.b_norm > 0 ? r.true_residual / r.b_norm : r.true_residual; }

Json run_json(const std::string& problem, const ProblemData& p, const PcRun& r) {
  const CgResult& x = r.run.result;
  Json j;
  j["command"] = solver_name(me);
  j["experiment"] = "preconditioners";
  j["problem"] = problem;
  j["n"] = p.n;
  j["nnz"] = p.nnz;
  j["pc"] = to_string(r.pc);
  j["dots"] = r.automatic ? "auto" : "exact";
  j["storage"] = x.storage;
  j["iterations"] = x.iterations;
  j["status"] = to_string(x.status);
  j["true_residual"] = x.true_residual;
  j["relative_true_residual"] = relative_true_residual(x);
  j["seconds"] = x.seconds;
  j["iteration_seconds"] = x.iteration_seconds;
  j["bytes_per_iteration"] = r.bytes_per_iteration;
  j["pc_bytes"] = x.pc_bytes;
  if (r.pc == PcKind::block_jacobi) {
    j["pc_blocks"] = x.pc_blocks;
    j["pc_binary64_bytes"] = x.pc_binary64_bytes;
  }
  if (r.pc == PcKind::sgs) j["pc_colours"] = x.pc_colours;
  if (r.pc == PcKind::ic0) {
    j["pc_shift"] = x.pc_shift;
    j["pc_restarts"] = x.pc_restarts;
    j["pc_levels"] = x.pc_levels;
  }
  j["replacements"] = x.replacements;
  return j;
}

// A row per preconditioner: its exact run and its automatic run side by side.
void print_problem_table(const std::string& name, const ProblemData& p, const std::vector<PcRun>& runs) {
  std::printf("%s: %s\n  n = %zu, nnz = %zu\n", name.c_str(), p.description.c_str(), p.n, p.nnz);
  Table t({"pc", "iterations", "seconds", "MB/iteration", "iterations", "seconds", "MB/iteration", "storage",
           "true residual", "note"},
          {{"", 1}, {"exact", 3}, {"auto", 6}});
  for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
    const CgResult& e = runs[i].run.result;
    const CgResult& a = runs[i + 1].run.result;
    t.add({to_string(runs[i].pc), iterations_text(e), fmt::format("{:.3g}", e.seconds),
           fmt::format("{:.3g}", 1e-6 * runs[i].bytes_per_iteration), iterations_text(a), fmt::format("{:.3g}", a.seconds),
           fmt::format("{:.3g}", 1e-6 * runs[i + 1].bytes_per_iteration), a.storage,
           fmt::format("{:.2e}", relative_true_residual(a)), pc_note(a)});
  }
  t.print("  ");
  std::printf("\n");
}

void write_runs(const Hdf5Group& g, const std::string& name, const ProblemData& p, const std::vector<PcRun>& runs) {
  write_problem_attributes(g, p, me);
  g.attribute("name", name);
  for (const PcRun& r : runs) {
    std::string group = to_string(r.pc);
    for (char& ch : group)
      if (ch == '-') ch = '_';
    write_run(g.group(group + (r.automatic ? "_auto" : "_exact")), r.run, p.n, false);
  }
}

}  // namespace

int run_preconditioner_experiment(const SolverSetup& c, const CgOptions& base, Hdf5Writer* out) {
  if (processes().ranks > 1) throw_invalid(option_name(me, "--experiment"), "runs on one process");
  const std::vector<Case> cases = experiment_cases(c);
  const PcKind kinds[] = {PcKind::none, PcKind::jacobi, PcKind::block_jacobi, PcKind::sgs, PcKind::ic0};
  const std::size_t total = cases.size() * 2 * std::size(kinds);
  const experiments::Progress progress =
      c.out.progress > 0 ? progress_each(option_name(me, "") + ": experiment preconditioners") : nullptr;
  const DotPolicy automatic = c.dots.automatic(ProblemUse::cg);
  if (!c.out.json)
    std::printf("ebla cg --experiment preconditioners: %s, each preconditioner with exact dot products and binary64 "
                "storage, and with --qdot-tol auto (and --storage auto for none and jacobi, --pc-storage auto for "
                "block-jacobi); MB/iteration: modelled; true residual: ||b - A x|| / ||b|| of the auto run\n\n",
                fmt::format("||r|| <= {}{}, at most {} iterations", tolerance_text(base.tolerance),
                            base.norm == Norm::relative ? " ||b||" : "", base.max_iterations)
                    .c_str());
  std::size_t done = 0, failed = 0;
  std::vector<std::string> groups;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const RunProblem p = load_serial_problem(cases[i].spec, me);
    ProblemSpec narrow_spec = cases[i].spec;
    narrow_spec.narrowest = true;  // the stored passes read A in its narrowest exact words
    const RunProblem narrow = load_serial_problem(narrow_spec, me);
    const std::string name = cases[i].name.empty() ? p.name : cases[i].name;
    std::vector<PcRun> runs;
    for (PcKind pc : kinds)
      for (bool a : {false, true}) {
        const CgOptions o = run_options(base, pc, a);
        runs.push_back(solve(o.storage.narrow() ? narrow : p, o, a ? automatic : DotPolicy::exact(), pc, a));
        failed += runs.back().run.result.status == SolverStatus::converged ? 0 : 1;
        experiments::report(progress, ++done, total, name + ": " + to_string(pc) + (a ? " auto" : " exact"));
      }
    if (c.out.json)
      for (const PcRun& r : runs) print_json(run_json(name, p, r));
    else
      print_problem_table(name, p, runs);
    if (out != nullptr) {
      groups.push_back("problem_" + std::to_string(i));
      write_runs(out->root().group(groups.back()), name, p, runs);
    }
  }
  if (out != nullptr)
    out->root().attribute("mode", "experiment_preconditioners").attribute("groups", join_names(groups));
  if (!c.out.json)
    std::printf("%zu of %zu runs converged (true residual within tau)\n", total - failed, total);
  return failed == 0 ? exit_converged : exit_not_converged;
}

}  // namespace ebla::cli

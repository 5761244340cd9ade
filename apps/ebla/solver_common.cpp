// What `ebla cg` and `ebla power` share (see solver_common.hpp).
#include "solver_common.hpp"

#include "commands.hpp"
#include "distributed.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

namespace ebla::cli {

// ---- text ---------------------------------------------------------------------------

std::string join_names(const std::vector<std::string>& names, const char* separator) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? separator : "") + names[i];
  return s;
}

// ---- options ------------------------------------------------------------------------

const char* solver_name(Solver s) { return s == Solver::cg ? "cg" : "power"; }
const char* reference_name(Solver s) { return s == Solver::cg ? "exact CG" : "PM"; }

std::string solver_footer() {
  return "Output formats: docs/solver-output.md. Figures: apps/plot_solvers.py.\n"
         "Built with MPI and started by mpirun -np P: distributed over the P ranks, --nx/--ny/--nz\n"
         "being one rank's block of HPCCG (global grid nx x ny x P nz); rank 0 prints and writes\n"
         "(docs/mpi.md).";
}

std::string option_name(Solver s, const std::string& option) {
  return std::string("ebla ") + solver_name(s) + (option.empty() ? "" : " " + option);
}

namespace {

void add_problem_options(CLI::App& app, ProblemCli& p, Solver s) {
  const bool cg = s == Solver::cg;
  p.given = given_among(p.registered);
  p.name = [s](const std::string& option) { return option_name(s, option); };
  if (!cg) p.n = "10000";
  auto& r = p.registered;
  r.push_back(app.add_option("--problem", p.problem,
                             cg ? "hpccg (default), diffusion (7-point, k_i spanning 1e-3..1e3; --jacobi helps) or "
                                  "laplacian (needs --shift)"
                                : "laplacian (default), hpccg or diffusion (7-point, k_i spanning 1e-3..1e3)"));
  r.push_back(app.add_option("--nx", p.nx, "hpccg, diffusion: grid size in x")
                  ->capture_default_str()->transform(whole_number()));
  r.push_back(app.add_option("--ny", p.ny, "hpccg, diffusion: grid size in y")
                  ->capture_default_str()->transform(whole_number()));
  r.push_back(app.add_option("--nz", p.nz, "hpccg, diffusion: grid size in z")
                  ->capture_default_str()->transform(whole_number()));
  r.push_back(app.add_option("--n", p.n, "laplacian: number of vertices (1e4 is accepted)")->capture_default_str());
  r.push_back(
      app.add_option("--degree", p.degree, "laplacian: mean degree of the random graph")->capture_default_str());
  r.push_back(app.add_option("--seed", p.seed, cg ? "seed of the graph (laplacian) or of k (diffusion)"
                                                  : "seed of the graph (laplacian) or of k (diffusion), and of the start "
                                                    "vector")
                  ->capture_default_str()->check(seed_range()));
  r.push_back(app.add_option("--shift", p.shift,
                             cg ? "laplacian: solve (L + s I) x = b; required (s > 0), L alone is singular"
                                : "laplacian: use L + s I"));
  r.push_back(app.add_option("--matrix", p.matrix, "Matrix Market file of A (coordinate real general or symmetric)"));
  if (cg)
    r.push_back(app.add_option("--rhs", p.rhs, "Matrix Market vector b (default A 1: the exact solution is ones)"));
  r.push_back(app.add_option("--x0", p.x0, cg ? "Matrix Market start vector (default 0)"
                                              : "Matrix Market start vector (default: random unit vector of --seed)"));
  r.push_back(app.add_option("--hdf5", p.hdf5, "HDF5 file with /A (CSR), optional /b and /x0 (docs/solver-output.md)"));
  r.push_back(app.add_flag("--no-symmetry-check", p.no_symmetry_check,
                           "Do not check that a matrix read from a file is symmetric (large files)"));
  r.push_back(app.add_option("--operator", p.op, "csr, stencil (hpccg only, matrix-free) or dense (n <= 5000)")
                  ->capture_default_str());
}

void add_dot_options(CLI::App& app, DotCli& d, Solver s) {
  d.given = given_among(d.registered);
  d.name = [s](const std::string& option) { return option_name(s, option); };
  auto& r = d.registered;
  r.push_back(app.add_option("--dot", d.dot, "exact (default), qdot or fixed"));
  r.push_back(app.add_option("--qdot-tol", d.qdot_tol,
                             "qdot tolerance, or auto: the solver chooses each one from what the iteration "
                             "needs (docs/solvers.md) (implies --dot qdot; default 1e-8)"));
  r.push_back(app.add_option("--qdot-policy", d.qdot_policy, "qdot selection policy: budget or paper")
                  ->capture_default_str());
  r.push_back(app.add_option("--ladder", d.ladder,
                             "qdot ladder, e.g. binary64,binary32,binary16,perforate (separated by ',' or ';'; "
                             "custom formats too: binary64;custom:t=8,emin=-6,emax=7)"));
  r.push_back(app.add_option("--format", d.format, "format of every factor (implies --dot fixed), e.g. bfloat16"));
  r.push_back(app.add_option("--sweep-qdot-tol", d.sweep,
                             "A:B (powers of ten): a run with exact dots, then one with qdot per tolerance "
                             "A, 10 A, ..., B"));
  r.push_back(app.add_option("--qdot-margin", d.margin,
                             "qdot: try the last plan widened by up to M bins (0..64; default 8 for cg on "
                             "one process with --qdot-tol X, else 0): one pass over the vectors where it computes every bin "
                             "at least as precisely as the new plan asks (certified all the same); 0: values "
                             "those of select-then-compute bit for bit (docs/qdot.md)"));
  r.push_back(app.add_option("--qdot-collectives", d.collectives,
                             "Under mpirun: 1 (one MPI_Allreduce per qdot, the default) or 2 (selection, "
                             "then computation: less local work)"));
}

}  // namespace

void add_solver_options(CLI::App& app, SolverCli& c, Solver s) {
  add_problem_options(app, c.problem, s);
  add_dot_options(app, c.dots, s);
  if (s == Solver::power) {
    c.tol = 1e-6;
    c.max_iter = 300;
  }
  app.add_option("--tol", c.tol, s == Solver::cg ? "CG tolerance tau on ||r||" : "Tolerance tau on |lambda_k - lambda_(k-1)|")
      ->capture_default_str();
  app.add_option("--repeat", c.repeat,
                 "Solve N times in this process and report the last solve with every solve's seconds (a "
                 "benchmark's repetitions: the solves after the first run warm, as a library's caller's do)")
      ->capture_default_str();
}

void add_experiment_options(CLI::App& app, SolverCli& c, const std::string& experiment_help) {
  app.add_option("--experiment", c.experiment, experiment_help);
  app.add_option("--matrix-dir", c.matrix_dir,
                 "--experiment auto: where the set's matrices are (default: share/ebla/matrices beside the "
                 "program, installed or in its build tree, else data/matrices in the current directory)");
}

void add_output_options(CLI::App& app, OutputCli& o, Solver s) {
  o.progress_option = app.add_option("--progress", o.progress,
                                     "A progress line on stderr every K iterations, and with --experiment one per run (0: none)")
                          ->capture_default_str();
  app.add_flag("--json", o.json, "One line of JSON instead of text (a sweep: one per run and a summary)");
  app.add_option("--output,-o", o.output, "Write parameters and per-iteration series to this HDF5 file")->check(output_file());
  app.add_flag("--levels", o.levels,
               s == Solver::cg ? "With --output: the rung of every component of r^T r and p^T q per iteration"
                               : "With --output: the rung of every component of y^T y and x^T y per iteration");
}

// ---- checks ---------------------------------------------------------------------------

namespace {

void check_output(const OutputCli& o, Solver s) {
  if (o.progress < 0) throw_invalid(option_name(s, "--progress"), std::to_string(o.progress) + " is negative");
  if (o.levels && o.output.empty())
    throw_invalid(option_name(s, "--levels"), "the maps are written to the HDF5 file: give --output FILE");
}

}  // namespace

std::string default_matrix_dir(const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  const fs::path beside = ec ? fs::path() : (program.parent_path() / EBLA_MATRIX_DIR_FROM_BIN).lexically_normal();
  const fs::path here = fs::path("data") / "matrices";
  for (const fs::path& dir : {beside, here})
    if (!dir.empty() && fs::is_regular_file(dir / "1138_bus.mtx", ec)) return dir.string();
  throw_invalid(option, "the matrices of the set are neither in '" + beside.string() + "' (beside the program) nor in '" +
                            here.string() + "' (from a clone's root): give --matrix-dir DIR");
}

SolverSetup make_setup(const SolverCli& c, Solver s) {
  SolverSetup setup;
  setup.problem = make_problem_spec(c.problem, use_of(s));
  setup.experiment = !c.experiment.empty();
  setup.matrix_dir = c.matrix_dir;
  if (setup.experiment && setup.matrix_dir.empty()) setup.matrix_dir = default_matrix_dir(option_name(s, "--matrix-dir"));
  if (setup.experiment) {  // auto on the problem of the options, if one was given, else on the set
    const bool known = c.experiment == "auto" || (s == Solver::cg && c.experiment == "preconditioners");
    if (!known)
      throw_invalid(option_name(s, "--experiment"), "unknown experiment '" + c.experiment + "' (known: auto" +
                                                        (s == Solver::cg ? ", preconditioners)" : ")"));
    setup.experiment_name = c.experiment;
    setup.dots = experiment_dot_spec(c.dots);
    if (c.out.levels) throw_invalid(option_name(s, "--levels"), "is not recorded by --experiment " + c.experiment);
    setup.problem_given = c.problem.was_given("problem") || c.problem.was_given("matrix") || c.problem.was_given("hdf5");
  } else {
    setup.dots = make_dot_spec(c.dots, use_of(s));
  }
  check_output(c.out, s);
  if (c.repeat < 1) throw_invalid(option_name(s, "--repeat"), std::to_string(c.repeat) + " must be at least 1");
  if (c.repeat > 1 && (setup.experiment || !setup.dots.sweep.empty()))
    throw_invalid(option_name(s, "--repeat"), "repeats a single run, not " +
                                                  (setup.experiment ? "--experiment " + c.experiment : std::string("a sweep")));
  setup.repeat = c.repeat;
  setup.out = c.out;
  setup.progress_given = c.out.progress_option->count() > 0;
  return setup;
}

void check_tolerance(double tol, Solver s) {
  if (!(tol > 0) || !std::isfinite(tol))
    throw_invalid(option_name(s, "--tol"), fmt::format("{:g} is not a positive finite tolerance", tol));
}

// ---- the problem --------------------------------------------------------------------

AutoSetNames auto_set_names(const SolverSetup& c, Solver s) {
  return {c.problem.name_field, option_name(s, "--matrix-dir")};
}

ProblemUse use_of(Solver s) { return s == Solver::cg ? ProblemUse::cg : ProblemUse::power; }

RunProblem load_serial_problem(const ProblemSpec& spec, Solver s) {
  Problem p = load_problem(spec, use_of(s));
  for (const std::string& w : p.warnings) spdlog::warn("{}", w);
  RunProblem r;
  r.op = std::visit([](const auto& A) { return AnyOperator(A); }, p.op);
  static_cast<ProblemData&>(r) = std::move(p);
  return r;
}

RunProblem load_run_problem(const ProblemSpec& spec, Solver s) {
  return processes().ranks > 1 ? load_distributed_problem(spec, s) : load_serial_problem(spec, s);
}

int with_output(const SolverSetup& c, Solver s, const std::function<int(Hdf5Writer*)>& work) {
  // Created (and so checked) before the work, committed after it: a bad path fails at
  // once, and a failure half-way leaves no file.
  std::unique_ptr<Hdf5Writer> out;
  if (!c.out.output.empty() && processes().rank == 0)  // rank 0 writes; never over an input
    out = under_option(option_name(s, "--output"),
                       [&] { return std::make_unique<Hdf5Writer>(c.out.output, c.problem.inputs()); });
  DotChoice names;
  names.name = [s](const std::string& option) { return option_name(s, option); };
  check_dot_spec(c.dots, names, processes().ranks);
  const int code = work(out.get());
  if (out) {
    out->commit();
    if (!c.out.json) std::printf("wrote %s\n", c.out.output.c_str());
  }
  return code;
}

}  // namespace ebla::cli

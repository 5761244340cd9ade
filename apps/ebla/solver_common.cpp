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

bool any_given(const std::vector<const CLI::Option*>& options, const std::string& long_name) {
  for (const CLI::Option* o : options)
    if (o->check_lname(long_name)) return o->count() > 0;
  return false;
}

void add_problem_options(CLI::App& app, ProblemCli& p, Solver s) {
  const bool cg = s == Solver::cg;
  if (!cg) p.n = "10000";
  auto& r = p.registered;
  r.push_back(app.add_option("--problem", p.problem,
                             cg ? "hpccg (default) or laplacian (needs --shift)" : "laplacian (default) or hpccg"));
  r.push_back(app.add_option("--nx", p.nx, "hpccg grid size in x")->capture_default_str());
  r.push_back(app.add_option("--ny", p.ny, "hpccg grid size in y")->capture_default_str());
  r.push_back(app.add_option("--nz", p.nz, "hpccg grid size in z")->capture_default_str());
  r.push_back(app.add_option("--n", p.n, "laplacian: number of vertices (1e4 is accepted)")->capture_default_str());
  r.push_back(
      app.add_option("--degree", p.degree, "laplacian: mean degree of the random graph")->capture_default_str());
  r.push_back(app.add_option("--seed", p.seed, cg ? "laplacian: seed of the graph"
                                                  : "seed of the graph (laplacian) and of the start vector")
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

void add_dot_options(CLI::App& app, DotCli& d) {
  auto& r = d.registered;
  r.push_back(app.add_option("--dot", d.dot, "exact (default), qdot or fixed"));
  r.push_back(app.add_option("--qdot-tol", d.qdot_tol,
                             "qdot tolerance, or auto: the solver chooses each one from what the iteration "
                             "needs (docs/solvers.md) (implies --dot qdot; default 1e-8)"));
  r.push_back(app.add_option("--qdot-policy", d.qdot_policy, "qdot selection policy: budget or paper")
                  ->capture_default_str());
  r.push_back(app.add_option("--ladder", d.ladder, "qdot ladder, e.g. binary64,binary32,binary16,perforate"));
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

bool ProblemCli::given(const std::string& long_name) const { return any_given(registered, long_name); }
bool DotCli::given(const std::string& long_name) const { return any_given(registered, long_name); }

void add_solver_options(CLI::App& app, SolverCli& c, Solver s) {
  add_problem_options(app, c.problem, s);
  add_dot_options(app, c.dots);
  if (s == Solver::power) {
    c.tol = 1e-6;
    c.max_iter = 300;
  }
  app.add_option("--tol", c.tol, s == Solver::cg ? "CG tolerance tau on ||r||" : "Tolerance tau on |lambda_k - lambda_(k-1)|")
      ->capture_default_str();
}

void add_experiment_options(CLI::App& app, SolverCli& c, const std::string& experiment_help) {
  app.add_option("--experiment", c.experiment, experiment_help);
  app.add_option("--matrix-dir", c.matrix_dir, "--experiment auto: where the set's matrices are")->capture_default_str();
}

void add_output_options(CLI::App& app, OutputCli& o, Solver s) {
  o.progress_option = app.add_option("--progress", o.progress,
                                     "A progress line on stderr every K iterations (0: none)")
                          ->capture_default_str();
  app.add_flag("--json", o.json, "One line of JSON instead of text (a sweep: one per run and a summary)");
  app.add_option("--output,-o", o.output, "Write parameters and per-iteration series to this HDF5 file");
  app.add_flag("--levels", o.levels,
               s == Solver::cg ? "With --output: the rung of every component of r^T r and p^T q per iteration"
                               : "With --output: the rung of every component of y^T y and x^T y per iteration");
}

// ---- the problem's options ----------------------------------------------------------

namespace {

const char* source_text(ProblemSource s) {
  switch (s) {
    case ProblemSource::hpccg: return "--problem hpccg";
    case ProblemSource::laplacian: return "--problem laplacian";
    case ProblemSource::matrix: return "--matrix";
    case ProblemSource::hdf5: return "--hdf5";
  }
  return "?";
}

ProblemSource choose_source(const ProblemCli& p, Solver s) {
  std::vector<std::string> chosen;
  for (const char* o : {"problem", "matrix", "hdf5"})
    if (p.given(o)) chosen.push_back(std::string("--") + o);
  if (chosen.size() > 1)
    throw_invalid(option_name(s, ""), join_names(chosen, " and ") +
                                          " both choose the matrix: give one of --problem, --matrix, --hdf5");
  if (p.given("matrix")) return ProblemSource::matrix;
  if (p.given("hdf5")) return ProblemSource::hdf5;
  const std::string name = p.problem.empty() ? (s == Solver::cg ? "hpccg" : "laplacian") : p.problem;
  if (name == "hpccg") return ProblemSource::hpccg;
  if (name == "laplacian") return ProblemSource::laplacian;
  throw_invalid(option_name(s, "--problem"),
                "unknown problem '" + name + "' (known: hpccg, laplacian; or --matrix FILE, --hdf5 FILE)");
}

// Options that only make sense for some sources.
void check_applies(const ProblemCli& p, Solver s, ProblemSource src) {
  using S = ProblemSource;
  const std::vector<S> any = {S::hpccg, S::laplacian, S::matrix, S::hdf5};
  const std::vector<std::pair<const char*, std::vector<S>>> rules = {
      {"nx", {S::hpccg}},     {"ny", {S::hpccg}},     {"nz", {S::hpccg}},
      {"n", {S::laplacian}},  {"degree", {S::laplacian}}, {"shift", {S::laplacian}},
      {"seed", s == Solver::cg ? std::vector<S>{S::laplacian} : any},
      {"no-symmetry-check", {S::matrix, S::hdf5}}};
  for (const auto& [option, sources] : rules) {
    if (!p.given(option) || std::find(sources.begin(), sources.end(), src) != sources.end()) continue;
    std::vector<std::string> names;
    for (S x : sources) names.push_back(source_text(x));
    throw_invalid(option_name(s, std::string("--") + option),
                  "applies to " + join_names(names, " or ") + ", not to " + source_text(src));
  }
}

// --n: a whole number of vertices, 1e4 accepted.
std::size_t vertices(const ProblemCli& p, Solver s) {
  const double n = parse_double(p.n, option_name(s, "--n"));
  if (!(n == std::floor(n)) || n < 2 || n > INT_MAX)
    throw_invalid(option_name(s, "--n"), "'" + p.n + "' is not a whole number of vertices in [2, " +
                                             std::to_string(INT_MAX) + "]");
  return static_cast<std::size_t>(n);
}

OperatorKind parse_operator(const std::string& name, Solver s, ProblemSource src) {
  if (name == "csr") return OperatorKind::csr;
  if (name == "dense") return OperatorKind::dense;
  if (name != "stencil")
    throw_invalid(option_name(s, "--operator"), "unknown operator '" + name + "' (known: csr, stencil, dense)");
  if (src != ProblemSource::hpccg)
    throw_invalid(option_name(s, "--operator"),
                  std::string("stencil is HPCCG's 27-point stencil: only for --problem hpccg, not for ") +
                      source_text(src));
  return OperatorKind::stencil;
}

// The spec of the options; the library checks sizes, shift, dense size and memory.
ProblemSpec make_problem_spec(const ProblemCli& p, Solver s) {
  ProblemSpec spec;
  spec.name_field = [s](const std::string& field) { return option_name(s, "--" + field); };
  spec.source = choose_source(p, s);
  check_applies(p, s, spec.source);
  spec.nx = p.nx;
  spec.ny = p.ny;
  spec.nz = p.nz;
  if (spec.source == ProblemSource::laplacian) spec.n = vertices(p, s);
  spec.degree = p.degree;
  spec.shift = p.shift;
  spec.seed = static_cast<std::uint64_t>(p.seed);
  spec.op = parse_operator(p.op, s, spec.source);
  spec.matrix = p.matrix;
  spec.hdf5 = p.hdf5;
  spec.rhs = p.rhs;
  spec.x0 = p.x0;
  check_problem_spec(spec, use_of(s));
  const std::vector<std::pair<std::string, const std::string*>> files = {
      {"matrix", &p.matrix}, {"hdf5", &p.hdf5}, {"rhs", &p.rhs}, {"x0", &p.x0}};
  for (const auto& [option, value] : files)
    if (p.given(option) && value->empty()) throw_invalid(option_name(s, "--" + option), "empty file name");
  spec.check_symmetry = !p.no_symmetry_check;
  return spec;
}

// ---- the dot products' options --------------------------------------------------------

// The exponent k of 10^k = v, written as a decimal literal; throws otherwise.
int decade_of(const std::string& text, const std::string& option) {
  const double v = parse_double(text, option);
  if (v > 0 && std::isfinite(v)) {
    const long k = std::lround(std::log10(v));
    if (std::strtod(("1e" + std::to_string(k)).c_str(), nullptr) == v) return static_cast<int>(k);
  }
  throw_invalid(option, "'" + text + "' is not a power of ten (like 1e-16 or 1000)");
}

std::vector<double> parse_sweep(const std::string& text, Solver s) {
  const std::string option = option_name(s, "--sweep-qdot-tol");
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw_invalid(option, "'" + text + "' is not of the form A:B (powers of ten, e.g. 1e-16:1e3)");
  const int first = decade_of(text.substr(0, colon), option);
  const int last = decade_of(text.substr(colon + 1), option);
  if (first > last) throw_invalid(option, "'" + text + "': the first tolerance exceeds the last");
  return decade_tolerances(first, last);
}

// The kind of dot product: --dot, or implied by --qdot-tol, --format, --sweep-qdot-tol.
std::string dot_kind(const DotCli& d, Solver s) {
  std::vector<std::pair<std::string, std::string>> implied;  // (option, kind)
  if (d.given("qdot-tol")) implied.emplace_back("--qdot-tol", "qdot");
  if (d.given("format")) implied.emplace_back("--format", "fixed");
  if (d.given("sweep-qdot-tol")) implied.emplace_back("--sweep-qdot-tol", "qdot");
  if (d.given("sweep-qdot-tol") && d.given("qdot-tol"))
    throw_invalid(option_name(s, "--qdot-tol"), "a sweep (--sweep-qdot-tol) sets the tolerance of each run");
  std::string kind = d.given("dot") ? d.dot : "";
  if (!kind.empty() && kind != "exact" && kind != "qdot" && kind != "fixed")
    throw_invalid(option_name(s, "--dot"), "unknown dot product '" + kind + "' (known: exact, qdot, fixed)");
  for (const auto& [option, k] : implied) {
    if (kind.empty()) kind = k;
    if (kind != k)
      throw_invalid(option_name(s, option), "implies --dot " + k + ", which contradicts " +
                                                (d.given("dot") ? "--dot " + d.dot : implied.front().first));
  }
  return kind.empty() ? "exact" : kind;
}

DotPolicy fixed_policy(const std::string& name, Solver s) {
  const std::string option = option_name(s, "--format");
  const Format f = under_option(option, [&] { return format_by_name(name); });
  if (f.t >= 53) throw_invalid(option, name + " is as precise as double: use --dot exact");
  return under_option(option, [&] { return DotPolicy::fixed(f); });
}

DotSpec make_dot_spec(const DotCli& d, Solver s) {
  DotSpec spec;
  const std::string kind = dot_kind(d, s);
  for (const char* option : {"qdot-policy", "ladder", "qdot-margin"})
    if (kind != "qdot" && d.given(option))
      throw_invalid(option_name(s, std::string("--") + option),
                    "applies to qdot dot products (--dot qdot, --qdot-tol or --sweep-qdot-tol), not to --dot " + kind);
  spec.qdot_policy = under_option(option_name(s, "--qdot-policy"), [&] { return qdot_policy_by_name(d.qdot_policy); });
  if (!d.ladder.empty())
    spec.ladder = under_option(option_name(s, "--ladder"), [&] { return qdot_ladder_by_names(d.ladder); });
  if (!d.sweep.empty() || d.given("sweep-qdot-tol")) spec.sweep = parse_sweep(d.sweep, s);
  if (d.collectives != 1 && d.collectives != 2)
    throw_invalid(option_name(s, "--qdot-collectives"), strf("%d is not 1 or 2", d.collectives));
  spec.collectives = d.collectives;
  if (d.given("qdot-margin") && (d.margin < 0 || d.margin > 64)) throw_invalid(option_name(s, "--qdot-margin"), strf("%d is not in 0..64", d.margin));
  spec.margin = d.margin;
  const bool automatic = kind == "qdot" && d.qdot_tol == "auto";
  double tolerance = 0;
  if (kind == "qdot" && !automatic) {
    tolerance = parse_double(d.qdot_tol, option_name(s, "--qdot-tol"));
    if (!(tolerance > 0 && std::isfinite(tolerance)))
      throw_invalid(option_name(s, "--qdot-tol"), "'" + d.qdot_tol + "' is not a positive finite tolerance (or auto)");
  }
  if (automatic && spec.qdot_policy != QdotPolicy::budget)
    throw_invalid(option_name(s, "--qdot-policy"),
                  std::string(to_string(spec.qdot_policy)) + ": --qdot-tol auto relies on the budget policy's guarantee");
  if (kind == "fixed" && d.format.empty())
    throw_invalid(option_name(s, "--dot fixed"), "needs --format (e.g. --format bfloat16)");
  if (kind == "exact" || !spec.sweep.empty()) spec.policy = DotPolicy::exact();
  else if (automatic) spec.policy = spec.automatic(s);
  else if (kind == "qdot") spec.policy = spec.at(tolerance, false);
  else
    spec.policy = fixed_policy(d.format, s);
  spec.rungs = spec.sweep.empty() ? spec.policy.level_names() : spec.at(1).level_names();
  return spec;
}

// The dot products of --experiment auto: the sweep of --sweep-qdot-tol, by default
// 1e-12:1e-3, with the ladder of --ladder.
DotSpec experiment_dot_spec(const DotCli& d, Solver s) {
  DotSpec spec;  // the budget policy (check_experiment), exact for the reference
  if (!d.ladder.empty())
    spec.ladder = under_option(option_name(s, "--ladder"), [&] { return qdot_ladder_by_names(d.ladder); });
  spec.sweep = parse_sweep(d.given("sweep-qdot-tol") ? d.sweep : "1e-12:1e-3", s);  // default: 1e-12, ..., 1e-3
  spec.policy = DotPolicy::exact();
  spec.rungs = spec.at(1).level_names();
  return spec;
}

void check_output(const OutputCli& o, Solver s) {
  if (o.progress < 0) throw_invalid(option_name(s, "--progress"), std::to_string(o.progress) + " is negative");
  if (o.levels && o.output.empty())
    throw_invalid(option_name(s, "--levels"), "the maps are written to the HDF5 file: give --output FILE");
}

}  // namespace

DotPolicy DotSpec::at(double tolerance, bool sweep) const {
  QdotOptions o;
  o.tolerance = tolerance;
  o.policy = qdot_policy;
  o.ladder = ladder;
  o.plan_margin = sweep && margin == QdotOptions::automatic_margin ? 0 : margin;
  return DotPolicy::approximate(o);
}

DotPolicy DotSpec::automatic(Solver s) const {
  QdotOptions base;
  base.ladder = ladder;
  base.plan_margin = margin;
  return DotPolicy::automatic(s == Solver::cg ? default_cg_rule() : default_power_rule(), base);
}

SolverSetup make_setup(const SolverCli& c, Solver s) {
  SolverSetup setup;
  setup.problem = make_problem_spec(c.problem, s);
  setup.experiment = !c.experiment.empty();
  if (setup.experiment) setup.problem_given = check_experiment(c, s);
  setup.matrix_dir = c.matrix_dir;
  setup.dots = setup.experiment ? experiment_dot_spec(c.dots, s) : make_dot_spec(c.dots, s);
  check_output(c.out, s);
  setup.out = c.out;
  setup.progress_given = c.out.progress_option->count() > 0;
  return setup;
}

void check_tolerance(double tol, Solver s) {
  if (!(tol > 0) || !std::isfinite(tol))
    throw_invalid(option_name(s, "--tol"), strf("%g is not a positive finite tolerance", tol));
}

void check_dot_policy(const DotSpec& spec, Solver s) {
  if (spec.margin > 0 && processes().ranks > 1)
    throw_invalid(option_name(s, "--qdot-margin"),
                  "applies on one process: the distributed qdot selects a plan and computes under it every time");
  Vector one("one", 1);
  Kokkos::deep_copy(one, 1.0);
  under_option(option_name(s, "--ladder"), [&] {
    if (!spec.sweep.empty()) dot(spec.at(spec.sweep.front()), one, one);
    else if (spec.policy.kind == DotKind::automatic) dot(spec.at(1), one, one);  // its ladder
    else dot(spec.policy, one, one);
    return 0;
  });
}

// ---- the problem --------------------------------------------------------------------

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
  check_dot_policy(c.dots, s);
  const int code = work(out.get());
  if (out) {
    out->commit();
    if (!c.out.json) std::printf("wrote %s\n", c.out.output.c_str());
  }
  return code;
}

}  // namespace ebla::cli

// What `ebla cg` and `ebla power` share: the options that choose the problem, the
// operator and the dot products, and the course of a command (a single run, a sweep of qdot
// tolerances, --experiment auto) with the pieces of its output (text, JSON lines, HDF5).
// The checks of the options, the numerics and the HDF5 layout are the solvers library's
// (solver_choice.hpp, problem_spec.hpp, series.hpp, sweep.hpp, auto_study.hpp,
// result_file.hpp); each command supplies its own solve and print through a `Command` type
// (see SolverCommand below).
#pragma once

#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/solvers/auto_report.hpp>
#include <ebla/solvers/auto_study.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/problem_spec.hpp>
#include <ebla/solvers/result_file.hpp>
#include <ebla/solvers/series.hpp>
#include <ebla/solvers/solver_choice.hpp>
#include <ebla/solvers/sweep.hpp>

#ifdef EBLA_WITH_MPI
#include <ebla/mpi/solvers.hpp>
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ebla::cli {

/// Exit codes of the solver commands (bad input is exit_bad_input = 2).
constexpr int exit_converged = 0;
constexpr int exit_not_converged = 1;

using Json = nlohmann::ordered_json;  ///< fields in insertion order
/// The object on one line (non-finite numbers are null).
void print_json(const Json& j);
/// The seconds of --repeat's runs: each whole call, and (CG; else empty) its iterations alone.
struct RepeatSeconds {
  experiments::Sample call, loop;
};
/// --repeat: "repeat", "repeat_seconds" and, where the loop is timed, "repeat_iteration_seconds".
void add_repeat_json(Json& j, const RepeatSeconds& seconds);
/// The same as lines of text, with the medians.
void print_repeats(const RepeatSeconds& seconds);

// ---- text ---------------------------------------------------------------------------

std::string join_names(const std::vector<std::string>& names, const char* separator = ",");
/// A rung name for narrow table headers: binary64 -> b64, perforate -> perf.
std::string short_rung(const std::string& name);
/// A fraction as a percentage with one decimal: "12.5", "<0.1" for a small nonzero one,
/// "-" for NaN (no such dot product).
std::string percent_text(double fraction);
/// A tolerance of a sweep's summary: its text, or "none" for NaN.
std::string largest_text(double tolerance);
/// "converged after 12 iterations (||r|| <= tau)".
template <class Result>
std::string status_text(const Result& r) {
  return fmt::format("{} after {} iteration{} ({})", to_string(r.status), r.iterations, r.iterations == 1 ? "" : "s",
              r.stop_reason);
}

// ---- options ------------------------------------------------------------------------

enum class Solver { cg, power };
const char* solver_name(Solver s);
/// "ebla cg --nx" and the like.
std::string option_name(Solver s, const std::string& option);

/// The options that choose the problem and the operator (solver_choice.hpp), and the
/// CLI11 options that bound them (to ask which were given).
struct ProblemCli : ProblemChoice {
  std::vector<const CLI::Option*> registered;
};

/// The options that choose the dot products.
struct DotCli : DotChoice {
  std::vector<const CLI::Option*> registered;
};

/// Output options.
struct OutputCli {
  int progress = 10;
  bool json = false;
  std::string output;
  bool levels = false;
  const CLI::Option* progress_option = nullptr;
};

/// The options of both commands (--max-iter: registered by each command).
struct SolverCli {
  ProblemCli problem;
  DotCli dots;
  OutputCli out;
  double tol = 1e-8;     ///< power: 1e-6
  int max_iter = 10000;  ///< power: 300
  std::string experiment;  ///< "auto", (cg) "preconditioners", or empty
  std::string matrix_dir;  ///< empty: default_matrix_dir()
  int repeat = 1;          ///< --repeat: solves of a single run
};

/// Where --experiment auto finds its matrices when --matrix-dir is not given: share/ebla/
/// matrices beside the program (EBLA_MATRIX_DIR_FROM_BIN from the directory of the running
/// ebla: installed, <prefix>/bin/../share/ebla/matrices; in a build tree, the copy CMake
/// makes in <build>/share), else data/matrices in the current directory (a clone's root);
/// InvalidArgument naming `option` and both places where neither holds them.
std::string default_matrix_dir(const std::string& option);

/// The options of the problem and the dot products, and --tol; add_experiment_options adds
/// --experiment (`experiment_help`) and --matrix-dir, add_output_options the output options.
void add_solver_options(CLI::App& app, SolverCli& c, Solver s);
void add_experiment_options(CLI::App& app, SolverCli& c, const std::string& experiment_help);
void add_output_options(CLI::App& app, OutputCli& o, Solver s);

/// What cg and power have checked before any work: the problem, the dot products, the
/// output, and whether --experiment auto runs (on the problem of the options or the set).
struct SolverSetup {
  ProblemSpec problem;
  DotSpec dots;
  OutputCli out;
  bool progress_given = false;
  bool experiment = false;
  std::string experiment_name;  ///< auto, or (cg) preconditioners
  bool problem_given = false;
  std::string matrix_dir;
  int repeat = 1;  ///< solves of a single run (the last one reported, every one timed)
  /// Per-iteration progress lines in a sweep or an experiment only when asked for.
  int sweep_progress() const { return progress_given ? out.progress : 0; }
};

/// Throw InvalidArgument naming the command and option ("ebla cg --nx") for every
/// inconsistent or out-of-range choice; they read no file and need no Kokkos.
SolverSetup make_setup(const SolverCli& c, Solver s);
/// --tol: a positive finite tolerance.
void check_tolerance(double tol, Solver s);

// ---- the problem --------------------------------------------------------------------

#ifdef EBLA_WITH_MPI
using AnyOperator = std::variant<CsrOperator, StencilOperator, DenseOperator, mpi::DistributedStencil, mpi::DistributedCsr>;
#else
using AnyOperator = std::variant<CsrOperator, StencilOperator, DenseOperator>;
#endif
/// A problem on one process or, under mpirun, this rank's rows of it.
using RunProblem = BasicProblem<AnyOperator>;

ProblemUse use_of(Solver s);
/// The library's problem (its warnings logged), its operator among any of a run.
RunProblem load_serial_problem(const ProblemSpec& spec, Solver s);
/// The problem of a run: serial, or under mpirun this rank's rows (distributed.hpp).
RunProblem load_run_problem(const ProblemSpec& spec, Solver s);

// ---- output pieces ------------------------------------------------------------------

/// Root attributes creator, version and command line, then the problem's.
void write_problem_attributes(const Hdf5Object& g, const ProblemData& p, Solver s);
/// Problem fields of the JSON lines.
void add_problem_json(Json& j, const ProblemData& p);
void add_dot_json(Json& j, const DotPolicy& policy, const std::vector<std::string>& rungs);

/// The automatic policy's events: how many, and the first few ("events" lines; none if empty).
void print_events(const std::vector<SolverEvent>& events);
/// Mean percentages per rung, a line per dot product ("r^T r  12.0  80.0 ...") under a
/// header of rung names, and a column "zero" for zero products if there are any.
void print_mix(const std::vector<std::string>& rungs,
               const std::vector<std::pair<std::string, const FractionSeries*>>& rows);
/// The sweep's table header: the leading columns, then "<prefix> <rung>%" per dot product.
std::vector<std::string> sweep_header(std::vector<std::string> columns, const std::vector<std::string>& rungs,
                                      const std::vector<std::string>& prefixes);
/// The mean percentages of a run's two dot products, appended to a row of the sweep's table.
void add_percents(std::vector<std::string>& row, const FractionSeries& a, const FractionSeries& b);

/// Calls f every `every` iterations (0: never); the prefix names the run in a sweep.
bool progress_due(int k, int every);

// ---- --experiment auto --------------------------------------------------------------

void print_auto_report(const AutoReport& r);
Json auto_report_json(const AutoReport& r, const std::vector<double>& tolerances);
/// How the problems of the built-in sets name their fields and --matrix-dir.
AutoSetNames auto_set_names(const SolverSetup& c, Solver s);
/// For each of `problems` problems, study(i, group or null) and its report printed (text or
/// one JSON line with "command"); the file's root attributes; the total. Returns exit code 1
/// if a reference run did not converge, else 0. Throws InvalidArgument under mpirun with more
/// than one process.
int run_auto_experiment(std::size_t problems, const std::function<AutoReport(std::size_t, const Hdf5Group*)>& study,
                        const DotSpec& dots, bool json, Hdf5Writer* out, Solver s);

/// The course of a command with the rest of its work, run inside a KokkosSession: the
/// output file created (checked) before the work and committed after it, the dot policies
/// checked, then `work(out)` (its exit code); "wrote FILE" unless JSON.
int with_output(const SolverSetup& c, Solver s, const std::function<int(Hdf5Writer*)>& work);

// ---- the course of cg and power ---------------------------------------------------------

/// The end of both commands' --help: output formats, mpirun.
std::string solver_footer();
/// The name of the run with exact dot products: "exact CG", "PM".
const char* reference_name(Solver s);

/// --tol and --max-iter (at least `least_iterations`) checked after the setup, and the
/// solver options' tolerance, max_iterations and record_levels (--levels) set.
template <class Config, class Cli>
Config make_config(const Cli& c, Solver s, int least_iterations) {
  Config config;
  static_cast<SolverSetup&>(config) = make_setup(c, s);
  check_tolerance(c.tol, s);
  if (c.max_iter < least_iterations)
    throw_invalid(option_name(s, "--max-iter"),
                  std::to_string(c.max_iter) +
                      (least_iterations == 0 ? " is negative" : " is less than " + std::to_string(least_iterations)));
  config.solver.tolerance = c.tol;
  config.solver.max_iterations = c.max_iter;
  config.solver.record_levels = c.out.levels;
  return config;
}

/// The run's outcome, its numbers (result_values) and the mean fractions of its dot products.
template <class Run>
void add_result_json(Json& j, const Run& run) {
  j["iterations"] = run.result.iterations;
  j["status"] = to_string(run.result.status);
  j["stop_reason"] = run.result.stop_reason;
  j["breakdown"] = run.result.breakdown;
  for (const auto& [name, value] : result_values(run)) j[name] = value;
  for (const auto& [name, series] : dot_series(run)) j[std::string(name) + "_fraction_mean"] = series->mean();
}

/// The Config and the Solver of a command: the base of its `Command` type (below).
template <class ConfigType, Solver solver>
struct CommandBase {
  using Config = ConfigType;
  static constexpr Solver me = solver;
};

/// Where a sweep's JSON summary lets a command add its own fields.
enum class SummaryPart { runs, reference, largest };

// `Command` supplies (see cmd_cg.cpp, cmd_power.cpp), besides its CommandBase (Config: a
// SolverSetup with the solver's options `solver`; me: the Solver):
//   Run solve(const RunProblem&, const Config&, const DotPolicy&, const std::string& label, int every),
//   print_problem(p, c), print_result(p, c, run), add_settings(Json&, p, c),
//   the sweep's text: print_reference(s), columns(), prefixes(c) (of the two dot products'
//   columns), cells(s, i), print_largest(c, s);
//   its JSON: add_line(Json&, c, s, i), add_summary(Json&, c, s, SummaryPart);
//   write_sweep(root, p, c, s); and for --experiment auto:
//   AutoReport report(name, p, c), add_run(AutoReport&, c, run, label, tolerance).
template <class Command>
struct SolverCommand {
  using Config = typename Command::Config;
  using Options = decltype(Config::solver);
  using Run = decltype(Command::solve(std::declval<const RunProblem&>(), std::declval<const Config&>(),
                                      std::declval<const DotPolicy&>(), std::string(), 0));
  using Sweep = QdotSweep<Run>;
  static constexpr Solver me = Command::me;

  static bool converged(const Run& run) { return run.result.status == SolverStatus::converged; }

  static void write_header(const Hdf5Object& g, const ProblemData& p, const Config& c) {
    write_problem_attributes(g, p, me);
    write_options(g, c.solver);
  }

  static Json problem_json(const ProblemData& p, const Config& c) {
    Json j;
    j["command"] = solver_name(me);
    add_problem_json(j, p);
    Command::add_settings(j, p, c);
    return j;
  }

  static Json run_json(const ProblemData& p, const Config& c, const Run& run) {
    Json j = problem_json(p, c);
    add_dot_json(j, run.policy, run.rungs);
    add_result_json(j, run);
    return j;
  }

  static void add_seconds(RepeatSeconds& seconds, const Run& run) {
    seconds.call.add(run.result.seconds);
    if constexpr (me == Solver::cg) seconds.loop.add(run.result.iteration_seconds);
  }

  // One run, or --repeat N of them on the same problem in this process (the solves after the
  // first find the program and its memory warm, as a library's caller does): the last run is
  // reported, with every run's seconds.
  static int single(const RunProblem& p, const Config& c, Hdf5Writer* out) {
    Run run = Command::solve(p, c, c.dots.policy, "", c.out.progress);
    RepeatSeconds seconds;
    add_seconds(seconds, run);
    for (int i = 1; i < c.repeat; ++i) {
      run = Command::solve(p, c, c.dots.policy, "", 0);
      add_seconds(seconds, run);
    }
    const int code = converged(run) ? exit_converged : exit_not_converged;
    if (c.out.json) {
      Json j = run_json(p, c, run);
      if (c.repeat > 1) add_repeat_json(j, seconds);
      j["exit_code"] = code;
      print_json(j);
    } else {
      Command::print_problem(p, c);
      std::printf("  dots: %s\n", run.policy.to_string().c_str());
      Command::print_result(p, c, run);
      if (c.repeat > 1) print_repeats(seconds);
    }
    if (out != nullptr) {
      const Hdf5Group root = out->root();
      write_header(root, p, c);
      root.attribute("mode", "run");
      write_run(root, run, p.n, c.out.levels);
    }
    return code;
  }

  // The reference, then each tolerance, with a line on stderr after each run.
  static Sweep sweep(const RunProblem& p, const Config& c) {
    const auto solve = [&](const DotPolicy& dots, double tol) {
      const bool reference = tol == 0;
      const std::string label = reference ? "exact" : tolerance_text(tol);
      Run run = Command::solve(p, c, dots, "[" + label + "] ", c.sweep_progress());
      if (c.out.progress > 0 && reference) spdlog::info("sweep: {}: {}", reference_name(me), status_text(run.result));
      if (c.out.progress > 0 && !reference) spdlog::info("sweep: qdot tolerance {}: {}", label, status_text(run.result));
      return run;
    };
    return sweep_qdot_tolerances(c.dots.sweep, [&](double tol) { return c.dots.at(tol); }, solve);
  }

  // The problem, the reference run, a row per tolerance, the largest tolerances.
  static void print_sweep(const ProblemData& p, const Config& c, const Sweep& s) {
    Command::print_problem(p, c);
    // the plan margin of every row (0 unless --qdot-margin is given: select then compute, as
    // the papers' runs), which a single run needs to give the same row
    const int margin = c.dots.at(1, true).qdot.plan_margin;
    std::printf("  dots: qdot, policy %s, ladder %s, plan margin %d (a single run with --qdot-margin %d gives a row)\n",
                to_string(c.dots.qdot_policy), join_names(c.dots.rungs).c_str(), margin, margin);
    Command::print_reference(s);
    Table t(sweep_header(Command::columns(), c.dots.rungs, Command::prefixes(c)));
    for (std::size_t i = 0; i < s.runs.size(); ++i) {
      std::vector<std::string> row = Command::cells(s, i);
      add_percents(row, *dot_series(s.runs[i])[0].second, *dot_series(s.runs[i])[1].second);
      t.add(row);
    }
    t.print();
    Command::print_largest(c, s);
  }

  // A line per run (the reference first) and a summary.
  static void print_sweep_json(const ProblemData& p, const Config& c, const Sweep& s, int code) {
    Json reference = run_json(p, c, s.reference);
    reference["run"] = "reference";
    print_json(reference);
    std::vector<int> iterations;
    for (std::size_t i = 0; i < s.runs.size(); ++i) {
      Json line = run_json(p, c, s.runs[i]);
      line["run"] = "sweep";
      Command::add_line(line, c, s, i);
      print_json(line);
      iterations.push_back(s.runs[i].result.iterations);
    }
    Json j = problem_json(p, c);
    j["summary"] = true;
    j["tolerances"] = s.tolerances;
    j["iterations"] = iterations;
    Command::add_summary(j, c, s, SummaryPart::runs);
    j["reference_iterations"] = s.reference.result.iterations;
    j["reference_status"] = to_string(s.reference.result.status);
    Command::add_summary(j, c, s, SummaryPart::reference);
    j["largest_tolerance_same_iterations"] = s.largest_same;
    Command::add_summary(j, c, s, SummaryPart::largest);
    j["exit_code"] = code;
    print_json(j);
  }

  static int run_sweep(const RunProblem& p, const Config& c, Hdf5Writer* out) {
    const Sweep s = sweep(p, c);
    const int code = converged(s.reference) ? exit_converged : exit_not_converged;
    if (c.out.json) print_sweep_json(p, c, s, code);
    else print_sweep(p, c, s);
    if (out != nullptr) {
      write_header(out->root(), p, c);
      Command::write_sweep(out->root(), p, c, s);
    }
    return code;
  }

  // The problems of --experiment auto: the one of the options, or the solver's built-in set
  // (docs/solvers.md, "Choosing the tolerance"; auto_study.hpp).
  static std::vector<AutoCase<Options>> auto_cases(const Config& c) {
    if (c.problem_given) return {{"", c.problem, c.solver}};
    if constexpr (me == Solver::cg) return cg_auto_set(c.matrix_dir, c.solver, auto_set_names(c, me));
    else return power_auto_set(c.matrix_dir, c.solver, auto_set_names(c, me));
  }

  // Runs the reference, each tolerance of the sweep and auto on one problem; with `out`,
  // writes each run and the summary into it.
  static AutoReport study(const AutoCase<Options>& a, const Config& config, const Hdf5Group* out,
                          const std::function<void(const std::string&)>& done) {
    Config c = config;
    c.solver = a.solver;
    const RunProblem p = load_serial_problem(a.spec, me);
    AutoReport r = Command::report(a.name.empty() ? p.name : a.name, p, c);
    if (out != nullptr) write_header(*out, p, c);
    const AutoRun run = [&](const std::string& label, const DotPolicy& policy, double tolerance,
                            const std::string& group) {
      const Run result = Command::solve(p, c, policy, "[" + label + "] ", c.sweep_progress());
      done(r.name + ": " + label);
      Command::add_run(r, c, result, label, tolerance);
      if (out != nullptr) write_run(out->group(group), result, p.n, c.out.levels);
      return result.result.events;
    };
    run_auto_sequence(r, c.dots, use_of(me), run, out);
    return r;
  }

  // Everything that holds Kokkos views lives in here, inside the KokkosSession of run.
  static int execute(const Config& c) {
    return with_output(c, me, [&](Hdf5Writer* out) {
      if (c.experiment) {  // a progress line after each run unless --progress 0
        const auto cases = auto_cases(c);
        const std::size_t runs = cases.size() * (c.dots.sweep.size() + 2);  // exact, the sweep, auto
        const experiments::Progress progress =
            c.out.progress > 0 ? progress_each(option_name(me, "") + ": experiment auto") : nullptr;
        std::size_t finished = 0;
        const auto done = [&](const std::string& run) { experiments::report(progress, ++finished, runs, run); };
        const auto one = [&](std::size_t i, const Hdf5Group* g) { return study(cases[i], c, g, done); };
        return run_auto_experiment(cases.size(), one, c.dots, c.out.json, out, me);
      }
      const RunProblem p = load_run_problem(c.problem, me);
      if (me == Solver::cg && c.out.levels && p.n > 1000000)
        spdlog::warn("--levels stores {} bytes per dot product and iteration", p.n);
      return c.dots.sweep.empty() ? single(p, c, out) : run_sweep(p, c, out);
    });
  }

  static int run(const Config& c) {
    KokkosSession kokkos;
    return execute(c);
  }
};

}  // namespace ebla::cli

// What `ebla cg` and `ebla power` share: the options that choose the problem, the
// operator and the dot products, loading the problem, sweeps of qdot tolerances, and the
// pieces of their output (text tables, one-line JSON, HDF5 per-iteration series).
#pragma once

#include "commands.hpp"

#include <ebla/core/hdf5.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dot_mix.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>

#ifdef EBLA_WITH_MPI
#include <ebla/mpi/solvers.hpp>
#endif

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace ebla::cli {

/// Exit codes of the solver commands (bad input is exit_bad_input = 2).
constexpr int exit_converged = 0;
constexpr int exit_not_converged = 1;

// ---- text ---------------------------------------------------------------------------

std::string join_names(const std::vector<std::string>& names, const char* separator = ",");
/// A tolerance as written on the command line and in tables: 1e-08, 1e+00, 2.5e-03.
std::string tolerance_text(double tolerance);
/// The HDF5 group of a sweep's run at a qdot tolerance: qdot_tol_1e-08 and the like.
std::string sweep_group_name(double tolerance);
/// A rung name for narrow table headers: binary64 -> b64, perforate -> perf.
std::string short_rung(const std::string& name);

/// A fraction as a percentage with one decimal: "12.5", "<0.1" for a small nonzero one,
/// "-" for NaN (no such dot product).
std::string percent_text(double fraction);

/// An aligned text table: first column left-aligned, the others right-aligned.
class TextTable {
public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(const std::string& indent = "") const;

private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// ---- JSON ---------------------------------------------------------------------------

/// One JSON object, fields in insertion order; numbers that are not finite become null.
class JsonObject {
public:
  JsonObject& field(const std::string& key, const std::string& value);
  JsonObject& field(const std::string& key, const char* value);
  JsonObject& field(const std::string& key, double value);
  JsonObject& field(const std::string& key, bool value);
  JsonObject& field(const std::string& key, std::int64_t value);
  template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value &&
                                          !std::is_same<I, std::int64_t>::value, int> = 0>
  JsonObject& field(const std::string& key, I value) {
    return field(key, static_cast<std::int64_t>(value));
  }
  JsonObject& field(const std::string& key, const std::vector<double>& values);
  JsonObject& field(const std::string& key, const std::vector<std::string>& values);
  JsonObject& null(const std::string& key);
  /// The object on one line, without a newline.
  std::string text() const;

private:
  JsonObject& raw(const std::string& key, const std::string& json);
  std::string body_;
};

/// A JSON string literal: quotes, backslashes and control characters escaped.
std::string json_quote(const std::string& text);

// ---- options ------------------------------------------------------------------------

enum class Solver { cg, power };
const char* solver_name(Solver s);

/// Where A (and b, x0) come from.
enum class Source { hpccg, laplacian, matrix, hdf5 };
enum class OperatorKind { csr, stencil, dense };

/// The options that choose the problem and the operator, as given on the command line.
struct ProblemCli {
  std::string problem;
  int nx = 20, ny = 20, nz = 20;
  std::string n = "1000";
  double degree = 10;
  std::int64_t seed = 1;
  double shift = 0;
  std::string matrix, rhs, x0, hdf5;
  bool no_symmetry_check = false;
  std::string op = "csr";
  std::vector<const CLI::Option*> registered;  ///< to ask which were given
  bool given(const std::string& long_name) const;
};

/// The options that choose the dot products.
struct DotCli {
  std::string dot;
  std::string qdot_tol = "1e-8";  ///< a tolerance, or auto
  std::string qdot_policy = "budget";
  std::string ladder;
  std::string format;
  std::string sweep;
  int collectives = 1;
  int margin = QdotOptions::automatic_margin;  ///< --qdot-margin: QdotOptions::plan_margin
  std::vector<const CLI::Option*> registered;
  bool given(const std::string& long_name) const;
};

/// Output options.
struct OutputCli {
  int progress = 10;
  bool json = false;
  std::string output;
  bool levels = false;
  const CLI::Option* progress_option = nullptr;
};

void add_problem_options(CLI::App& app, ProblemCli& p, Solver s);
void add_dot_options(CLI::App& app, DotCli& d);
void add_output_options(CLI::App& app, OutputCli& o, Solver s);

/// The checked choice of problem (no file read yet).
struct ProblemSpec {
  Source source = Source::hpccg;
  OperatorKind op = OperatorKind::csr;
  int nx = 0, ny = 0, nz = 0;
  std::size_t n = 0;  ///< laplacian
  double degree = 0, shift = 0;
  std::uint64_t seed = 1;
  std::string matrix, rhs, x0, hdf5;
  /// The files the problem reads (for an output that must not replace one of them).
  std::vector<std::string> inputs() const { return {matrix, rhs, x0, hdf5}; }
  bool check_symmetry = true;
};

/// The checked choice of dot products. `sweep` is empty for a single run.
struct DotSpec {
  DotPolicy policy;                ///< of a single run (exact for a sweep's reference)
  std::vector<double> sweep;       ///< qdot tolerances of a sweep, increasing
  QdotPolicy qdot_policy = QdotPolicy::budget;
  std::vector<QdotLevel> ladder;   ///< as given (empty: the default)
  /// The qdot policy of one run of a sweep (or, sweep = false, of the one run of --qdot-tol).
  /// A sweep compares the precision that each tolerance gives away, so its runs take no
  /// plan margin unless --qdot-margin is given (a widened plan computes some bins more
  /// precisely than asked); a single run takes the solver's default.
  DotPolicy at(double tolerance, bool sweep = true) const;
  DotPolicy automatic(Solver s) const;   ///< --qdot-tol auto: the solver's default rule
  std::vector<std::string> rungs;  ///< ladder names of policy (of a qdot run in a sweep)
  int collectives = 1;             ///< under mpirun: MPI_Allreduce per qdot (1 or 2)
  int margin = QdotOptions::automatic_margin;  ///< QdotOptions::plan_margin of every qdot
};

/// Throw InvalidArgument naming the command and option ("ebla cg --nx") for every
/// inconsistent or out-of-range choice; they read no file and need no Kokkos.
ProblemSpec make_problem_spec(const ProblemCli& p, Solver s);
DotSpec make_dot_spec(const DotCli& d, Solver s);
void check_output(const OutputCli& o, Solver s);

/// "ebla cg --nx" and the like.
std::string option_name(Solver s, const std::string& option);

// ---- the problem --------------------------------------------------------------------

#ifdef EBLA_WITH_MPI
using AnyOperator = std::variant<CsrOperator, StencilOperator, DenseOperator, mpi::DistributedStencil, mpi::DistributedCsr>;
#else
using AnyOperator = std::variant<CsrOperator, StencilOperator, DenseOperator>;
#endif

struct Problem {
  std::string name;         ///< hpccg, laplacian, matrix, hdf5
  std::string description;  ///< one line for humans
  std::string operator_name;
  AnyOperator op;
  std::size_t n = 0, nnz = 0;   ///< of the global problem (under mpirun: of all ranks)
  int nx = 0, ny = 0, nz = 0;  ///< hpccg only (under mpirun: one rank's block)
  Vector b;                    ///< cg only (these vectors: the rows this rank owns)
  Vector x0;                   ///< the start vector (zeros, or random unit for power)
  Vector x_exact;                 ///< cg: the x* of b = A x* when b was made so (else empty)
  std::string x_exact_source;     ///< "1" (ones), or how x* was drawn
  std::string b_source, x0_source;
};

/// Reads or generates the problem (Kokkos must be initialised). Bad files throw
/// InvalidArgument naming the option and the file.
Problem load_problem(const ProblemSpec& spec, Solver s);

/// The dot policies are checked on a one-component vector (a ladder that qdot rejects).
void check_dot_policy(const DotSpec& spec, Solver s);

/// max |x_i - y_i|.
double max_difference(ConstVector x, ConstVector y);

// ---- per-iteration series -----------------------------------------------------------

/// Rows of fractions per rung (NaN for a dot product that was not computed).
struct FractionSeries {
  explicit FractionSeries(std::size_t rung_count = 0) : rungs(rung_count) {}
  std::size_t rungs;
  std::vector<double> values;  ///< rows x rungs, row-major
  std::vector<double> zero;    ///< per row: fraction of zero products
  std::size_t rows() const { return zero.size(); }
  void add(const DotRecord* record);
  std::vector<double> mean() const;  ///< per rung, over the computed rows
  double zero_mean() const;          ///< the same for the zero products
};

/// Per-component rung maps: rows x n, 255 for no bin (zero product or no dot product).
struct LevelSeries {
  explicit LevelSeries(std::size_t length) : n(length) {}
  std::size_t n;
  std::vector<std::uint8_t> values;
  std::size_t rows = 0;
  void add(const std::vector<std::uint8_t>& map);  ///< empty: a row of 255
};

void write_fractions(const Hdf5Group& g, const std::string& name, const FractionSeries& s,
                     const std::vector<std::string>& rungs);
void write_levels(const Hdf5Group& g, const std::string& name, const LevelSeries& s,
                  const std::vector<std::string>& rungs);

/// Root attributes shared by the solver files: creator, version, command line, problem.
void write_problem_attributes(const Hdf5Object& g, const Problem& p, Solver s);
void write_dot_attributes(const Hdf5Object& g, const DotPolicy& policy, const std::vector<std::string>& rungs);

/// Problem fields of the JSON lines.
void add_problem_json(JsonObject& j, const Problem& p);
void add_dot_json(JsonObject& j, const DotPolicy& policy, const std::vector<std::string>& rungs);

/// Mean percentages per rung, a line per dot product ("r^T r  12.0  80.0 ...") under a
/// header of rung names, and a column "zero" for zero products if there are any.
/// The automatic policy's events: how many, and the first few ("events" lines; none if empty).
void print_events(const std::vector<SolverEvent>& events);
void print_mix(const std::vector<std::string>& rungs,
               const std::vector<std::pair<std::string, const FractionSeries*>>& rows);

/// The largest tolerance of a sweep whose flag is set (NaN if none).
double largest_where(const std::vector<double>& tolerances, const std::vector<bool>& ok);

/// Calls f every `every` iterations (0: never); the prefix names the run in a sweep.
bool progress_due(int k, int every);

// ---- --experiment auto --------------------------------------------------------------
/// What `--experiment auto` reports of one problem: exact, each fixed tolerance and auto.
struct AutoReport {
  std::string name;                     ///< e.g. HB/1138_bus
  std::string description;              ///< the problem, one line
  std::string setting;                  ///< the stopping rule, one line
  std::string reference;                ///< "exact CG" or "PM"
  std::string dots[2];                  ///< the two dot products, e.g. "r^T z", "p^T q"
  std::vector<std::string> labels;      ///< "exact", "1e-12", ..., "auto"
  std::vector<std::string> status;      ///< per run
  std::vector<PolicyOutcome> outcomes;  ///< per run (the first exact, the last auto)
  std::vector<DotMix> mix[2];           ///< per dot product, per run
  std::string extra_name;               ///< an extra column (power: |lambda - lambda_PM|), or empty
  std::string extra_key;                ///< its JSON key (power: eigenvalue_error)
  std::vector<double> extra;
  double slack = 1.03;                  ///< the iteration target (judge_automatic)
  AutoVerdict verdict;
  std::vector<SolverEvent> events;      ///< of the automatic run
  AutoReport() = default;
  /// `name` (empty: the problem's), the problem's description, the rest as above.
  AutoReport(const std::string& name, const Problem& p, std::string setting, std::string reference,
             const char* dot_a, const char* dot_b);
  /// Appends a run (its outcome: the mean of the two dot products' mixes); the verdict is
  /// taken when `judge` is called after the last (auto).
  void add(const std::string& label, SolverStatus status, bool ok, int iterations, double tolerance, const DotMix& a,
           const DotMix& b, double extra_value = 0);
  void judge();
  std::vector<PolicyOutcome> fixed() const;  ///< the runs between exact and auto
};
void print_auto_report(const AutoReport& r);
JsonObject auto_report_json(const AutoReport& r, const std::vector<double>& tolerances);
/// Datasets tolerance, iterations, below_binary64, bytes (of the fixed runs) and the
/// verdict's attributes.
void write_auto_summary(const Hdf5Group& g, const AutoReport& r, const std::vector<double>& tolerances);
/// --experiment: checks its value (auto) and the options it excludes. Returns whether a
/// problem option was given (the experiment then runs on that problem instead of the
/// built-in set).
bool check_experiment(const std::string& experiment, const ProblemCli& p, const DotCli& d, const OutputCli& o,
                      Solver s);
/// The dot products of --experiment auto: the sweep of --sweep-qdot-tol, by default
/// 1e-12:1e-3, with the ladder of --ladder.
DotSpec experiment_dot_spec(const DotCli& d, Solver s);
/// dir/name.mtx, a matrix of the built-in set; throws naming --matrix-dir if it cannot be opened.
std::string set_matrix(const std::string& dir, const std::string& name, Solver s);
/// A problem of an experiment: its name (empty: the problem's own), what to load, and the
/// solver's options for it (CgOptions or PowerOptions).
template <class Options>
struct AutoCase {
  std::string name;
  ProblemSpec spec;
  Options solver;
};
/// One run of an experiment: (label, policy, fixed tolerance or 0, HDF5 group name) -> the
/// run added to the report; returns its events.
using AutoRun = std::function<std::vector<SolverEvent>(const std::string&, const DotPolicy&, double, const std::string&)>;
/// Runs exact, each tolerance of `dots.sweep` and auto through `run`, takes the verdict and
/// writes the summary into `out` (if not null).
void run_auto_sequence(AutoReport& r, const DotSpec& dots, Solver s, const AutoRun& run, const Hdf5Group* out);
/// For each of `problems` problems, study(i, group or null) and its report printed (text or
/// one JSON line with "command"); the file's root attributes; the total. Returns exit code 1
/// if a reference run did not converge, else 0. Throws InvalidArgument under mpirun with more
/// than one process.
int run_auto_experiment(std::size_t problems, const std::function<AutoReport(std::size_t, const Hdf5Group*)>& study,
                        const DotSpec& dots, bool json, Hdf5Writer* out, Solver s);
/// The same over a list of cases, study(case, group).
template <class Case, class Study>
int run_auto_experiment(const std::vector<Case>& cases, Study study, const DotSpec& dots, bool json, Hdf5Writer* out,
                        Solver s) {
  const auto one = [&](std::size_t i, const Hdf5Group* g) { return study(cases[i], g); };
  return run_auto_experiment(cases.size(), one, dots, json, out, s);
}

}  // namespace ebla::cli

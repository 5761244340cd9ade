// What `ebla cg` and `ebla power` share (see solver_common.hpp).
#include "solver_common.hpp"

#include "commands.hpp"
#include "distributed.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/problems.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdarg>
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

std::string tolerance_text(double tolerance) {
  const std::string short_form = strf("%.0e", tolerance);
  if (std::strtod(short_form.c_str(), nullptr) == tolerance) return short_form;
  return strf("%.6g", tolerance);
}

std::string sweep_group_name(double tolerance) { return "qdot_tol_" + tolerance_text(tolerance); }

std::string short_rung(const std::string& name) {
  if (name == "perforate") return "perf";
  if (name.rfind("binary", 0) == 0) return "b" + name.substr(6);
  return name;
}

std::string percent_text(double fraction) {
  if (std::isnan(fraction)) return "-";
  if (fraction > 0 && 100 * fraction < 0.05) return "<0.1";
  return strf("%.1f", 100 * fraction);
}

void TextTable::print(const std::string& indent) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = indent;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      s += c == 0 ? cells[c] + pad : "  " + pad + cells[c];
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::printf("%s\n", s.c_str());
  };
  line(header_);
  for (const auto& row : rows_) line(row);
}

// ---- JSON ---------------------------------------------------------------------------

std::string json_quote(const std::string& text) {
  std::string q = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': q += "\\\""; break;
      case '\\': q += "\\\\"; break;
      case '\n': q += "\\n"; break;
      case '\r': q += "\\r"; break;
      case '\t': q += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) q += strf("\\u%04x", c);
        else q += ch;
    }
  }
  return q + "\"";
}

namespace {

// The shortest of %.15g, %.16g, %.17g that reads back as v (1e-07, not 9.9999999999999995e-08).
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  for (int digits = 15; digits < 17; ++digits) {
    const std::string s = strf("%.*g", digits, v);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return strf("%.17g", v);
}

}  // namespace

JsonObject& JsonObject::raw(const std::string& key, const std::string& json) {
  body_ += (body_.empty() ? "" : ",") + json_quote(key) + ":" + json;
  return *this;
}

JsonObject& JsonObject::field(const std::string& key, const std::string& value) { return raw(key, json_quote(value)); }
JsonObject& JsonObject::field(const std::string& key, const char* value) { return field(key, std::string(value)); }
JsonObject& JsonObject::field(const std::string& key, double value) { return raw(key, json_number(value)); }
JsonObject& JsonObject::field(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
JsonObject& JsonObject::field(const std::string& key, std::int64_t value) { return raw(key, std::to_string(value)); }
JsonObject& JsonObject::null(const std::string& key) { return raw(key, "null"); }

JsonObject& JsonObject::field(const std::string& key, const std::vector<double>& values) {
  std::vector<std::string> items;
  for (double v : values) items.push_back(json_number(v));
  return raw(key, "[" + join_names(items) + "]");
}

JsonObject& JsonObject::field(const std::string& key, const std::vector<std::string>& values) {
  std::vector<std::string> items;
  for (const auto& v : values) items.push_back(json_quote(v));
  return raw(key, "[" + join_names(items) + "]");
}

std::string JsonObject::text() const { return "{" + body_ + "}"; }

// ---- options ------------------------------------------------------------------------

const char* solver_name(Solver s) { return s == Solver::cg ? "cg" : "power"; }

std::string option_name(Solver s, const std::string& option) {
  return std::string("ebla ") + solver_name(s) + (option.empty() ? "" : " " + option);
}

namespace {

bool any_given(const std::vector<const CLI::Option*>& options, const std::string& long_name) {
  for (const CLI::Option* o : options)
    if (o->check_lname(long_name)) return o->count() > 0;
  return false;
}

}  // namespace

bool ProblemCli::given(const std::string& long_name) const { return any_given(registered, long_name); }
bool DotCli::given(const std::string& long_name) const { return any_given(registered, long_name); }

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

namespace {

const char* source_text(Source s) {
  switch (s) {
    case Source::hpccg: return "--problem hpccg";
    case Source::laplacian: return "--problem laplacian";
    case Source::matrix: return "--matrix";
    case Source::hdf5: return "--hdf5";
  }
  return "?";
}

Source choose_source(const ProblemCli& p, Solver s) {
  std::vector<std::string> chosen;
  for (const char* o : {"problem", "matrix", "hdf5"})
    if (p.given(o)) chosen.push_back(std::string("--") + o);
  if (chosen.size() > 1)
    throw_invalid(option_name(s, ""), join_names(chosen, " and ") +
                                          " both choose the matrix: give one of --problem, --matrix, --hdf5");
  if (p.given("matrix")) return Source::matrix;
  if (p.given("hdf5")) return Source::hdf5;
  const std::string name = p.problem.empty() ? (s == Solver::cg ? "hpccg" : "laplacian") : p.problem;
  if (name == "hpccg") return Source::hpccg;
  if (name == "laplacian") return Source::laplacian;
  throw_invalid(option_name(s, "--problem"),
                "unknown problem '" + name + "' (known: hpccg, laplacian; or --matrix FILE, --hdf5 FILE)");
}

// Options that only make sense for some sources.
void check_applies(const ProblemCli& p, Solver s, Source src) {
  const std::vector<Source> any = {Source::hpccg, Source::laplacian, Source::matrix, Source::hdf5};
  const std::vector<std::pair<const char*, std::vector<Source>>> rules = {
      {"nx", {Source::hpccg}},
      {"ny", {Source::hpccg}},
      {"nz", {Source::hpccg}},
      {"n", {Source::laplacian}},
      {"degree", {Source::laplacian}},
      {"shift", {Source::laplacian}},
      {"seed", s == Solver::cg ? std::vector<Source>{Source::laplacian} : any},
      {"no-symmetry-check", {Source::matrix, Source::hdf5}}};
  for (const auto& [option, sources] : rules) {
    if (!p.given(option) || std::find(sources.begin(), sources.end(), src) != sources.end()) continue;
    std::vector<std::string> names;
    for (Source x : sources) names.push_back(source_text(x));
    throw_invalid(option_name(s, std::string("--") + option),
                  "applies to " + join_names(names, " or ") + ", not to " + source_text(src));
  }
}

void check_positive_size(Solver s, const char* option, int v) {
  if (v < 1) throw_invalid(option_name(s, option), std::to_string(v) + " is not a positive size");
}

void check_grid(ProblemSpec& spec, const ProblemCli& p, Solver s) {
  check_positive_size(s, "--nx", p.nx);
  check_positive_size(s, "--ny", p.ny);
  check_positive_size(s, "--nz", p.nz);
  const double rows = static_cast<double>(p.nx) * p.ny * p.nz;
  if (rows > INT_MAX)
    throw_invalid(option_name(s, "--nx"), strf("grid %d x %d x %d has %.0f rows, more than %d", p.nx, p.ny,
                                                      p.nz, rows, INT_MAX));
  spec.nx = p.nx;
  spec.ny = p.ny;
  spec.nz = p.nz;
  spec.n = static_cast<std::size_t>(rows);
}

void check_laplacian(ProblemSpec& spec, const ProblemCli& p, Solver s) {
  const double n = parse_double(p.n, option_name(s, "--n"));
  if (!(n == std::floor(n)) || n < 2 || n > INT_MAX)
    throw_invalid(option_name(s, "--n"), "'" + p.n + "' is not a whole number of vertices in [2, " +
                                             std::to_string(INT_MAX) + "]");
  if (!(p.degree > 0) || !(p.degree <= n - 1))
    throw_invalid(option_name(s, "--degree"),
                  strf("mean degree %g is outside (0, n - 1 = %.0f]", p.degree, n - 1));
  if (!(p.shift >= 0) || !std::isfinite(p.shift))
    throw_invalid(option_name(s, "--shift"), strf("%g is not a nonnegative finite number", p.shift));
  if (s == Solver::cg && !(p.shift > 0))
    throw_invalid(option_name(s, "--problem laplacian"),
                  "a graph Laplacian is singular (L 1 = 0), so CG has no unique solution to find: give "
                  "--shift s > 0 to solve (L + s I) x = b");
  spec.n = static_cast<std::size_t>(n);
  spec.degree = p.degree;
  spec.shift = p.shift;
}

OperatorKind parse_operator(const std::string& name, Solver s, Source src) {
  if (name == "csr") return OperatorKind::csr;
  if (name == "dense") return OperatorKind::dense;
  if (name != "stencil")
    throw_invalid(option_name(s, "--operator"), "unknown operator '" + name + "' (known: csr, stencil, dense)");
  if (src != Source::hpccg)
    throw_invalid(option_name(s, "--operator"),
                  std::string("stencil is HPCCG's 27-point stencil: only for --problem hpccg, not for ") +
                      source_text(src));
  return OperatorKind::stencil;
}

constexpr std::size_t max_dense = 5000;

void check_dense_size(Solver s, std::size_t n) {
  if (n > max_dense)
    throw_invalid(option_name(s, "--operator"), strf("dense: n = %zu exceeds %zu (the matrix is stored as "
                                                            "n^2 doubles); use csr",
                                                            n, max_dense));
}

// What a generated problem needs, from its options, before it is built (files are checked
// by their readers): per row, HPCCG's 27-point CSR about 400 bytes (measured: the matrix's
// 324 and CG's vectors), matrix-free 64 (the vectors); the graph Laplacian 32 bytes per
// stored entry (building and holding it) and 64 a row; dense 8 n^2 more.
void check_problem_memory(const ProblemSpec& spec, const ProblemCli& p, Solver s) {
  if (spec.source != Source::hpccg && spec.source != Source::laplacian) return;
  const double n = static_cast<double>(spec.n);
  double bytes = 64 * n;
  if (spec.op == OperatorKind::dense) bytes += 8 * n * n;
  else if (spec.source == Source::laplacian) bytes += 32 * n * (spec.degree + 1);
  else if (spec.op == OperatorKind::csr) bytes += 336 * n;
  const std::string what = spec.source == Source::hpccg
                               ? strf("the %d x %d x %d grid (%s operator)", p.nx, p.ny, p.nz, p.op.c_str())
                               : strf("the Laplacian of %.0f vertices of mean degree %g", n, spec.degree);
  detail::check_memory(option_name(s, spec.source == Source::hpccg ? "--nx" : "--n"), what, bytes);
}

}  // namespace

ProblemSpec make_problem_spec(const ProblemCli& p, Solver s) {
  ProblemSpec spec;
  spec.source = choose_source(p, s);
  check_applies(p, s, spec.source);
  if (spec.source == Source::hpccg) check_grid(spec, p, s);
  if (spec.source == Source::laplacian) check_laplacian(spec, p, s);
  spec.seed = static_cast<std::uint64_t>(p.seed);
  spec.op = parse_operator(p.op, s, spec.source);
  if (spec.op == OperatorKind::dense && spec.n > 0) check_dense_size(s, spec.n);
  check_problem_memory(spec, p, s);
  spec.matrix = p.matrix;
  spec.hdf5 = p.hdf5;
  spec.rhs = p.rhs;
  spec.x0 = p.x0;
  const std::vector<std::pair<std::string, const std::string*>> files = {
      {"matrix", &p.matrix}, {"hdf5", &p.hdf5}, {"rhs", &p.rhs}, {"x0", &p.x0}};
  for (const auto& [option, value] : files)
    if (p.given(option) && value->empty()) throw_invalid(option_name(s, "--" + option), "empty file name");
  spec.check_symmetry = !p.no_symmetry_check;
  return spec;
}

namespace {

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
  std::vector<double> tolerances;
  for (int k = first; k <= last; ++k) tolerances.push_back(std::strtod(("1e" + std::to_string(k)).c_str(), nullptr));
  return tolerances;
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

void check_output(const OutputCli& o, Solver s) {
  if (o.progress < 0) throw_invalid(option_name(s, "--progress"), std::to_string(o.progress) + " is negative");
  if (o.levels && o.output.empty())
    throw_invalid(option_name(s, "--levels"), "the maps are written to the HDF5 file: give --output FILE");
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

namespace {

// A + s I for a matrix that stores its whole diagonal.
void add_shift(const CsrMatrix& A, double shift) {
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  for (std::size_t i = 0; i < row_map.extent(0) - 1; ++i)
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
      if (static_cast<std::size_t>(cols(k)) == i) values(k) += shift;
  Kokkos::deep_copy(A.values, values);
}

Kokkos::View<double**, Kokkos::LayoutRight> dense_of(const CsrMatrix& A) {
  const auto n = static_cast<std::size_t>(A.numRows());
  Kokkos::View<double**, Kokkos::LayoutRight> D("ebla dense A", n, n);
  auto h = Kokkos::create_mirror_view(D);
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k) h(i, cols(k)) += values(k);
  Kokkos::deep_copy(D, h);
  return D;
}

Vector apply(const AnyOperator& op, ConstVector x, std::size_t n) {
  Vector y("ebla A x", n);
  std::visit([&](const auto& A) { A.apply(x, y); }, op);
  return y;
}

Vector ones(std::size_t n) {
  Vector v("ebla ones", n);
  Kokkos::deep_copy(v, 1.0);
  return v;
}

void set_solution(Problem& p, Vector x, const std::string& source) {
  p.x_exact = x;
  p.x_exact_source = source;
}

// b = (L + s I) 1 = s 1 is an eigenvector, which CG solves in one step: the Laplacian's
// right-hand side comes from a random x* with entries of order 1 instead.
Vector laplacian_solution(std::size_t n, std::uint64_t seed) {
  Vector x = random_unit_vector(n, seed);
  const double scale = std::sqrt(static_cast<double>(n));
  Kokkos::parallel_for(
      "ebla scale", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const std::size_t i) { x(i) *= scale; });
  return x;
}

bool all_zero(ConstVector v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (h(i) != 0) return false;
  return true;
}

void check_length(Solver s, const char* option, const std::string& file, ConstVector v, std::size_t n) {
  if (v.extent(0) != n)
    throw_invalid(option_name(s, option), strf("'%s' has %zu entries, but A has %zu rows", file.c_str(),
                                                      static_cast<std::size_t>(v.extent(0)), n));
}

// Symmetry: required by CG (bad input otherwise), a warning for the power method.
void check_symmetry(const CsrMatrix& A, const std::string& file, const char* option, Solver s) {
  try {
    check_symmetric(A, "'" + file + "'");
  } catch (const InvalidArgument& e) {
    if (s == Solver::cg)
      throw_invalid(option_name(s, option), std::string(e.what()) +
                                                "; CG needs a symmetric positive definite matrix "
                                                "(--no-symmetry-check skips this test)");
    spdlog::warn("{}; the power method still runs, but its Rayleigh quotient converges more slowly", e.what());
  }
}

CsrMatrix read_source_matrix(const ProblemSpec& spec, Problem& p, Solver s) {
  if (spec.source == Source::laplacian) {
    CsrMatrix A = graph_laplacian(spec.n, spec.degree, spec.seed);
    if (spec.shift > 0) add_shift(A, spec.shift);
    p.description = strf("graph Laplacian L of G(n = %zu, mean degree %g), seed %llu%s", spec.n, spec.degree,
                                static_cast<unsigned long long>(spec.seed),
                                spec.shift > 0 ? strf(", plus %g I", spec.shift).c_str() : "");
    return A;
  }
  const bool mm = spec.source == Source::matrix;
  const char* option = mm ? "--matrix" : "--hdf5";
  const std::string& file = mm ? spec.matrix : spec.hdf5;
  CsrMatrix A = under_option(option_name(s, option),
                             [&] { return mm ? read_matrix_market(file) : read_hdf5_matrix(file); });
  if (A.numRows() != A.numCols())
    throw_invalid(option_name(s, option), strf("'%s': A is %zu x %zu, not square", file.c_str(),
                                                      static_cast<std::size_t>(A.numRows()),
                                                      static_cast<std::size_t>(A.numCols())));
  if (spec.check_symmetry) check_symmetry(A, file, option, s);
  p.description = (mm ? "Matrix Market file " : "HDF5 file ") + file;
  return A;
}

void set_csr_operator(Problem& p, const CsrMatrix& A, OperatorKind op, Solver s) {
  p.n = A.numRows();
  p.nnz = A.nnz();
  if (op == OperatorKind::dense) {
    check_dense_size(s, p.n);
    p.op = DenseOperator(dense_of(A));
  } else {
    p.op = CsrOperator(A);
  }
}

void load_hpccg(const ProblemSpec& spec, Problem& p, Solver s) {
  p.nx = spec.nx;
  p.ny = spec.ny;
  p.nz = spec.nz;
  p.description = strf("HPCCG 27-point stencil on a %d x %d x %d grid", spec.nx, spec.ny, spec.nz);
  if (spec.op == OperatorKind::stencil) {
    const StencilOperator A(spec.nx, spec.ny, spec.nz);
    p.n = A.size();
    p.nnz = A.nonzeros();
    p.op = A;
    if (s == Solver::cg) p.b = hpccg_rhs(spec.nx, spec.ny, spec.nz);
  } else {
    const HpccgProblem h = hpccg_problem(spec.nx, spec.ny, spec.nz);
    set_csr_operator(p, h.A, spec.op, s);
    if (s == Solver::cg) p.b = h.b;
  }
  if (s == Solver::cg) set_solution(p, ones(p.n), "1");
  p.b_source = "A 1 (HPCCG)";
}

Vector read_vector(const std::string& file, const char* option, Solver s) {
  return under_option(option_name(s, option), [&] { return read_matrix_market_vector(file); });
}

Vector read_hdf5_optional(const std::string& file, const char* dataset, Solver s) {
  return under_option(option_name(s, "--hdf5"), [&] { return read_hdf5_vector(file, dataset, true); });
}

void load_rhs(const ProblemSpec& spec, Problem& p, Solver s) {
  if (!spec.rhs.empty()) {
    p.b = read_vector(spec.rhs, "--rhs", s);
    check_length(s, "--rhs", spec.rhs, p.b, p.n);
    p.b_source = "file " + spec.rhs;
    set_solution(p, Vector(), "");
    return;
  }
  if (p.b.extent(0) > 0) return;  // hpccg
  if (spec.source == Source::hdf5) {
    p.b = read_hdf5_optional(spec.hdf5, "b", s);
    if (p.b.extent(0) > 0) {
      check_length(s, "--hdf5", spec.hdf5 + "/b", p.b, p.n);
      p.b_source = spec.hdf5 + " /b";
      return;
    }
  }
  if (spec.source == Source::laplacian)
    set_solution(p, laplacian_solution(p.n, spec.seed), "sqrt(n) times the random unit vector of --seed");
  else
    set_solution(p, ones(p.n), "1");
  p.b = apply(p.op, p.x_exact, p.n);
  p.b_source = p.x_exact_source == "1" ? "A 1" : "A x*";
}

// The start vector from a file, if one is given: --x0, else /x0 of --hdf5.
bool read_start(const ProblemSpec& spec, Problem& p, Solver s) {
  if (!spec.x0.empty()) {
    p.x0 = read_vector(spec.x0, "--x0", s);
    check_length(s, "--x0", spec.x0, p.x0, p.n);
    p.x0_source = "file " + spec.x0;
    return true;
  }
  if (spec.source != Source::hdf5) return false;
  p.x0 = read_hdf5_optional(spec.hdf5, "x0", s);
  if (p.x0.extent(0) == 0) return false;
  check_length(s, "--hdf5", spec.hdf5 + "/x0", p.x0, p.n);
  p.x0_source = spec.hdf5 + " /x0";
  return true;
}

void load_start(const ProblemSpec& spec, Problem& p, Solver s) {
  if (read_start(spec, p, s)) {
    if (s == Solver::power && all_zero(p.x0))
      throw_invalid(option_name(s, spec.x0.empty() ? "--hdf5" : "--x0"),
                    "the start vector (" + p.x0_source + ") is zero: the power method needs a nonzero start");
  } else if (s == Solver::power) {
    p.x0 = random_unit_vector(p.n, spec.seed);
    p.x0_source = strf("random unit vector, seed %llu", static_cast<unsigned long long>(spec.seed));
  } else {
    p.x0 = Vector("ebla x0", p.n);
    p.x0_source = "0";
  }
}

const char* operator_text(OperatorKind k) {
  return k == OperatorKind::csr ? "csr" : k == OperatorKind::stencil ? "stencil" : "dense";
}

}  // namespace

Problem load_problem(const ProblemSpec& spec, Solver s) {
  Problem p;
  const char* names[] = {"hpccg", "laplacian", "matrix", "hdf5"};
  p.name = names[static_cast<int>(spec.source)];
  p.operator_name = operator_text(spec.op);
  if (spec.source == Source::hpccg) {
    load_hpccg(spec, p, s);
  } else {
    const CsrMatrix A = read_source_matrix(spec, p, s);
    if (A.numRows() == 0) throw_invalid(option_name(s, source_text(spec.source)), "A is empty (0 x 0)");
    set_csr_operator(p, A, spec.op, s);
  }
  if (s == Solver::cg) load_rhs(spec, p, s);
  load_start(spec, p, s);
  return p;
}

double max_difference(ConstVector x, ConstVector y) {
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  double m = 0;
  for (std::size_t i = 0; i < hx.extent(0); ++i) m = std::max(m, std::fabs(hx(i) - hy(i)));
  return m;
}

// ---- per-iteration series -----------------------------------------------------------

void FractionSeries::add(const DotRecord* record) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t l = 0; l < rungs; ++l)
    // an exact dot product of the automatic policy records binary64 alone: the other rungs 0
    values.push_back(record == nullptr ? nan : l < record->fraction.size() ? record->fraction[l] : 0.0);
  zero.push_back(record != nullptr ? record->zero_fraction : nan);
}

std::vector<double> FractionSeries::mean() const {
  std::vector<double> sum(rungs, 0.0);
  std::size_t count = 0;
  for (std::size_t r = 0; r < rows(); ++r) {
    if (std::isnan(zero[r])) continue;
    for (std::size_t l = 0; l < rungs; ++l) sum[l] += values[r * rungs + l];
    ++count;
  }
  for (double& v : sum) v = count ? v / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

double FractionSeries::zero_mean() const {
  double sum = 0;
  std::size_t count = 0;
  for (double z : zero)
    if (!std::isnan(z)) {
      sum += z;
      ++count;
    }
  return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

void LevelSeries::add(const std::vector<std::uint8_t>& map) {
  if (map.empty()) values.insert(values.end(), n, std::uint8_t{255});
  else values.insert(values.end(), map.begin(), map.end());
  ++rows;
}

void write_fractions(const Hdf5Group& g, const std::string& name, const FractionSeries& s,
                     const std::vector<std::string>& rungs) {
  g.dataset(name + "_fraction", s.values, s.rows(), s.rungs)
      .attribute("rungs", join_names(rungs))
      .attribute("meaning", "fraction of the n components computed at each rung; NaN: no such dot product");
  g.dataset(name + "_zero_fraction", s.zero).attribute("meaning", "fraction of components with a zero product");
}

void write_levels(const Hdf5Group& g, const std::string& name, const LevelSeries& s,
                  const std::vector<std::string>& rungs) {
  g.dataset(name + "_levels", s.values, s.rows, s.n)
      .attribute("rungs", join_names(rungs))
      .attribute("meaning", "rung index of each component (0 = first rung); 255: zero product or no dot product");
}

void write_problem_attributes(const Hdf5Object& g, const Problem& p, Solver s) {
  g.attribute("creator", std::string("ebla ") + solver_name(s))
      .attribute("ebla_version", EBLA_VERSION)
      .attribute("command_line", command_line())
      .attribute("problem", p.name)
      .attribute("problem_description", p.description)
      .attribute("operator", p.operator_name)
      .attribute("n", p.n)
      .attribute("nnz", p.nnz)
      .attribute("x0", p.x0_source);
  if (s == Solver::cg) g.attribute("b", p.b_source).attribute("x_exact", p.x_exact_source);
  if (p.name == "hpccg") g.attribute("nx", p.nx).attribute("ny", p.ny).attribute("nz", p.nz);
}

void write_dot_attributes(const Hdf5Object& g, const DotPolicy& policy, const std::vector<std::string>& rungs) {
  const char* kinds[] = {"exact", "qdot", "fixed", "auto"};
  g.attribute("dot", kinds[static_cast<int>(policy.kind)]).attribute("dot_policy", policy.to_string());
  g.attribute("rungs", join_names(rungs));
  if (policy.kind == DotKind::qdot)
    g.attribute("qdot_tolerance", policy.qdot.tolerance).attribute("qdot_policy", to_string(policy.qdot.policy));
  if (policy.kind == DotKind::fixed) g.attribute("format", format_name(policy.format));
}

void add_problem_json(JsonObject& j, const Problem& p) {
  j.field("problem", p.name).field("description", p.description).field("operator", p.operator_name);
  j.field("n", p.n).field("nnz", p.nnz);
  if (p.name == "hpccg") j.field("nx", p.nx).field("ny", p.ny).field("nz", p.nz);
}

void add_dot_json(JsonObject& j, const DotPolicy& policy, const std::vector<std::string>& rungs) {
  const char* kinds[] = {"exact", "qdot", "fixed", "auto"};
  j.field("dot", kinds[static_cast<int>(policy.kind)]).field("dot_policy", policy.to_string());
  if (policy.kind == DotKind::qdot)
    j.field("qdot_tolerance", policy.qdot.tolerance).field("qdot_policy", to_string(policy.qdot.policy));
  else
    j.null("qdot_tolerance").null("qdot_policy");
  j.field("rungs", rungs);
}

void print_events(const std::vector<SolverEvent>& events) {
  if (events.empty()) return;
  constexpr std::size_t shown = 5;
  std::printf("events              %zu (safeguards and repeated dot products)%s\n", events.size(),
              events.size() > shown ? strf(", the first %zu:", shown).c_str() : ":");
  for (std::size_t e = 0; e < events.size() && e < shown; ++e)
    std::printf("  iteration %d: %s\n", events[e].iteration, events[e].what.c_str());
}

void print_mix(const std::vector<std::string>& rungs,
               const std::vector<std::pair<std::string, const FractionSeries*>>& rows) {
  bool zeros = false;
  for (const auto& row : rows) zeros = zeros || row.second->zero_mean() > 0;
  std::vector<std::string> header = {""};
  header.insert(header.end(), rungs.begin(), rungs.end());
  if (zeros) header.push_back("zero");
  TextTable t(header);
  for (const auto& [label, series] : rows) {
    std::vector<std::string> cells = {label};
    for (double f : series->mean()) cells.push_back(percent_text(f));
    if (zeros) cells.push_back(percent_text(series->zero_mean()));
    t.add(cells);
  }
  t.print("    ");
}

double largest_where(const std::vector<double>& tolerances, const std::vector<bool>& ok) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < tolerances.size(); ++i)
    if (ok[i] && !(tolerances[i] <= best)) best = tolerances[i];
  return best;
}

bool progress_due(int k, int every) { return every > 0 && k % every == 0; }

// ---- --experiment auto --------------------------------------------------------------

AutoReport::AutoReport(const std::string& problem_name, const Problem& p, std::string stop_rule, std::string ref,
                       const char* dot_a, const char* dot_b)
    : name(problem_name.empty() ? p.name : problem_name), description(p.description), setting(std::move(stop_rule)),
      reference(std::move(ref)), dots{dot_a, dot_b} {}

void AutoReport::add(const std::string& label, SolverStatus run_status, bool ok, int iterations, double tolerance,
                     const DotMix& a, const DotMix& b, double extra_value) {
  PolicyOutcome o;
  o.tolerance = tolerance;
  o.iterations = iterations;
  o.ok = ok;
  o.below = (a.below + b.below) / 2;
  o.bytes = (a.bytes + b.bytes) / 2;
  labels.push_back(label);
  status.push_back(to_string(run_status));
  outcomes.push_back(o);
  mix[0].push_back(a);
  mix[1].push_back(b);
  extra.push_back(extra_value);
}

std::vector<PolicyOutcome> AutoReport::fixed() const {
  return outcomes.size() < 2 ? std::vector<PolicyOutcome>{}
                             : std::vector<PolicyOutcome>(outcomes.begin() + 1, outcomes.end() - 1);
}

void AutoReport::judge() { verdict = judge_automatic(outcomes.front(), fixed(), outcomes.back(), slack); }

namespace {

std::string met_text(bool met) { return met ? "met" : "NOT met"; }

// "1e-06 (41 iterations, 90.1%)" for fixed run i, "none" for -1.
std::string fixed_text(const AutoReport& r, int i) {
  if (i < 0) return "none";
  const PolicyOutcome& f = r.outcomes[i + 1];
  return strf("%s (%d iterations, %s%%)", tolerance_text(f.tolerance).c_str(), f.iterations,
              percent_text(f.below).c_str());
}

}  // namespace

void print_auto_report(const AutoReport& r) {
  std::printf("%s: %s\n  %s\n", r.name.c_str(), r.description.c_str(), r.setting.c_str());
  std::vector<std::string> header = {"dots", "iterations", "vs " + r.reference, "status", r.dots[0] + " <b64 %",
                                     r.dots[1] + " <b64 %", "bytes vs exact"};
  if (!r.extra_name.empty()) header.push_back(r.extra_name);
  TextTable t(header);
  const int reference = r.outcomes.front().iterations;
  for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
    const PolicyOutcome& o = r.outcomes[i];
    std::vector<std::string> row = {r.labels[i], std::to_string(o.iterations),
                                    strf("%.3f", reference > 0 ? static_cast<double>(o.iterations) / reference : 1.0),
                                    r.status[i], percent_text(r.mix[0][i].below), percent_text(r.mix[1][i].below),
                                    strf("%.3f", o.bytes)};
    if (!r.extra_name.empty()) row.push_back(strf("%.1e", r.extra[i]));
    t.add(row);
  }
  t.print("  ");
  const AutoVerdict& v = r.verdict;
  const PolicyOutcome& a = r.outcomes.back();
  std::printf("  auto: %d iterations against %d of %s, %.3fx (target <= %.2fx%s): %s\n", a.iterations,
              reference, r.reference.c_str(), v.iteration_ratio, r.slack,
              r.extra_name.empty() ? "" : " and the eigenvalue within tau", met_text(v.iterations_met).c_str());
  std::printf("  auto: %s%% below binary64 (mean of both dot products); the best fixed tolerance with the %d "
              "iterations of %s: %s: %s\n",
              percent_text(a.below).c_str(), reference, r.reference.c_str(), fixed_text(r, v.same_count).c_str(),
              met_text(v.share_met).c_str());
  std::printf("        (with at most auto's %d iterations: %s)\n", a.iterations, fixed_text(r, v.within).c_str());
  print_events(r.events);
  std::printf("\n");
}

JsonObject auto_report_json(const AutoReport& r, const std::vector<double>& tolerances) {
  std::vector<double> iterations, below, bytes, extra;
  for (const PolicyOutcome& f : r.fixed()) {
    iterations.push_back(f.iterations);
    below.push_back(f.below);
    bytes.push_back(f.bytes);
  }
  const PolicyOutcome& a = r.outcomes.back();
  JsonObject j;
  j.field("experiment", "auto").field("problem", r.name).field("setting", r.setting);
  j.field("exact_iterations", r.outcomes.front().iterations).field("exact_status", r.status.front());
  j.field("tolerances", tolerances).field("iterations", iterations).field("below_binary64", below);
  j.field("bytes", bytes);
  if (!r.extra_key.empty()) j.field(r.extra_key, std::vector<double>(r.extra.begin() + 1, r.extra.end() - 1));
  j.field("auto_iterations", a.iterations).field("auto_status", r.status.back());
  j.field("auto_below_binary64", a.below).field("auto_bytes", a.bytes).field("auto_events", r.events.size());
  if (!r.extra_key.empty()) j.field("auto_" + r.extra_key, r.extra.back());
  j.field("iteration_ratio", r.verdict.iteration_ratio).field("iterations_met", r.verdict.iterations_met);
  for (const auto& [key, i] : {std::pair<const char*, int>{"best_fixed_same_iterations", r.verdict.same_count},
                               {"best_fixed_within_auto_iterations", r.verdict.within}}) {
    if (i >= 0) j.field(key, r.outcomes[i + 1].tolerance);
    else j.null(key);
  }
  j.field("share_met", r.verdict.share_met);
  return j;
}

void write_auto_summary(const Hdf5Group& g, const AutoReport& r, const std::vector<double>& tolerances) {
  std::vector<std::int64_t> iterations;
  std::vector<double> below, bytes;
  for (const PolicyOutcome& f : r.fixed()) {
    iterations.push_back(f.iterations);
    below.push_back(f.below);
    bytes.push_back(f.bytes);
  }
  const PolicyOutcome& a = r.outcomes.back();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> groups;  // the fixed runs' groups, as the commands name them
  for (double t : tolerances) groups.push_back(sweep_group_name(t));
  g.attribute("name", r.name).attribute("setting", r.setting).attribute("groups", join_names(groups));
  g.dataset("tolerance", tolerances);
  g.dataset("iterations", iterations);
  g.dataset("below_binary64", below).attribute("meaning", "mean share of components below binary64 (dot_mix.hpp)");
  g.dataset("bytes", bytes).attribute("meaning", "modelled bytes read by the dot products / exact (dot_mix.hpp)");
  g.attribute("exact_iterations", r.outcomes.front().iterations).attribute("auto_iterations", a.iterations);
  g.attribute("auto_below_binary64", a.below).attribute("auto_bytes", a.bytes);
  g.attribute("iteration_ratio", r.verdict.iteration_ratio);
  g.attribute("iterations_met", std::int64_t{r.verdict.iterations_met});
  g.attribute("share_met", std::int64_t{r.verdict.share_met});
  g.attribute("best_fixed_same_iterations", r.verdict.same_count >= 0 ? r.outcomes[r.verdict.same_count + 1].tolerance : nan);
  g.attribute("best_fixed_within_auto_iterations", r.verdict.within >= 0 ? r.outcomes[r.verdict.within + 1].tolerance : nan);
}

bool check_experiment(const std::string& experiment, const ProblemCli& p, const DotCli& d, const OutputCli& o,
                      Solver s) {
  if (experiment != "auto")
    throw_invalid(option_name(s, "--experiment"), "unknown experiment '" + experiment + "' (known: auto)");
  for (const char* name : {"dot", "qdot-tol", "format", "qdot-collectives"})
    if (d.given(name))
      throw_invalid(option_name(s, std::string("--") + name),
                    "--experiment auto chooses the dot products itself (exact, each tolerance of the sweep, auto)");
  if (d.qdot_policy != "budget")
    throw_invalid(option_name(s, "--qdot-policy"), d.qdot_policy +
                                                       ": --experiment auto compares with the budget policy, which "
                                                       "auto uses");
  if (o.levels) throw_invalid(option_name(s, "--levels"), "is not recorded by --experiment auto");
  return p.given("problem") || p.given("matrix") || p.given("hdf5");
}

DotSpec experiment_dot_spec(const DotCli& d, Solver s) {
  DotSpec spec;  // the budget policy (check_experiment), exact for the reference
  if (!d.ladder.empty())
    spec.ladder = under_option(option_name(s, "--ladder"), [&] { return qdot_ladder_by_names(d.ladder); });
  spec.sweep = parse_sweep(d.given("sweep-qdot-tol") ? d.sweep : "1e-12:1e-3", s);  // default: 1e-12, ..., 1e-3
  spec.policy = DotPolicy::exact();
  spec.rungs = spec.at(1).level_names();
  return spec;
}

std::string set_matrix(const std::string& dir, const std::string& name, Solver s) {
  const std::string path = dir + "/" + name + ".mtx";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr)
    throw_invalid(option_name(s, "--matrix-dir"), "cannot open '" + path + "' (the matrices of data/matrices)");
  std::fclose(f);
  return path;
}

void run_auto_sequence(AutoReport& r, const DotSpec& dots, Solver s, const AutoRun& run, const Hdf5Group* out) {
  run("exact", DotPolicy::exact(), 0, "exact");
  for (double tol : dots.sweep) run(tolerance_text(tol), dots.at(tol), tol, sweep_group_name(tol));
  r.events = run("auto", dots.automatic(s), 0, "auto");
  r.judge();
  if (out != nullptr) write_auto_summary(*out, r, dots.sweep);
}

int run_auto_experiment(std::size_t problems, const std::function<AutoReport(std::size_t, const Hdf5Group*)>& study,
                        const DotSpec& dots, bool json, Hdf5Writer* out, Solver s) {
  if (processes().ranks > 1) throw_invalid(option_name(s, "--experiment"), "runs on one process");
  int met = 0, code = exit_converged;
  std::vector<std::string> groups;
  for (std::size_t i = 0; i < problems; ++i) {
    std::unique_ptr<Hdf5Group> g;
    if (out != nullptr) {
      groups.push_back("problem_" + std::to_string(i));
      g = std::make_unique<Hdf5Group>(out->root().group(groups.back()));
    }
    const AutoReport r = study(i, g.get());
    met += r.verdict.met() ? 1 : 0;
    if (r.status.front() != to_string(SolverStatus::converged)) code = exit_not_converged;
    if (json) std::printf("%s\n", auto_report_json(r, dots.sweep).field("command", solver_name(s)).text().c_str());
    else print_auto_report(r);
  }
  if (out != nullptr) out->root().attribute("mode", "experiment_auto").attribute("groups", join_names(groups));
  if (!json)
    std::printf("auto met the target (iterations and share) on %d of %zu problem%s\n", met, problems,
                problems == 1 ? "" : "s");
  return code;
}

}  // namespace ebla::cli

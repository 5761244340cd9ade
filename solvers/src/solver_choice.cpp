// A solver run as a user states it, checked into specs (see solver_choice.hpp).
#include <ebla/solvers/solver_choice.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>
#include <ebla/solvers/dot_rule.hpp>
#include <ebla/solvers/sweep.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace ebla {

namespace {

std::string join(const std::vector<std::string>& names, const char* separator) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? separator : "") + names[i];
  return s;
}

std::string default_name(const char* choice, const std::string& option) {
  return std::string("ebla::") + choice + (option.empty() ? "" : " " + option);
}

// ---- the problem --------------------------------------------------------------------

const char* source_text(ProblemSource s) {
  switch (s) {
    case ProblemSource::hpccg: return "--problem hpccg";
    case ProblemSource::laplacian: return "--problem laplacian";
    case ProblemSource::matrix: return "--matrix";
    case ProblemSource::hdf5: return "--hdf5";
    case ProblemSource::diffusion: return "--problem diffusion";
  }
  return "?";
}

ProblemSource choose_source(const ProblemChoice& p, ProblemUse use) {
  std::vector<std::string> chosen;
  for (const char* o : {"problem", "matrix", "hdf5"})
    if (p.was_given(o)) chosen.push_back(std::string("--") + o);
  if (chosen.size() > 1)
    throw_invalid(p.named(""), join(chosen, " and ") + " both choose the matrix: give one of --problem, --matrix, --hdf5");
  if (p.was_given("matrix")) return ProblemSource::matrix;
  if (p.was_given("hdf5")) return ProblemSource::hdf5;
  const std::string name = p.problem.empty() ? (use == ProblemUse::cg ? "hpccg" : "laplacian") : p.problem;
  if (name == "hpccg") return ProblemSource::hpccg;
  if (name == "laplacian") return ProblemSource::laplacian;
  if (name == "diffusion") return ProblemSource::diffusion;
  throw_invalid(p.named("--problem"),
                "unknown problem '" + name + "' (known: hpccg, laplacian, diffusion; or --matrix FILE, --hdf5 FILE)");
}

// Options that only make sense for some sources.
void check_applies(const ProblemChoice& p, ProblemUse use, ProblemSource src) {
  using S = ProblemSource;
  const std::vector<S> any = {S::hpccg, S::diffusion, S::laplacian, S::matrix, S::hdf5};
  const std::vector<S> grids = {S::hpccg, S::diffusion};
  const std::vector<std::pair<const char*, std::vector<S>>> rules = {
      {"nx", grids},          {"ny", grids},          {"nz", grids},
      {"n", {S::laplacian}},  {"degree", {S::laplacian}}, {"shift", {S::laplacian}},
      {"seed", use == ProblemUse::cg ? std::vector<S>{S::diffusion, S::laplacian} : any},
      {"no-symmetry-check", {S::matrix, S::hdf5}}};
  for (const auto& [option, sources] : rules) {
    if (!p.was_given(option) || std::find(sources.begin(), sources.end(), src) != sources.end()) continue;
    std::vector<std::string> names;
    for (S x : sources) names.push_back(source_text(x));
    throw_invalid(p.named(std::string("--") + option),
                  "applies to " + join(names, " or ") + ", not to " + source_text(src));
  }
}

// n: a whole number of vertices, 1e4 accepted.
std::size_t vertices(const ProblemChoice& p) {
  const double n = parse_double(p.n, p.named("--n"));
  if (!(n == std::floor(n)) || n < 2 || n > INT_MAX)
    throw_invalid(p.named("--n"), "'" + p.n + "' is not a whole number of vertices in [2, " + std::to_string(INT_MAX) + "]");
  return static_cast<std::size_t>(n);
}

OperatorKind operator_kind(const ProblemChoice& p, ProblemSource src) {
  if (p.op == "csr") return OperatorKind::csr;
  if (p.op == "dense") return OperatorKind::dense;
  if (p.op != "stencil")
    throw_invalid(p.named("--operator"), "unknown operator '" + p.op + "' (known: csr, stencil, dense)");
  if (src != ProblemSource::hpccg)
    throw_invalid(p.named("--operator"),
                  std::string("stencil is HPCCG's 27-point stencil: only for --problem hpccg, not for ") + source_text(src));
  return OperatorKind::stencil;
}

// ---- the dot products ---------------------------------------------------------------

// The exponent k of 10^k = v, written as a decimal literal; throws otherwise.
int decade_of(const std::string& text, const std::string& what) {
  const double v = parse_double(text, what);
  if (v > 0 && std::isfinite(v)) {
    const long k = std::lround(std::log10(v));
    if (std::strtod(("1e" + std::to_string(k)).c_str(), nullptr) == v) return static_cast<int>(k);
  }
  throw_invalid(what, "'" + text + "' is not a power of ten (like 1e-16 or 1000)");
}

// The kind of dot product: dot, or implied by qdot-tol, format, sweep-qdot-tol.
std::string dot_kind(const DotChoice& d) {
  std::vector<std::pair<std::string, std::string>> implied;  // (option, kind)
  if (d.was_given("qdot-tol")) implied.emplace_back("--qdot-tol", "qdot");
  if (d.was_given("format")) implied.emplace_back("--format", "fixed");
  if (d.was_given("sweep-qdot-tol")) implied.emplace_back("--sweep-qdot-tol", "qdot");
  if (d.was_given("sweep-qdot-tol") && d.was_given("qdot-tol"))
    throw_invalid(d.named("--qdot-tol"), "a sweep (--sweep-qdot-tol) sets the tolerance of each run");
  std::string kind = d.was_given("dot") ? d.dot : "";
  if (!kind.empty() && kind != "exact" && kind != "qdot" && kind != "fixed")
    throw_invalid(d.named("--dot"), "unknown dot product '" + kind + "' (known: exact, qdot, fixed)");
  for (const auto& [option, k] : implied) {
    if (kind.empty()) kind = k;
    if (kind != k)
      throw_invalid(d.named(option), "implies --dot " + k + ", which contradicts " +
                                         (d.was_given("dot") ? "--dot " + d.dot : implied.front().first));
  }
  return kind.empty() ? "exact" : kind;
}

DotPolicy fixed_policy(const DotChoice& d) {
  const std::string option = d.named("--format");
  const Format f = under_option(option, [&] { return format_by_name(d.format); });
  if (f.t >= 53) throw_invalid(option, d.format + " is as precise as double: use --dot exact");
  return under_option(option, [&] { return DotPolicy::fixed(f); });
}

double qdot_tolerance(const DotChoice& d) {
  const double tolerance = parse_double(d.qdot_tol, d.named("--qdot-tol"));
  if (!(tolerance > 0 && std::isfinite(tolerance)))
    throw_invalid(d.named("--qdot-tol"), "'" + d.qdot_tol + "' is not a positive finite tolerance (or auto)");
  return tolerance;
}

void set_ladder(DotSpec& spec, const DotChoice& d) {
  if (!d.ladder.empty()) spec.ladder = under_option(d.named("--ladder"), [&] { return qdot_ladder_by_names(d.ladder); });
}

}  // namespace

std::string ProblemChoice::named(const std::string& option) const {
  return name ? name(option) : default_name("ProblemChoice", option);
}

std::string DotChoice::named(const std::string& option) const {
  return name ? name(option) : default_name("DotChoice", option);
}

ProblemSpec make_problem_spec(const ProblemChoice& p, ProblemUse use) {
  ProblemSpec spec;
  spec.name_field = [p](const std::string& field) { return p.named("--" + field); };
  spec.source = choose_source(p, use);
  check_applies(p, use, spec.source);
  spec.nx = p.nx;
  spec.ny = p.ny;
  spec.nz = p.nz;
  if (spec.source == ProblemSource::laplacian) spec.n = vertices(p);
  spec.degree = p.degree;
  spec.shift = p.shift;
  spec.seed = static_cast<std::uint64_t>(p.seed);
  spec.op = operator_kind(p, spec.source);
  spec.matrix = p.matrix;
  spec.hdf5 = p.hdf5;
  spec.rhs = p.rhs;
  spec.x0 = p.x0;
  check_problem_spec(spec, use);
  const std::vector<std::pair<std::string, const std::string*>> files = {
      {"matrix", &p.matrix}, {"hdf5", &p.hdf5}, {"rhs", &p.rhs}, {"x0", &p.x0}};
  for (const auto& [option, value] : files)
    if (p.was_given(option) && value->empty()) throw_invalid(p.named("--" + option), "empty file name");
  spec.check_symmetry = !p.no_symmetry_check;
  return spec;
}

std::vector<double> parse_decade_range(const std::string& text, const std::string& what) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw_invalid(what, "'" + text + "' is not of the form A:B (powers of ten, e.g. 1e-16:1e3)");
  const int first = decade_of(text.substr(0, colon), what);
  const int last = decade_of(text.substr(colon + 1), what);
  if (first > last) throw_invalid(what, "'" + text + "': the first tolerance exceeds the last");
  return decade_tolerances(first, last);
}

DotPolicy DotSpec::at(double tolerance, bool sweep) const {
  QdotOptions o;
  o.tolerance = tolerance;
  o.policy = qdot_policy;
  o.ladder = ladder;
  o.plan_margin = sweep && margin == QdotOptions::automatic_margin ? 0 : margin;
  return DotPolicy::approximate(o);
}

DotPolicy DotSpec::automatic(ProblemUse use) const {
  QdotOptions base;
  base.ladder = ladder;
  base.plan_margin = margin;
  return DotPolicy::automatic(use == ProblemUse::cg ? default_cg_rule() : default_power_rule(), base);
}

DotSpec make_dot_spec(const DotChoice& d, ProblemUse use) {
  DotSpec spec;
  const std::string kind = dot_kind(d);
  for (const char* option : {"qdot-policy", "ladder", "qdot-margin"})
    if (kind != "qdot" && d.was_given(option))
      throw_invalid(d.named(std::string("--") + option),
                    "applies to qdot dot products (--dot qdot, --qdot-tol or --sweep-qdot-tol), not to --dot " + kind);
  spec.qdot_policy = under_option(d.named("--qdot-policy"), [&] { return qdot_policy_by_name(d.qdot_policy); });
  set_ladder(spec, d);
  if (!d.sweep.empty() || d.was_given("sweep-qdot-tol")) spec.sweep = parse_decade_range(d.sweep, d.named("--sweep-qdot-tol"));
  if (d.collectives != 1 && d.collectives != 2)
    throw_invalid(d.named("--qdot-collectives"), std::to_string(d.collectives) + " is not 1 or 2");
  spec.collectives = d.collectives;
  if (d.was_given("qdot-margin") && (d.margin < 0 || d.margin > 64))
    throw_invalid(d.named("--qdot-margin"), std::to_string(d.margin) + " is not in 0..64");
  spec.margin = d.margin;
  const bool automatic = kind == "qdot" && d.qdot_tol == "auto";
  const double tolerance = kind == "qdot" && !automatic ? qdot_tolerance(d) : 0;
  if (automatic && spec.qdot_policy != QdotPolicy::budget)
    throw_invalid(d.named("--qdot-policy"),
                  std::string(to_string(spec.qdot_policy)) + ": --qdot-tol auto relies on the budget policy's guarantee");
  if (kind == "fixed" && d.format.empty()) throw_invalid(d.named("--dot fixed"), "needs --format (e.g. --format bfloat16)");
  if (kind == "exact" || !spec.sweep.empty()) spec.policy = DotPolicy::exact();
  else if (automatic) spec.policy = spec.automatic(use);
  else if (kind == "qdot") spec.policy = spec.at(tolerance, false);
  else spec.policy = fixed_policy(d);
  spec.rungs = spec.sweep.empty() ? spec.policy.level_names() : spec.at(1).level_names();
  return spec;
}

DotSpec experiment_dot_spec(const DotChoice& d) {
  for (const char* name : {"dot", "qdot-tol", "format", "qdot-collectives"})
    if (d.was_given(name))
      throw_invalid(d.named(std::string("--") + name),
                    "--experiment chooses the dot products itself (auto: exact, each tolerance of the sweep and "
                    "auto; preconditioners: exact and auto)");
  if (d.qdot_policy != "budget")
    throw_invalid(d.named("--qdot-policy"),
                  d.qdot_policy + ": --experiment auto compares with the budget policy, which auto uses");
  DotSpec spec;  // the budget policy, exact for the reference
  set_ladder(spec, d);
  spec.sweep = parse_decade_range(d.was_given("sweep-qdot-tol") ? d.sweep : "1e-12:1e-3", d.named("--sweep-qdot-tol"));
  spec.policy = DotPolicy::exact();
  spec.rungs = spec.at(1).level_names();
  return spec;
}

void check_dot_spec(const DotSpec& spec, const DotChoice& names, int ranks) {
  if (spec.margin > 0 && ranks > 1)
    throw_invalid(names.named("--qdot-margin"),
                  "applies on one process: the distributed qdot selects a plan and computes under it every time");
  Vector one("one", 1);
  Kokkos::deep_copy(one, 1.0);
  under_option(names.named("--ladder"), [&] {
    if (!spec.sweep.empty()) dot(spec.at(spec.sweep.front()), one, one);
    else if (spec.policy.kind == DotKind::automatic) dot(spec.at(1), one, one);  // its ladder
    else dot(spec.policy, one, one);
    return 0;
  });
}

}  // namespace ebla

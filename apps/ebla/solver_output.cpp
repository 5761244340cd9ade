// The output of `ebla cg` and `ebla power` (see solver_common.hpp): text tables, JSON
// lines, the HDF5 file's root attributes, and the report of --experiment auto.
#include "solver_common.hpp"

#include "distributed.hpp"
#include "table.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

namespace ebla::cli {

void print_json(const Json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
}

namespace {

// "s_1 s_2 ... (median m)".
std::string seconds_text(const experiments::Sample& v) {
  std::string out;
  for (double s : v.values()) out += fmt::format("{}{:.3g}", out.empty() ? "" : " ", s);
  return out + fmt::format(" (median {:.3g})", v.median());
}

}  // namespace

void add_repeat_json(Json& j, const RepeatSeconds& seconds) {
  j["repeat"] = seconds.call.size();
  j["repeat_seconds"] = seconds.call.values();
  if (!seconds.loop.empty()) j["repeat_iteration_seconds"] = seconds.loop.values();
}

void print_repeats(const RepeatSeconds& seconds) {
  std::printf("  %zu solves, seconds: %s\n", seconds.call.size(), seconds_text(seconds.call).c_str());
  if (!seconds.loop.empty()) std::printf("  their iterations alone: %s\n", seconds_text(seconds.loop).c_str());
}

// ---- text ---------------------------------------------------------------------------

std::string short_rung(const std::string& name) {
  if (name == "perforate") return "perf";
  if (name.rfind("binary", 0) == 0) return "b" + name.substr(6);
  return name;
}

std::string percent_text(double fraction) {
  if (std::isnan(fraction)) return "-";
  if (fraction > 0 && 100 * fraction < 0.05) return "<0.1";
  return fmt::format("{:.1f}", 100 * fraction);
}

std::string largest_text(double tolerance) { return std::isnan(tolerance) ? "none" : tolerance_text(tolerance); }

// ---- output pieces ------------------------------------------------------------------

void write_problem_attributes(const Hdf5Object& g, const ProblemData& p, Solver s) {
  g.attribute("creator", std::string("ebla ") + solver_name(s))
      .attribute("ebla_version", EBLA_VERSION)
      .attribute("command_line", command_line());
  write_problem(g, p, use_of(s));
}

void add_problem_json(Json& j, const ProblemData& p) {
  j["problem"] = p.name;
  j["description"] = p.description;
  j["operator"] = p.operator_name;
  j["n"] = p.n;
  j["nnz"] = p.nnz;
  if (p.name != "hpccg" && p.name != "diffusion") return;
  j["nx"] = p.nx;
  j["ny"] = p.ny;
  j["nz"] = p.nz;
}

void add_dot_json(Json& j, const DotPolicy& policy, const std::vector<std::string>& rungs) {
  const char* kinds[] = {"exact", "qdot", "fixed", "auto"};
  const bool qdot = policy.kind == DotKind::qdot;
  j["dot"] = kinds[static_cast<int>(policy.kind)];
  j["dot_policy"] = policy.to_string();
  j["qdot_tolerance"] = qdot ? Json(policy.qdot.tolerance) : Json(nullptr);
  j["qdot_policy"] = qdot ? Json(to_string(policy.qdot.policy)) : Json(nullptr);
  j["rungs"] = rungs;
}

void print_events(const std::vector<SolverEvent>& events) {
  if (events.empty()) return;
  constexpr std::size_t shown = 5;
  std::printf("events              %zu (safeguards and repeated dot products)%s\n", events.size(),
              events.size() > shown ? fmt::format(", the first {}:", shown).c_str() : ":");
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
  Table t(header);
  for (const auto& [label, series] : rows) {
    std::vector<std::string> cells = {label};
    for (double f : series->mean()) cells.push_back(percent_text(f));
    if (zeros) cells.push_back(percent_text(series->zero_mean()));
    t.add(cells);
  }
  t.print("    ");
}

std::vector<std::string> sweep_header(std::vector<std::string> columns, const std::vector<std::string>& rungs,
                                      const std::vector<std::string>& prefixes) {
  for (const auto& prefix : prefixes)
    for (const auto& r : rungs) columns.push_back(prefix + " " + short_rung(r) + "%");
  return columns;
}

void add_percents(std::vector<std::string>& row, const FractionSeries& a, const FractionSeries& b) {
  for (const auto& series : {a.mean(), b.mean()})
    for (double f : series) row.push_back(percent_text(f));
}

bool progress_due(int k, int every) { return every > 0 && k % every == 0; }

// ---- --experiment auto --------------------------------------------------------------

namespace {

std::string met_text(bool met) { return met ? "met" : "NOT met"; }

// "1e-06 (41 iterations, 90.1%)" for fixed run i, "none" for -1.
std::string fixed_text(const AutoReport& r, int i) {
  if (i < 0) return "none";
  const PolicyOutcome& f = r.outcomes[i + 1];
  return fmt::format("{} ({} iterations, {}%)", tolerance_text(f.tolerance), f.iterations,
              percent_text(f.below));
}

}  // namespace

void print_auto_report(const AutoReport& r) {
  std::printf("%s: %s\n  %s\n", r.name.c_str(), r.description.c_str(), r.setting.c_str());
  std::vector<std::string> header = {"dots", "iterations", "vs " + r.reference, "status", r.dots[0] + " <b64 %",
                                     r.dots[1] + " <b64 %", "bytes vs exact"};
  if (!r.extra_name.empty()) header.push_back(r.extra_name);
  Table t(header);
  const int reference = r.outcomes.front().iterations;
  for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
    const PolicyOutcome& o = r.outcomes[i];
    std::vector<std::string> row = {r.labels[i], std::to_string(o.iterations),
                                    fmt::format("{:.3f}", reference > 0 ? static_cast<double>(o.iterations) / reference : 1.0),
                                    r.status[i], percent_text(r.mix[0][i].below), percent_text(r.mix[1][i].below),
                                    fmt::format("{:.3f}", o.bytes)};
    if (!r.extra_name.empty()) row.push_back(fmt::format("{:.1e}", r.extra[i]));
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

Json auto_report_json(const AutoReport& r, const std::vector<double>& tolerances) {
  const AutoReport::Columns fixed = r.fixed_columns();
  const PolicyOutcome& a = r.outcomes.back();
  const auto tolerance_of = [&](int i) { return i >= 0 ? Json(r.outcomes[i + 1].tolerance) : Json(nullptr); };
  Json j;
  j["experiment"] = "auto";
  j["problem"] = r.name;
  j["setting"] = r.setting;
  j["exact_iterations"] = r.outcomes.front().iterations;
  j["exact_status"] = r.status.front();
  j["tolerances"] = tolerances;
  j["iterations"] = fixed.iterations;
  j["below_binary64"] = fixed.below;
  j["bytes"] = fixed.bytes;
  if (!r.extra_key.empty()) j[r.extra_key] = std::vector<double>(r.extra.begin() + 1, r.extra.end() - 1);
  j["auto_iterations"] = a.iterations;
  j["auto_status"] = r.status.back();
  j["auto_below_binary64"] = a.below;
  j["auto_bytes"] = a.bytes;
  j["auto_events"] = r.events.size();
  if (!r.extra_key.empty()) j["auto_" + r.extra_key] = r.extra.back();
  j["iteration_ratio"] = r.verdict.iteration_ratio;
  j["iterations_met"] = r.verdict.iterations_met;
  j["best_fixed_same_iterations"] = tolerance_of(r.verdict.same_count);
  j["best_fixed_within_auto_iterations"] = tolerance_of(r.verdict.within);
  j["share_met"] = r.verdict.share_met;
  return j;
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
    if (json) {
      Json j = auto_report_json(r, dots.sweep);
      j["command"] = solver_name(s);
      print_json(j);
    } else {
      print_auto_report(r);
    }
  }
  if (out != nullptr) out->root().attribute("mode", "experiment_auto").attribute("groups", join_names(groups));
  if (!json)
    std::printf("auto met the target (iterations and share) on %d of %zu problem%s\n", met, problems,
                problems == 1 ? "" : "s");
  return code;
}

}  // namespace ebla::cli

// ebla qdot: the quantized dot product on the synthetic data of seed 002, section 4.1: one
// run (value, exact reference, error, bound, levels, times), or the seed's experiments and
// the policy comparison of <ebla/experiments/qdot_study.hpp> as tables and, with --output, an
// HDF5 file (apps/plot_qdot.py draws the figures from it).
#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/experiments/qdot_study.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

using namespace ebla::experiments;
using Kind = QdotStudyKind;

std::string percent(double fraction) { return fmt::format("{:.1f}", 100 * fraction); }
std::string e2(double v) { return fmt::format("{:.2e}", v); }
std::string e3(double v) { return fmt::format("{:.3e}", v); }
std::string f3(double v) { return fmt::format("{:.3f}", v); }
std::string f4(double v) { return fmt::format("{:.4f}", v); }

// ---- configuration: the options of a QdotStudyChoice, and output ---------------------------

struct QdotCliOptions : QdotStudyChoice {
  bool json = false, markdown = false;
  std::string output, progress;
  const CLI::Option* progress_option = nullptr;
};

QdotStudySpec make_spec(const QdotCliOptions& o) {
  QdotStudySpec s = make_qdot_study_spec(o);
  if (o.json && s.kind != Kind::run)
    throw_invalid("ebla qdot --json", "prints a single run; experiments print tables and write --output");
  if (o.progress_option->count() > 0 && s.kind == Kind::run)
    throw_invalid("ebla qdot --progress", "applies to the experiments (--experiment, --compare-policies), not to a single run");
  const double every = progress_interval(o.progress, "ebla qdot --progress");
  if (s.kind != Kind::run) s.progress = progress_lines(std::string("ebla qdot: ") + to_string(s.kind), every);
  return s;
}

// ---- tables ---------------------------------------------------------------------------------

void print_table(bool markdown, const std::string& title, const Table& table) {
  std::printf("\n%s\n", title.c_str());
  if (!markdown) return table.print();
  std::printf("\n");
  table.print_markdown();
}

std::vector<std::string> short_levels(const QdotStudy& s) {  // binary64 -> b64%, perforate -> perf%
  std::vector<std::string> h;
  for (const auto& l : s.levels)
    h.push_back((l == "perforate" ? std::string("perf") : l.rfind("binary", 0) == 0 ? "b" + l.substr(6) : l) + "%");
  return h;
}

void add_fractions(std::vector<std::string>& cells, const QdotRow& r) {
  for (const auto& f : r.fraction) cells.push_back(percent(f.mean()));
}

std::string point_title(const QdotStudy& s, const QdotPoint& p) {
  return fmt::format("{}, t = {:g}, n = {}: {} sample{}, {} input", to_string(p.dist), p.t, p.n,
              s.spec.samples, s.spec.samples == 1 ? "" : "s", s.spec.input());
}

std::string policy_title(const QdotStudy& s) { return std::string(", policy ") + to_string(s.spec.policies[0]); }

// Fig. 1: the gap bound/|x^T y| - relerr, over all t of a distribution, per n.
void print_tightness(bool markdown, const QdotStudy& s) {
  for (QdotDist d : s.spec.dists)
    for (double tol : s.spec.tolerances) {
      Table table(
          {"n", "samples", "gap min", "gap median", "gap max", "relerr max", "bound/|xy| median", "violations"});
      for (const QdotTightness& k : qdot_tightness(s, d, tol))
        table.add({std::to_string(k.n), std::to_string(k.gap.size()), e3(k.gap.min()), e3(k.gap.median()),
                   e3(k.gap.max()), e3(k.relerr.max()), e3(k.bound_rel.median()), std::to_string(k.violations)});
      std::string ts;
      for (double t : s.spec.t_for(d)) ts += (ts.empty() ? "" : ",") + fmt::format("{:g}", t);
      print_table(markdown,
                  fmt::format("tightness (Fig. 1), distribution {}, t in {{{}}}, tolerance {:g}{}: "
                              "gap = bound/|x^T y| - relerr",
                              to_string(d), ts, tol, policy_title(s)),
                  table);
    }
}

// Fig. 2: relerr against the tolerance, and the levels used; Fig. 3 and Definition 2.1:
// speedup and efficiency.
void print_rows(bool markdown, const QdotStudy& s) {
  const bool fig2 = s.spec.kind == Kind::effectiveness;
  std::vector<std::string> header =
      fig2 ? std::vector<std::string>{"tolerance", "relerr min", "relerr mean", "relerr max", "max/tol", "bound/|xy|"}
           : std::vector<std::string>{"tolerance", "select ms", "compute ms", "dot ms", "speedup", "min", "max",
                                      "efficiency"};
  for (const auto& l : short_levels(s)) header.push_back(l);
  for (const auto& [i, j] : qdot_point_blocks(s.rows)) {
    Table table(header);
    for (std::size_t r = i; r < j; ++r) {
      const QdotRow& w = s.rows[r];
      std::vector<std::string> cells = {fmt::format("{:.0e}", w.tolerance)};
      const std::vector<std::string> more =
          fig2 ? std::vector<std::string>{e2(w.relerr.min()), e2(w.relerr.mean()), e2(w.relerr.max()),
                                          f3(w.relerr.max() / w.tolerance), e2(w.bound_rel.mean())}
               : std::vector<std::string>{f4(1e3 * w.select_s.mean()), f4(1e3 * w.compute_s.mean()),
                                          f4(1e3 * w.dot_s.mean()), f3(w.speedup.mean()), f3(w.speedup.min()),
                                          f3(w.speedup.max()), f3(w.efficiency.mean())};
      cells.insert(cells.end(), more.begin(), more.end());
      add_fractions(cells, w);
      table.add(cells);
    }
    const std::string where = point_title(s, s.rows[i].point) + policy_title(s);
    print_table(markdown, fig2 ? "effectiveness (Fig. 2), " + where
                        : "speedup (Fig. 3) = t_dot / t_compute, efficiency = t_dot / (t_select + t_dot); " + where +
                              ", best of " + std::to_string(s.spec.reps_for(s.rows[i].point.n)) + " calls",
                table);
  }
}

// Both policies side by side on the same data: levels used and certified bound.
void print_compare(bool markdown, const QdotStudy& s) {
  std::vector<std::string> header = {"tolerance"};
  Table::Groups groups = {{"", 1}};
  for (QdotPolicy p : s.spec.policies) {
    for (const auto& l : short_levels(s)) header.push_back(l);
    header.push_back("bound");
    header.push_back("relerr");
    groups.emplace_back(to_string(p), s.levels.size() + 2);
  }
  for (const auto& [i, j] : qdot_point_blocks(s.rows)) {
    Table table(header, groups);
    for (std::size_t r = i; r < j; r += s.spec.policies.size()) {
      std::vector<std::string> cells = {fmt::format("{:.0e}", s.rows[r].tolerance)};
      for (std::size_t q = 0; q < s.spec.policies.size(); ++q) {
        const QdotRow& row = s.rows[r + q];
        add_fractions(cells, row);
        cells.push_back(e2(row.bound_rel.mean()));
        cells.push_back(e2(row.relerr.mean()));
      }
      table.add(cells);
    }
    print_table(markdown, "policies compared, " + point_title(s, s.rows[i].point) +
                       "\n(levels in % of components; bound and relerr relative to |x^T y|, means over samples)",
                table);
  }
}

// ---- one run ---------------------------------------------------------------------------------

void print_single_json(const QdotStudy& s) {
  const QdotStudySpec& p = s.spec;
  const QdotSingle& r = s.single;
  nlohmann::ordered_json levels = nlohmann::ordered_json::array();
  for (std::size_t l = 0; l < r.fraction.size(); ++l)
    levels.push_back(
        {{"level", s.levels[l]}, {"count", r.result.stats.count_per_level[l]}, {"fraction", r.fraction[l]}});
  const nlohmann::ordered_json j = {
      {"dist", to_string(p.dists[0])}, {"t", p.t_for(p.dists[0])[0]}, {"n", p.sizes[0]}, {"seed", p.seed},
      {"input", p.input()}, {"policy", to_string(p.policies[0])}, {"tolerance", p.tolerances[0]},
      {"ladder", s.ladder()}, {"value", r.result.value}, {"exact", r.exact}, {"relative_error", r.relerr},
      {"bound", r.result.bound}, {"bound_relative", r.bound_rel}, {"dot", r.dot}, {"dot_relative_error", r.dot_relerr},
      {"bins", r.result.stats.bins}, {"e_min", r.result.stats.e_min}, {"e_max", r.result.stats.e_max},
      {"levels", levels}, {"select_seconds", r.select_seconds}, {"compute_seconds", r.compute_seconds},
      {"dot_seconds", r.dot_seconds}, {"reps", r.reps}, {"speedup", r.speedup}, {"efficiency", r.efficiency}};
  std::printf("%s\n", j.dump().c_str());
}

void print_single(const QdotStudy& s) {
  const QdotStudySpec& p = s.spec;
  const QdotSingle& r = s.single;
  std::printf("qdot of x, y ~ %s(t = %g), n = %lld, %s input, seed %lld\n", to_string(p.dists[0]),
              p.t_for(p.dists[0])[0], static_cast<long long>(p.sizes[0]), p.input().c_str(),
              static_cast<long long>(p.seed));
  std::printf("policy %s, tolerance %g, ladder %s\n", to_string(p.policies[0]), p.tolerances[0], s.ladder().c_str());
  std::printf("  value            %.17g\n", r.result.value);
  std::printf("  exact x^T y      %.17g   (integer superaccumulator, rounded once)\n", r.exact);
  std::printf("  relative error   %.3e\n", r.relerr);
  std::printf("  bound            %.3e   bound/|x^T y| = %.3e\n", r.result.bound, r.bound_rel);
  std::printf("  plain dot        %.17g   relative error %.3e (KokkosBlas::dot)\n", r.dot, r.dot_relerr);
  std::printf("  bins             %d, exponents %d .. %d\n", r.result.stats.bins, r.result.stats.e_min,
              r.result.stats.e_max);
  Table table({"level", "components", "fraction %"});
  for (std::size_t l = 0; l < r.fraction.size(); ++l)
    table.add({s.levels[l], std::to_string(r.result.stats.count_per_level[l]), percent(r.fraction[l])});
  std::printf("\n");
  table.print("  ");
  std::printf("\n  times (s, best of %d): select %.3e  compute %.3e  plain dot %.3e\n", r.reps, r.select_seconds,
              r.compute_seconds, r.dot_seconds);
  std::printf("  speedup    t_dot / t_compute            = %.3f\n", r.speedup);
  std::printf("  efficiency t_dot / (t_select + t_dot)   = %.3f\n", r.efficiency);
}

int run_qdot(const QdotCliOptions& o) {
  const QdotStudySpec spec = make_spec(o);  // every option checked before any work
  KokkosSession kokkos;
  qdot_study_levels(spec);  // the qdot options too
  // Created (and so checked) before the work, committed after it: a bad path fails at
  // once, and a failure half-way leaves no file.
  std::unique_ptr<Hdf5Writer> out;
  if (!o.output.empty()) out = std::make_unique<Hdf5Writer>(o.output);
  const QdotStudy study = run_qdot_study(spec);
  switch (spec.kind) {
    case Kind::run: o.json ? print_single_json(study) : print_single(study); break;
    case Kind::tightness: print_tightness(o.markdown, study); break;
    case Kind::effectiveness:
    case Kind::speedup: print_rows(o.markdown, study); break;
    case Kind::compare_policies: print_compare(o.markdown, study); break;
  }
  if (out) {
    write_qdot_study(*out, study, EBLA_VERSION);
    out->commit();
    if (!o.json) std::printf("\nwrote %s\n", o.output.c_str());
  }
  return 0;
}

}  // namespace
Command add_qdot(CLI::App& app) {
  auto o = std::make_shared<QdotCliOptions>();
  o->name = [](const std::string& option) { return "ebla qdot " + option; };
  app.add_option("--experiment,-e", o->experiment,
                 "tightness (Fig. 1), effectiveness (Fig. 2), speedup (Fig. 3 and efficiency) or "
                 "compare-policies; without it, one run");
  app.add_flag("--compare-policies", o->compare_policies,
               "Run the budget and paper policies on the same data: levels and bound per tolerance");
  app.add_option("--dist,-d", o->dists, "Distributions A and/or B (Diffenderfer et al., section 4.1)")->delimiter(',');
  app.add_option("--t", o->t_values, "Distribution parameters t (exponent spread)")->delimiter(',');
  app.add_option("--n,--sizes,-n", o->sizes, "Vector lengths, e.g. 1e2,1e3 (up to 1e9)")->delimiter(',');
  app.add_option("--tol", o->tolerances, "Tolerances eps > 0")->delimiter(',');
  app.add_option("--policy", o->policy, "Selection policy: budget or paper")->capture_default_str();
  app.add_option("--ladder", o->ladder,
                 "Levels, most precise first, e.g. binary64,binary32,binary16,perforate (separated by ',' or "
                 "';'; custom formats too: binary64;custom:t=8,emin=-6,emax=7)");
  app.add_option("--samples", o->samples, "Vector pairs per (dist, t, n) in experiments");
  app.add_option("--seed", o->seed, "Seed of the data")->capture_default_str()->check(seed_range());
  app.add_option("--reps", o->reps, "Timed calls per measurement (best is kept), 0..100000; default (0) about 2e6/n, 3..1000");
  app.add_flag("--float", o->use_float, "Single-precision vectors (the values rounded to float)");
  app.add_flag("--json", o->json, "One run: one line of JSON instead of text");
  app.add_flag("--markdown", o->markdown, "Experiments: tables in Markdown");
  app.add_option("--output,-o", o->output, "Write parameters and results to this HDF5 file")->check(output_file());
  add_progress_option(app, o->progress);
  o->progress_option = app.get_option("--progress");
  app.footer(
      "Defaults. One run: --dist B --t 9 --n 1e6 --tol 1e-8.\n"
      "  tightness:        A t=10..100 step 5, B t=2..30 step 2, n=1e2..1e5, tol 1e-16, 5 samples\n"
      "  effectiveness:    A,B t=5,9,13, n=1e3..1e5, tol 1e-15..1e-1, 5 samples\n"
      "  speedup:          A,B t=5,9,13, n=1e4..1e6, tol 1e-15..1e-1, 3 samples\n"
      "  compare-policies: B t=5,9,13, n=1e5, tol 1e-15..1e-1, 5 samples\n"
      "Lists are comma-separated. Errors are relative to the exact x^T y; speedup = t_dot /\n"
      "t_compute and efficiency = t_dot / (t_select + t_dot) (Diffenderfer et al., Definition 2.1), with\n"
      "t_dot the time of KokkosBlas::dot on the same vectors. The experiments report progress on\n"
      "stderr (--progress N: a line at most every N seconds; 0: none).");
  return [o] { return run_qdot(*o); };
}

}  // namespace ebla::cli

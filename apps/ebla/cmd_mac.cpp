// ebla mac: the multiply-accumulate experiment of seed 000 (Bhola & Duraisamy), section 4.1,
// Fig. 5 (experiments/include/ebla/experiments/mac_study.hpp describes it): d = a b + c with
// a, b, c ~ U[1,2], computed by MAC without FMA, FMA and MPFMA, each sample's relative error
// next to its DBEA and VIBEA bounds. The deterministic bound must hold on every sample: a
// violation is counted, reported, and makes the exit code 1.
//
// The samples are drawn in binary64 and then represented in --input-format (binary64 by
// default). The seed's text implies inputs given in binary32: --input-format binary32.
#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/mac_study.hpp>

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

using experiments::MacOutcome;
using experiments::MacResult;
using experiments::MacSpec;

struct MacCliOptions : experiments::MacChoice {
  std::string output, progress;
};

struct Config {
  MacSpec spec;
  std::string output;
};

Config make_config(const MacCliOptions& o) {
  Config c{make_mac_spec(o), o.output};
  c.spec.progress = progress_lines("ebla mac:", progress_interval(o.progress, "ebla mac --progress"));
  return c;
}

// ---- text ---------------------------------------------------------------------------------

void print_header(const MacSpec& s) {
  std::printf("ebla mac: d = a*b + c, a, b, c ~ U[1,2] i.i.d. given in %s, %lld samples, seed %llu\n",
              format_name(s.given).c_str(), static_cast<long long>(s.samples),
              static_cast<unsigned long long>(s.seed));
  std::printf("  rounding %s; VIBEA failure probability %g per element; errors and bounds relative to the "
              "exact d\n\n",
              to_string(s.rounding), s.failure);
}

// One row per operation (seed 000, Fig. 5): max and median error, largest bounds, and how
// often the error exceeded each bound.
void print_outcomes(const MacResult& r) {
  Table table({"operation", "max error", "median error", "max DBEA", "max VIBEA", "error > DBEA", "error > VIBEA",
               "failure", "lambda"});
  for (std::size_t k = 0; k < r.outcomes.size(); ++k) {
    const MacOutcome& o = r.outcomes[k];
    const double n = static_cast<double>(o.error.size());
    table.add({r.operations[k].label, fmt::format("{:.3e}", o.error.max()), fmt::format("{:.3e}", o.error.median()),
               fmt::format("{:.3e}", o.dbea.max()), fmt::format("{:.3e}", o.vibea.max()), std::to_string(o.violations),
               fmt::format("{:.5f}", static_cast<double>(o.vibea_exceeded) / n), fmt::format("{:g}", o.failure),
               o.failure > 0 ? fmt::format("{:.3f}", o.lambda) : std::string("-")});
  }
  table.print();
  std::printf("\n(error > VIBEA: fraction of samples, against the stated failure probability per element)\n");
}

// ---- the command --------------------------------------------------------------------------

int run_mac(const MacCliOptions& options) {
  const Config c = make_config(options);  // every option checked before any work
  KokkosSession kokkos;
  // created (and so checked) before the work, committed after it: no file on failure
  std::unique_ptr<Hdf5Writer> out;
  if (!c.output.empty())
    out = under_option("ebla mac --output", [&] { return std::make_unique<Hdf5Writer>(c.output); });
  const MacResult result = experiments::mac_study(c.spec);
  print_header(c.spec);
  print_outcomes(result);
  const std::int64_t violations = result.violations();
  std::printf("DBEA: %lld violations in %lld samples%s\n", static_cast<long long>(violations),
              static_cast<long long>(c.spec.samples * static_cast<std::int64_t>(result.outcomes.size())),
              violations == 0 ? " (error <= bound on every sample)" : "");
  if (out) {
    experiments::write_mac(out->root(), c.spec, result, [](const Hdf5Object& g) {
      g.attribute("creator", "ebla mac").attribute("ebla_version", EBLA_VERSION).attribute("command_line", command_line());
    });
    out->commit();
    std::printf("wrote %s\n", c.output.c_str());
  }
  if (violations == 0) return 0;
  spdlog::error("the deterministic bound was violated on {} samples", violations);
  return 1;
}

}  // namespace

Command add_mac(CLI::App& app) {
  auto o = std::make_shared<MacCliOptions>();
  o->name = [](const std::string& option) { return "ebla mac " + option; };
  app.add_option("--low", o->low, "Input format of MPFMA (a, b rounded to it)")->capture_default_str();
  app.add_option("--high", o->high, "Format of MAC and FMA, and MPFMA's addend, product, sum and output")
      ->capture_default_str();
  app.add_option("--input-format", o->input_format,
                 "Format a, b, c are given in (drawn in binary64, rounded to nearest); binary32 is the "
                 "seed's setting")
      ->capture_default_str();
  app.add_option("--rounding,-m", o->rounding, "nearest_even, toward_zero, upward, downward or stochastic")
      ->capture_default_str();
  app.add_option("--failure", o->failure, "Per-element failure probability of the VIBEA bound, in (0, 1)")
      ->capture_default_str();
  app.add_option("--samples,-n", o->samples, "Number of (a, b, c) triples, up to 1e7")->capture_default_str();
  app.add_option("--seed", o->seed, "Seed of the samples (mt19937_64) and of stochastic rounding")
      ->capture_default_str()->check(seed_range());
  app.add_option("--output,-o", o->output, "Write the errors and bounds of every sample to this HDF5 file")->check(output_file());
  add_progress_option(app, o->progress);
  app.footer(
      "d = a*b + c, a, b, c ~ U[1,2], computed three ways by ebla::mpfma (Bhola & Duraisamy, section 4.1,\n"
      "Fig. 5): MAC without FMA in --high, FMA in --high, and MPFMA (a, b in --low, sum in --high).\n"
      "Errors are relative to the exact d; DBEA and VIBEA are the deterministic and probabilistic\n"
      "bounds (docs/bounds.md). apps/plot_mac.py draws Fig. 5 from --output.\n"
      "Progress on stderr: --progress N, a line per step (0: none; default 1 when stderr is a\n"
      "terminal, else 0); stdout is the same either way.\n"
      "Exit code: 0 when the error is within DBEA on every sample; 1 otherwise; 2 for bad input.");
  return [o] { return run_mac(*o); };
}

}  // namespace ebla::cli

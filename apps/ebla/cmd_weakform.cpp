// ebla weakform: the weak-form kernel of seed 004, A[i,j,k] += sum_ii B[i,ii,k] C[j,ii], on
// random data, with the observed error of every layer next to the bounds (14) and (15)
// (experiments/include/ebla/experiments/weakform_study.hpp describes the study).
//
// A (its initial value), B and C are drawn in binary64 from --distribution (with --in-format:
// then rounded to the unit's formats, the seed's assumption), the kernel runs with inputs in
// --input and sums in --accumulation (an FMA chain, ebla::weakform_unit), or through a unit of
// the catalogue (--unit v100_fp16) or of a spec file (--unit-file). Per layer: the largest
// error / (14') over the entries, the 1-, infinity- and Frobenius norms of the error against
// (15') and the printed (15). Exit code 1 if an error exceeds a certified bound, 2 on bad
// input.
#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/core/format.hpp>
#include <ebla/experiments/weakform_study.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

using experiments::WeakformSpec;

struct WeakformCliOptions : experiments::WeakformChoice {
  std::string progress;
  std::vector<const CLI::Option*> registered;  // to tell which options were given
};

struct Config {
  WeakformSpec spec;
  std::string distribution_name;
  std::string unit_name;  // --unit or --unit-file; empty for the formats' FMA chain
};

Config make_config(const WeakformCliOptions& o) {
  Config config{make_weakform_spec(o), o.distribution, o.unit.empty() ? o.unit_file : o.unit};
  config.spec.progress = progress_lines("ebla weakform:", progress_interval(o.progress, "ebla weakform --progress"));
  return config;
}

constexpr std::size_t max_rows = 32;

// The unit and the data: the formats of the FMA chain, or the unit of --unit / --unit-file.
void print_unit(const Config& config) {
  const WeakformSpec& c = config.spec;
  const std::string data = config.distribution_name + (c.in_format ? " rounded to the formats" : " in binary64");
  const auto seed = static_cast<unsigned long long>(c.seed);
  if (!config.unit_name.empty()) {
    std::printf("  unit %s: %s\n", config.unit_name.c_str(), to_string(c.unit).c_str());
    std::printf("  data %s, seed %llu\n", data.c_str(), seed);
    return;
  }
  const std::string chain =
      c.unit.exact_products ? "FMA chain" : "products rounded to " + format_name(c.unit.product) + " first";
  std::printf("  inputs %s, sums %s (%s, %s); data %s, seed %llu\n", format_name(c.unit.input).c_str(),
              format_name(c.unit.accumulation).c_str(), chain.c_str(), to_string(c.unit.rounding), data.c_str(),
              seed);
}

// The constants of the accumulation: r roundings of u, or the general unit's delta, d, N, G.
void print_accumulation(const WeakformBounds& b) {
  if (b.general)
    std::printf("  general unit: delta = %.3e per step, d = %g, N = %g, G = %.3e (%.3e with subnormal inputs), "
                "g = (1 + delta)^d - 1 = %.3e (printed: gamma_{n+1} = %.3e)\n",
                b.delta, b.depth, b.steps, b.underflow, b.underflow_subnormal, b.gamma, b.paper_gamma);
  else
    std::printf("  r = %d roundings per entry, u = %.3e, gamma_r = %.3e (printed: gamma_{n+1} = %.3e); ",
                b.roundings, b.unit_roundoff, b.gamma, b.paper_gamma);
  std::printf("%s||C'||_1 = %.3e, ||C'||_inf = %.3e, ||C'||_F = %.3e\n\n", b.general ? "  " : "", b.norm_c1,
              b.norm_cinf, b.norm_cf);
}

int run_weakform(const WeakformCliOptions& options) {
  const Config config = make_config(options);  // every option checked before any work
  const WeakformSpec& c = config.spec;
  KokkosSession kokkos;
  long violations = 0, paper_exceeded = 0;
  {
    const experiments::WeakformResult r = experiments::weakform_study(c);
    const WeakformBounds& b = r.bounds;
    violations = r.violations();
    paper_exceeded = r.paper_exceeded();
    std::printf("ebla weakform: A[i,j,k] += sum_ii B[i,ii,k] C[j,ii], ni = %zu, nj = %zu, nk = %zu, n = %zu\n",
                c.ni, c.nj, c.nk, c.n);
    print_unit(config);
    print_accumulation(b);
    Table table({"layer", "max err/(14')", "||E||_1", "(15')_1", "(15)_1", "||E||_inf", "(15')_inf", "(15)_inf",
                 "||E||_F", "(15')_F", "(15)_F", "> (14)", "violations"},
                {}, 0);
    for (std::size_t k = 0; k < c.nk && k < max_rows; ++k) {
      const experiments::WeakformLayer& L = r.layers[k];
      const WeakformLayerBound& B = b.layers[k];
      const auto e3 = [](double v) { return fmt::format("{:.3e}", v); };
      table.add({std::to_string(k), e3(L.max_ratio), e3(L.err1), e3(B.bound1), e3(B.paper1), e3(L.errinf),
                 e3(B.bound_inf), e3(B.paper_inf), e3(L.errf), e3(B.bound_f), e3(B.paper_f),
                 std::to_string(L.paper_exceeded), std::to_string(L.violations)});
    }
    table.print();
    if (c.nk > max_rows) std::printf("... (%zu more layers, in the totals below)\n", c.nk - max_rows);
  }
  std::printf("\n(14'), (15'): certified bounds; (14), (15): as printed in Xie (gamma_{n+1} |B'| |C'|);\n"
              "> (14): entries whose error exceeds the printed (14) (docs/weakform.md says why)\n");
  std::printf("certified bounds: %ld violations in %zu layers of %zu entries%s\n", violations, c.nk, c.ni * c.nj,
              violations == 0 ? " (error <= bound everywhere)" : "");
  std::printf("printed (14): exceeded on %ld entries\n", paper_exceeded);
  return violations == 0 ? 0 : 1;
}

}  // namespace

Command add_weakform(CLI::App& app) {
  auto o = std::make_shared<WeakformCliOptions>();
  o->name = [](const std::string& option) { return "ebla weakform" + (option.empty() ? "" : " " + option); };
  app.add_option("--ni", o->ni, "Rows of A and B")->capture_default_str();
  app.add_option("--nj", o->nj, "Columns of A, rows of C")->capture_default_str();
  app.add_option("--nk", o->nk, "Layers of A and B")->capture_default_str();
  app.add_option("--n", o->n, "Length of the inner sums (columns of B and C)")->capture_default_str();
  auto& r = o->registered;
  o->given = given_among(r);
  r.push_back(app.add_option("--format,-f", o->format, "Format of the inputs and of the sums (default binary32)"));
  r.push_back(app.add_option("--input", o->input, "Format B and C are rounded to (instead of --format)"));
  r.push_back(app.add_option("--accumulation", o->accumulation, "Format of A and of the sums (default: --input)"));
  r.push_back(app.add_option("--rounding,-m", o->rounding, "Rounding of the sums: nearest_even or toward_zero")
                  ->capture_default_str());
  r.push_back(app.add_option("--product", o->product,
                             "Round each product to nearest in this format before adding it, fl(s + fl(b c)): the "
                             "seed's model (1)-(2) (default: none, an FMA chain)"));
  r.push_back(app.add_option("--unit,-u", o->unit,
                             "A matrix unit of the catalogue (docs/matrix-units.md: v100_fp16, h100_fp8_e4m3, "
                             "amx_bf16, ...) instead of the formats, rounding and product"));
  r.push_back(app.add_option("--unit-file", o->unit_file,
                             "A custom unit: a spec file (docs/matrix-units.md, \"Custom units\"), as --unit"));
  app.add_option("--distribution,-d", o->distribution,
                 "Data: uniform (U[-1,1]), positive (U[0,1]), cancellation (A0 = -B C^T), wide (exponents "
                 "across the range), tiny (around the input format's underflow threshold)")
      ->capture_default_str();
  app.add_flag("--in-format", o->in_format, "Round the data to the formats first (the seed's assumption)");
  app.add_option("--seed", o->seed, "Seed of the data (mt19937_64)")->capture_default_str()->check(seed_range());
  add_progress_option(app, o->progress);
  app.footer(
      "A[i,j,k] += sum_ii B[i,ii,k] C[j,ii] (Xie, Algorithm 1) by ebla::weakform, every inner sum an\n"
      "FMA chain (or, with --product, products rounded before each addition; with --unit or\n"
      "--unit-file, the unit's operations: tensor cores, DAZ/FTZ, chains); per layer the observed error\n"
      "against the certified bounds (14'), (15') and the printed (14), (15) (docs/weakform.md).\n"
      "Progress on stderr: --progress N, a line per step (0: none; default 1 when stderr is a\n"
      "terminal, else 0); stdout is the same either way.\n"
      "Exit code: 0 when every error is within the certified bounds; 1 otherwise; 2 for bad input.");
  return [o] { return run_weakform(*o); };
}

}  // namespace ebla::cli

// ebla weakform: the weak-form kernel of seed 004, A[i,j,k] += sum_ii B[i,ii,k] C[j,ii], on
// random data, with the observed error of every layer next to the bounds (14) and (15)
// (experiments/include/ebla/experiments/weakform_study.hpp describes the study).
//
// A (its initial value), B and C are drawn in binary64 from --distribution (with --in-format:
// then rounded to the unit's formats, the seed's assumption), the kernel runs with inputs in
// --input and sums in --accumulation (an FMA chain, ebla::weakform_unit). Per layer: the
// largest error / (14') over the entries, the 1-, infinity- and Frobenius norms of the error
// against (15') and the printed (15). Exit code 1 if an error exceeds a certified bound, 2 on
// bad input.
#include "commands.hpp"
#include "study_progress.hpp"
#include "table.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/experiments/weakform_study.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

using experiments::WeakformDistribution;
using experiments::WeakformSpec;

struct WeakformCliOptions {
  std::string ni = "8", nj = "8", nk = "4", n = "16";
  std::string format, input, accumulation;
  std::string rounding = "nearest_even", distribution = "uniform";
  bool in_format = false;
  std::int64_t seed = 1;
  std::string progress;
};

struct Config {
  WeakformSpec spec;
  std::string distribution_name;
};

constexpr double max_entries = 1e8;  // ni nj nk n: the work of the kernel and of the reference

std::size_t parse_size(const std::string& text, const char* option, double lowest) {
  const double v = parse_double(text, option);
  if (!(v >= lowest)) throw_invalid(option, text + " is not a size >= " + strf("%g", lowest));
  if (v != std::floor(v)) throw_invalid(option, text + " is not a whole number");
  if (v > max_entries) throw_invalid(option, text + " exceeds 1e8");
  return static_cast<std::size_t>(v);
}

WeakformDistribution parse_distribution(const std::string& name) {
  if (name == "uniform") return WeakformDistribution::uniform;
  if (name == "positive") return WeakformDistribution::positive;
  if (name == "cancellation") return WeakformDistribution::cancellation;
  if (name == "wide") return WeakformDistribution::wide;
  if (name == "tiny") return WeakformDistribution::tiny;
  throw_invalid("ebla weakform --distribution",
                "unknown distribution '" + name + "' (uniform, positive, cancellation, wide, tiny)");
}

Config make_config(const WeakformCliOptions& o) {
  Config config;
  WeakformSpec& c = config.spec;
  c.ni = parse_size(o.ni, "ebla weakform --ni", 1);
  c.nj = parse_size(o.nj, "ebla weakform --nj", 1);
  c.nk = parse_size(o.nk, "ebla weakform --nk", 1);
  c.n = parse_size(o.n, "ebla weakform --n", 0);
  if (static_cast<double>(c.ni) * c.nj * c.nk * std::max<std::size_t>(c.n, 1) > max_entries)
    throw_invalid("ebla weakform", strf("ni nj nk n = %zu x %zu x %zu x %zu exceeds 1e8", c.ni, c.nj, c.nk, c.n));
  if (!o.format.empty() && (!o.input.empty() || !o.accumulation.empty()))
    throw_invalid("ebla weakform --format", "give --format, or --input and --accumulation, not both");
  const std::string in = !o.format.empty() ? o.format : o.input.empty() ? "binary32" : o.input;
  const std::string acc = !o.format.empty() ? o.format : o.accumulation.empty() ? in : o.accumulation;
  const Format fin = under_option(o.format.empty() ? "ebla weakform --input" : "ebla weakform --format",
                                  [&] { return format_by_name(in); });
  const Format facc = under_option(o.format.empty() ? "ebla weakform --accumulation" : "ebla weakform --format",
                                   [&] { return format_by_name(acc); });
  const Rounding mode = under_option("ebla weakform --rounding", [&] { return rounding_by_name(o.rounding); });
  c.unit = under_option("ebla weakform --input " + in + " --accumulation " + acc + " --rounding " + o.rounding,
                        [&] { return weakform_unit(fin, facc, mode); });
  c.distribution = parse_distribution(o.distribution);
  config.distribution_name = o.distribution;
  c.in_format = o.in_format;
  c.seed = static_cast<std::uint64_t>(o.seed);
  c.progress = progress_lines("ebla weakform:", progress_interval(o.progress, "ebla weakform --progress"));
  return config;
}

constexpr std::size_t max_rows = 32;

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
    std::printf("  inputs %s, sums %s (FMA chain, %s); data %s%s, seed %llu\n", format_name(c.unit.input).c_str(),
                format_name(c.unit.accumulation).c_str(), to_string(c.unit.rounding), config.distribution_name.c_str(),
                c.in_format ? " rounded to the formats" : " in binary64", static_cast<unsigned long long>(c.seed));
    std::printf("  r = %d roundings per entry, u = %.3e, gamma_r = %.3e (printed: gamma_{n+1} = %.3e); "
                "||C'||_1 = %.3e, ||C'||_inf = %.3e, ||C'||_F = %.3e\n\n",
                b.roundings, b.unit_roundoff, b.gamma, b.paper_gamma, b.norm_c1, b.norm_cinf, b.norm_cf);
    Table table({"layer", "max err/(14')", "||E||_1", "(15')_1", "(15)_1", "||E||_inf", "(15')_inf", "(15)_inf",
                 "||E||_F", "(15')_F", "(15)_F", "> (14)", "violations"},
                {}, 0);
    for (std::size_t k = 0; k < c.nk && k < max_rows; ++k) {
      const experiments::WeakformLayer& L = r.layers[k];
      const WeakformLayerBound& B = b.layers[k];
      table.add({strf("%zu", k), strf("%.3e", L.max_ratio), strf("%.3e", L.err1), strf("%.3e", B.bound1),
                 strf("%.3e", B.paper1), strf("%.3e", L.errinf), strf("%.3e", B.bound_inf), strf("%.3e", B.paper_inf),
                 strf("%.3e", L.errf), strf("%.3e", B.bound_f), strf("%.3e", B.paper_f), strf("%ld", L.paper_exceeded),
                 strf("%ld", L.violations)});
    }
    table.print();
    if (c.nk > max_rows) std::printf("... (%zu more layers, in the totals below)\n", c.nk - max_rows);
  }
  std::printf("\n(14'), (15'): certified bounds; (14), (15): as printed in seed 004 (gamma_{n+1} |B'| |C'|);\n"
              "> (14): entries whose error exceeds the printed (14) (docs/weakform.md says why)\n");
  std::printf("certified bounds: %ld violations in %zu layers of %zu entries%s\n", violations, c.nk, c.ni * c.nj,
              violations == 0 ? " (error <= bound everywhere)" : "");
  std::printf("printed (14): exceeded on %ld entries\n", paper_exceeded);
  return violations == 0 ? 0 : 1;
}

}  // namespace

Command add_weakform(CLI::App& app) {
  auto o = std::make_shared<WeakformCliOptions>();
  app.add_option("--ni", o->ni, "Rows of A and B")->capture_default_str();
  app.add_option("--nj", o->nj, "Columns of A, rows of C")->capture_default_str();
  app.add_option("--nk", o->nk, "Layers of A and B")->capture_default_str();
  app.add_option("--n", o->n, "Length of the inner sums (columns of B and C)")->capture_default_str();
  app.add_option("--format,-f", o->format, "Format of the inputs and of the sums (default binary32)");
  app.add_option("--input", o->input, "Format B and C are rounded to (instead of --format)");
  app.add_option("--accumulation", o->accumulation, "Format of A and of the sums (default: --input)");
  app.add_option("--rounding,-m", o->rounding, "Rounding of the sums: nearest_even or toward_zero")
      ->capture_default_str();
  app.add_option("--distribution,-d", o->distribution,
                 "Data: uniform (U[-1,1]), positive (U[0,1]), cancellation (A0 = -B C^T), wide (exponents "
                 "across the range), tiny (around the input format's underflow threshold)")
      ->capture_default_str();
  app.add_flag("--in-format", o->in_format, "Round the data to the formats first (the seed's assumption)");
  app.add_option("--seed", o->seed, "Seed of the data (mt19937_64)")->capture_default_str()->check(seed_range());
  add_progress_option(app, o->progress);
  app.footer(
      "A[i,j,k] += sum_ii B[i,ii,k] C[j,ii] (seed 004, Algorithm 1) by ebla::weakform, every inner sum an\n"
      "FMA chain; per layer the observed error against the certified bounds (14'), (15') and the\n"
      "printed (14), (15) (docs/weakform.md).\n"
      "Progress on stderr: --progress N, a line per step (0: none; default 1 when stderr is a\n"
      "terminal, else 0); stdout is the same either way.\n"
      "Exit code: 0 when every error is within the certified bounds; 1 otherwise; 2 for bad input.");
  return [o] { return run_weakform(*o); };
}

}  // namespace ebla::cli

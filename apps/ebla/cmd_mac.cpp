// ebla mac: the multiply-accumulate experiment of seed 000 (Bhola & Duraisamy), section 4.1,
// Fig. 5.
//
// d = a b + c with a, b, c ~ U[1,2] i.i.d., computed by ebla::mpfma three ways:
//   MAC without FMA in the high format   fl(fl(a b) + c)            MpfmaConfig::mac(high)
//   FMA in the high format               fl(a b + c)                MpfmaConfig::fma(high)
//   MPFMA                                a, b in low, exact product, MpfmaConfig::mpfma(low, high)
//                                        sum in high
// For each sample: the relative forward error |d_hat - d| / |d| against the exact d, and the
// deterministic (DBEA) and probabilistic (VIBEA) bounds of mpfma.hpp relative to |d|, the
// quantities whose empirical distribution functions Fig. 5 shows. The deterministic bound must
// hold on every sample: a violation is counted, reported, and makes the exit code 1.
//
// The samples are drawn in binary64 and then represented in --input-format (binary64 by
// default: every input of the three operations is then rounded, Lemmas 3.2 and 3.5). The seed's
// text ("the initial change in representation from fp32 to fp16 for a and b", and DBEA = VIBEA
// for FMA, section 3.1) implies inputs given in binary32: --input-format binary32.
#include "commands.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/mpfma.hpp>

#include <Kokkos_Core.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

// ---- options ----------------------------------------------------------------------------

struct MacCliOptions {
  std::string low = "binary16", high = "binary32", input_format = "binary64";
  std::string rounding = "nearest_even";
  std::string failure = "0.01", samples = "100000";
  std::int64_t seed = 1;
  std::string output;
};

/// One of the three ways of computing d (a row of the table, a group of the file).
struct Operation {
  std::string key;    // HDF5 group name
  std::string label;  // for the table and the figure
  MpfmaConfig config;
};

struct Config {
  Format low, high, given;
  Rounding rounding = Rounding::nearest_even;
  double failure = 0.01;
  std::int64_t samples = 100000;
  std::uint64_t seed = 1;
  std::string output;
  std::vector<Operation> operations;
};

constexpr double max_samples = 1e7;

std::int64_t parse_samples(const std::string& text) {
  const double v = parse_double(text, "ebla mac --samples");
  if (!(v > 0)) throw_invalid("ebla mac --samples", text + " is not a positive number of samples");
  if (v != std::floor(v)) throw_invalid("ebla mac --samples", text + " is not a whole number");
  if (v > max_samples) throw_invalid("ebla mac --samples", text + " exceeds 1e7");
  return static_cast<std::int64_t>(v);
}

double parse_failure(const std::string& text) {
  const double v = parse_double(text, "ebla mac --failure");
  if (!(v > 0 && v < 1)) throw_invalid("ebla mac --failure", "probability " + text + " is outside (0, 1)");
  return v;
}

// The format the samples are given in must hold 1 and 2 (U[1,2] rounded stays in [1, 2]).
Format parse_input_format(const std::string& name) {
  const Format f = under_option("ebla mac --input-format", [&] { return format_by_name(name); });
  if (!(f.emin <= 0 && f.fmax() >= 2))
    throw_invalid("ebla mac --input-format", "'" + name + "' cannot represent the samples of U[1,2]");
  return f;
}

// The three operations of Fig. 5, each config checked against what mpfma emulates exactly.
std::vector<Operation> make_operations(const Config& c) {
  const std::string lo = format_name(c.low), hi = format_name(c.high);
  std::vector<Operation> ops = {
      {"mac", "MAC without FMA, " + hi, MpfmaConfig::mac(c.high, c.rounding)},
      {"fma", "FMA, " + hi, MpfmaConfig::fma(c.high, c.rounding)},
      {"mpfma", "MPFMA, " + lo + " inputs, " + hi + " sum", MpfmaConfig::mpfma(c.low, c.high, c.rounding)}};
  for (Operation& op : ops) {
    op.config.failure = c.failure;
    const std::string option = op.key == "mpfma" ? "ebla mac --low " + lo + " --high " + hi : "ebla mac --high " + hi;
    under_option(option, [&] { validate(op.config, ("MpfmaConfig::" + op.key).c_str()); });
  }
  return ops;
}

Config make_config(const MacCliOptions& o) {
  Config c;
  c.low = under_option("ebla mac --low", [&] { return format_by_name(o.low); });
  c.high = under_option("ebla mac --high", [&] { return format_by_name(o.high); });
  c.given = parse_input_format(o.input_format);
  c.rounding = under_option("ebla mac --rounding", [&] { return rounding_by_name(o.rounding); });
  c.failure = parse_failure(o.failure);
  c.samples = parse_samples(o.samples);
  c.seed = static_cast<std::uint64_t>(o.seed);
  c.output = o.output;
  c.operations = make_operations(c);
  return c;
}

// ---- samples ----------------------------------------------------------------------------

struct Samples {
  std::vector<double> a, b, c;
};

// A uniform draw from the 2^52 binary64 numbers of [1, 2), exactly (no rounding in 1 + k 2^-52),
// then its representation in the given format (to nearest).
Samples draw(const Config& c) {
  std::mt19937_64 gen(c.seed);
  auto uniform = [&] {
    const double x = 1 + static_cast<double>(gen() >> 12) * 0x1p-52;
    return round_to(x, c.given, Rounding::nearest_even);
  };
  const auto n = static_cast<std::size_t>(c.samples);
  Samples s{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    s.a[i] = uniform();
    s.b[i] = uniform();
    s.c[i] = uniform();
  }
  return s;
}

Kokkos::View<const double*> to_view(const std::vector<double>& v, const char* name) {
  Kokkos::View<double*> d(std::string(name), v.size());
  Kokkos::deep_copy(d, Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(v.data(), v.size()));
  return d;
}

std::vector<double> to_vector(const Kokkos::View<double*>& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

// ---- one operation ----------------------------------------------------------------------

/// Per sample: relative error and bounds (Fig. 5's three curves of one operation).
struct Outcome {
  std::vector<double> error, dbea, vibea;
  std::int64_t violations = 0;      // error > DBEA: must be 0
  std::int64_t vibea_exceeded = 0;  // error > VIBEA: expected in about a fraction `failure`
  double failure = 0, lambda = 0;   // as mpfma states them (failure 0 for directed rounding)
};

using Quad = __float128;
Quad magnitude(Quad x) { return x < 0 ? -x : x; }

// d = a b + c is exact in __float128: for a, b, c in [1, 2] with at most 53 bits, a b has at
// most 106 bits from 2^1 down to 2^-104, and d < 8 needs bits 2^2 .. 2^-104: 107 <= 113. The
// difference d_hat - d is exact as well (d_hat, a double in [1, 16) near d, is a multiple of
// 2^-52), so each relative value is rounded once, in its division.
Outcome evaluate(const Operation& op, const Samples& s, const Kokkos::View<const double*>& a,
                 const Kokkos::View<const double*>& b, const Kokkos::View<const double*>& c,
                 std::uint64_t seed) {
  const MpfmaResult r = mpfma(a, b, c, op.config, seed);
  const std::vector<double> z = to_vector(r.z), bound = to_vector(r.bound), probable = to_vector(r.probable_bound);
  Outcome o;
  o.failure = r.failure;
  o.lambda = r.lambda;
  const std::size_t n = z.size();
  o.error.resize(n);
  o.dbea.resize(n);
  o.vibea.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Quad d = static_cast<Quad>(s.a[i]) * s.b[i] + s.c[i];
    const Quad err = magnitude(static_cast<Quad>(z[i]) - d);
    // the three divided by the same |d| and rounded once: error <= bound gives error <= dbea
    const auto relative = [&](Quad x) { return static_cast<double>(x / magnitude(d)); };
    o.error[i] = relative(err);
    o.dbea[i] = relative(bound[i]);
    o.vibea[i] = relative(probable[i]);
    // compared absolutely and exactly; an infinite bound (overflow) states nothing
    if (!(std::isinf(bound[i]) || err <= static_cast<Quad>(bound[i]))) ++o.violations;
    if (!(std::isinf(probable[i]) || err <= static_cast<Quad>(probable[i]))) ++o.vibea_exceeded;
  }
  return o;
}

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

double median_of(std::vector<double> v) {
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  if (v.size() % 2) return v[h];
  return (v[h] + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h))) / 2;
}

// ---- text ---------------------------------------------------------------------------------

// Rows of cells, the first column left-aligned, the others right-aligned.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t k = 0; k < r.size(); ++k) w[k] = std::max(w[k], r[k].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t k = 0; k < r.size(); ++k) {
      const std::string pad(w[k] - r[k].size(), ' ');
      line += k == 0 ? r[k] + pad : "  " + pad + r[k];
    }
    std::printf("%s\n", line.c_str());
  }
}

void print_header(const Config& c) {
  std::printf("ebla mac: d = a*b + c, a, b, c ~ U[1,2] i.i.d. given in %s, %lld samples, seed %llu\n",
              format_name(c.given).c_str(), static_cast<long long>(c.samples),
              static_cast<unsigned long long>(c.seed));
  std::printf("  rounding %s; VIBEA failure probability %g per element; errors and bounds relative to the "
              "exact d\n\n",
              to_string(c.rounding), c.failure);
}

// One row per operation (seed 000, Fig. 5): max and median error, largest bounds, and how
// often the error exceeded each bound.
void print_outcomes(const Config& c, const std::vector<Outcome>& outcomes) {
  std::vector<std::vector<std::string>> rows = {{"operation", "max error", "median error", "max DBEA", "max VIBEA",
                                                 "error > DBEA", "error > VIBEA", "failure", "lambda"}};
  for (std::size_t k = 0; k < outcomes.size(); ++k) {
    const Outcome& o = outcomes[k];
    const double n = static_cast<double>(o.error.size());
    rows.push_back({c.operations[k].label, strf("%.3e", max_of(o.error)), strf("%.3e", median_of(o.error)),
                    strf("%.3e", max_of(o.dbea)), strf("%.3e", max_of(o.vibea)), strf("%lld", static_cast<long long>(o.violations)),
                    strf("%.5f", static_cast<double>(o.vibea_exceeded) / n), strf("%g", o.failure),
                    o.failure > 0 ? strf("%.3f", o.lambda) : std::string("-")});
  }
  print_table(rows);
  std::printf("\n(error > VIBEA: fraction of samples, against the stated failure probability per element)\n");
}

std::int64_t total_violations(const std::vector<Outcome>& outcomes) {
  std::int64_t v = 0;
  for (const Outcome& o : outcomes) v += o.violations;
  return v;
}

// ---- HDF5 ---------------------------------------------------------------------------------

void write_parameters(const Hdf5Object& g, const Config& c) {
  g.attribute("creator", "ebla mac")
      .attribute("ebla_version", EBLA_VERSION)
      .attribute("command_line", command_line())
      .attribute("experiment", "seed 000, section 4.1, Fig. 5: d = a*b + c")
      .attribute("distribution", "a, b, c ~ U[1,2] i.i.d. (uniform over the binary64 numbers of [1, 2)), "
                                 "mt19937_64 of the seed, then rounded to nearest in input_format")
      .attribute("input_format", format_name(c.given))
      .attribute("low", format_name(c.low))
      .attribute("high", format_name(c.high))
      .attribute("rounding", to_string(c.rounding))
      .attribute("failure", c.failure)
      .attribute("seed", static_cast<std::int64_t>(c.seed))
      .attribute("samples", c.samples)
      .attribute("reference", "exact d = a b + c in __float128");
}

const char* step_name(ProductStep s) {
  switch (s) {
    case ProductStep::fused: return "fused";
    case ProductStep::exact: return "exact";
    case ProductStep::rounded: return "rounded";
  }
  return "?";
}

void write_operation(const Hdf5Group& root, const Config& c, const Operation& op, const Outcome& o) {
  const Hdf5Group g = root.group(op.key);
  write_parameters(g, c);
  const MpfmaConfig& m = op.config;
  g.attribute("label", op.label)
      .attribute("input_rounded_to", format_name(m.input))
      .attribute("addend", format_name(m.addend))
      .attribute("product", m.product_step == ProductStep::fused ? std::string("none") : format_name(m.product))
      .attribute("product_step", step_name(m.product_step))
      .attribute("sum", format_name(m.sum))
      .attribute("output", format_name(m.output))
      .attribute("stated_failure", o.failure)
      .attribute("lambda", o.lambda)
      .attribute("violations", o.violations)
      .attribute("vibea_exceeded", o.vibea_exceeded);
  g.dataset("error", o.error).attribute("meaning", "|d_hat - d| / |d|");
  g.dataset("dbea", o.dbea).attribute("meaning", "deterministic bound / |d|: always >= error");
  g.dataset("vibea", o.vibea).attribute("meaning", "probabilistic bound / |d|: >= error with probability >= 1 - "
                                                   "stated_failure");
}

// ---- the command --------------------------------------------------------------------------

int run_mac(const MacCliOptions& options) {
  const Config c = make_config(options);  // every option checked before any work
  KokkosSession kokkos;
  // created (and so checked) before the work, committed after it: no file on failure
  std::unique_ptr<Hdf5Writer> out;
  if (!c.output.empty())
    out = under_option("ebla mac --output", [&] { return std::make_unique<Hdf5Writer>(c.output); });
  std::vector<Outcome> outcomes;
  {
    const Samples s = draw(c);
    const auto a = to_view(s.a, "a"), b = to_view(s.b, "b"), cv = to_view(s.c, "c");
    for (const Operation& op : c.operations) outcomes.push_back(evaluate(op, s, a, b, cv, c.seed));
  }
  print_header(c);
  print_outcomes(c, outcomes);
  const std::int64_t violations = total_violations(outcomes);
  std::printf("DBEA: %lld violations in %lld samples%s\n", static_cast<long long>(violations),
              static_cast<long long>(c.samples * static_cast<std::int64_t>(outcomes.size())),
              violations == 0 ? " (error <= bound on every sample)" : "");
  if (out) {
    const Hdf5Group root = out->root();
    write_parameters(root, c);
    for (std::size_t k = 0; k < outcomes.size(); ++k) write_operation(root, c, c.operations[k], outcomes[k]);
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
  app.add_option("--output,-o", o->output, "Write the errors and bounds of every sample to this HDF5 file");
  app.footer(
      "d = a*b + c, a, b, c ~ U[1,2], computed three ways by ebla::mpfma (seed 000, section 4.1,\n"
      "Fig. 5): MAC without FMA in --high, FMA in --high, and MPFMA (a, b in --low, sum in --high).\n"
      "Errors are relative to the exact d; DBEA and VIBEA are the deterministic and probabilistic\n"
      "bounds (docs/bounds.md). apps/plot_mac.py draws Fig. 5 from --output.\n"
      "Exit code: 0 when the error is within DBEA on every sample; 1 otherwise; 2 for bad input.");
  return [o] { return run_mac(*o); };
}

}  // namespace ebla::cli

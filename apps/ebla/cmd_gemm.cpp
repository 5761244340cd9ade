// ebla gemm: mixed-precision matrix multiplication with certified error bounds (Model 1 of
// seed 001, kernels/include/ebla/kernels/gemm.hpp): one run, the tolerance-driven choice of
// formats and engine, and the GEMM experiments of the seeds.
//
//   ebla gemm --m 256 --k 256 --n 256 --input bfloat16 --words 2 --engine sgemm --reference
//   ebla gemm --tolerance 1e-6 --reference                 gemm_select, default candidates
//   ebla gemm --experiment narrow-range [--figure 5.1]     seed 001, section 5, Figs. 5.1, 5.2
//   ebla gemm --experiment tensor-core                     seed 000, section 4.2, Fig. 6
//
// narrow-range: A (m x k) and B (k x n) with entries +-10^phi, phi ~ U[-l, l], random signs
// (seed 001, section 5.1); m = n = 10, k over a list. Each config is an FMA chain in the
// accumulation format (binary16 for Fig. 5.1, binary32 for Fig. 5.2) with fp8 or binary16
// words, p = 1, 2, 3, subnormals on and off, once in the formats' own ("narrow") range and once
// in the unbounded range (ebla::unbounded_range of the input and of the accumulation format).
// The error is seed 001's (5.1), ||C - AB||_inf / (||A||_inf ||B||_inf), against A B computed
// exactly (the seed uses binary64 matrix multiplication), next to the certified normwise bound
// and the seed's (Theorems 3.1 and 4.1), both relative to ||A||_inf ||B||_inf. The configs of
// one k run on --threads threads, each into its own slot: the numbers do not depend on it.
//
// tensor-core: A (2^10 x 2^15) and B (2^15 x 2^3) with entries U(-1, 1), binary16 words on an
// H100-like unit, unscaled (the seed multiplies the matrices as they are, through cuBLAS); per
// entry the relative forward error |C - AB| / |AB| next to the certified and probable bounds
// and the seed's DBEA (Theorem 3.8) and VIBEA (Theorem 3.10), all relative to |AB|. The seed
// "stores the matrices in fp16": --given binary16 rounds the entries first (default binary64).
//
// The certified bound must hold on every run and entry: a violation is reported and makes the
// exit code 1, as does a tolerance that no candidate meets. Bad input exits with 2, before any
// work (entries that --given cannot hold: as soon as they are drawn), and leaves no --output file.
#include "commands.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ebla::cli {

namespace {

// ---- small helpers ------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double max_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  if (v.size() % 2) return v[h];
  return (v[h] + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h))) / 2;
}

double fraction(std::int64_t count, std::int64_t total) {
  return total > 0 ? static_cast<double>(count) / static_cast<double>(total) : 0.0;
}

// Rows of cells, the first `left` columns left-aligned (labels), the others right-aligned.
void print_table(const std::vector<std::vector<std::string>>& rows, std::size_t left = 1) {
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(w[c] - r[c].size(), ' ');
      line += (c == 0 ? "" : "  ") + (c < left ? r[c] + pad : pad + r[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

std::string sci(double v) { return std::isnan(v) ? "-" : strf("%.3e", v); }

// ---- options ------------------------------------------------------------------------------

struct GemmCliOptions {
  std::string experiment, figure = "both";
  std::string m, k, n;
  std::vector<std::string> k_list;
  std::string range = "10", distribution = "uniform", given_format = "binary64";
  std::string input, words = "1", engine = "emulated", unit;
  bool no_scaling = false, no_subnormals = false, reference = false;
  std::string tolerance, failure = "0.01";
  std::int64_t seed = 1;
  std::string threads = "2";
  std::string output;
  std::vector<const CLI::Option*> registered;  // to tell which options were given

  bool given(const std::string& long_name) const {
    for (const CLI::Option* o : registered)
      if (o->check_lname(long_name)) return o->count() > 0;
    return false;
  }
};

enum class Mode { run, select, narrow_range, tensor_core };
enum class Distribution { uniform, logscale };

const char* mode_text(Mode m) {
  switch (m) {
    case Mode::run: return "a single run";
    case Mode::select: return "--tolerance (the selection chooses the config)";
    case Mode::narrow_range: return "--experiment narrow-range";
    case Mode::tensor_core: return "--experiment tensor-core";
  }
  return "?";
}

struct Config {
  Mode mode = Mode::run;
  std::int64_t m = 0, k = 0, n = 0;
  std::vector<std::int64_t> k_list;
  std::vector<std::string> figures;  // "5.1", "5.2"
  Distribution distribution = Distribution::uniform;
  double range = 10;
  Format given = formats::binary64();  // the entries are drawn, then rounded to nearest in it
  GemmConfig gemm;        // run and tensor-core
  std::string unit_name;  // emulated engine
  double tolerance = 0;
  double failure = 0.01;
  bool scaling = true, subnormals = true, reference = false;
  std::uint64_t seed = 1;
  int threads = 2;  // narrow-range: configs run on this many threads
  std::string output;
};

constexpr double max_dimension = 1e8;
constexpr double max_entries = 0x1p28;  // per matrix: 2 GiB of binary64

Mode parse_mode(const GemmCliOptions& o) {
  if (o.experiment.empty()) return o.given("tolerance") ? Mode::select : Mode::run;
  Mode m;
  if (o.experiment == "narrow-range") m = Mode::narrow_range;
  else if (o.experiment == "tensor-core") m = Mode::tensor_core;
  else
    throw_invalid("ebla gemm --experiment",
                  "unknown experiment '" + o.experiment + "' (known: narrow-range, tensor-core)");
  return m;
}

// Every option a mode does not use is an error, not silently ignored.
void check_applicable(const GemmCliOptions& o, Mode m) {
  static const std::map<std::string, std::vector<Mode>> uses = {
      {"figure", {Mode::narrow_range}},
      {"threads", {Mode::narrow_range}},
      {"k-list", {Mode::narrow_range}},
      {"m", {Mode::run, Mode::select, Mode::narrow_range, Mode::tensor_core}},
      {"n", {Mode::run, Mode::select, Mode::narrow_range, Mode::tensor_core}},
      {"k", {Mode::run, Mode::select, Mode::tensor_core}},
      {"range", {Mode::run, Mode::select, Mode::narrow_range}},
      {"distribution", {Mode::run, Mode::select}},
      {"given", {Mode::run, Mode::select, Mode::tensor_core}},
      {"input", {Mode::run, Mode::tensor_core}},
      {"words", {Mode::run}},
      {"engine", {Mode::run}},
      {"unit", {Mode::run, Mode::tensor_core}},
      {"no-scaling", {Mode::run, Mode::select}},
      {"no-subnormals", {Mode::run, Mode::select}},
      {"reference", {Mode::run, Mode::select}},
      {"failure", {Mode::run, Mode::select, Mode::tensor_core}},
  };
  if (o.given("k") && m == Mode::narrow_range)
    throw_invalid("ebla gemm --k", "the narrow-range experiment takes a list of k: --k-list");
  for (const auto& [name, modes] : uses)
    if (o.given(name) && std::find(modes.begin(), modes.end(), m) == modes.end())
      throw_invalid("ebla gemm --" + name, std::string("does not apply to ") + mode_text(m));
}

std::int64_t parse_size(const std::string& text, const std::string& option) {
  const double v = parse_double(text, option);
  if (!(v > 0)) throw_invalid(option, text + " is not a positive size");
  if (v != std::floor(v)) throw_invalid(option, text + " is not a whole number");
  if (v > max_dimension) throw_invalid(option, text + " exceeds 1e8");
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> parse_k_list(const std::vector<std::string>& texts) {
  std::vector<std::int64_t> ks;
  for (const std::string& s : texts)
    if (!s.empty()) ks.push_back(parse_size(s, "ebla gemm --k-list"));
  if (ks.empty()) throw_invalid("ebla gemm --k-list", "the list of k is empty");
  return ks;
}

void check_entries(const std::string& what, std::int64_t rows, std::int64_t cols) {
  if (static_cast<double>(rows) * static_cast<double>(cols) > max_entries)
    throw_invalid("ebla gemm --m --k --n",
                  what + " would be " + std::to_string(rows) + " x " + std::to_string(cols) + ", more than 2^28 entries");
}

double parse_failure(const std::string& text) {
  const double v = parse_double(text, "ebla gemm --failure");
  if (!(v > 0 && v < 1)) throw_invalid("ebla gemm --failure", "probability " + text + " is outside (0, 1)");
  return v;
}

double parse_tolerance(const std::string& text) {
  const double v = parse_double(text, "ebla gemm --tolerance");
  if (!(v > 0 && std::isfinite(v)))
    throw_invalid("ebla gemm --tolerance", "tolerance " + text + " is not a positive finite number");
  return v;
}

double parse_range(const std::string& text) {
  const double v = parse_double(text, "ebla gemm --range");
  if (!(v >= 0 && v <= 300)) throw_invalid("ebla gemm --range", "l = " + text + " is outside [0, 300]");
  return v;
}

int parse_words(const std::string& text) {
  const double v = parse_double(text, "ebla gemm --words");
  if (!(v >= 1 && v <= 3 && v == std::floor(v)))
    throw_invalid("ebla gemm --words", "p = " + text + " is outside 1..3");
  return static_cast<int>(v);
}

int parse_threads(const std::string& text) {
  const double v = parse_double(text, "ebla gemm --threads");
  if (!(v >= 1 && v <= 64 && v == std::floor(v)))
    throw_invalid("ebla gemm --threads", text + " is not a number of threads in 1..64");
  return static_cast<int>(v);
}

std::vector<std::string> parse_figures(const std::string& text) {
  if (text == "5.1") return {"5.1"};
  if (text == "5.2") return {"5.2"};
  if (text == "both") return {"5.1", "5.2"};
  throw_invalid("ebla gemm --figure", "unknown figure '" + text + "' (known: 5.1, 5.2, both)");
}

Distribution parse_distribution(const std::string& text) {
  if (text == "uniform") return Distribution::uniform;
  if (text == "logscale") return Distribution::logscale;
  throw_invalid("ebla gemm --distribution", "unknown distribution '" + text + "' (known: uniform, logscale)");
}

// The run's GemmConfig (run and tensor-core), validated as ebla::gemm would, the failure
// named by the options that made it.
GemmConfig make_gemm_config(const GemmCliOptions& o, Config& c, const std::string& default_input,
                            const std::string& default_unit) {
  GemmConfig g;
  const std::string input = o.input.empty() ? default_input : o.input;
  g.input = under_option("ebla gemm --input", [&] { return format_by_name(input); });
  g.words = parse_words(o.words);
  g.engine = under_option("ebla gemm --engine", [&] { return gemm_engine_by_name(o.engine); });
  if (g.engine != GemmEngine::emulated && o.given("unit"))
    throw_invalid("ebla gemm --unit", "applies to --engine emulated, not to --engine " + o.engine);
  c.unit_name = o.unit.empty() ? default_unit : o.unit;
  if (g.engine == GemmEngine::emulated)
    g.unit = under_option("ebla gemm --unit", [&] { return matrix_unit_by_name(c.unit_name); });
  g.scaling = c.scaling;
  g.subnormals = c.subnormals;
  g.failure = c.failure;
  g.reference = c.reference;
  // entrywise bounds (p^2 + 3 more binary64 products) only to compare with the reference
  g.componentwise = c.reference || c.mode == Mode::tensor_core;
  std::string options = "ebla gemm --input " + input + " --words " + o.words + " --engine " + o.engine;
  if (g.engine == GemmEngine::emulated) options += " --unit " + c.unit_name;
  under_option(options, [&] { validate(g, "ebla::gemm"); });
  return g;
}

Config make_config(const GemmCliOptions& o) {
  Config c;
  c.mode = parse_mode(o);
  check_applicable(o, c.mode);
  c.seed = static_cast<std::uint64_t>(o.seed);
  c.failure = parse_failure(o.failure);
  c.range = parse_range(o.range);
  c.distribution = parse_distribution(o.distribution);
  c.given = under_option("ebla gemm --given", [&] { return format_by_name(o.given_format); });
  if (o.given("range") && (c.mode == Mode::run || c.mode == Mode::select) && c.distribution != Distribution::logscale)
    throw_invalid("ebla gemm --range", "applies to --distribution logscale, not to --distribution " + o.distribution);
  c.scaling = !o.no_scaling;
  c.subnormals = !o.no_subnormals;
  c.reference = o.reference;
  c.output = o.output;
  auto size = [&](const std::string& text, const char* option, std::int64_t fallback) {
    return text.empty() ? fallback : parse_size(text, std::string("ebla gemm ") + option);
  };
  switch (c.mode) {
    case Mode::narrow_range:
      c.figures = parse_figures(o.figure);
      c.threads = parse_threads(o.threads);
      c.m = size(o.m, "--m", 10);
      c.n = size(o.n, "--n", 10);
      c.k_list = o.given("k-list") ? parse_k_list(o.k_list) : std::vector<std::int64_t>{10, 100, 1000, 10000, 100000};
      for (std::int64_t k : c.k_list) {
        check_entries("A", c.m, k);
        check_entries("B", k, c.n);
      }
      break;
    case Mode::tensor_core:
      c.m = size(o.m, "--m", 1024);
      c.k = size(o.k, "--k", 32768);
      c.n = size(o.n, "--n", 8);
      c.scaling = false;  // as the seed: cuBLAS on the matrices as given
      c.gemm = make_gemm_config(o, c, "binary16", "h100_fp16");
      break;
    case Mode::run:
    case Mode::select:
      c.m = size(o.m, "--m", 256);
      c.k = size(o.k, "--k", 256);
      c.n = size(o.n, "--n", 256);
      if (c.mode == Mode::select) c.tolerance = parse_tolerance(o.tolerance);
      else c.gemm = make_gemm_config(o, c, "bfloat16", "fma_binary32");
      break;
  }
  if (c.mode != Mode::narrow_range) {
    check_entries("A", c.m, c.k);
    check_entries("B", c.k, c.n);
    check_entries("C", c.m, c.n);
    // per entry of A, B and C (measured): a run about 16 bytes (the matrices, their words and
    // C's bounds), the tensor-core experiment about 80 (its units' per-entry states besides)
    const double entries = static_cast<double>(c.m) * c.k + static_cast<double>(c.k) * c.n + static_cast<double>(c.m) * c.n;
    detail::check_memory("ebla gemm --m/--k/--n",
                         strf("%lld x %lld times %lld x %lld", static_cast<long long>(c.m), static_cast<long long>(c.k),
                              static_cast<long long>(c.k), static_cast<long long>(c.n)),
                         (c.mode == Mode::tensor_core ? 80 : 16) * entries);
  }
  return c;
}

// ---- data ---------------------------------------------------------------------------------

// Uniform over the multiples of 2^-53 in [0, 1).
double uniform01(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1p-53; }

// seed 001, section 5.1: +-10^phi with phi ~ U[-l, l] and the sign + or - with probability 1/2.
double logscale_entry(std::mt19937_64& gen, double l) {
  const double phi = l * (2 * uniform01(gen) - 1);
  const double sign = (gen() >> 63) != 0 ? -1.0 : 1.0;
  return sign * std::pow(10.0, phi);
}

// U(-1, 1): 2 x - 1, exact in binary64.
double uniform_entry(std::mt19937_64& gen) { return 2 * uniform01(gen) - 1; }

HostMatrix draw(std::mt19937_64& gen, const char* name, std::int64_t rows, std::int64_t cols, Distribution d,
                double l) {
  HostMatrix X(std::string(name), rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      X(i, j) = d == Distribution::uniform ? uniform_entry(gen) : logscale_entry(gen, l);
  return X;
}

std::string distribution_text(Distribution d, double l) {
  return d == Distribution::uniform ? std::string("U(-1, 1)") : strf("+-10^phi, phi ~ U[-%g, %g]", l, l);
}

std::string data_text(const Config& c) {
  std::string s = distribution_text(c.distribution, c.range);
  if (c.given != formats::binary64()) s += " given in " + format_name(c.given);
  return s;
}

// A and B of a run: drawn from mt19937_64(seed), A first, then rounded to nearest in --given.
std::pair<HostMatrix, HostMatrix> draw_operands(const Config& c) {
  std::mt19937_64 gen(c.seed);
  HostMatrix A = draw(gen, "A", c.m, c.k, c.distribution, c.range);
  HostMatrix B = draw(gen, "B", c.k, c.n, c.distribution, c.range);
  if (c.given == formats::binary64()) return {A, B};
  const RoundingConstants rc = rounding_constants(c.given);
  for (const HostMatrix& X : {A, B})
    for (std::size_t l = 0; l < X.size(); ++l) {
      const double x = X.data()[l];
      X.data()[l] = round_to<Rounding::nearest_even>(x, rc);
      if (!std::isfinite(X.data()[l]))
        throw_invalid("ebla gemm --given", "'" + format_name(c.given) + "' cannot represent the entry " + strf("%g", x) +
                                               " of " + (X.data() == A.data() ? "A" : "B"));
    }
  return {A, B};
}

// describe() with the unit's catalogue name (describe() finds the name from the parameters,
// which several presets share when the input format is left out).
std::string config_text(const GemmConfig& g, const std::string& unit_name) {
  if (g.engine != GemmEngine::emulated) return describe(g);
  std::string s = format_name(g.input) + " x" + std::to_string(g.words) + " on emulated(" + unit_name + ")";
  if (!g.scaling) s += ", unscaled";
  if (!g.subnormals) s += ", no subnormals";
  return s;
}

// ||C - E||_inf in binary64.
double normwise_error(const HostMatrix& C, const HostMatrix& E) {
  double norm = 0;
  for (std::size_t i = 0; i < C.extent(0); ++i) {
    double row = 0;
    for (std::size_t j = 0; j < C.extent(1); ++j) row += std::fabs(C(i, j) - E(i, j));
    if (std::isnan(row)) return row;  // a NaN in C: no error to speak of, and no bound met
    norm = std::max(norm, row);
  }
  return norm;
}

std::vector<double> values_of(const HostMatrix& X) { return std::vector<double>(X.data(), X.data() + X.size()); }

// Attributes common to every group of the file.
void write_common(const Hdf5Object& g, const Config& c) {
  g.attribute("creator", "ebla gemm")
      .attribute("ebla_version", EBLA_VERSION)
      .attribute("command_line", command_line())
      .attribute("seed", static_cast<std::int64_t>(c.seed));
}

std::string unit_label(const std::string& unit_name, const GemmConfig& g) {
  return g.engine == GemmEngine::emulated ? unit_name : std::string("-");
}

// Parameters and results of one gemm() call, as attributes, and its matrices as datasets.
// `asked` is the config as given; r.config the one that ran (formats settled by ebla::gemm).
void write_result(const Hdf5Group& g, const Config& c, const std::string& unit_name, const GemmConfig& asked,
                  const GemmResult& r) {
  write_common(g, c);
  const GemmConfig& s = r.config;
  g.attribute("description", config_text(asked, unit_name))
      .attribute("m", c.m)
      .attribute("k", c.k)
      .attribute("n", c.n)
      .attribute("distribution", distribution_text(c.distribution, c.range))
      .attribute("given", format_name(c.given))
      .attribute("input", format_name(asked.input))
      .attribute("input_as_run", format_name(s.input))
      .attribute("words", s.words)
      .attribute("engine", to_string(s.engine))
      .attribute("unit", unit_label(unit_name, s))
      .attribute("unit_parameters", s.engine == GemmEngine::emulated ? to_string(s.unit) : std::string("-"))
      .attribute("scaling", static_cast<std::int64_t>(s.scaling))
      .attribute("subnormals", static_cast<std::int64_t>(s.subnormals))
      .attribute("failure", s.failure)
      .attribute("theta", r.theta)
      .attribute("norm_a", r.norm_a)
      .attribute("norm_b", r.norm_b)
      .attribute("normwise_bound", r.normwise_bound)
      .attribute("relative_bound", r.normwise_bound / (r.norm_a * r.norm_b))
      .attribute("paper_normwise", r.paper.normwise)
      .attribute("paper_relative", r.paper.normwise / (r.norm_a * r.norm_b))
      .attribute("lambda", r.lambda)
      .attribute("model_T", r.model.T)
      .attribute("model_delta", r.model.delta)
      .attribute("model_depth", r.model.depth)
      .attribute("model_steps", r.model.steps)
      .attribute("model_G", r.model.G)
      .attribute("split_seconds", r.split_seconds)
      .attribute("product_seconds", r.product_seconds)
      .attribute("bound_seconds", r.bound_seconds)
      .attribute("observed_normwise", r.observed_normwise)
      .attribute("observed_max_ratio", r.observed_max_ratio);
  const std::size_t m = r.C.extent(0), n = r.C.extent(1);
  g.dataset("C", values_of(r.C), m, n);
  if (r.bound.size() > 0) {
    g.dataset("bound", values_of(r.bound), m, n).attribute("meaning", "|C - AB| <= bound, entrywise, certified");
    g.dataset("probable_bound", values_of(r.probable_bound), m, n)
        .attribute("meaning", "|C - AB| <= probable_bound with probability >= 1 - failure per entry");
  }
  if (r.exact.size() > 0) g.dataset("exact", values_of(r.exact), m, n).attribute("meaning", "AB correctly rounded");
}

// ---- one run and the selection ------------------------------------------------------------

void print_data_header(const Config& c, const char* what) {
  std::printf("ebla gemm: %s: A %lld x %lld, B %lld x %lld, entries %s, seed %llu\n", what,
              static_cast<long long>(c.m), static_cast<long long>(c.k), static_cast<long long>(c.k),
              static_cast<long long>(c.n), data_text(c).c_str(), static_cast<unsigned long long>(c.seed));
}

// Prints a result's bounds, times and (with the reference) its error; returns the number of
// violations of the certified bound (normwise, entrywise: 0, 1 or 2).
std::int64_t print_result(const GemmResult& r) {
  const double scale = r.norm_a * r.norm_b;
  const AccumulationModel& a = r.model;
  std::printf("  theta %.6g; accumulation: T = %d, delta = %.3e, depth d = %g, steps N = %g, G = %.3e%s\n", r.theta,
              a.T, a.delta, a.depth, a.steps, a.G, a.unbiased ? "" : " (biased: probable bound = certified)");
  std::printf("  ||A||_inf = %.6e, ||B||_inf = %.6e\n\n", r.norm_a, r.norm_b);
  std::vector<std::vector<std::string>> rows = {{"", "||.||_inf", "relative to ||A|| ||B||"}};
  rows.push_back({"certified bound", sci(r.normwise_bound), sci(r.normwise_bound / scale)});
  rows.push_back({"paper's bound (seed 001)", sci(r.paper.normwise), sci(r.paper.normwise / scale)});
  if (r.observed_normwise >= 0) rows.push_back({"observed ||C - AB||", sci(r.observed_normwise), sci(r.observed_normwise / scale)});
  print_table(rows);
  if (r.observed_max_ratio >= 0)
    std::printf("largest entrywise |C - AB| / bound: %.3e\n", r.observed_max_ratio);
  std::printf("times (s): split %.4f, products %.4f, bounds %.4f\n", r.split_seconds, r.product_seconds,
              r.bound_seconds);
  if (r.observed_normwise < 0) return 0;  // nothing to check without the reference
  // an infinite bound states nothing; a NaN error (a NaN in C) meets no finite bound
  const bool normwise = std::isfinite(r.normwise_bound) && !(r.observed_normwise <= r.normwise_bound);
  const bool entrywise = r.observed_max_ratio > 1;
  if (normwise)
    std::printf("violation: ||C - AB||_inf = %.6e > certified bound %.6e\n", r.observed_normwise, r.normwise_bound);
  if (entrywise)
    std::printf("violation: an entry has |C - AB| = %.6e times its certified bound\n", r.observed_max_ratio);
  const int violations = (normwise ? 1 : 0) + (entrywise ? 1 : 0);
  std::printf("certified bound: %d violations%s\n", violations, violations == 0 ? " (normwise and entrywise)" : "");
  if (violations > 0) spdlog::error("the certified bound was violated");
  return violations;
}

int run_single(const Config& c, Hdf5Writer* out) {
  const auto [A, B] = draw_operands(c);
  const auto start = Clock::now();
  const GemmResult r = gemm(A, B, c.gemm);
  const double total = seconds_since(start);
  print_data_header(c, "one run");
  std::printf("  config %s\n", config_text(c.gemm, c.unit_name).c_str());
  const std::int64_t violations = print_result(r);
  std::printf("total %.4f s%s\n", total, c.reference ? " (with the exact reference)" : "");
  if (out != nullptr) {
    const Hdf5Group root = out->root();
    write_common(root, c);
    root.attribute("experiment", "run");
    write_result(root.group("run"), c, c.unit_name, c.gemm, r);
  }
  return violations > 0 ? 1 : 0;
}

int run_select(const Config& c, Hdf5Writer* out) {
  const auto [A, B] = draw_operands(c);
  GemmOptions opt;
  opt.tolerance = c.tolerance;
  opt.scaling = c.scaling;
  opt.subnormals = c.subnormals;
  opt.failure = c.failure;
  opt.componentwise = c.reference;  // as in a single run: entrywise only against the reference
  const auto start = Clock::now();
  const GemmPlan plan = gemm_select(A, B, opt);
  const double select_seconds = seconds_since(start);
  print_data_header(c, "selection");
  std::printf("  tolerance %g: wanted ||C - AB||_inf <= %g ||A||_inf ||B||_inf; selection took %.4f s\n\n",
              c.tolerance, c.tolerance, select_seconds);
  std::vector<std::vector<std::string>> rows = {{"candidate", "relative bound", "modelled ms", "meets", ""}};
  for (const GemmCandidateReport& rep : plan.candidates) {
    const bool chosen = describe(rep.config) == describe(plan.config);
    rows.push_back({describe(rep.config), sci(rep.relative_bound), strf("%.3f", 1e3 * rep.seconds),
                    rep.relative_bound <= c.tolerance ? "yes" : "no", chosen && plan.meets_tolerance ? "<- chosen" : ""});
  }
  print_table(rows);
  if (out != nullptr) {
    const Hdf5Group root = out->root();
    write_common(root, c);
    root.attribute("experiment", "select");
    const Hdf5Group g = root.group("select");
    write_common(g, c);
    g.attribute("tolerance", c.tolerance)
        .attribute("m", c.m)
        .attribute("k", c.k)
        .attribute("n", c.n)
        .attribute("distribution", distribution_text(c.distribution, c.range))
        .attribute("given", format_name(c.given))
        .attribute("scaling", static_cast<std::int64_t>(c.scaling))
        .attribute("subnormals", static_cast<std::int64_t>(c.subnormals))
        .attribute("failure", c.failure)
        .attribute("meets_tolerance", static_cast<std::int64_t>(plan.meets_tolerance))
        .attribute("choice", describe(plan.config))
        .attribute("choice_relative_bound", plan.relative_bound)
        .attribute("select_seconds", select_seconds);
    for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
      const GemmCandidateReport& rep = plan.candidates[i];
      g.group(strf("candidate_%02zu", i))
          .attribute("description", describe(rep.config))
          .attribute("input", format_name(rep.config.input))
          .attribute("words", rep.config.words)
          .attribute("engine", to_string(rep.config.engine))
          .attribute("relative_bound", rep.relative_bound)
          .attribute("modelled_seconds", rep.seconds)
          .attribute("meets", static_cast<std::int64_t>(rep.relative_bound <= c.tolerance));
    }
  }
  if (!plan.meets_tolerance) {
    std::printf("\nno candidate meets tolerance %g: the smallest certified relative bound is %.3e (%s)\n",
                c.tolerance, plan.relative_bound, describe(plan.config).c_str());
    spdlog::error("no candidate meets tolerance {:g} (best: {}, relative bound {:.3e})", c.tolerance,
                  describe(plan.config), plan.relative_bound);
    return 1;
  }
  GemmConfig chosen = plan.config;
  chosen.reference = c.reference;
  const GemmResult r = gemm(A, B, chosen);
  std::printf("\nchosen: %s, modelled %.3f ms\n", describe(plan.config).c_str(), 1e3 * plan.seconds);
  const std::int64_t violations = print_result(r);
  if (out != nullptr) write_result(out->root().group("run"), c, "-", plan.config, r);
  return violations > 0 ? 1 : 0;
}

// ---- seed 001, section 5: narrow range against unbounded range -------------------------------

// One line of Fig. 5.1 or 5.2: one config over the k list.
struct NarrowCase {
  std::string figure;
  Format input, accumulation;
  bool subnormals = true;
  int words = 1;
  bool unbounded = false;

  std::string key() const {
    return format_name(input) + (subnormals ? "_subnormals_on" : "_subnormals_off") + "_p" +
           std::to_string(words) + (unbounded ? "_unbounded" : "_narrow");
  }
  // An FMA chain in the accumulation format: block 1, exact products, one rounding per step.
  GemmConfig config() const {
    GemmConfig g;
    g.input = unbounded ? unbounded_range(input) : input;
    g.words = words;
    g.subnormals = subnormals;
    g.engine = GemmEngine::emulated;
    g.unit = units::fma_binary32();
    g.unit.accumulation = unbounded ? unbounded_range(accumulation) : accumulation;
    g.componentwise = false;  // normwise only: (5.1) is normwise
    return g;
  }
};

// Fig. 5.1: fp8 inputs, binary16 accumulation; Fig. 5.2: binary16 and fp8 inputs, binary32
// accumulation. Panels as in the seed: a row per input format, subnormals off (left) and on.
std::vector<NarrowCase> narrow_cases(const std::string& figure) {
  const Format acc = figure == "5.1" ? formats::binary16() : formats::binary32();
  std::vector<Format> inputs = {formats::fp8_e5m2(), formats::fp8_e4m3()};
  if (figure == "5.2") inputs.insert(inputs.begin(), formats::binary16());
  std::vector<NarrowCase> cases;
  for (const Format& in : inputs)
    for (bool sub : {false, true})
      for (int p = 1; p <= 3; ++p)
        for (bool unbounded : {false, true}) cases.push_back({figure, in, acc, sub, p, unbounded});
  return cases;
}

struct NarrowPoint {
  double error = NAN, certified = NAN, paper = NAN;  // relative to ||A|| ||B||
  double abs_error = NAN, bound = NAN, theta = NAN, seconds = 0;
  bool violation = false;
};

struct NarrowFigure {
  std::string figure;
  std::vector<NarrowCase> cases;
  std::vector<std::vector<NarrowPoint>> points;  // [case][k]
  double seconds = 0;
};

NarrowPoint narrow_point(const NarrowCase& nc, const HostMatrix& A, const HostMatrix& B, const HostMatrix& E) {
  const auto start = Clock::now();
  const GemmResult r = gemm(A, B, nc.config());
  NarrowPoint p;
  p.seconds = seconds_since(start);
  const double scale = r.norm_a * r.norm_b;  // ||A||_inf ||B||_inf
  p.abs_error = normwise_error(r.C, E);
  p.bound = r.normwise_bound;
  p.theta = r.theta;
  // both divided by the same number, rounded once: error <= bound gives error <= certified
  p.error = p.abs_error / scale;
  p.certified = p.bound / scale;
  p.paper = r.paper.normwise / scale;
  p.violation = std::isfinite(p.bound) && !(p.abs_error <= p.bound);  // inf states nothing
  return p;
}

std::string case_label(const NarrowCase& nc) {
  return format_name(nc.input) + " -> " + format_name(nc.accumulation);
}

void print_narrow_table(const NarrowFigure& f, const std::vector<std::int64_t>& ks, const char* title,
                        double NarrowPoint::*field, bool narrow_only) {
  std::printf("\nFig. %s: %s\n", f.figure.c_str(), title);
  std::vector<std::string> header = {"input -> accumulation", "subnormals", "p", "range"};
  for (std::int64_t k : ks) header.push_back(strf("k = %lld", static_cast<long long>(k)));
  std::vector<std::vector<std::string>> rows = {header};
  for (std::size_t i = 0; i < f.cases.size(); ++i) {
    const NarrowCase& nc = f.cases[i];
    if (narrow_only && nc.unbounded) continue;
    std::vector<std::string> row = {case_label(nc), nc.subnormals ? "on" : "off", std::to_string(nc.words),
                                    nc.unbounded ? "unbounded" : "narrow"};
    for (const NarrowPoint& p : f.points[i]) row.push_back(sci(p.*field));
    rows.push_back(row);
  }
  print_table(rows, 2);
}

void write_narrow(const Hdf5Group& root, const Config& c, const std::vector<NarrowFigure>& figures) {
  const Hdf5Group g = root.group("narrow_range");
  write_common(g, c);
  g.attribute("experiment", "seed 001, section 5, Figs. 5.1 and 5.2: narrow range against unbounded range")
      .attribute("distribution", distribution_text(Distribution::logscale, c.range))
      .attribute("range", c.range)
      .attribute("m", c.m)
      .attribute("n", c.n)
      .attribute("k_list", c.k_list)
      .attribute("threads", c.threads)
      .attribute("error", "||C - AB||_inf / (||A||_inf ||B||_inf), AB exact (seed 001 (5.1))")
      .attribute("unit", "FMA chain in the accumulation format: block 1, exact products, nearest");
  for (const NarrowFigure& f : figures) {
    const Hdf5Group fg = g.group(f.figure == "5.1" ? "fig5_1" : "fig5_2");
    write_common(fg, c);
    fg.attribute("figure", f.figure)
        .attribute("accumulation", format_name(f.cases.front().accumulation))
        .attribute("k_list", c.k_list)
        .attribute("seconds", f.seconds);
    for (std::size_t i = 0; i < f.cases.size(); ++i) {
      const NarrowCase& nc = f.cases[i];
      const GemmConfig cfg = nc.config();
      const Hdf5Group cg = fg.group(nc.key());
      std::vector<double> error, certified, paper, abs_error, bound, theta, seconds;
      std::int64_t violations = 0;
      for (const NarrowPoint& p : f.points[i]) {
        error.push_back(p.error);
        certified.push_back(p.certified);
        paper.push_back(p.paper);
        abs_error.push_back(p.abs_error);
        bound.push_back(p.bound);
        theta.push_back(p.theta);
        seconds.push_back(p.seconds);
        violations += p.violation ? 1 : 0;
      }
      write_common(cg, c);
      cg.attribute("figure", f.figure)
          .attribute("input", format_name(nc.input))
          .attribute("accumulation", format_name(nc.accumulation))
          .attribute("input_as_run", format_name(cfg.input))
          .attribute("accumulation_as_run", format_name(cfg.unit.accumulation))
          .attribute("words", nc.words)
          .attribute("subnormals", static_cast<std::int64_t>(nc.subnormals))
          .attribute("range", nc.unbounded ? "unbounded" : "narrow")
          .attribute("range_l", c.range)
          .attribute("m", c.m)
          .attribute("n", c.n)
          .attribute("k_list", c.k_list)
          .attribute("description", format_name(cfg.input) + " x" + std::to_string(nc.words) + " on an FMA chain in " +
                                        format_name(cfg.unit.accumulation) + (nc.subnormals ? "" : ", no subnormals"))
          .attribute("unit_parameters", to_string(cfg.unit))
          .attribute("violations", violations);
      cg.dataset("k", c.k_list);
      cg.dataset("error", error).attribute("meaning", "||C - AB||_inf / (||A||_inf ||B||_inf)");
      cg.dataset("certified", certified).attribute("meaning", "certified normwise bound / (||A||_inf ||B||_inf)");
      cg.dataset("paper", paper).attribute("meaning", "seed 001 Theorem 3.1 (p = 1) or 4.1 / (||A||_inf ||B||_inf)");
      cg.dataset("abs_error", abs_error).attribute("meaning", "||C - AB||_inf");
      cg.dataset("normwise_bound", bound).attribute("meaning", "certified bound on ||C - AB||_inf");
      cg.dataset("theta", theta).attribute("meaning", "theta of seed 001 (3.2)");
      cg.dataset("seconds", seconds).attribute("meaning", "time of ebla::gemm");
    }
  }
}

// Runs job(0) .. job(count - 1) on `threads` threads, each job on one of them; rethrows the
// first exception a job threw. The jobs write to their own slots: the results do not depend on
// the number of threads. (ebla::gemm of the emulated engine runs Kokkos::Serial range kernels,
// which keep no shared state, and no BLAS call when componentwise bounds are off.)
template <class Job>
void on_threads(int threads, std::size_t count, const Job& job) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

int run_narrow(const Config& c, Hdf5Writer* out) {
  std::vector<NarrowFigure> figures;
  for (const std::string& fig : c.figures) {
    NarrowFigure f;
    f.figure = fig;
    f.cases = narrow_cases(fig);
    f.points.assign(f.cases.size(), std::vector<NarrowPoint>(c.k_list.size()));
    figures.push_back(f);
  }
  double data_seconds = 0;
  for (std::size_t ik = 0; ik < c.k_list.size(); ++ik) {
    const std::int64_t k = c.k_list[ik];
    // the data of each k from (seed, k) alone: a k gets the same matrices in every list
    auto start = Clock::now();
    std::seed_seq seq{static_cast<std::uint32_t>(c.seed), static_cast<std::uint32_t>(c.seed >> 32),
                      static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
    std::mt19937_64 gen(seq);
    const HostMatrix A = draw(gen, "A", c.m, k, Distribution::logscale, c.range);
    const HostMatrix B = draw(gen, "B", k, c.n, Distribution::logscale, c.range);
    const HostMatrix E = exact_gemm(A, B);
    data_seconds += seconds_since(start);
    for (NarrowFigure& f : figures) {
      start = Clock::now();
      on_threads(c.threads, f.cases.size(), [&](std::size_t i) { f.points[i][ik] = narrow_point(f.cases[i], A, B, E); });
      f.seconds += seconds_since(start);
    }
  }
  std::printf("ebla gemm: seed 001, section 5: narrow range against unbounded range\n");
  std::printf("  A %lld x k, B k x %lld, entries %s, seed %llu; AB exact (correctly rounded)\n",
              static_cast<long long>(c.m), static_cast<long long>(c.n),
              distribution_text(Distribution::logscale, c.range).c_str(), static_cast<unsigned long long>(c.seed));
  std::printf("  FMA chain in the accumulation format; relative to ||A||_inf ||B||_inf (seed 001 (5.1))\n");
  std::int64_t violations = 0, runs = 0;
  for (const NarrowFigure& f : figures) {
    print_narrow_table(f, c.k_list, "normwise relative error ||C - AB||_inf / (||A||_inf ||B||_inf)",
                       &NarrowPoint::error, false);
    print_narrow_table(f, c.k_list, "certified bound / (||A||_inf ||B||_inf)", &NarrowPoint::certified, false);
    print_narrow_table(f, c.k_list, "seed 001's bound (Theorem 3.1, p = 1; 4.1, p > 1) / (||A||_inf ||B||_inf)",
                       &NarrowPoint::paper, true);
    for (std::size_t i = 0; i < f.cases.size(); ++i)
      for (std::size_t ik = 0; ik < c.k_list.size(); ++ik) {
        const NarrowPoint& p = f.points[i][ik];
        ++runs;
        if (!p.violation) continue;
        ++violations;
        const NarrowCase& nc = f.cases[i];
        std::printf("violation: Fig. %s, %s, subnormals %s, p = %d, %s range, k = %lld: ||C - AB|| = %.6e > bound %.6e\n",
                    f.figure.c_str(), case_label(nc).c_str(), nc.subnormals ? "on" : "off", nc.words,
                    nc.unbounded ? "unbounded" : "narrow", static_cast<long long>(c.k_list[ik]), p.abs_error, p.bound);
      }
  }
  std::printf("\ntimes: data and exact AB %.2f s", data_seconds);
  for (const NarrowFigure& f : figures)
    std::printf(", Fig. %s %.2f s (%zu configs x %zu k)", f.figure.c_str(), f.seconds, f.cases.size(), c.k_list.size());
  std::printf(" on %d thread%s\n", c.threads, c.threads == 1 ? "" : "s");
  std::printf("certified bound: %lld violations in %lld runs%s\n", static_cast<long long>(violations),
              static_cast<long long>(runs), violations == 0 ? " (error <= bound on every run)" : "");
  if (out != nullptr) {
    const Hdf5Group root = out->root();
    write_common(root, c);
    root.attribute("experiment", "narrow-range");
    write_narrow(root, c, figures);
  }
  if (violations == 0) return 0;
  spdlog::error("the certified bound was violated in {} runs", violations);
  return 1;
}

// ---- seed 000, section 4.2: the tensor-core GEMM ---------------------------------------------

int run_tensor_core(const Config& c, Hdf5Writer* out) {
  auto start = Clock::now();
  const auto [A, B] = draw_operands(c);
  const double data_seconds = seconds_since(start);
  start = Clock::now();
  const GemmResult r = gemm(A, B, c.gemm);
  const double gemm_seconds = seconds_since(start);
  start = Clock::now();
  const HostMatrix E = exact_gemm(A, B);
  const double exact_seconds = seconds_since(start);

  const std::size_t entries = r.C.size();
  std::vector<double> error, certified, probable, dbea, vibea;
  std::vector<double> ratio_dbea;  // certified / DBEA
  std::int64_t violations = 0, zero = 0, above_probable = 0, above_dbea = 0, above_vibea = 0;
  for (std::size_t l = 0; l < entries; ++l) {
    const double e = E.data()[l], err = std::fabs(r.C.data()[l] - e);
    const double bound = r.bound.data()[l];
    if (std::isfinite(bound) && !(err <= bound)) {
      ++violations;
      if (violations <= 10)
        std::printf("violation: entry (%zu, %zu): |C - AB| = %.6e > bound %.6e\n", l / c.n, l % c.n, err, bound);
    }
    above_probable += err > r.probable_bound.data()[l] ? 1 : 0;
    above_dbea += err > r.paper.dbea.data()[l] ? 1 : 0;
    above_vibea += err > r.paper.vibea.data()[l] ? 1 : 0;
    if (e == 0) {  // no relative error: counted, left out of the distributions
      ++zero;
      continue;
    }
    const double d = std::fabs(e);
    error.push_back(err / d);
    certified.push_back(bound / d);
    probable.push_back(r.probable_bound.data()[l] / d);
    dbea.push_back(r.paper.dbea.data()[l] / d);
    vibea.push_back(r.paper.vibea.data()[l] / d);
    ratio_dbea.push_back(bound / r.paper.dbea.data()[l]);
  }
  const auto total = static_cast<std::int64_t>(entries);

  std::printf("ebla gemm: seed 000, section 4.2 (Fig. 6): A %lld x %lld, B %lld x %lld, entries %s, seed %llu\n",
              static_cast<long long>(c.m), static_cast<long long>(c.k), static_cast<long long>(c.k),
              static_cast<long long>(c.n), data_text(c).c_str(), static_cast<unsigned long long>(c.seed));
  std::printf("  %s (the matrices as given, as the seed's cuBLAS call)\n", config_text(r.config, c.unit_name).c_str());
  std::printf("  unit %s: %s\n", c.unit_name.c_str(), to_string(r.config.unit).c_str());
  std::printf("  relative to |AB| (exact, correctly rounded), per entry; probable bound and VIBEA fail with "
              "probability <= %g per entry\n\n", c.failure);
  std::vector<std::vector<std::string>> rows = {{"per entry, relative to |AB|", "max", "median"}};
  rows.push_back({"forward error |C - AB| / |AB|", sci(max_of(error)), sci(median_of(error))});
  rows.push_back({"certified bound", sci(max_of(certified)), sci(median_of(certified))});
  rows.push_back({"probable bound", sci(max_of(probable)), sci(median_of(probable))});
  rows.push_back({"DBEA (seed 000, Theorem 3.8)", sci(max_of(dbea)), sci(median_of(dbea))});
  rows.push_back({"VIBEA (seed 000, Theorem 3.10)", sci(max_of(vibea)), sci(median_of(vibea))});
  print_table(rows);
  std::vector<double> ratio_sorted = ratio_dbea;
  std::sort(ratio_sorted.begin(), ratio_sorted.end());
  if (!ratio_sorted.empty())
    std::printf("\ncertified / DBEA per entry: min %.3f, median %.3f, max %.3f\n", ratio_sorted.front(),
                median_of(ratio_dbea), ratio_sorted.back());
  std::printf("\nerror > probable bound on %.5f of the entries (failure probability %g%s)\n",
              fraction(above_probable, total), c.failure,
              r.model.unbiased ? "" : "; the unit is biased: probable bound = certified");
  std::printf("error > DBEA on %.5f of the entries (%lld of %lld)\n", fraction(above_dbea, total),
              static_cast<long long>(above_dbea), static_cast<long long>(total));
  std::printf("error > VIBEA on %.5f of the entries (%lld of %lld)\n", fraction(above_vibea, total),
              static_cast<long long>(above_vibea), static_cast<long long>(total));
  if (zero > 0) std::printf("%lld entries with AB = 0 left out of the relative values\n", static_cast<long long>(zero));
  std::printf("times (s): data %.2f, ebla::gemm %.2f (split %.2f, products %.2f, bounds %.2f), exact AB %.2f\n",
              data_seconds, gemm_seconds, r.split_seconds, r.product_seconds, r.bound_seconds, exact_seconds);
  std::printf("certified bound: %lld violations in %lld entries%s\n", static_cast<long long>(violations),
              static_cast<long long>(total), violations == 0 ? " (error <= bound on every entry)" : "");
  if (out != nullptr) {
    const Hdf5Group root = out->root();
    write_common(root, c);
    root.attribute("experiment", "tensor-core");
    const Hdf5Group g = root.group("tensor_core");
    write_common(g, c);
    g.attribute("experiment", "seed 000, section 4.2, Fig. 6: GEMM on tensor cores")
        .attribute("m", c.m)
        .attribute("k", c.k)
        .attribute("n", c.n)
        .attribute("distribution", "U(-1, 1)")
        .attribute("given", format_name(c.given))
        .attribute("input", format_name(r.config.input))
        .attribute("unit", c.unit_name)
        .attribute("unit_parameters", to_string(r.config.unit))
        .attribute("description", config_text(r.config, c.unit_name))
        .attribute("scaling", static_cast<std::int64_t>(0))
        .attribute("failure", c.failure)
        .attribute("lambda", r.lambda)
        .attribute("unbiased", static_cast<std::int64_t>(r.model.unbiased))
        .attribute("violations", violations)
        .attribute("zero_entries", zero)
        .attribute("above_probable", above_probable)
        .attribute("above_dbea", above_dbea)
        .attribute("above_vibea", above_vibea)
        .attribute("gemm_seconds", gemm_seconds)
        .attribute("exact_seconds", exact_seconds);
    g.dataset("error", error).attribute("meaning", "|C - AB| / |AB| per entry with AB != 0 (row-major)");
    g.dataset("certified", certified).attribute("meaning", "certified bound / |AB|");
    g.dataset("probable", probable).attribute("meaning", "probable bound / |AB|");
    g.dataset("dbea", dbea).attribute("meaning", "seed 000 Theorem 3.8 / |AB|");
    g.dataset("vibea", vibea).attribute("meaning", "seed 000 Theorem 3.10 / |AB|");
    g.dataset("C", values_of(r.C), c.m, c.n);
    g.dataset("exact", values_of(E), c.m, c.n).attribute("meaning", "AB correctly rounded");
  }
  if (violations == 0) return 0;
  spdlog::error("the certified bound was violated on {} entries", violations);
  return 1;
}

// ---- the command --------------------------------------------------------------------------

int run_gemm(const GemmCliOptions& options) {
  const Config c = make_config(options);  // every option checked before any work
  KokkosSession kokkos;
  // created (and so checked) before the work, committed after it: no file on failure
  std::unique_ptr<Hdf5Writer> out;
  if (!c.output.empty())
    out = under_option("ebla gemm --output", [&] { return std::make_unique<Hdf5Writer>(c.output); });
  int rc = 0;
  switch (c.mode) {
    case Mode::run: rc = run_single(c, out.get()); break;
    case Mode::select: rc = run_select(c, out.get()); break;
    case Mode::narrow_range: rc = run_narrow(c, out.get()); break;
    case Mode::tensor_core: rc = run_tensor_core(c, out.get()); break;
  }
  if (out) {
    out->commit();
    std::printf("wrote %s\n", c.output.c_str());
  }
  return rc;
}

}  // namespace

Command add_gemm(CLI::App& app) {
  auto o = std::make_shared<GemmCliOptions>();
  auto& r = o->registered;
  r.push_back(app.add_option("--experiment,-e", o->experiment,
                             "narrow-range (seed 001, Figs. 5.1, 5.2) or tensor-core (seed 000, Fig. 6); "
                             "without it, one run (or the selection with --tolerance)"));
  r.push_back(app.add_option("--figure", o->figure, "narrow-range: 5.1, 5.2 or both")->capture_default_str());
  r.push_back(app.add_option("--k-list", o->k_list, "narrow-range: the inner dimensions k")->delimiter(','));
  r.push_back(app.add_option("--threads", o->threads, "narrow-range: configs computed on this many threads "
                                                      "(the results do not depend on it)")
                  ->capture_default_str());
  r.push_back(app.add_option("--m", o->m, "Rows of A (default 256; narrow-range 10; tensor-core 1024)"));
  r.push_back(app.add_option("--k", o->k, "Columns of A, rows of B (default 256; tensor-core 32768)"));
  r.push_back(app.add_option("--n", o->n, "Columns of B (default 256; narrow-range 10; tensor-core 8)"));
  r.push_back(app.add_option("--distribution", o->distribution,
                             "Entries: uniform (U(-1, 1)) or logscale (+-10^phi, phi ~ U[-l, l])")
                  ->capture_default_str());
  r.push_back(app.add_option("--given", o->given_format,
                             "Format the entries are stored in: drawn in binary64, then rounded to nearest in it")
                  ->capture_default_str());
  r.push_back(app.add_option("--range", o->range, "l of the logscale entries (narrow-range: always logscale)")
                  ->capture_default_str());
  r.push_back(app.add_option("--input", o->input, "Format of the words (default bfloat16; tensor-core binary16)"));
  r.push_back(app.add_option("--words,-p", o->words, "p, the words per entry: 1, 2 or 3")->capture_default_str());
  r.push_back(app.add_option("--engine", o->engine, "emulated, sgemm, onednn_bf16 or dgemm")->capture_default_str());
  r.push_back(app.add_option("--unit", o->unit,
                             "Matrix-multiply unit of the emulated engine, from the catalogue (default "
                             "fma_binary32; tensor-core h100_fp16)"));
  r.push_back(app.add_flag("--no-scaling", o->no_scaling, "No power-of-two scaling (seed 001 (3.1))"));
  r.push_back(app.add_flag("--no-subnormals", o->no_subnormals, "Words without subnormals, the unit DAZ/FTZ"));
  r.push_back(app.add_flag("--reference", o->reference,
                           "Also compute AB exactly, the observed error, and the entrywise bounds to compare"));
  r.push_back(app.add_option("--tolerance", o->tolerance,
                             "Choose the cheapest default candidate with a certified ||C - AB|| <= tolerance "
                             "||A|| ||B||"));
  r.push_back(app.add_option("--failure", o->failure, "Failure probability of the probabilistic bounds, in (0, 1)")
                  ->capture_default_str());
  r.push_back(app.add_option("--seed", o->seed, "Seed of the matrices (mt19937_64)")->capture_default_str()->check(seed_range()));
  r.push_back(app.add_option("--output,-o", o->output, "Write parameters and results to this HDF5 file"));
  app.footer(
      "C = A B by Model 1 of seed 001 (scaling, p words, products on an engine) with certified\n"
      "bounds (docs/gemm.md). Experiments (docs/gemm-experiments.md):\n"
      "  narrow-range: m = n = 10, k = 10,100,1000,10000,100000, entries +-10^phi, phi ~ U[-10, 10];\n"
      "                Fig. 5.1: fp8 words, binary16 FMA chain; Fig. 5.2: binary16 and fp8 words,\n"
      "                binary32; p = 1, 2, 3, subnormals off and on, narrow and unbounded range\n"
      "  tensor-core:  m = 1024, k = 32768, n = 8, entries U(-1, 1), binary16 on h100_fp16\n"
      "apps/plot_gemm.py draws the figures from --output.\n"
      "Exit code: 0 when every error is within the certified bound; 1 otherwise, or when no\n"
      "candidate meets --tolerance; 2 for bad input.");
  return [o] { return run_gemm(*o); };
}

}  // namespace ebla::cli

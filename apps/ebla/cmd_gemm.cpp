// ebla gemm: mixed-precision matrix multiplication with certified error bounds (Model 1 of
// seed 001, kernels/include/ebla/kernels/gemm.hpp): one run, the tolerance-driven choice of
// formats and engine, and the GEMM experiments of the seeds (experiments/include/ebla/
// experiments/gemm_study.hpp describes them).
//
//   ebla gemm --m 256 --k 256 --n 256 --input bfloat16 --words 2 --engine sgemm --reference
//   ebla gemm --tolerance 1e-6 --reference                 gemm_select, default candidates
//   ebla gemm --experiment narrow-range [--figure 5.1]     seed 001, section 5, Figs. 5.1, 5.2
//   ebla gemm --experiment tensor-core                     seed 000, section 4.2, Fig. 6
//
// The seed "stores the matrices in fp16": --given binary16 rounds the entries first (default
// binary64). The certified bound must hold on every run and entry: a violation is reported and
// makes the exit code 1, as does a tolerance that no candidate meets. Bad input exits with 2,
// before any work (entries that --given cannot hold: as soon as they are drawn), and leaves no
// --output file. gemm_print.cpp runs each mode and prints it.
#include "commands.hpp"
#include "gemm_print.hpp"
#include "study_progress.hpp"

#include <ebla/core/memory.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

namespace ebla::cli {

namespace {

using namespace gemm_command;
using experiments::GemmDistribution;

struct GemmCliOptions {
  std::string experiment, figure = "both";
  std::string m, k, n;
  std::vector<std::string> k_list;
  std::string range = "10", distribution = "uniform", given_format = "binary64";
  std::string input, words = "1", engine = "emulated", unit;
  bool no_scaling = false, no_subnormals = false, reference = false;
  std::string tolerance, failure = "0.01";
  std::int64_t seed = 1;
  std::string threads = "2", progress;
  std::string output;
  std::vector<const CLI::Option*> registered;  // to tell which options were given

  bool given(const std::string& long_name) const {
    for (const CLI::Option* o : registered)
      if (o->check_lname(long_name)) return o->count() > 0;
    return false;
  }
};

// The modes in the order of Mode, as "does not apply to ..." names them.
const char* const mode_texts[] = {"a single run", "--tolerance (the selection chooses the config)",
                                  "--experiment narrow-range", "--experiment tensor-core"};

constexpr double max_dimension = 1e8;
constexpr double max_entries = 0x1p28;  // per matrix: 2 GiB of binary64

Mode parse_mode(const GemmCliOptions& o) {
  if (o.experiment.empty()) return o.given("tolerance") ? Mode::select : Mode::run;
  if (o.experiment == "narrow-range") return Mode::narrow_range;
  if (o.experiment == "tensor-core") return Mode::tensor_core;
  throw_invalid("ebla gemm --experiment", "unknown experiment '" + o.experiment + "' (known: narrow-range, tensor-core)");
}

// Every option a mode does not use is an error, not silently ignored.
void check_applicable(const GemmCliOptions& o, Mode m) {
  const std::vector<Mode> all = {Mode::run, Mode::select, Mode::narrow_range, Mode::tensor_core};
  const std::map<std::string, std::vector<Mode>> uses = {
      {"figure", {Mode::narrow_range}}, {"threads", {Mode::narrow_range}}, {"k-list", {Mode::narrow_range}},
      {"progress", {Mode::narrow_range, Mode::tensor_core}},
      {"m", all}, {"n", all},
      {"k", {Mode::run, Mode::select, Mode::tensor_core}},
      {"range", {Mode::run, Mode::select, Mode::narrow_range}},
      {"distribution", {Mode::run, Mode::select}},
      {"given", {Mode::run, Mode::select, Mode::tensor_core}},
      {"input", {Mode::run, Mode::tensor_core}}, {"unit", {Mode::run, Mode::tensor_core}},
      {"words", {Mode::run}}, {"engine", {Mode::run}},
      {"no-scaling", {Mode::run, Mode::select}}, {"no-subnormals", {Mode::run, Mode::select}},
      {"reference", {Mode::run, Mode::select}},
      {"failure", {Mode::run, Mode::select, Mode::tensor_core}},
  };
  if (o.given("k") && m == Mode::narrow_range)
    throw_invalid("ebla gemm --k", "the narrow-range experiment takes a list of k: --k-list");
  for (const auto& [name, modes] : uses)
    if (o.given(name) && std::find(modes.begin(), modes.end(), m) == modes.end())
      throw_invalid("ebla gemm --" + name, std::string("does not apply to ") + mode_texts[static_cast<int>(m)]);
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

// A number of `option` for which `ok` holds, else `problem` (after the text) names the fault.
double parse_checked(const std::string& text, const char* option, bool (*ok)(double), const std::string& problem) {
  const double v = parse_double(text, option);
  if (!ok(v)) throw_invalid(option, problem);
  return v;
}

bool whole(double v) { return v == std::floor(v); }

std::vector<std::string> parse_figures(const std::string& text) {
  if (text == "5.1" || text == "5.2") return {text};
  if (text == "both") return {"5.1", "5.2"};
  throw_invalid("ebla gemm --figure", "unknown figure '" + text + "' (known: 5.1, 5.2, both)");
}

GemmDistribution parse_distribution(const std::string& text) {
  if (text == "uniform") return GemmDistribution::uniform;
  if (text == "logscale") return GemmDistribution::logscale;
  throw_invalid("ebla gemm --distribution", "unknown distribution '" + text + "' (known: uniform, logscale)");
}

// The run's GemmConfig (run and tensor-core), validated as ebla::gemm would, the failure
// named by the options that made it.
GemmConfig make_gemm_config(const GemmCliOptions& o, Config& c, const std::string& default_input,
                            const std::string& default_unit) {
  GemmConfig g;
  const std::string input = o.input.empty() ? default_input : o.input;
  g.input = under_option("ebla gemm --input", [&] { return format_by_name(input); });
  g.words = static_cast<int>(parse_checked(o.words, "ebla gemm --words", [](double v) { return v >= 1 && v <= 3 && whole(v); },
                                           "p = " + o.words + " is outside 1..3"));
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

// Sizes and memory of a run or of the tensor-core experiment.
void check_sizes(const Config& c) {
  const experiments::GemmData& d = c.data;
  check_entries("A", d.m, d.k);
  check_entries("B", d.k, d.n);
  check_entries("C", d.m, d.n);
  // per entry of A, B and C (measured): a run about 16 bytes (the matrices, their words and
  // C's bounds), the tensor-core experiment about 80 (its units' per-entry states besides)
  const double entries = static_cast<double>(d.m) * d.k + static_cast<double>(d.k) * d.n + static_cast<double>(d.m) * d.n;
  detail::check_memory("ebla gemm --m/--k/--n",
                       strf("%lld x %lld times %lld x %lld", static_cast<long long>(d.m), static_cast<long long>(d.k),
                            static_cast<long long>(d.k), static_cast<long long>(d.n)),
                       (c.mode == Mode::tensor_core ? 80 : 16) * entries);
}

Config make_config(const GemmCliOptions& o) {
  Config c;
  c.mode = parse_mode(o);
  check_applicable(o, c.mode);
  c.progress = progress_interval(o.progress, "ebla gemm --progress");
  experiments::GemmData& d = c.data;
  d.seed = static_cast<std::uint64_t>(o.seed);
  c.failure = parse_checked(o.failure, "ebla gemm --failure", [](double v) { return v > 0 && v < 1; },
                            "probability " + o.failure + " is outside (0, 1)");
  d.range = parse_checked(o.range, "ebla gemm --range", [](double v) { return v >= 0 && v <= 300; },
                          "l = " + o.range + " is outside [0, 300]");
  d.distribution = parse_distribution(o.distribution);
  d.given = under_option("ebla gemm --given", [&] { return format_by_name(o.given_format); });
  if (o.given("range") && (c.mode == Mode::run || c.mode == Mode::select) && d.distribution != GemmDistribution::logscale)
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
      c.threads = static_cast<int>(parse_checked(o.threads, "ebla gemm --threads",
                                                 [](double v) { return v >= 1 && v <= 64 && whole(v); },
                                                 o.threads + " is not a number of threads in 1..64"));
      d.m = size(o.m, "--m", 10);
      d.n = size(o.n, "--n", 10);
      c.k_list = o.given("k-list") ? parse_k_list(o.k_list) : std::vector<std::int64_t>{10, 100, 1000, 10000, 100000};
      for (std::int64_t k : c.k_list) {
        check_entries("A", d.m, k);
        check_entries("B", k, d.n);
      }
      break;
    case Mode::tensor_core:
      d.m = size(o.m, "--m", 1024);
      d.k = size(o.k, "--k", 32768);
      d.n = size(o.n, "--n", 8);
      c.scaling = false;  // as the seed: cuBLAS on the matrices as given
      c.gemm = make_gemm_config(o, c, "binary16", "h100_fp16");
      break;
    case Mode::run:
    case Mode::select:
      d.m = size(o.m, "--m", 256);
      d.k = size(o.k, "--k", 256);
      d.n = size(o.n, "--n", 256);
      if (c.mode == Mode::select)
        c.tolerance = parse_checked(o.tolerance, "ebla gemm --tolerance", [](double v) { return v > 0 && std::isfinite(v); },
                                    "tolerance " + o.tolerance + " is not a positive finite number");
      else c.gemm = make_gemm_config(o, c, "bfloat16", "fma_binary32");
      break;
  }
  if (c.mode != Mode::narrow_range) check_sizes(c);
  return c;
}

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
  add_progress_option(app, o->progress);
  r.push_back(app.get_option("--progress"));
  app.footer(
      "C = A B by Model 1 of seed 001 (scaling, p words, products on an engine) with certified\n"
      "bounds (docs/gemm.md). Experiments (docs/gemm-experiments.md):\n"
      "  narrow-range: m = n = 10, k = 10,100,1000,10000,100000, entries +-10^phi, phi ~ U[-10, 10];\n"
      "                Fig. 5.1: fp8 words, binary16 FMA chain; Fig. 5.2: binary16 and fp8 words,\n"
      "                binary32; p = 1, 2, 3, subnormals off and on, narrow and unbounded range\n"
      "  tensor-core:  m = 1024, k = 32768, n = 8, entries U(-1, 1), binary16 on h100_fp16\n"
      "The experiments report progress on stderr (--progress N: a line at most every N seconds;\n"
      "0: none; default 1 when stderr is a terminal, else 0); stdout is the same either way.\n"
      "apps/plot_gemm.py draws the figures from --output.\n"
      "Exit code: 0 when every error is within the certified bound; 1 otherwise, or when no\n"
      "candidate meets --tolerance; 2 for bad input.");
  return [o] { return run_gemm(*o); };
}

}  // namespace ebla::cli

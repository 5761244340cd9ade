// `ebla gemm` stated as text, checked into a GemmSpec (see gemm_choice.hpp).
#include <ebla/experiments/gemm_choice.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/parse.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace ebla::experiments {

namespace {

// The modes in the order of Mode, as "does not apply to ..." names them.
const char* const mode_texts[] = {"a single run", "--tolerance (the selection chooses the config)",
                                  "--experiment narrow-range", "--experiment tensor-core"};

constexpr double max_dimension = 1e8;
constexpr double max_entries = 0x1p28;  // per matrix: 2 GiB of binary64

GemmMode parse_mode(const GemmChoice& o) {
  if (o.experiment.empty()) return o.was_given("tolerance") ? GemmMode::select : GemmMode::run;
  if (o.experiment == "narrow-range") return GemmMode::narrow_range;
  if (o.experiment == "tensor-core") return GemmMode::tensor_core;
  throw_invalid(o.named("--experiment"), "unknown experiment '" + o.experiment + "' (known: narrow-range, tensor-core)");
}

// Every option a mode does not use is an error, not silently ignored.
void check_applicable(const GemmChoice& o, GemmMode m) {
  const std::vector<GemmMode> all = {GemmMode::run, GemmMode::select, GemmMode::narrow_range, GemmMode::tensor_core};
  const std::map<std::string, std::vector<GemmMode>> uses = {
      {"figure", {GemmMode::narrow_range}}, {"threads", {GemmMode::narrow_range}}, {"k-list", {GemmMode::narrow_range}},
      {"progress", {GemmMode::narrow_range, GemmMode::tensor_core}},
      {"m", all}, {"n", all},
      {"k", {GemmMode::run, GemmMode::select, GemmMode::tensor_core}},
      {"range", {GemmMode::run, GemmMode::select, GemmMode::narrow_range}},
      {"distribution", {GemmMode::run, GemmMode::select}},
      {"given", {GemmMode::run, GemmMode::select, GemmMode::tensor_core}},
      {"input", {GemmMode::run, GemmMode::tensor_core}}, {"unit", {GemmMode::run, GemmMode::tensor_core}},
      {"words", {GemmMode::run}}, {"engine", {GemmMode::run}},
      {"no-scaling", {GemmMode::run, GemmMode::select}}, {"no-subnormals", {GemmMode::run, GemmMode::select}},
      {"reference", {GemmMode::run, GemmMode::select}},
      {"failure", {GemmMode::run, GemmMode::select, GemmMode::tensor_core}},
  };
  if (o.was_given("k") && m == GemmMode::narrow_range)
    throw_invalid(o.named("--k"), "the narrow-range experiment takes a list of k: --k-list");
  for (const auto& [name, modes] : uses)
    if (o.was_given(name) && std::find(modes.begin(), modes.end(), m) == modes.end())
      throw_invalid(o.named("--" + name), std::string("does not apply to ") + mode_texts[static_cast<int>(m)]);
}

std::int64_t parse_size(const std::string& text, const std::string& option) {
  const double v = parse_double(text, option);
  if (!(v > 0)) throw_invalid(option, text + " is not a positive size");
  if (v != std::floor(v)) throw_invalid(option, text + " is not a whole number");
  if (v > max_dimension) throw_invalid(option, text + " exceeds 1e8");
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> parse_k_list(const GemmChoice& o, const std::vector<std::string>& texts) {
  std::vector<std::int64_t> ks;
  for (const std::string& s : texts)
    if (!s.empty()) ks.push_back(parse_size(s, o.named("--k-list")));
  if (ks.empty()) throw_invalid(o.named("--k-list"), "the list of k is empty");
  return ks;
}

void check_entries(const GemmChoice& o, const std::string& what, std::int64_t rows, std::int64_t cols) {
  if (static_cast<double>(rows) * static_cast<double>(cols) > max_entries)
    throw_invalid(o.named("--m --k --n"),
                  what + " would be " + std::to_string(rows) + " x " + std::to_string(cols) + ", more than 2^28 entries");
}

// A number of `option` for which `ok` holds, else `problem` (after the text) names the fault.
double parse_checked(const std::string& text, const std::string& option, bool (*ok)(double), const std::string& problem) {
  const double v = parse_double(text, option);
  if (!ok(v)) throw_invalid(option, problem);
  return v;
}

bool whole(double v) { return v == std::floor(v); }

std::vector<std::string> parse_figures(const GemmChoice& o, const std::string& text) {
  if (text == "5.1" || text == "5.2") return {text};
  if (text == "both") return {"5.1", "5.2"};
  throw_invalid(o.named("--figure"), "unknown figure '" + text + "' (known: 5.1, 5.2, both)");
}

GemmDistribution parse_distribution(const GemmChoice& o, const std::string& text) {
  if (text == "uniform") return GemmDistribution::uniform;
  if (text == "logscale") return GemmDistribution::logscale;
  throw_invalid(o.named("--distribution"), "unknown distribution '" + text + "' (known: uniform, logscale)");
}

// The run's GemmConfig (run and tensor-core), validated as ebla::gemm would, the failure
// named by the options that made it.
GemmConfig make_gemm_config(const GemmChoice& o, GemmSpec& c, const std::string& default_input,
                            const std::string& default_unit) {
  GemmConfig g;
  const std::string input = o.input.empty() ? default_input : o.input;
  g.input = under_option(o.named("--input"), [&] { return format_by_name(input); });
  g.words = static_cast<int>(parse_checked(o.words, o.named("--words"), [](double v) { return v >= 1 && v <= 3 && whole(v); },
                                           "p = " + o.words + " is outside 1..3"));
  g.engine = under_option(o.named("--engine"), [&] { return gemm_engine_by_name(o.engine); });
  if (g.engine != GemmEngine::emulated && o.was_given("unit"))
    throw_invalid(o.named("--unit"), "applies to --engine emulated, not to --engine " + o.engine);
  c.unit_name = o.unit.empty() ? default_unit : o.unit;
  if (g.engine == GemmEngine::emulated)
    g.unit = under_option(o.named("--unit"), [&] { return matrix_unit_by_name(c.unit_name); });
  g.scaling = c.scaling;
  g.subnormals = c.subnormals;
  g.failure = c.failure;
  g.reference = c.reference;
  // entrywise bounds (p^2 + 3 more binary64 products) only to compare with the reference
  g.componentwise = c.reference || c.mode == GemmMode::tensor_core;
  std::string options = o.named("--input ") + input + " --words " + o.words + " --engine " + o.engine;
  if (g.engine == GemmEngine::emulated) options += " --unit " + c.unit_name;
  under_option(options, [&] { validate(g, "ebla::gemm"); });
  return g;
}

// Sizes and memory of a run or of the tensor-core experiment.
void check_sizes(const GemmChoice& o, const GemmSpec& c) {
  const GemmData& d = c.data;
  check_entries(o, "A", d.m, d.k);
  check_entries(o, "B", d.k, d.n);
  check_entries(o, "C", d.m, d.n);
  // per entry of A, B and C (measured): a run about 16 bytes (the matrices, their words and
  // C's bounds), the tensor-core experiment about 80 (its units' per-entry states besides)
  const double entries = static_cast<double>(d.m) * d.k + static_cast<double>(d.k) * d.n + static_cast<double>(d.m) * d.n;
  detail::check_memory(o.named("--m/--k/--n"),
                       std::to_string(d.m) + " x " + std::to_string(d.k) + " times " + std::to_string(d.k) + " x " + std::to_string(d.n),
                       (c.mode == GemmMode::tensor_core ? 80 : 16) * entries);
}

}  // namespace

std::string GemmChoice::named(const std::string& option) const { return name ? name(option) : "ebla::GemmChoice " + option; }

GemmSpec make_gemm_spec(const GemmChoice& o) {
  GemmSpec c;
  c.mode = parse_mode(o);
  check_applicable(o, c.mode);
  GemmData& d = c.data;
  d.seed = static_cast<std::uint64_t>(o.seed);
  c.failure = parse_checked(o.failure, o.named("--failure"), [](double v) { return v > 0 && v < 1; },
                            "probability " + o.failure + " is outside (0, 1)");
  d.range = parse_checked(o.range, o.named("--range"), [](double v) { return v >= 0 && v <= 300; },
                          "l = " + o.range + " is outside [0, 300]");
  d.distribution = parse_distribution(o, o.distribution);
  d.given = under_option(o.named("--given"), [&] { return format_by_name(o.given_format); });
  if (o.was_given("range") && (c.mode == GemmMode::run || c.mode == GemmMode::select) && d.distribution != GemmDistribution::logscale)
    throw_invalid(o.named("--range"), "applies to --distribution logscale, not to --distribution " + o.distribution);
  c.scaling = !o.no_scaling;
  c.subnormals = !o.no_subnormals;
  c.reference = o.reference;
  auto size = [&](const std::string& text, const char* option, std::int64_t fallback) {
    return text.empty() ? fallback : parse_size(text, o.named(option));
  };
  switch (c.mode) {
    case GemmMode::narrow_range:
      c.figures = parse_figures(o, o.figure);
      c.threads = static_cast<int>(parse_checked(o.threads, o.named("--threads"),
                                                 [](double v) { return v >= 1 && v <= 64 && whole(v); },
                                                 o.threads + " is not a number of threads in 1..64"));
      d.m = size(o.m, "--m", 10);
      d.n = size(o.n, "--n", 10);
      c.k_list = o.was_given("k-list") ? parse_k_list(o, o.k_list) : std::vector<std::int64_t>{10, 100, 1000, 10000, 100000};
      for (std::int64_t k : c.k_list) {
        check_entries(o, "A", d.m, k);
        check_entries(o, "B", k, d.n);
      }
      break;
    case GemmMode::tensor_core:
      d.m = size(o.m, "--m", 1024);
      d.k = size(o.k, "--k", 32768);
      d.n = size(o.n, "--n", 8);
      c.scaling = false;  // as the seed: cuBLAS on the matrices as given
      c.gemm = make_gemm_config(o, c, "binary16", "h100_fp16");
      break;
    case GemmMode::run:
    case GemmMode::select:
      d.m = size(o.m, "--m", 256);
      d.k = size(o.k, "--k", 256);
      d.n = size(o.n, "--n", 256);
      if (c.mode == GemmMode::select)
        c.tolerance = parse_checked(o.tolerance, o.named("--tolerance"), [](double v) { return v > 0 && std::isfinite(v); },
                                    "tolerance " + o.tolerance + " is not a positive finite number");
      else c.gemm = make_gemm_config(o, c, "bfloat16", "fma_binary32");
      break;
  }
  if (c.mode != GemmMode::narrow_range) check_sizes(o, c);
  return c;
}

}  // namespace ebla::experiments

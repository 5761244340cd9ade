// The weak-form study stated as text, checked into its spec (see weakform_study.hpp).
#include <ebla/experiments/weakform_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/parse.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/unit_spec.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace ebla::experiments {

namespace {

constexpr double max_entries = 1e8;  // ni nj nk n: the work of the kernel and of the reference

std::size_t size(const WeakformChoice& c, const std::string& text, const char* option, double lowest) {
  const std::string name = c.named(option);
  const double v = parse_double(text, name);
  if (!(v >= lowest)) {
    std::ostringstream least;
    least << lowest;
    throw_invalid(name, text + " is not a size >= " + least.str());
  }
  if (v != std::floor(v)) throw_invalid(name, text + " is not a whole number");
  if (v > max_entries) throw_invalid(name, text + " exceeds 1e8");
  return static_cast<std::size_t>(v);
}

WeakformDistribution distribution(const WeakformChoice& c) {
  const std::string& name = c.distribution;
  if (name == "uniform") return WeakformDistribution::uniform;
  if (name == "positive") return WeakformDistribution::positive;
  if (name == "cancellation") return WeakformDistribution::cancellation;
  if (name == "wide") return WeakformDistribution::wide;
  if (name == "tiny") return WeakformDistribution::tiny;
  throw_invalid(c.named("--distribution"),
                "unknown distribution '" + name + "' (uniform, positive, cancellation, wide, tiny)");
}

// An unknown preset: named, with the presets within two edits of it or starting with it, and
// all of them.
[[noreturn]] void unknown_unit(const WeakformChoice& c) {
  std::string close, names;
  for (const NamedMatrixUnit& entry : matrix_unit_catalogue()) {
    names += (names.empty() ? "" : ", ") + entry.name;
    const bool prefix = !c.unit.empty() && entry.name.compare(0, c.unit.size(), c.unit) == 0;
    if (prefix || edit_distance(c.unit, entry.name) <= 2) close += (close.empty() ? "" : ", ") + entry.name;
  }
  throw_invalid(c.named("--unit"), "unknown unit '" + c.unit + "'" +
                                       (close.empty() ? "" : " (did you mean " + close + "?)") + "; known: " + names);
}

// Whether a field was set: away from its default, or given (when `given` says).
bool given(const WeakformChoice& c, const char* field, bool set) { return set || (c.given && c.given(field)); }

// The options a unit fixes that were given with it ("--format, --rounding"), or empty.
std::string fixed_by_unit(const WeakformChoice& c) {
  const std::pair<const char*, bool> fields[] = {{"format", !c.format.empty()},
                                                 {"input", !c.input.empty()},
                                                 {"accumulation", !c.accumulation.empty()},
                                                 {"rounding", c.rounding != "nearest_even"},
                                                 {"product", !c.product.empty()}};
  std::string options;
  for (const auto& [field, set] : fields)
    if (given(c, field, set)) options += (options.empty() ? "--" : ", --") + std::string(field);
  return options;
}

// The unit of --unit (a preset) or --unit-file (a spec), alone.
MatrixUnit chosen_unit(const WeakformChoice& c, bool preset, bool file) {
  if (preset && file) throw_invalid(c.named("--unit"), "give --unit or --unit-file, not both");
  const std::string option = preset ? "--unit" : "--unit-file";
  const std::string fixed = fixed_by_unit(c);
  if (!fixed.empty())
    throw_invalid(c.named(option), "conflicts with " + fixed + " (the unit fixes its formats, rounding and products)");
  if (file) return under_option(c.named("--unit-file"), [&] { return read_unit_spec_file(c.unit_file); });
  for (const NamedMatrixUnit& entry : matrix_unit_catalogue())
    if (entry.name == c.unit) return entry.unit;
  unknown_unit(c);
}

// The unit: of --unit or --unit-file, or of the formats of format, or of input and accumulation.
MatrixUnit unit(const WeakformChoice& c) {
  const bool preset = given(c, "unit", !c.unit.empty()), file = given(c, "unit-file", !c.unit_file.empty());
  if (preset || file) return chosen_unit(c, preset, file);
  if (!c.format.empty() && (!c.input.empty() || !c.accumulation.empty()))
    throw_invalid(c.named("--format"), "give --format, or --input and --accumulation, not both");
  const bool both = !c.format.empty();
  const std::string in = both ? c.format : c.input.empty() ? "binary32" : c.input;
  const std::string acc = both ? c.format : c.accumulation.empty() ? in : c.accumulation;
  const Format fin = under_option(c.named(both ? "--format" : "--input"), [&] { return format_by_name(in); });
  const Format facc = under_option(c.named(both ? "--format" : "--accumulation"), [&] { return format_by_name(acc); });
  const Rounding mode = under_option(c.named("--rounding"), [&] { return rounding_by_name(c.rounding); });
  std::optional<Format> product;
  if (!c.product.empty())
    product = under_option(c.named("--product"), [&] { return format_by_name(c.product); });
  const std::string with_product = c.product.empty() ? "" : " --product " + c.product;
  return under_option(c.named("--input " + in + " --accumulation " + acc + " --rounding " + c.rounding + with_product),
                      [&] { return weakform_unit(fin, facc, mode, product); });
}

}  // namespace

std::string WeakformChoice::named(const std::string& option) const {
  return name ? name(option) : "ebla::WeakformChoice" + (option.empty() ? "" : " " + option);
}

WeakformSpec make_weakform_spec(const WeakformChoice& c) {
  WeakformSpec s;
  s.ni = size(c, c.ni, "--ni", 1);
  s.nj = size(c, c.nj, "--nj", 1);
  s.nk = size(c, c.nk, "--nk", 1);
  s.n = size(c, c.n, "--n", 0);
  if (static_cast<double>(s.ni) * s.nj * s.nk * std::max<std::size_t>(s.n, 1) > max_entries)
    throw_invalid(c.named(""), "ni nj nk n = " + std::to_string(s.ni) + " x " + std::to_string(s.nj) + " x " +
                                   std::to_string(s.nk) + " x " + std::to_string(s.n) + " exceeds 1e8");
  s.unit = unit(c);
  s.distribution = distribution(c);
  s.in_format = c.in_format;
  s.seed = static_cast<std::uint64_t>(c.seed);
  return s;
}

}  // namespace ebla::experiments

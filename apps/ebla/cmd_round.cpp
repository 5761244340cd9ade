// ebla round: round values to a format and show each result exactly.
#include "commands.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

struct RoundOptions {
  std::string format;
  std::string mode = "nearest_even";
  std::vector<std::string> values;
  std::uint64_t seed = 1;
  std::string random;  // a fixed random number for stochastic rounding, if given
  bool json = false;
};

// |rounded - x| / |x| in __float128, where the difference of two doubles is exact
// whenever it matters (their exponents differ by less than 60).
double relative_error(double x, double rounded) {
  if (std::isnan(x) || std::isnan(rounded)) return std::nan("");
  if (x == rounded) return 0.0;
  if (std::isinf(x) || std::isinf(rounded)) return HUGE_VAL;
  if (x == 0) return HUGE_VAL;
  const __float128 d = static_cast<__float128>(rounded) - static_cast<__float128>(x);
  return static_cast<double>((d < 0 ? -d : d) / (x < 0 ? -static_cast<__float128>(x) : x));
}

// The exact decimal expansion of a double (binary fractions terminate; glibc's printf
// prints every digit it is asked for, and %g drops the trailing zeros).
std::string exact_decimal(double v) {
  if (!std::isfinite(v)) return v != v ? "nan" : (v < 0 ? "-inf" : "inf");
  std::vector<char> buf(1200);
  std::snprintf(buf.data(), buf.size(), "%.1100g", v);
  return buf.data();
}

std::string hex_float(double v) { return fmt::format("{:a}", v); }

// One value's line of --json: the input as given, x and the rounded value as hex floats, the
// rounded value's exact decimal, the relative error to 7 significant digits (null where it is
// infinite or NaN, from overflow, inf or nan: JSON has neither), the format and the mode.
nlohmann::ordered_json json_line(const std::string& input, double x, double y, double rel, const std::string& format,
                                 Rounding mode) {
  nlohmann::ordered_json line = {{"input", input}, {"x", hex_float(x)}, {"rounded", hex_float(y)},
                                 {"decimal", exact_decimal(y)}, {"relative_error", nullptr},
                                 {"format", format}, {"mode", to_string(mode)}};
  if (std::isfinite(rel)) line["relative_error"] = std::strtod(fmt::format("{:.6e}", rel).c_str(), nullptr);
  return line;
}

int run_round(const RoundOptions& o) {
  const Format f = format_by_name(o.format);
  const Rounding mode = rounding_by_name(o.mode);
  std::vector<double> xs;
  for (const auto& text : o.values) xs.push_back(parse_double(text, "ebla round"));
  double fixed_r = -1;
  if (!o.random.empty()) {
    fixed_r = parse_double(o.random, "ebla round --random");
    if (!(fixed_r >= 0 && fixed_r < 1))
      throw_invalid("ebla round --random", "'" + o.random + "' is outside [0, 1)");
  }
  std::mt19937_64 gen(o.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const std::string name = format_name(f);
  if (!o.json) std::printf("format %s, rounding %s\n", name.c_str(), to_string(mode));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    const double r = mode != Rounding::stochastic ? 0.0 : fixed_r >= 0 ? fixed_r : uniform(gen);
    const double y = round_to(x, f, mode, r);
    const double rel = relative_error(x, y);
    if (o.json)
      std::printf("%s\n", json_line(o.values[i], x, y, rel, name, mode).dump().c_str());
    else
      std::printf("%s  ->  %s = %s  (relative error %.3e)\n", o.values[i].c_str(),
                  hex_float(y).c_str(), exact_decimal(y).c_str(), rel);
  }
  return 0;
}

}  // namespace

Command add_round(CLI::App& app) {
  auto o = std::make_shared<RoundOptions>();
  app.add_option("--format,-f", o->format, "Target format: a catalogue name (see 'ebla formats') "
                                           "or custom:t=..,emin=..,emax=..")
      ->required();
  app.add_option("--mode,-m", o->mode,
                 "nearest_even, toward_zero, upward, downward or stochastic")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Seed of the random numbers of stochastic rounding")
      ->capture_default_str()->check(seed_range());
  app.add_option("--random", o->random, "Use this number in [0, 1) for stochastic rounding");
  app.add_flag("--json", o->json, "One JSON object per value");
  app.add_option("values", o->values, "Values to round (decimal or hex float; inf, nan)")
      ->required();
  app.footer("Each value is printed with its rounded value as a hex float and as an exact\n"
             "decimal, and the relative error |rounded - x| / |x|.");
  return [o] { return run_round(*o); };
}

}  // namespace ebla::cli

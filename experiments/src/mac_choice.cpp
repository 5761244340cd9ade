// The MAC study stated as text, checked into its spec (see mac_study.hpp).
#include <ebla/experiments/mac_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>

#include <cmath>

namespace ebla::experiments {

namespace {

constexpr double max_samples = 1e7;

std::int64_t samples(const MacChoice& c) {
  const std::string option = c.named("--samples");
  const double v = parse_double(c.samples, option);
  if (!(v > 0)) throw_invalid(option, c.samples + " is not a positive number of samples");
  if (v != std::floor(v)) throw_invalid(option, c.samples + " is not a whole number");
  if (v > max_samples) throw_invalid(option, c.samples + " exceeds 1e7");
  return static_cast<std::int64_t>(v);
}

double failure(const MacChoice& c) {
  const double v = parse_double(c.failure, c.named("--failure"));
  if (!(v > 0 && v < 1)) throw_invalid(c.named("--failure"), "probability " + c.failure + " is outside (0, 1)");
  return v;
}

// The format the samples are given in must hold 1 and 2 (U[1,2] rounded stays in [1, 2]).
Format input_format(const MacChoice& c) {
  const std::string option = c.named("--input-format");
  const Format f = under_option(option, [&] { return format_by_name(c.input_format); });
  if (!(f.emin <= 0 && f.fmax() >= 2)) throw_invalid(option, "'" + c.input_format + "' cannot represent the samples of U[1,2]");
  return f;
}

// The three operations of Fig. 5, each config checked against what mpfma emulates exactly.
void check_operations(const MacChoice& c, const MacSpec& s) {
  const std::string lo = format_name(s.low), hi = format_name(s.high);
  for (const MacOperation& op : mac_operations(s.low, s.high, s.rounding, s.failure)) {
    const std::string option = op.key == "mpfma" ? c.named("--low " + lo + " --high " + hi) : c.named("--high " + hi);
    under_option(option, [&] { validate(op.config, ("MpfmaConfig::" + op.key).c_str()); });
  }
}

}  // namespace

std::string MacChoice::named(const std::string& option) const {
  return name ? name(option) : "ebla::MacChoice " + option;
}

MacSpec make_mac_spec(const MacChoice& c) {
  MacSpec s;
  s.low = under_option(c.named("--low"), [&] { return format_by_name(c.low); });
  s.high = under_option(c.named("--high"), [&] { return format_by_name(c.high); });
  s.given = input_format(c);
  s.rounding = under_option(c.named("--rounding"), [&] { return rounding_by_name(c.rounding); });
  s.failure = failure(c);
  s.samples = samples(c);
  s.seed = static_cast<std::uint64_t>(c.seed);
  check_operations(c, s);
  return s;
}

}  // namespace ebla::experiments

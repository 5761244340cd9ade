// Fuzz target: the parsers of names and specs. The input, up to its first NUL byte, is
// given to ebla::format_by_name (catalogue names, aliases, "custom:t=..,emin=..,emax=..")
// and to the other name parsers: rounding_by_name, qdot_ladder_by_names (a comma list of
// format names), qdot_policy_by_name, gemm_engine_by_name, matrix_unit_by_name. Each must
// return or throw ebla::InvalidArgument. What they return must print back to a name that
// parses to the same value. A format must also be valid and round consistently: the bytes
// after the NUL are doubles (8 bytes each, native order) rounded to it in every mode, besides
// a fixed set of edge values, and 16-bit encodings when the format has one that short.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/qdot.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

[[noreturn]] void violated(const std::string& name, const std::string& what) {
  std::fprintf(stderr, "ebla fuzz: property violated for '%s': %s\n", name.c_str(), what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

constexpr ebla::Rounding deterministic[] = {ebla::Rounding::nearest_even, ebla::Rounding::toward_zero,
                                            ebla::Rounding::upward, ebla::Rounding::downward};

// Checks round_to(x, f, mode) against the contract of rounding.hpp.
void check_rounding(const std::string& name, const ebla::Format& f, double x, double random) {
  const double fmax = f.fmax();
  const double down = ebla::round_to(x, f, ebla::Rounding::downward);
  const double up = ebla::round_to(x, f, ebla::Rounding::upward);
  auto fail = [&](ebla::Rounding m, double r, const char* what) {
    violated(name, std::string("round_to(") + hex(x) + ", " + ebla::to_string(m) + ") = " + hex(r) + ": " + what);
  };
  for (int i = 0; i <= 4; ++i) {
    const ebla::Rounding m = i < 4 ? deterministic[i] : ebla::Rounding::stochastic;
    const double r = ebla::round_to(x, f, m, random);
    if (std::isnan(x)) {
      if (bits_of(r) != bits_of(x)) fail(m, r, "NaN is not returned unchanged");
      continue;
    }
    if (std::isnan(r)) {
      if (f.overflow != ebla::Overflow::nan) fail(m, r, "NaN without overflow = nan");
      if (std::fabs(x) <= fmax) fail(m, r, "NaN for a value within the range");
      continue;
    }
    if (std::signbit(r) != std::signbit(x)) fail(m, r, "the sign changed");
    if (std::isinf(r)) {
      if (!f.has_infinity()) fail(m, r, "infinity in a format without infinities");
      continue;
    }
    if (std::fabs(r) > fmax) fail(m, r, "beyond fmax");
    for (ebla::Rounding again : deterministic)
      if (bits_of(ebla::round_to(r, f, again)) != bits_of(r)) fail(m, r, "the result is not representable");
    if (std::fabs(x) > fmax) continue;  // overflow: fmax, or per f.overflow
    switch (m) {
      case ebla::Rounding::upward:
        if (r < x) fail(m, r, "below x");
        break;
      case ebla::Rounding::downward:
        if (r > x) fail(m, r, "above x");
        break;
      case ebla::Rounding::toward_zero:
        if (std::fabs(r) > std::fabs(x)) fail(m, r, "larger in magnitude than x");
        break;
      default:
        if (r != down && r != up) fail(m, r, ("neither neighbour " + hex(down) + " nor " + hex(up)).c_str());
    }
  }
}

void check_format(const std::string& name, const ebla::Format& f, const std::uint8_t* values, std::size_t n) {
  try {
    ebla::validate(f, "fuzz");
  } catch (const ebla::InvalidArgument& e) {
    violated(name, std::string("format_by_name returned an invalid format: ") + e.what());
  }
  const std::string printed = ebla::format_name(f);
  ebla::Format back;
  try {
    back = ebla::format_by_name(printed);
  } catch (const ebla::InvalidArgument& e) {
    violated(name, "its name '" + printed + "' does not parse: " + e.what());
  }
  if (back != f) violated(name, "its name '" + printed + "' parses to another format");

  const double inf = std::numeric_limits<double>::infinity();
  const double edges[] = {0.0,
                          1.0,
                          0.1,
                          f.fmin(),
                          f.smallest_positive(),
                          f.gmin(),
                          f.fmin() / 2,
                          f.fmax(),
                          std::nextafter(f.fmax(), inf),
                          f.fmax() * (1 + f.u()),
                          f.fmax() * (1 + 2 * f.u()),
                          std::numeric_limits<double>::max(),
                          std::numeric_limits<double>::denorm_min(),
                          std::numeric_limits<double>::min(),
                          inf,
                          std::numeric_limits<double>::quiet_NaN()};
  for (double x : edges) {
    check_rounding(name, f, x, 0.5);
    check_rounding(name, f, -x, 0.25);
  }
  for (std::size_t k = 0; k + 8 <= n && k < 8 * 16; k += 8) {
    double x;
    std::memcpy(&x, values + k, sizeof x);
    // a random number in [0, 1) from the bits of x
    const double random = static_cast<double>(bits_of(x) >> 11) * 0x1p-53;
    check_rounding(name, f, x, random);
  }

  const int width = ebla::encoding_bits(f);
  if (width > 0 && width <= 16) {
    for (std::size_t k = 0; k + 2 <= n && k < 2 * 16; k += 2) {
      const std::uint32_t code = (static_cast<std::uint32_t>(values[k]) | (static_cast<std::uint32_t>(values[k + 1]) << 8)) &
                                 ((1u << width) - 1);
      const double v = ebla::decode(code, f);
      if (std::isnan(v)) {
        if (!f.has_nan()) violated(name, "decode(" + std::to_string(code) + ") is NaN in a format without NaN");
        continue;
      }
      if (std::isinf(v) ? !f.has_infinity() : std::fabs(v) > f.fmax())
        violated(name, "decode(" + std::to_string(code) + ") = " + hex(v) + " is not a value of the format");
      for (ebla::Rounding m : deterministic)
        if (bits_of(ebla::round_to(v, f, m)) != bits_of(v))
          violated(name, "decode(" + std::to_string(code) + ") = " + hex(v) + " does not round to itself");
    }
  }
}

template <class F>
void accepted_or_invalid(F&& f) {
  try {
    f();
  } catch (const ebla::InvalidArgument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::string name(reinterpret_cast<const char*>(data), nul != nullptr ? nul - data : size);
  const std::uint8_t* values = nul != nullptr ? nul + 1 : data + size;
  const std::size_t n = static_cast<std::size_t>(data + size - values);

  accepted_or_invalid([&] { check_format(name, ebla::format_by_name(name), values, n); });
  accepted_or_invalid([&] {
    const ebla::Rounding mode = ebla::rounding_by_name(name);
    if (ebla::rounding_by_name(ebla::to_string(mode)) != mode) violated(name, "rounding mode name does not parse back");
  });
  accepted_or_invalid([&] {
    const std::vector<ebla::QdotLevel> ladder = ebla::qdot_ladder_by_names(name);
    const std::string printed = ebla::to_string(ladder);
    std::vector<ebla::QdotLevel> back;
    try {
      back = ebla::qdot_ladder_by_names(printed);
    } catch (const ebla::InvalidArgument& e) {
      violated(name, "ladder printed as '" + printed + "' does not parse: " + e.what());
    }
    bool same = back.size() == ladder.size();
    for (std::size_t i = 0; same && i < ladder.size(); ++i)
      same = back[i].perforate == ladder[i].perforate && (ladder[i].perforate || back[i].format == ladder[i].format);
    if (!same) violated(name, "ladder printed as '" + printed + "' parses to another ladder");
  });
  accepted_or_invalid([&] {
    const ebla::QdotPolicy p = ebla::qdot_policy_by_name(name);
    if (ebla::qdot_policy_by_name(ebla::to_string(p)) != p) violated(name, "qdot policy name does not parse back");
  });
  accepted_or_invalid([&] {
    const ebla::GemmEngine e = ebla::gemm_engine_by_name(name);
    if (ebla::gemm_engine_by_name(ebla::to_string(e)) != e) violated(name, "GEMM engine name does not parse back");
  });
  accepted_or_invalid([&] { (void)ebla::to_string(ebla::matrix_unit_by_name(name)); });
  return 0;
}

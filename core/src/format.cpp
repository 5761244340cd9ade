#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace ebla {

void throw_invalid(const std::string& function, const std::string& what) {
  throw InvalidArgument(function + ": " + what);
}

void validate(const Format& f, const char* function) {
  const std::string fn = function;
  if (f.t < 2 || f.t > 53)
    throw_invalid(fn, "precision t = " + std::to_string(f.t) + " is outside 2..53");
  if (f.emin > f.emax)
    throw_invalid(fn, "emin = " + std::to_string(f.emin) + " exceeds emax = " +
                          std::to_string(f.emax));
  if (f.emin < -1022)
    throw_invalid(fn, "emin = " + std::to_string(f.emin) + " is below binary64's -1022");
  if (f.emax > 1023)
    throw_invalid(fn, "emax = " + std::to_string(f.emax) + " is above binary64's 1023");
  if (f.overflow == Overflow::infinity && f.specials != Specials::ieee)
    throw_invalid(fn, std::string("overflow = infinity needs a format with infinities, not "
                                  "specials = ") + to_string(f.specials));
  if (f.overflow == Overflow::nan && f.specials == Specials::none)
    throw_invalid(fn, "overflow = nan needs a NaN encoding, not specials = none");
}

Format make_format(int t, int emin, int emax, bool subnormals, Specials specials,
                   Overflow overflow) {
  Format f;
  f.t = t;
  f.emin = emin;
  f.emax = emax;
  f.subnormals = subnormals;
  f.specials = specials;
  f.overflow = overflow;
  validate(f, "ebla::make_format");
  return f;
}

int exponent_bits(const Format& f) {
  // with bias 1 - emin, the exponent fields 1 .. 2^w - 1 (or 2^w - 2 when the top
  // field is reserved for inf/NaN) must map onto emin .. emax exactly
  const int fields = f.emax - f.emin + (f.specials == Specials::ieee ? 3 : 2);
  for (int w = 1; w <= 11; ++w)
    if ((1 << w) == fields) return w;
  return 0;
}

int encoding_bits(const Format& f) {
  const int w = exponent_bits(f);
  return w == 0 ? 0 : 1 + w + (f.t - 1);
}

double decode(std::uint32_t bits, const Format& f) {
  const int width = encoding_bits(f);
  if (width == 0 || width > 16)
    throw_invalid("ebla::decode", "format " + format_name(f) +
                                      " has no standard encoding of at most 16 bits");
  const int p = f.t - 1;  // fraction bits
  const int w = exponent_bits(f);
  const std::uint32_t frac = bits & ((1u << p) - 1);
  const std::uint32_t field = (bits >> p) & ((1u << w) - 1);
  const bool negative = ((bits >> (p + w)) & 1u) != 0;
  const std::uint32_t top = (1u << w) - 1;
  double v;
  if (f.specials == Specials::ieee && field == top) {
    v = frac == 0 ? std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  } else if (f.specials == Specials::nan_only && field == top && frac == (1u << p) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (field == 0) {
    // subnormal (or zero): frac 2^(emin - p); without subnormals the encodings
    // with field 0 and frac != 0 are not values of the format: treat as zero
    v = f.subnormals ? static_cast<double>(frac) * pow2(f.emin - p) : 0.0;
  } else {
    const int e = static_cast<int>(field) - 1 + f.emin;  // bias = 1 - emin
    v = static_cast<double>((1u << p) | frac) * pow2(e - p);
  }
  return negative ? -v : v;
}

namespace {
std::string hex_text(double v) {  // v exactly, as a hex float
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}
}  // namespace

std::uint32_t encode(double v, const Format& f) {
  const int width = encoding_bits(f);
  if (width == 0 || width > 16)
    throw_invalid("ebla::encode", "format " + format_name(f) + " has no standard encoding of at most 16 bits");
  const int p = f.t - 1, w = exponent_bits(f);
  const std::uint32_t sign = std::signbit(v) ? 1u << (p + w) : 0u, top = (1u << w) - 1;
  const double a = std::fabs(v);
  if (std::isnan(v)) {
    if (f.specials == Specials::none)
      throw_invalid("ebla::encode", "format " + format_name(f) + " has no NaN");
    return sign | (top << p) | ((1u << p) - 1);  // all ones: NaN in ieee and nan_only formats
  }
  if (std::isinf(v)) {
    if (f.specials != Specials::ieee)
      throw_invalid("ebla::encode", "format " + format_name(f) + " has no infinity");
    return sign | (top << p);
  }
  if (a == 0) return sign;
  int e = std::ilogb(a);  // a = m 2^(e - p), m an integer of p + 1 bits for a normal number
  const bool subnormal = e < f.emin;
  if (subnormal) e = f.emin;
  const double m = std::ldexp(a, p - e);  // integer iff v is a value of the format
  if (m != std::floor(m) || (subnormal && !f.subnormals) || !(a <= f.fmax()))
    throw_invalid("ebla::encode", hex_text(v) + " is not a value of " + format_name(f));
  const std::uint32_t mi = static_cast<std::uint32_t>(m);
  const std::uint32_t field = subnormal ? 0u : static_cast<std::uint32_t>(e - f.emin + 1);
  return sign | (field << p) | (mi & ((1u << p) - 1));
}

namespace formats {
Format binary64() { return make_format(53, -1022, 1023); }
Format binary32() { return make_format(24, -126, 127); }
Format tf32() { return make_format(11, -126, 127); }
Format bfloat16() { return make_format(8, -126, 127); }
Format binary16() { return make_format(11, -14, 15); }
Format fp8_e4m3() { return make_format(4, -6, 8, true, Specials::nan_only, Overflow::nan); }
Format fp8_e5m2() { return make_format(3, -14, 15); }
Format fp6_e2m3() { return make_format(4, 0, 2, true, Specials::none, Overflow::saturate); }
Format fp6_e3m2() { return make_format(3, -2, 4, true, Specials::none, Overflow::saturate); }
Format fp4_e2m1() { return make_format(2, 0, 2, true, Specials::none, Overflow::saturate); }
}  // namespace formats

const std::vector<NamedFormat>& format_catalogue() {
  static const std::vector<NamedFormat> catalogue = {
      {"binary64", formats::binary64()}, {"binary32", formats::binary32()},
      {"tf32", formats::tf32()},         {"bfloat16", formats::bfloat16()},
      {"binary16", formats::binary16()}, {"fp8_e4m3", formats::fp8_e4m3()},
      {"fp8_e5m2", formats::fp8_e5m2()}, {"fp6_e2m3", formats::fp6_e2m3()},
      {"fp6_e3m2", formats::fp6_e3m2()}, {"fp4_e2m1", formats::fp4_e2m1()},
  };
  return catalogue;
}

const char* to_string(Specials s) {
  switch (s) {
    case Specials::ieee: return "ieee";
    case Specials::nan_only: return "nan_only";
    case Specials::none: return "none";
  }
  return "?";
}

const char* to_string(Overflow o) {
  switch (o) {
    case Overflow::infinity: return "infinity";
    case Overflow::nan: return "nan";
    case Overflow::saturate: return "saturate";
  }
  return "?";
}

namespace {

std::string normalised(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int parse_int(const std::string& key, const std::string& value, const std::string& spec) {
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < -100000 || v > 100000)
    throw_invalid("ebla::format_by_name", "'" + value + "' is not an integer for " + key +
                                              " in '" + spec + "'");
  return static_cast<int>(v);
}

Format parse_custom(const std::string& spec, const std::string& body) {
  Format f;
  bool have_t = false, have_emin = false, have_emax = false, have_overflow = false;
  std::stringstream ss(body);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw_invalid("ebla::format_by_name", "'" + item + "' is not key=value in '" + spec + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "t") { f.t = parse_int(key, value, spec); have_t = true; }
    else if (key == "emin") { f.emin = parse_int(key, value, spec); have_emin = true; }
    else if (key == "emax") { f.emax = parse_int(key, value, spec); have_emax = true; }
    else if (key == "subnormals") {
      if (value != "0" && value != "1")
        throw_invalid("ebla::format_by_name", "subnormals must be 0 or 1, not '" + value + "'");
      f.subnormals = value == "1";
    } else if (key == "specials") {
      if (value == "ieee") f.specials = Specials::ieee;
      else if (value == "nan_only") f.specials = Specials::nan_only;
      else if (value == "none") f.specials = Specials::none;
      else throw_invalid("ebla::format_by_name", "unknown specials '" + value + "' (ieee, nan_only, none)");
    } else if (key == "overflow") {
      have_overflow = true;
      if (value == "infinity") f.overflow = Overflow::infinity;
      else if (value == "nan") f.overflow = Overflow::nan;
      else if (value == "saturate") f.overflow = Overflow::saturate;
      else throw_invalid("ebla::format_by_name", "unknown overflow '" + value + "' (infinity, nan, saturate)");
    } else {
      throw_invalid("ebla::format_by_name", "unknown key '" + key + "' in '" + spec + "'");
    }
  }
  if (!have_t || !have_emin || !have_emax)
    throw_invalid("ebla::format_by_name", "custom format '" + spec + "' needs t, emin and emax");
  // without an explicit overflow, take the IEEE/OCP default of the encoding
  if (!have_overflow && f.specials != Specials::ieee)
    f.overflow = f.specials == Specials::nan_only ? Overflow::nan : Overflow::saturate;
  validate(f, ("ebla::format_by_name('" + spec + "')").c_str());
  return f;
}

}  // namespace

Format format_by_name(const std::string& name) {
  if (name.rfind("custom:", 0) == 0) return parse_custom(name, name.substr(7));
  const std::string key = normalised(name);
  static const std::pair<const char*, const char*> aliases[] = {
      {"double", "binary64"}, {"fp64", "binary64"},  {"single", "binary32"},
      {"float", "binary32"},  {"fp32", "binary32"},  {"half", "binary16"},
      {"fp16", "binary16"},   {"bf16", "bfloat16"},  {"e4m3", "fp8_e4m3"},
      {"e5m2", "fp8_e5m2"},   {"e2m3", "fp6_e2m3"},  {"e3m2", "fp6_e3m2"},
      {"e2m1", "fp4_e2m1"},
  };
  std::string canonical = key;
  for (const auto& a : aliases)
    if (key == a.first) canonical = a.second;
  for (const auto& entry : format_catalogue())
    if (entry.name == canonical) return entry.format;
  std::string known;
  for (const auto& entry : format_catalogue()) known += (known.empty() ? "" : ", ") + entry.name;
  throw_invalid("ebla::format_by_name",
                "unknown format '" + name + "' (known: " + known +
                    ", or custom:t=<t>,emin=<emin>,emax=<emax>[,subnormals=0|1]"
                    "[,specials=ieee|nan_only|none][,overflow=infinity|nan|saturate])");
}

std::string format_name(const Format& f) {
  for (const auto& entry : format_catalogue())
    if (entry.format == f) return entry.name;
  std::string s = "custom:t=" + std::to_string(f.t) + ",emin=" + std::to_string(f.emin) +
                  ",emax=" + std::to_string(f.emax);
  if (!f.subnormals) s += ",subnormals=0";
  if (f.specials != Specials::ieee) s += std::string(",specials=") + to_string(f.specials);
  if (f.overflow != Overflow::infinity) s += std::string(",overflow=") + to_string(f.overflow);
  return s;
}

}  // namespace ebla

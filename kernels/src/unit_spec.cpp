// Custom matrix units from text: the reader and writer of unit_spec.hpp.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/unit_spec.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace ebla {

namespace {

constexpr const char* reader = "ebla::read_unit_spec";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

int parse_int(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < INT_MIN || x > INT_MAX)
    throw_invalid(reader, "'" + v + "' is not an integer");
  return static_cast<int>(x);
}

bool parse_bool(const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  throw_invalid(reader, "'" + v + "' is neither true nor false");
}

// One of two names: the first gives `a`, the second `b`.
template <class E>
E parse_choice(const std::string& v, const char* name_a, E a, const char* name_b, E b) {
  if (v == name_a) return a;
  if (v == name_b) return b;
  throw_invalid(reader, "'" + v + "' is neither " + name_a + " nor " + name_b);
}

using Setter = std::function<void(MatrixUnit&, const std::string&)>;

// Every key and how it sets its field of the unit.
const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"block", [](MatrixUnit& u, const std::string& v) { u.block = parse_int(v); }},
      {"input", [](MatrixUnit& u, const std::string& v) { u.input = format_by_name(v); }},
      {"input_subnormals", [](MatrixUnit& u, const std::string& v) { u.input_subnormals = parse_bool(v); }},
      {"exact_products", [](MatrixUnit& u, const std::string& v) { u.exact_products = parse_bool(v); }},
      {"product", [](MatrixUnit& u, const std::string& v) { u.product = format_by_name(v); }},
      {"accumulation", [](MatrixUnit& u, const std::string& v) { u.accumulation = format_by_name(v); }},
      {"rounding", [](MatrixUnit& u, const std::string& v) { u.rounding = rounding_by_name(v); }},
      {"extra_bits",
       [](MatrixUnit& u, const std::string& v) {
         u.extra_bits = v == "unbounded" ? MatrixUnit::unbounded : parse_int(v);
         if (u.extra_bits < 0 && v != "unbounded") throw_invalid(reader, "'" + v + "' is below 0");
       }},
      {"sum_precision", [](MatrixUnit& u, const std::string& v) { u.sum_precision = parse_int(v); }},
      {"normalisation",
       [](MatrixUnit& u, const std::string& v) {
         u.normalisation = parse_choice(v, "at_end", Normalisation::at_end, "each_addition", Normalisation::each_addition);
       }},
      {"alignment",
       [](MatrixUnit& u, const std::string& v) {
         u.alignment = parse_choice(v, "leading_bit", Alignment::leading_bit, "exponent_sum", Alignment::exponent_sum);
       }},
      {"alignment_floor",
       [](MatrixUnit& u, const std::string& v) {
         u.alignment_floor = v == "none" ? MatrixUnit::no_floor : parse_int(v);
         if (u.alignment_floor == MatrixUnit::no_floor && v != "none")
           throw_invalid(reader, "'" + v + "' is the value that stands for none: write none");
       }},
      {"addend",
       [](MatrixUnit& u, const std::string& v) {
         u.addend = parse_choice(v, "with_products", AddendJoin::with_products, "after_products",
                                 AddendJoin::after_products);
       }},
      {"order",
       [](MatrixUnit& u, const std::string& v) {
         u.order = parse_choice(v, "forward", ProductOrder::forward, "backward", ProductOrder::backward);
       }},
      {"chains", [](MatrixUnit& u, const std::string& v) { u.chains = parse_int(v); }},
      {"output_subnormals", [](MatrixUnit& u, const std::string& v) { u.output_subnormals = parse_bool(v); }},
      {"pairwise", [](MatrixUnit& u, const std::string& v) { u.pairwise = parse_bool(v); }},
  };
  return table;
}

std::string known_keys() {
  std::string s = "base";
  for (const auto& entry : setters()) s += ", " + entry.first;
  return s;
}

}  // namespace

MatrixUnit read_unit_spec(std::istream& in, const std::string& source) {
  MatrixUnit unit;
  std::set<std::string> seen;
  bool based = false;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    const std::string where = source + ":" + std::to_string(line);
    const std::string content = trim(text.substr(0, text.find('#')));  // a comment runs to the end
    if (content.empty()) continue;
    const auto eq = content.find('=');
    if (eq == std::string::npos) throw_invalid(reader, where + ": '" + content + "' is not key = value");
    const std::string key = trim(content.substr(0, eq)), value = trim(content.substr(eq + 1));
    if (!seen.insert(key).second) throw_invalid(reader, where + ": " + key + " is given twice");
    if (key == "base") {  // a preset to start from: before every other key
      if (seen.size() > 1) throw_invalid(reader, where + ": base must come before the other keys");
      unit = under_option(where + ": base", [&] { return matrix_unit_by_name(value); });
      based = true;
      continue;
    }
    const auto setter = setters().find(key);
    if (setter == setters().end())
      throw_invalid(reader, where + ": unknown key '" + key + "' (known: " + known_keys() + ")");
    under_option(where + ": " + key, [&] { setter->second(unit, value); });
  }
  if (in.bad()) throw_invalid(reader, source + ": read error");
  if (!based && (!seen.count("input") || !seen.count("accumulation")))
    throw_invalid(reader, source + ": without base, input and accumulation are required");
  validate(unit, (std::string(reader) + ": " + source).c_str());
  return unit;
}

MatrixUnit read_unit_spec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_invalid(reader, "cannot open '" + path + "'");
  return read_unit_spec(in, path);
}

std::string unit_spec(const MatrixUnit& u) {
  const auto yes = [](bool b) { return b ? "true" : "false"; };
  std::ostringstream s;
  s << "block = " << u.block << "\n"
    << "input = " << format_name(u.input) << "\n"
    << "input_subnormals = " << yes(u.input_subnormals) << "\n"
    << "exact_products = " << yes(u.exact_products) << "\n";
  if (!u.exact_products) s << "product = " << format_name(u.product) << "\n";
  s << "accumulation = " << format_name(u.accumulation) << "\n"
    << "rounding = " << to_string(u.rounding) << "\n"
    << "extra_bits = " << (u.extra_bits == MatrixUnit::unbounded ? std::string("unbounded") : std::to_string(u.extra_bits))
    << "\n"
    << "sum_precision = " << u.sum_precision << "\n"
    << "normalisation = " << to_string(u.normalisation) << "\n"
    << "alignment = " << to_string(u.alignment) << "\n"
    << "alignment_floor = "
    << (u.alignment_floor == MatrixUnit::no_floor ? std::string("none") : std::to_string(u.alignment_floor)) << "\n"
    << "addend = " << to_string(u.addend) << "\n"
    << "order = " << to_string(u.order) << "\n"
    << "chains = " << u.chains << "\n"
    << "output_subnormals = " << yes(u.output_subnormals) << "\n"
    << "pairwise = " << yes(u.pairwise) << "\n";
  return s.str();
}

}  // namespace ebla

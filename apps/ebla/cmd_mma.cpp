// ebla mma: one dot product d = c + sum_i a_i b_i through a matrix-multiply unit of the
// catalogue, on inputs given as values or as bit patterns, so that a unit model can be held
// against a device's own outputs.
//
//   ebla mma --unit a100_fp16 --a 1.5,0x1p-12 --b 1.5,0x1p-11 --c 0x1p-23
//   ebla mma --unit a100_fp16 --bits --a 0x3e00,0x0c00 --b 0x3e00,0x1000 --c 0x34000000
//   ebla mma --unit-file my_gpu.unit --a 1,2 --b 3,4      a custom unit (unit_spec.hpp)
//   ebla mma --unit v100_fp16 --spec                      the spec of a unit, to start one from
//   ebla mma --unit a100_fp16 --cases rows.txt --compare  one dot product per row (mma_cases.cpp)
#include "commands.hpp"
#include "mma_cases.hpp"

#include <ebla/core/bits.hpp>
#include <ebla/core/exact_sum.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/unit_spec.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ebla::cli {

namespace {

struct MmaOptions {
  std::string unit, unit_file;
  bool spec = false;
  std::vector<std::string> a, b;
  std::string c = "0";
  bool bits = false;
  CasesOptions cases;
};

// A bit pattern (decimal or 0x hex) of f as its value: binary32 and binary64 by their IEEE
// encodings, formats of at most 16 bits by ebla::decode.
double from_bits(const std::string& text, const Format& f, const std::string& option) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || text[0] == '-')
    throw_invalid(option, "'" + text + "' is not a bit pattern (decimal or 0x hex)");
  const int width = f == formats::binary64() ? 64 : f == formats::binary32() ? 32 : encoding_bits(f);
  if (width == 0 || (width > 16 && width != 32 && width != 64))
    throw_invalid(option, "format " + format_name(f) + " has no encoding that --bits can read");
  if (width < 64 && v >> width != 0)
    throw_invalid(option, "'" + text + "' has more than the " + std::to_string(width) + " bits of " + format_name(f));
  if (width == 64) return bit_cast<double>(static_cast<std::uint64_t>(v));
  if (width == 32) return static_cast<double>(bit_cast<float>(static_cast<std::uint32_t>(v)));
  return decode(static_cast<std::uint32_t>(v), f);
}

// The encoding of a value of f as hex text, where f has one that fits (else empty).
std::string bits_text(double v, const Format& f) {
  if (f == formats::binary64()) return fmt::format("0x{:016x}", bit_cast<std::uint64_t>(v));
  if (f == formats::binary32()) return fmt::format("0x{:08x}", bit_cast<std::uint32_t>(static_cast<float>(v)));
  const int width = encoding_bits(f);
  if (width == 0 || width > 16) return "";
  return fmt::format("0x{:0{}x}", encode(v, f), (width + 3) / 4);
}

// The values of one operand: parsed, or read as bit patterns of f; then as the unit reads
// them (rounded to nearest in f: a value that changes is reported).
std::vector<double> operand(const std::vector<std::string>& texts, const Format& f, bool bits, const std::string& option) {
  std::vector<double> out;
  for (const std::string& text : texts) {
    const double x = bits ? from_bits(text, f, option) : parse_double(text, option);
    if (!std::isfinite(x)) throw_invalid(option, "'" + text + "' is not finite");
    const double r = round_to(x, f, Rounding::nearest_even);
    if (r != x)  // on stderr: stdout carries only the results
      std::fprintf(stderr, "%s: note: %s is not in %s; the unit reads it as %a\n", option.c_str(), text.c_str(),
                   format_name(f).c_str(), r);
    out.push_back(r);
  }
  return out;
}

std::string value_text(double v, const Format& f) {
  const std::string bits = bits_text(v, f);
  return fmt::format("{:a} = {:.17g}{}", v, v, bits.empty() ? "" : " (" + format_name(f) + " " + bits + ")");
}

// The unit of --unit (a catalogue name) or --unit-file (a spec), and how to name it.
std::pair<MatrixUnit, std::string> chosen_unit(const MmaOptions& o) {
  if (o.unit.empty() == o.unit_file.empty()) throw_invalid("ebla mma", "give one of --unit and --unit-file");
  if (!o.unit_file.empty())
    return {under_option("ebla mma --unit-file", [&] { return read_unit_spec_file(o.unit_file); }), o.unit_file};
  try {
    return {matrix_unit_by_name(o.unit), o.unit};
  } catch (const InvalidArgument& e) {  // what is wrong first, then the names to choose from
    std::string names;
    for (const NamedMatrixUnit& u : matrix_unit_catalogue()) names += (names.empty() ? "" : ", ") + u.name;
    throw_invalid("ebla mma --unit", std::string(e.what()) + " (known: " + names + ")");
  }
}

int run_mma(const MmaOptions& o) {
  const auto [unit, unit_name] = chosen_unit(o);
  if (o.spec) {  // the unit as a spec file would give it
    std::printf("# ebla mma --spec: %s\n%s", unit_name.c_str(), unit_spec(unit).c_str());
    return 0;
  }
  if (!o.cases.path.empty()) return run_mma_cases(unit, o.cases);
  if (o.cases.values || o.cases.compare || o.cases.keep_going)
    throw_invalid("ebla mma", "--values, --compare and --keep-going go with --cases");
  if (o.a.empty() || o.b.empty()) throw_invalid("ebla mma", "--a and --b are required (or --spec)");
  if (o.a.size() != o.b.size())
    throw_invalid("ebla mma", "--a has " + std::to_string(o.a.size()) + " values, --b " + std::to_string(o.b.size()) +
                                  ": give the same number");
  const std::vector<double> a = operand(o.a, unit.input, o.bits, "ebla mma --a");
  const std::vector<double> b = operand(o.b, unit.input, o.bits, "ebla mma --b");
  const double c = operand({o.c}, unit.accumulation, o.bits, "ebla mma --c")[0];
  const double d = unit_dot(unit, a, b, c);
  ExactSum exact;  // c + sum a_i b_i, exactly
  exact.add(c);
  for (std::size_t i = 0; i < a.size(); ++i) exact.add_product(a[i], b[i]);
  std::printf("ebla mma: unit %s: %s\n", unit_name.c_str(), to_string(unit).c_str());
  std::printf("  d = c + sum_i a_i b_i, k = %zu\n", a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    std::printf("  a[%zu] = %s, b[%zu] = %s\n", i, value_text(a[i], unit.input).c_str(), i,
                value_text(b[i], unit.input).c_str());
  std::printf("  c    = %s\n", value_text(c, unit.accumulation).c_str());
  std::printf("d      = %s\n", value_text(d, unit.accumulation).c_str());
  const double e = exact.to_double();
  std::printf("exact  = %a = %.17g (c + a.b, rounded once to binary64)\n", e, e);
  std::printf("d - exact = %.6e (relative %.3e)\n", std::isfinite(d) ? d - e : NAN, exact.relative_error(d));
  return 0;
}

}  // namespace

Command add_mma(CLI::App& app) {
  auto o = std::make_shared<MmaOptions>();
  auto* unit = app.add_option("--unit,-u", o->unit,
                              "A unit of the catalogue (docs/matrix-units.md; a name that is none gets the list)");
  auto* file = app.add_option("--unit-file", o->unit_file,
                              "A custom unit: a spec file of key = value lines (docs/matrix-units.md, \"Custom units\")");
  unit->excludes(file);
  app.add_flag("--spec", o->spec, "Print the unit as a spec file (a start for a custom unit) and nothing else");
  app.add_option("--a", o->a, "a_1, ..., a_k: values, or bit patterns of the unit's input format with --bits")
      ->delimiter(',');
  app.add_option("--b", o->b, "b_1, ..., b_k, as --a")->delimiter(',');
  app.add_option("--c", o->c, "The addend c (a value, or a bit pattern of the accumulation format)")
      ->capture_default_str();
  app.add_flag("--bits", o->bits,
               "Read --a and --b as encodings of the input format and --c of the accumulation format "
               "(decimal or 0x hex)");
  auto* cases = app.add_option("--cases", o->cases.path,
                               "A file of rows 'a b c [d]', one dot product each ('-': standard input); "
                               "prints d of each row as a bit pattern of the accumulation format, in row order");
  for (const char* single : {"--a", "--b", "--c", "--bits", "--spec"}) cases->excludes(app.get_option(single));
  app.add_flag("--values", o->cases.values,
               "--cases: the columns are numbers (decimal or hex float, elements separated by commas), "
               "not bit patterns");
  app.add_flag("--compare", o->cases.compare,
               "--cases: the fourth column is the expected d; each line adds it and 'same' or 'differs', "
               "and a last line counts the rows that differ (exit status 1 if any)");
  app.add_flag("--keep-going", o->cases.keep_going,
               "--cases: a malformed row is reported on stderr and printed as 'skipped', the rest are "
               "computed (exit status 3 if any row was skipped)");
  app.footer("Values are decimal or hex floats, separated by commas or spaces. The unit reads a and b in\n"
             "its input format and c in its accumulation format (a value not in them is rounded to\n"
             "nearest, with a note). Prints d = c + sum a_i b_i as the unit computes it, with its\n"
             "encoding, and the exact value.\n\n"
             "--cases FILE: one row per line, columns a, b, c and d (d is read only with --compare),\n"
             "separated by blanks; blank lines and lines starting with # are not rows. a and b are\n"
             "bit patterns of the input format in hex (0x optional), packed one after the other with\n"
             "the format's digits each (data/tensor-cores/*.txt) or separated by commas; c and d are\n"
             "patterns of the accumulation format, or of binary32 (8 digits). Every row has the same\n"
             "number of elements. Prints d as a bit pattern of the accumulation format, one line per\n"
             "row. Exit status: 0; 1 if --compare found rows that differ; 2 for bad input (a malformed\n"
             "row is named as FILE:LINE:COLUMN and ends the run after the rows before it); 3 if\n"
             "--keep-going skipped rows.");
  return [o] { return run_mma(*o); };
}

}  // namespace ebla::cli

// ebla mma --cases: rows of a, b and c read as bit patterns (or, with --values, as numbers),
// computed a batch at a time by ebla::unit_dot_rows on Kokkos's host threads, and written one
// line per row in row order: d as a bit pattern of the unit's result format.
#include "mma_cases.hpp"

#include "commands.hpp"

#include <ebla/core/bits.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

/// Rows computed together: enough to share among threads, few enough to stream a long input.
constexpr std::size_t rows_per_batch = std::size_t{1} << 16;

/// A malformed row: the column (1-based, in characters) of the fault and what it is.
struct RowError {
  std::size_t column;
  std::string what;
};

/// The value of every character as a hex digit, -1 for none: a table, not comparisons (the
/// digits of random bit patterns defeat branch prediction).
struct HexDigits {
  signed char value[256];
  HexDigits() {
    for (int ch = 0; ch < 256; ++ch)
      value[ch] = static_cast<signed char>(ch >= '0' && ch <= '9'   ? ch - '0'
                                           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                                                    : -1);
  }
};

int hex_digit(char ch) {
  static const HexDigits digits;
  return digits.value[static_cast<unsigned char>(ch)];
}

bool all_hex(const char* s, std::size_t n) {
  int bad = 0;  // no early exit: one branch per field
  for (std::size_t i = 0; i < n; ++i) bad |= hex_digit(s[i]);
  return n > 0 && bad >= 0;
}

std::uint64_t hex_value(const char* s, std::size_t n) {  // n <= 16 hex digits
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = v << 4 | static_cast<std::uint64_t>(hex_digit(s[i]));
  return v;
}

/// The bit patterns of a format: `width` bits, written as `digits` hex digits. Formats of at
/// most 16 bits decode through a table (ebla::decode); formats of binary32's exponent range
/// are the top bits of a binary32 pattern (tf32: 19 bits, 5 digits); binary64 is its own.
class Encoding {
 public:
  explicit Encoding(const Format& f) : format_(f) {
    const int w = encoding_bits(f);
    const bool binary32_range = f.emin == -126 && f.emax == 127 && f.subnormals && f.specials == Specials::ieee;
    if (f == formats::binary64()) {
      width_ = 64;
    } else if (w > 0 && w <= 16) {
      width_ = w;
      table_.resize(std::size_t{1} << w);
      for (std::uint32_t code = 0; code < table_.size(); ++code) table_[code] = decode(code, f);
    } else if (w > 16 && w <= 32 && binary32_range) {
      width_ = w;
      shift_ = 32 - w;
    }
  }
  int width() const { return width_; }
  int digits() const { return (width_ + 3) / 4; }
  const Format& format() const { return format_; }
  std::string name() const { return format_name(format_); }
  /// The value of a pattern of at most width() bits.
  double value(std::uint64_t bits) const {
    if (width_ == 64) return bit_cast<double>(bits);
    if (!table_.empty()) return table_[bits];
    return static_cast<double>(bit_cast<float>(static_cast<std::uint32_t>(bits << shift_)));
  }
  /// The pattern of a value of the format.
  std::uint64_t bits(double v) const {
    if (width_ == 64) return bit_cast<std::uint64_t>(v);
    if (!table_.empty()) return encode(v, format_);
    return bit_cast<std::uint32_t>(static_cast<float>(v)) >> shift_;
  }

 private:
  Format format_;
  int width_ = 0;  // 0: the format has no encoding here
  int shift_ = 0;
  std::vector<double> table_;
};

/// One whitespace-separated field of a line and its column.
struct Field {
  const char* text = nullptr;
  std::size_t size = 0, column = 0;
  std::string str() const { return std::string(text, size); }
};

/// The fields of a line, at most `most` of them (the next one counted, not kept).
int split_fields(const char* line, std::size_t n, Field* out, int most) {
  int count = 0;
  std::size_t i = 0;
  while (true) {
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i == n) return count;
    const std::size_t start = i;
    while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (count < most) out[count] = Field{line + start, i - start, start + 1};
    ++count;
  }
}

bool representable(double x, const Format& f) {
  return std::isnan(x) || round_to(x, f, Rounding::nearest_even) == x;
}

/// How the unit's operands are read from the fields of a row: as bit patterns of the input
/// format (a, b) and of the accumulation format or binary32 (c, d), or as numbers.
class RowReader {
 public:
  RowReader(const MatrixUnit& unit, bool values)
      : values_(values), input_(unit.input), accumulation_(unit.accumulation), binary32_(formats::binary32()) {
    if (!values && (input_.width() == 0 || accumulation_.width() == 0))
      throw_invalid("ebla mma --cases", "the unit's formats (" + input_.name() + ", " + accumulation_.name() +
                                            ") have no bit patterns to read: give --values");
  }
  const Encoding& result() const { return accumulation_; }

  /// The elements of a or b: patterns packed one after the other (digits() hex digits each,
  /// as the data files write them) or separated by commas; numbers separated by commas.
  void operand(const Field& f, const char* name, std::vector<double>& out) const {
    out.clear();
    if (!values_ && all_hex(f.text, f.size)) {
      const std::size_t d = static_cast<std::size_t>(input_.digits());
      if (f.size % d != 0)
        throw RowError{f.column, std::string(name) + ": '" + f.str() + "' has " + std::to_string(f.size) +
                                     " hex digits, not a multiple of the " + std::to_string(d) + " of a " +
                                     input_.name() + " pattern"};
      for (std::size_t i = 0; i < f.size; i += d) out.push_back(input_.value(hex_value(f.text + i, d)));
      return;
    }
    for (std::size_t at = 0;;) {  // a list
      const char* comma = static_cast<const char*>(std::memchr(f.text + at, ',', f.size - at));
      const std::size_t end = comma == nullptr ? f.size : static_cast<std::size_t>(comma - f.text);
      const Field e{f.text + at, end - at, f.column + at};
      out.push_back(values_ ? number(e, name, input_.format(), input_.format()) : pattern(e, name, input_));
      if (comma == nullptr) return;
      at = end + 1;
    }
  }

  /// c, or the expected d: a pattern of the accumulation format, or of binary32 (8 digits;
  /// the data files write binary16 results and addends so), or a number of either format.
  double scalar(const Field& f, const char* name) const {
    if (values_) return number(f, name, accumulation_.format(), binary32_.format());
    const bool prefix = f.size > 2 && f.text[0] == '0' && (f.text[1] == 'x' || f.text[1] == 'X');
    const std::size_t digits = prefix ? f.size - 2 : f.size;
    const bool widened = digits == 8 && accumulation_.digits() < 8;
    return pattern(f, name, widened ? binary32_ : accumulation_);
  }

 private:
  /// A pattern of `e`, hex digits with or without 0x.
  static double pattern(const Field& f, const char* name, const Encoding& e) {
    const bool prefix = f.size > 2 && f.text[0] == '0' && (f.text[1] == 'x' || f.text[1] == 'X');
    const char* digits = prefix ? f.text + 2 : f.text;
    const std::size_t n = prefix ? f.size - 2 : f.size;
    if (!all_hex(digits, n))
      throw RowError{f.column, std::string(name) + ": '" + f.str() + "' is not a bit pattern in hex"};
    const std::uint64_t v = n <= 16 ? hex_value(digits, n) : ~std::uint64_t{0};
    if (n > 16 || (e.width() < 64 && v >> e.width() != 0))
      throw RowError{f.column, std::string(name) + ": '" + f.str() + "' has more than the " +
                                   std::to_string(e.width()) + " bits of " + e.name()};
    return e.value(v);
  }

  /// A number (decimal or hex float, inf, nan) that is a value of `f` or of `also`.
  static double number(const Field& field, const char* name, const Format& f, const Format& also) {
    const std::string text = field.str();
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
      throw RowError{field.column, std::string(name) + ": '" + text + "' is not a number"};
    if (!representable(x, f) && !representable(x, also))
      throw RowError{field.column, std::string(name) + ": " + text + " is not a value of " + format_name(f) +
                                       fmt::format(" (the nearest is {:a})", round_to(x, f, Rounding::nearest_even))};
    return x;
  }

  bool values_;
  Encoding input_, accumulation_, binary32_;
};

/// The rows of one batch: the operands of its well-formed rows one after the other, and for
/// every row in order whether it was skipped (--keep-going: a malformed row has no d).
struct Batch {
  std::size_t k = 0;  // elements per row (every row the same)
  std::vector<double> a, b, c, d, expected;
  std::vector<char> skipped;
  std::size_t rows() const { return skipped.size(); }
  void clear() {
    a.clear(), b.clear(), c.clear(), expected.clear(), skipped.clear();
  }
};

std::string elements(std::size_t n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); }

/// Reads a row into the batch; throws RowError.
void read_row(const char* line, std::size_t n, const RowReader& reader, bool compare, bool first, Batch& batch,
              std::vector<double>& a, std::vector<double>& b) {
  Field f[5];
  const int count = split_fields(line, n, f, 5);
  const std::size_t end = n + 1;
  if (count < (compare ? 4 : 3))
    throw RowError{end, std::to_string(count) + " columns, not " + (compare ? "4 (a b c d)" : "3 (a b c, and d if any)")};
  if (count > 4) throw RowError{f[4].column, std::to_string(count) + " columns, more than 4 (a b c d)"};
  reader.operand(f[0], "a", a);
  reader.operand(f[1], "b", b);
  if (a.size() != b.size())
    throw RowError{f[1].column, "b has " + elements(b.size()) + ", a " + std::to_string(a.size())};
  if (first) batch.k = a.size();
  if (a.size() != batch.k)
    throw RowError{f[0].column, "a has " + elements(a.size()) + ", the first row " + std::to_string(batch.k)};
  const double c = reader.scalar(f[2], "c");
  const double expected = compare ? reader.scalar(f[3], "d") : 0.0;
  batch.a.insert(batch.a.end(), a.begin(), a.end());
  batch.b.insert(batch.b.end(), b.begin(), b.end());
  batch.c.push_back(c);
  batch.expected.push_back(expected);
  batch.skipped.push_back(0);
}

bool same_value(double x, double y) {
  return bit_cast<std::uint64_t>(x) == bit_cast<std::uint64_t>(y) || (std::isnan(x) && std::isnan(y));
}

/// What the whole run has seen.
struct Totals {
  std::size_t rows = 0, skipped = 0, differ = 0;
};

/// Computes the batch and writes its lines: d in hex, and with --compare the expected d as a
/// pattern of the result format and whether they are the same.
void finish_batch(const MatrixUnit& unit, const RowReader& reader, bool compare, Batch& batch, Totals& totals) {
  if (batch.rows() == 0) return;
  const std::size_t rows = batch.c.size();  // the well-formed ones
  batch.d.resize(rows);
  unit_dot_rows(unit, batch.a.data(), batch.b.data(), batch.c.data(), batch.d.data(), rows, batch.k);
  const Encoding& e = reader.result();
  fmt::memory_buffer out;
  std::size_t r = 0;
  for (const char skipped : batch.skipped) {
    ++totals.rows;
    if (skipped) {
      ++totals.skipped;
      fmt::format_to(std::back_inserter(out), "skipped\n");
      continue;
    }
    fmt::format_to(std::back_inserter(out), "{:0{}x}", e.bits(batch.d[r]), e.digits());
    if (compare) {
      const bool same = same_value(batch.d[r], batch.expected[r]);
      totals.differ += same ? 0 : 1;
      const double x = round_to(batch.expected[r], e.format(), Rounding::nearest_even);
      fmt::format_to(std::back_inserter(out), " {:0{}x} {}", e.bits(x), e.digits(), same ? "same" : "differs");
    }
    fmt::format_to(std::back_inserter(out), "\n");
    ++r;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  batch.clear();
}

/// The file of rows, closed at the end (standard input is left open).
class Input {
 public:
  explicit Input(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
    file_ = path == "-" ? stdin : std::fopen(path.c_str(), "r");
    if (file_ == nullptr)
      throw_invalid("ebla mma --cases", "cannot open '" + path + "': " + std::strerror(errno));
  }
  ~Input() {
    if (file_ != stdin && file_ != nullptr) std::fclose(file_);
    std::free(line_);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  /// The next line without its newline; false at the end.
  bool next(const char*& text, std::size_t& n) {
    const ssize_t got = getline(&line_, &capacity_, file_);
    if (got < 0) return false;
    n = static_cast<std::size_t>(got);
    if (n > 0 && line_[n - 1] == '\n') --n;
    text = line_;
    ++number_;
    return true;
  }
  const std::string& name() const { return name_; }
  std::size_t number() const { return number_; }
  bool failed() const { return std::ferror(file_) != 0; }

 private:
  std::string name_;
  std::FILE* file_ = nullptr;
  char* line_ = nullptr;
  std::size_t capacity_ = 0, number_ = 0;
};

bool blank_or_comment(const char* line, std::size_t n) {
  std::size_t i = 0;
  while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  return i == n || line[i] == '#';
}

}  // namespace

int run_mma_cases(const MatrixUnit& unit, const CasesOptions& o) {
  const RowReader reader(unit, o.values);
  Input in(o.path);
  KokkosSession kokkos;
  Batch batch;
  Totals totals;
  std::vector<double> a, b;
  bool first = true;
  const char* line = nullptr;
  std::size_t n = 0;
  while (in.next(line, n)) {
    if (blank_or_comment(line, n)) continue;
    try {
      read_row(line, n, reader, o.compare, first, batch, a, b);
      first = false;
    } catch (const RowError& e) {
      const std::string where = fmt::format("{}:{}:{}: {}", in.name(), in.number(), e.column, e.what);
      if (!o.keep_going) {
        finish_batch(unit, reader, o.compare, batch, totals);  // the rows before it
        std::fflush(stdout);
        throw_invalid("ebla mma --cases", where);
      }
      spdlog::warn("{} (row skipped)", where);
      batch.skipped.push_back(1);
    }
    if (batch.rows() == rows_per_batch) finish_batch(unit, reader, o.compare, batch, totals);
  }
  if (in.failed()) throw_invalid("ebla mma --cases", "cannot read '" + in.name() + "': " + std::strerror(errno));
  finish_batch(unit, reader, o.compare, batch, totals);
  if (o.compare)
    std::printf("%zu of %zu rows differ%s\n", totals.differ, totals.rows - totals.skipped,
                totals.skipped ? fmt::format(" ({} skipped)", totals.skipped).c_str() : "");
  std::fflush(stdout);
  if (totals.skipped > 0) return exit_cases_skipped;
  return totals.differ > 0 ? exit_cases_differ : 0;
}

}  // namespace ebla::cli

// Matrix Market input and output (see io.hpp). The reader checks every line and names
// the file and line in its errors; the writers go through a temporary file and a rename.
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/problems.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/temporary.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <istream>
#include <streambuf>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ebla {

namespace {

constexpr std::uint64_t max_index = static_cast<std::uint64_t>(std::numeric_limits<int>::max());

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  const auto space = [&](std::size_t k) { return std::isspace(static_cast<unsigned char>(line[k])) != 0; };
  while (i < line.size()) {
    while (i < line.size() && space(i)) ++i;
    const std::size_t start = i;
    while (i < line.size() && !space(i)) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string fields_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " field" : " fields"); }

// The bytes of an open file descriptor as a stream buffer (it owns the descriptor); a read
// that fails ends the stream and keeps its errno.
class DescriptorBuffer : public std::streambuf {
public:
  explicit DescriptorBuffer(int fd) : fd_(fd), block_(new char[block]) {}
  ~DescriptorBuffer() override { ::close(fd_); }
  DescriptorBuffer(const DescriptorBuffer&) = delete;
  DescriptorBuffer& operator=(const DescriptorBuffer&) = delete;
  int error() const { return error_; }

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    ssize_t got = 0;
    do got = ::read(fd_, block_.get(), block);
    while (got < 0 && errno == EINTR);
    if (got <= 0) {
      error_ = got < 0 ? errno : 0;
      return traits_type::eof();
    }
    setg(block_.get(), block_.get(), block_.get() + got);
    return traits_type::to_int_type(*gptr());
  }

private:
  static constexpr std::size_t block = 1 << 16;
  int fd_;
  std::unique_ptr<char[]> block_;
  int error_ = 0;
};

// How long a FIFO given as an input may stay without data: a pipe from a running program
// (/dev/stdin, <(zcat A.mtx.gz)) has its first bytes long before; a FIFO that no process
// opens for writing would otherwise block the run forever.
constexpr int fifo_wait_ms = 10000;

// Opens `path` for reading: a directory and a FIFO without data are refused, naming it.
int open_input(const std::string& path, const char* function) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait for a writer here
  if (fd < 0) throw_invalid(function, "cannot open " + in_quotes(path) + ": " + std::strerror(errno));
  struct stat st {};
  std::string refused;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) refused = "cannot read " + in_quotes(path) + ": it is a directory";
  if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    pollfd p{fd, POLLIN, 0};
    int ready = 0;
    do ready = ::poll(&p, 1, fifo_wait_ms);
    while (ready < 0 && errno == EINTR);
    if (ready == 0)
      refused = in_quotes(path) + " is a FIFO to which nothing was written in " + std::to_string(fifo_wait_ms / 1000) +
                " s (no process writes to it)";
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (refused.empty() && (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0))
    refused = "cannot read " + in_quotes(path) + ": " + std::strerror(errno);
  if (!refused.empty()) {
    ::close(fd);
    throw_invalid(function, refused);
  }
  return fd;
}

// Reads a Matrix Market file line by line; fail() names the file and the current line.
class Reader {
public:
  Reader(const std::string& path, const char* function)
      : path_(path), function_(function), file_(open_input(path, function)), in_(&file_),
        buffer_(new char[max_line + 1]) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path_, ec)) bytes_ = std::filesystem::file_size(path_, ec);
  }

  // The next line, whatever it holds; false at the end of the file. A line is at most
  // max_line bytes, so that a file without line ends (/dev/zero) ends in an error, not in
  // all the memory there is.
  bool raw(std::string& line) {
    in_.getline(buffer_.get(), static_cast<std::streamsize>(max_line + 1));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad() || file_.error() != 0)
      fail(std::string("read error: ") + std::strerror(file_.error() != 0 ? file_.error() : EIO));
    if (in_.fail()) {
      if (in_.eof() && got == 0) return false;
      ++line_;
      fail("a line longer than " + std::to_string(max_line) + " bytes: not a Matrix Market file");
    }
    ++line_;
    line.assign(buffer_.get(), in_.eof() ? got : got - 1);  // less the '\n' extracted
    return true;
  }

  // The file's size in bytes; 0 if not a regular file (a pipe), where it is not known.
  std::uintmax_t bytes() const { return bytes_; }

  // Entries announced by the size line must fit in the file, `least` bytes each at least
  // (as "1 1 1\n"); then what reading them takes must fit in memory.
  void check_announced(std::uint64_t entries, int least, double memory, const std::string& what) const {
    if (bytes_ > 0 && entries > bytes_ / static_cast<std::uintmax_t>(least))
      fail("the size line announces " + std::to_string(entries) + " entries, but the file has " +
           std::to_string(bytes_) + " bytes (an entry takes at least " + std::to_string(least) + ")");
    const auto available = static_cast<double>(detail::available_memory());
    if (memory > available)
      fail(what + " needs about " + detail::memory_text(memory) + " of memory, and " +
           detail::memory_text(available) + " are available");
  }

  // The fields of the next line that is neither blank nor a comment; empty at the end.
  std::vector<std::string> data() {
    std::string line;
    while (raw(line)) {
      auto fields = split(line);
      if (!fields.empty() && fields[0][0] != '%') return fields;
    }
    return {};
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw_invalid(function_, path_ + ":" + std::to_string(std::max(line_, 1L)) + ": " + what);
  }

  void expect_fields(const std::vector<std::string>& f, std::size_t n, const char* meaning) const {
    if (f.size() != n)
      fail("expected " + fields_text(n) + " (" + meaning + "), found " + std::to_string(f.size()));
  }

  std::uint64_t integer(const std::string& s, const char* what) const {
    std::uint64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail(std::string(what) + " " + in_quotes(s) + " is not a nonnegative integer");
    return v;
  }

  // A 1-based index in [1, n], returned 0-based.
  int index(const std::string& s, std::uint64_t n, const char* what) const {
    const std::uint64_t v = integer(s, what);
    if (v < 1 || v > n)
      fail(std::string(what) + " " + s + " is out of range [1, " + std::to_string(n) + "]");
    return static_cast<int>(v - 1);
  }

  double value(const std::string& s) const {
    const char* begin = s.data() + (s[0] == '+' && s.size() > 1 && s[1] != '-' ? 1 : 0);
    double v = 0;
    const auto r = std::from_chars(begin, s.data() + s.size(), v);
    if (r.ec == std::errc::result_out_of_range) fail("value " + in_quotes(s) + " is out of the range of double");
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail("value " + in_quotes(s) + " is not a number");
    if (!std::isfinite(v)) fail("value " + in_quotes(s) + " is not finite");
    if (integers && v != std::floor(v))
      fail("value " + in_quotes(s) + " is not an integer, as the banner's field 'integer' says every value is");
    return v;
  }

  long line() const { return line_; }

  bool integers = false;  // the banner's field is "integer": every value a whole number

private:
  static constexpr std::size_t max_line = 1 << 20;
  std::string path_;
  const char* function_;
  DescriptorBuffer file_;
  std::istream in_;
  std::unique_ptr<char[]> buffer_;  // not zero-filled: getline writes what is read
  std::uintmax_t bytes_ = 0;
  long line_ = 0;
};

struct Banner {
  std::string format, field, symmetry;
};

// "%%MatrixMarket matrix <format> <field> <symmetry>" on the first line, case-insensitive.
Banner read_banner(Reader& in, const std::vector<std::string>& formats, const std::vector<std::string>& symmetries) {
  const std::string expected = "expected a banner '%%MatrixMarket matrix <format> <field> <symmetry>'";
  std::string line;
  if (!in.raw(line)) in.fail("empty file: " + expected);
  const auto f = split(line);
  if (f.empty() || lower(f[0]) != "%%matrixmarket") in.fail("missing banner: " + expected);
  if (f.size() != 5) in.fail("malformed banner: " + expected);
  if (lower(f[1]) != "matrix") in.fail("unsupported object " + in_quotes(f[1]) + " (supported: matrix)");
  const Banner b{lower(f[2]), lower(f[3]), lower(f[4])};
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (std::find(formats.begin(), formats.end(), b.format) == formats.end())
    in.fail("unsupported format " + in_quotes(f[2]) + " (supported: " + list(formats) + ")");
  if (b.field != "real" && b.field != "integer")
    in.fail("unsupported field " + in_quotes(f[3]) + " (supported: real, integer)");
  if (std::find(symmetries.begin(), symmetries.end(), b.symmetry) == symmetries.end())
    in.fail("unsupported symmetry " + in_quotes(f[4]) + " (supported: " + list(symmetries) + ")");
  return b;
}

struct Size {
  std::uint64_t rows = 0, cols = 0, entries = 0;
};

Size read_size(Reader& in, bool coordinate) {
  const auto f = in.data();
  if (f.empty()) in.fail("the file ends before the size line");
  in.expect_fields(f, coordinate ? 3 : 2, coordinate ? "rows, columns, entries" : "rows, columns");
  Size s{in.integer(f[0], "the number of rows"), in.integer(f[1], "the number of columns"), 0};
  s.entries = coordinate ? in.integer(f[2], "the number of entries") : s.rows * s.cols;
  return s;
}

// Announced entries are read one data line each; a missing or an extra line is an error.
void expect_entry(Reader& in, const std::vector<std::string>& f, std::uint64_t k, std::uint64_t total) {
  if (f.empty())
    in.fail("the file ends after " + std::to_string(k) + " of the " + std::to_string(total) +
            " entries announced (truncated file)");
}

void expect_end(Reader& in, std::uint64_t total) {
  if (!in.data().empty()) in.fail("more entries than the " + std::to_string(total) + " announced");
}

struct Triplet {
  int row, col;
  double value;
};

using RowMap = CsrMatrix::row_map_type::non_const_type;
using Entries = CsrMatrix::index_type::non_const_type;
using Values = CsrMatrix::values_type::non_const_type;

// CSR with sorted columns and duplicates summed (in file order); a symmetric file's
// off-diagonal entries are mirrored.
CsrMatrix build_csr(const std::string& path, int rows, int cols, std::vector<Triplet>& t, bool symmetric) {
  const std::size_t n = static_cast<std::size_t>(rows);
  std::vector<std::size_t> ptr(n + 1, 0);
  for (const auto& e : t) {
    ++ptr[static_cast<std::size_t>(e.row) + 1];
    if (symmetric && e.row != e.col) ++ptr[static_cast<std::size_t>(e.col) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) ptr[i + 1] += ptr[i];
  std::vector<std::pair<int, double>> staged(ptr[n]);
  std::vector<std::size_t> at(ptr.begin(), ptr.end() - 1);
  for (const auto& e : t) {
    staged[at[static_cast<std::size_t>(e.row)]++] = {e.col, e.value};
    if (symmetric && e.row != e.col) staged[at[static_cast<std::size_t>(e.col)]++] = {e.row, e.value};
  }
  std::vector<Triplet>().swap(t);
  // sort each row, sum duplicates, and compact (rows only shrink, so in place)
  std::size_t w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto begin = staged.begin() + static_cast<std::ptrdiff_t>(ptr[i]);
    const auto end = staged.begin() + static_cast<std::ptrdiff_t>(ptr[i + 1]);
    std::stable_sort(begin, end, [](const auto& a, const auto& b) { return a.first < b.first; });
    ptr[i] = w;
    for (auto it = begin; it != end; ++it) {
      if (it != begin && it->first == (it - 1)->first)
        staged[w - 1].second += it->second;
      else
        staged[w++] = *it;
    }
    for (std::size_t k = ptr[i]; k < w; ++k)  // finite entries whose sum is not
      if (!std::isfinite(staged[k].second))
        throw_invalid("ebla::read_matrix_market", path + ": the duplicate entries of (" + std::to_string(i + 1) + ", " +
                                                      std::to_string(staged[k].first + 1) +
                                                      ") sum to a value beyond the range of double");
  }
  ptr[n] = w;
  RowMap row_map(Kokkos::ViewAllocateWithoutInitializing("ebla::matrix_market row_map"), n + 1);
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla::matrix_market entries"), w);
  Values values(Kokkos::ViewAllocateWithoutInitializing("ebla::matrix_market values"), w);
  auto h_ptr = Kokkos::create_mirror_view(row_map);
  auto h_col = Kokkos::create_mirror_view(entries);
  auto h_val = Kokkos::create_mirror_view(values);
  for (std::size_t i = 0; i <= n; ++i) h_ptr(i) = ptr[i];
  for (std::size_t k = 0; k < w; ++k) {
    h_col(k) = staged[k].first;
    h_val(k) = staged[k].second;
  }
  Kokkos::deep_copy(row_map, h_ptr);
  Kokkos::deep_copy(entries, h_col);
  Kokkos::deep_copy(values, h_val);
  return CsrMatrix("ebla::matrix_market", rows, cols, w, values, row_map, entries);
}

void check_dimension(Reader& in, std::uint64_t n, const char* what) {
  if (n > max_index)
    in.fail(std::string(what) + " " + std::to_string(n) + " exceed what an int can index");
}

// ---- writing --------------------------------------------------------------------------

// The output file under a temporary name; removed unless commit() renamed it onto path.
class Output {
public:
  Output(const std::string& path, const char* function) : path_(path), function_(function) {
    const int fd = detail::create_temporary(path_, temporary_);
    file_ = fd < 0 ? nullptr : ::fdopen(fd, "w");
    if (file_ == nullptr) {
      const int error = errno;
      if (fd >= 0) {
        ::close(fd);
        std::remove(temporary_.c_str());
      }
      throw_invalid(function_, "cannot create " + in_quotes(temporary_) + " (for " + in_quotes(path_) +
                                   "): " + std::strerror(error));
    }
    pending_ = detail::PendingTemporary(temporary_);
  }
  ~Output() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) std::remove(temporary_.c_str());
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void text(const std::string& s) { std::fwrite(s.data(), 1, s.size(), file_); }
  // Writes a number as the shortest decimal that reads back as itself (std::to_chars:
  // locale-independent), then `after`.
  template <class T>
  void number(T v, char after) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::fwrite(buf, 1, static_cast<std::size_t>(r.ptr - buf), file_);
    std::fputc(after, file_);
  }

  // Flushes and syncs the temporary, then renames it onto the target.
  void commit() {
    bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
    ok = ::fsync(::fileno(file_)) == 0 && ok;
    ok = std::fclose(file_) == 0 && ok;
    file_ = nullptr;
    if (!ok) throw_invalid(function_, "cannot write " + in_quotes(temporary_) + ": " + std::strerror(errno));
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
      throw_invalid(function_, "cannot rename " + in_quotes(temporary_) + " to " + in_quotes(path_) + ": " +
                                   std::strerror(errno));
    pending_.release();
    committed_ = true;
  }

private:
  std::string path_, temporary_;
  const char* function_;
  detail::PendingTemporary pending_;  // the temporary, for a signal handler to remove
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace

// ---- reading ----------------------------------------------------------------------------

CsrMatrix read_matrix_market(const std::string& path) {
  Reader in(path, "ebla::read_matrix_market");
  const Banner b = read_banner(in, {"coordinate"}, {"general", "symmetric"});
  in.integers = b.field == "integer";
  const bool symmetric = b.symmetry == "symmetric";
  const Size s = read_size(in, true);
  check_dimension(in, s.rows, "rows");
  check_dimension(in, s.cols, "columns");
  if (symmetric && s.rows != s.cols)
    in.fail("a symmetric matrix must be square, not " + std::to_string(s.rows) + " x " + std::to_string(s.cols));
  // build_csr at its peak: the triplets, their mirrored copy and the CSR arrays, 56 bytes an
  // entry at most, and three offsets a row
  in.check_announced(s.entries, 6, 56.0 * static_cast<double>(s.entries) + 24.0 * static_cast<double>(s.rows + 1),
                     "a matrix of " + std::to_string(s.rows) + " rows and " + std::to_string(s.entries) + " entries");
  std::vector<Triplet> t;
  t.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(s.entries, 1u << 20)));
  for (std::uint64_t k = 0; k < s.entries; ++k) {
    const auto f = in.data();
    expect_entry(in, f, k, s.entries);
    in.expect_fields(f, 3, "row, column, value");
    const int i = in.index(f[0], s.rows, "row index");
    const int j = in.index(f[1], s.cols, "column index");
    if (symmetric && j > i)
      in.fail("entry (" + f[0] + ", " + f[1] + ") is in the upper triangle; a symmetric file stores the lower");
    t.push_back({i, j, in.value(f[2])});
  }
  expect_end(in, s.entries);
  return build_csr(path, static_cast<int>(s.rows), static_cast<int>(s.cols), t, symmetric);
}

Vector read_matrix_market_vector(const std::string& path) {
  Reader in(path, "ebla::read_matrix_market_vector");
  const Banner b = read_banner(in, {"array", "coordinate"}, {"general"});
  in.integers = b.field == "integer";
  const bool coordinate = b.format == "coordinate";
  const Size s = read_size(in, coordinate);
  if (s.cols != 1) in.fail("a vector has one column, not " + std::to_string(s.cols));
  check_dimension(in, s.rows, "rows");
  // the values, then the vector returned: 16 bytes a row
  in.check_announced(s.entries, coordinate ? 6 : 2, 16.0 * static_cast<double>(s.rows),
                     "a vector of " + std::to_string(s.rows) + " rows");
  std::vector<double> v(static_cast<std::size_t>(s.rows), 0.0);
  for (std::uint64_t k = 0; k < s.entries; ++k) {
    const auto f = in.data();
    expect_entry(in, f, k, s.entries);
    if (coordinate) {
      in.expect_fields(f, 3, "row, column, value");
      const int i = in.index(f[0], s.rows, "row index");
      in.index(f[1], 1, "column index");
      double& vi = v[static_cast<std::size_t>(i)];
      vi += in.value(f[2]);
      if (!std::isfinite(vi)) in.fail("the entries of row " + f[0] + " sum to a value beyond the range of double");
    } else {
      in.expect_fields(f, 1, "value");
      v[k] = in.value(f[0]);
    }
  }
  expect_end(in, s.entries);
  Vector out(Kokkos::ViewAllocateWithoutInitializing("ebla::matrix_market vector"), v.size());
  auto h = Kokkos::create_mirror_view(out);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(out, h);
  return out;
}

// ---- writing ----------------------------------------------------------------------------

void write_matrix_market(const std::string& path, const CsrMatrix& A, bool symmetric) {
  const char* function = "ebla::write_matrix_market";
  if (symmetric) {
    try {
      check_symmetric(A, path);
    } catch (const InvalidArgument& e) {
      throw_invalid(function, std::string("cannot write a symmetric file: ") + e.what());
    }
  }
  const std::size_t n = static_cast<std::size_t>(A.numRows());
  const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  const auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  const auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = ptr(i); k < ptr(i + 1); ++k) {
      if (!std::isfinite(val(k)))
        throw_invalid(function, in_quotes(path) + ": entry (" + std::to_string(i) + ", " + std::to_string(col(k)) +
                                    ") (0-based) is not finite");
      count += !symmetric || static_cast<std::size_t>(col(k)) <= i;
    }
  Output out(path, function);
  out.text(std::string("%%MatrixMarket matrix coordinate real ") + (symmetric ? "symmetric" : "general") +
           "\n% written by ebla\n" + std::to_string(n) + " " + std::to_string(A.numCols()) + " " +
           std::to_string(count) + "\n");
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = ptr(i); k < ptr(i + 1); ++k) {
      if (symmetric && static_cast<std::size_t>(col(k)) > i) continue;
      out.number(i + 1, ' ');
      out.number(static_cast<std::size_t>(col(k)) + 1, ' ');
      out.number(val(k), '\n');
    }
  out.commit();
}

void write_matrix_market_vector(const std::string& path, ConstVector v) {
  const char* function = "ebla::write_matrix_market_vector";
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (!std::isfinite(h(i)))
      throw_invalid(function, in_quotes(path) + ": entry " + std::to_string(i) + " (0-based) is not finite");
  Output out(path, function);
  out.text("%%MatrixMarket matrix array real general\n% written by ebla\n" + std::to_string(h.extent(0)) + " 1\n");
  for (std::size_t i = 0; i < h.extent(0); ++i) out.number(h(i), '\n');
  out.commit();
}

}  // namespace ebla

// Matrix input and output: Matrix Market round trips, a catalogue of malformed files
// (each error must name the file and the line), and HDF5 files written here with the C
// API in every accepted type and with every documented defect.
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/problems.hpp>

#include <ebla/core/error.hpp>

#include "util.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using ebla::test::contains;
using ebla::test::error_of;
using ebla::test::HostCsr;
using ebla::test::make_csr;
using ebla::test::to_host;

// ---- helpers -------------------------------------------------------------------------



std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh scratch directory per test, removed afterwards.
class Scratch : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("ebla_test_io_" + std::to_string(::getpid()) + "_" +
                                        info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string text_file(const std::string& name, const std::string& content) const {
    std::ofstream(file(name), std::ios::binary) << content;
    return file(name);
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    return names;
  }
  fs::path dir_;
};

// A 3 x 4 general matrix with an empty row and values that need all 17 digits.
HostCsr general_example() {
  return HostCsr{3, 4, {0, 2, 2, 5}, {0, 3, 1, 2, 3}, {0.1, -1.0 / 3, 1e300, -2.5e-310, 7}};
}

// ---- Matrix Market: round trips ---------------------------------------------------------

using MatrixMarket = Scratch;

TEST_F(MatrixMarket, RoundTripGeneral) {
  const HostCsr A = general_example();
  const std::string path = file("general.mtx");
  ebla::write_matrix_market(path, make_csr(A), false);
  EXPECT_EQ(to_host(ebla::read_matrix_market(path)), A);
  const std::string text = read_text(path);
  EXPECT_EQ(text.rfind("%%MatrixMarket matrix coordinate real general\n", 0), 0u) << text;
  EXPECT_TRUE(contains(text, "\n3 4 5\n"));
  EXPECT_EQ(listing(), std::vector<std::string>{"general.mtx"});  // no temporary left
}

TEST_F(MatrixMarket, RoundTripSymmetric) {
  const auto p = ebla::hpccg_problem(3, 2, 2);
  const HostCsr A = to_host(p.A);
  const std::string sym = file("sym.mtx"), gen = file("gen.mtx");
  ebla::write_matrix_market(sym, p.A, true);
  ebla::write_matrix_market(gen, p.A, false);
  EXPECT_EQ(to_host(ebla::read_matrix_market(sym)), A);
  EXPECT_EQ(to_host(ebla::read_matrix_market(gen)), A);
  const std::size_t lower = (A.col.size() + 12) / 2;  // the diagonal once, the rest halved
  const std::string text = read_text(sym);
  EXPECT_EQ(text.rfind("%%MatrixMarket matrix coordinate real symmetric\n", 0), 0u) << text;
  EXPECT_TRUE(contains(text, "\n12 12 " + std::to_string(lower) + "\n"));
}

TEST_F(MatrixMarket, OverwritesAndLeavesNoTemporary) {
  const std::string path = file("A.mtx");
  ebla::write_matrix_market(path, ebla::hpccg_problem(2, 2, 1).A, false);
  ebla::write_matrix_market(path, make_csr(general_example()), false);
  EXPECT_EQ(to_host(ebla::read_matrix_market(path)), general_example());
  EXPECT_EQ(listing(), std::vector<std::string>{"A.mtx"});
}

TEST_F(MatrixMarket, SymmetricWriteOfANonSymmetricMatrixFails) {
  const std::string path = file("bad.mtx");
  const HostCsr A{2, 2, {0, 2, 4}, {0, 1, 0, 1}, {1, 2, 3, 4}};
  const std::string e = error_of([&] { ebla::write_matrix_market(path, make_csr(A), true); });
  EXPECT_TRUE(contains(e, "ebla::write_matrix_market"));
  EXPECT_TRUE(contains(e, path));
  EXPECT_TRUE(contains(e, "A(0, 1) = 2 but A(1, 0) = 3"));
  EXPECT_TRUE(contains(error_of([&] { ebla::write_matrix_market(path, make_csr(general_example()), true); }),
                       "not square"));
  EXPECT_TRUE(listing().empty());
}

TEST_F(MatrixMarket, WritersRejectNonFiniteValuesAndUnwritablePaths) {
  HostCsr A = general_example();
  A.val[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(contains(error_of([&] { ebla::write_matrix_market(file("nan.mtx"), make_csr(A), false); }),
                       "entry (2, 2) (0-based) is not finite"));
  const std::vector<double> x{1, std::numeric_limits<double>::infinity()};
  EXPECT_TRUE(contains(error_of([&] { ebla::write_matrix_market_vector(file("inf.mtx"), ebla::test::vec(x)); }),
                       "entry 1 (0-based) is not finite"));
  EXPECT_TRUE(listing().empty());
  const std::string nowhere = file("no/such/dir/A.mtx");
  EXPECT_TRUE(contains(error_of([&] { ebla::write_matrix_market(nowhere, make_csr(general_example()), false); }),
                       "cannot create"));
}

// The twelve SPD matrices of data/matrices (data/README.md): each file is read as a square
// matrix with the full symmetric pattern (every off-diagonal entry of the stored lower
// triangle mirrored), and with the n and nonzero count the collection lists.
TEST_F(MatrixMarket, ReadsTheSuiteSparseSet) {
  struct Entry {
    const char* name;
    int n;
    std::size_t nnz;
  };
  for (const Entry& e : {Entry{"1138_bus", 1138, 4054}, Entry{"bcsstk13", 2003, 83883}, Entry{"gr_30_30", 900, 7744},
                         Entry{"494_bus", 494, 1666}, Entry{"662_bus", 662, 2474}, Entry{"LFAT5", 14, 46},
                         Entry{"bcsstk01", 48, 400}, Entry{"bcsstk02", 66, 4356}, Entry{"bcsstk16", 4884, 290378},
                         Entry{"mesh2e1", 306, 2018}, Entry{"nos3", 960, 15844}, Entry{"nos4", 100, 594}}) {
    const HostCsr A = to_host(ebla::read_matrix_market(std::string(EBLA_DATA_DIR "/matrices/") + e.name + ".mtx"));
    EXPECT_EQ(A.rows, e.n) << e.name;
    EXPECT_EQ(A.cols, e.n) << e.name;
    EXPECT_EQ(A.val.size(), e.nnz) << e.name;
    std::size_t positive_diagonal = 0;
    for (int i = 0; i < A.rows; ++i)
      for (std::size_t k = A.ptr[i]; k < A.ptr[i + 1]; ++k) positive_diagonal += A.col[k] == i && A.val[k] > 0;
    EXPECT_EQ(positive_diagonal, static_cast<std::size_t>(e.n)) << e.name;
  }
}

TEST_F(MatrixMarket, ReadsTheSampleFiles) {
  const auto p = ebla::hpccg_problem(2, 2, 2);
  EXPECT_EQ(to_host(ebla::read_matrix_market(EBLA_DATA_DIR "/matrices/hpccg_2x2x2.mtx")), to_host(p.A));
  EXPECT_EQ(to_host(ebla::read_matrix_market_vector(EBLA_DATA_DIR "/matrices/hpccg_2x2x2_b.mtx")), to_host(p.b));
}

TEST_F(MatrixMarket, CommentsBlankLinesAndSpacing) {
  const std::string path = text_file("c.mtx",
                                     "%%MatrixMarket MATRIX Coordinate Real General\r\n"
                                     "% a comment\n"
                                     "\n"
                                     "   \t\n"
                                     "  %indented comment\n"
                                     "2 3 3\r\n"
                                     "1 3 -4\n"
                                     "% between entries\n"
                                     "\n"
                                     "\t2\t1   +5e0\r\n"
                                     "1 1 .5\n"
                                     "\n"
                                     "% trailing comment\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market(path)), (HostCsr{2, 3, {0, 2, 3}, {0, 2, 0}, {0.5, -4, 5}}));
}

// The field "integer": every value a whole number, in any spelling (+5e0); 4.5 is refused,
// naming the line.
TEST_F(MatrixMarket, AnIntegerFieldHoldsWholeNumbersOnly) {
  const std::string whole = text_file("i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 +5e0\n2 2 -3\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market(whole)), (HostCsr{2, 2, {0, 1, 2}, {0, 1}, {5, -3}}));
  const std::string fraction = text_file("f.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 4\n2 2 4.5\n");
  const std::string e = error_of([&] { ebla::read_matrix_market(fraction); });
  EXPECT_NE(e.find("f.mtx:4: value '4.5' is not an integer"), std::string::npos) << e;
  const std::string vector = text_file("v.mtx", "%%MatrixMarket matrix array integer general\n2 1\n1\n0.25\n");
  EXPECT_NE(error_of([&] { ebla::read_matrix_market_vector(vector); }).find("'0.25' is not an integer"), std::string::npos);
}

TEST_F(MatrixMarket, DuplicatesAreSummed) {
  const std::string general = text_file("g.mtx",
                                        "%%MatrixMarket matrix coordinate real general\n"
                                        "2 2 4\n"
                                        "1 2 1.5\n"
                                        "2 2 1\n"
                                        "1 2 2.25\n"
                                        "1 2 -1\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market(general)), (HostCsr{2, 2, {0, 1, 2}, {1, 1}, {2.75, 1}}));
  const std::string symmetric = text_file("s.mtx",
                                          "%%MatrixMarket matrix coordinate real symmetric\n"
                                          "3 3 5\n"
                                          "3 1 2\n"
                                          "2 2 4\n"
                                          "3 1 0.5\n"
                                          "2 2 1\n"
                                          "3 3 -1\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market(symmetric)),
            (HostCsr{3, 3, {0, 1, 2, 4}, {2, 1, 0, 2}, {2.5, 5, 2.5, -1}}));
}

TEST_F(MatrixMarket, EmptyMatrices) {
  const std::string path = text_file("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 0\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market(path)), (HostCsr{3, 2, {0, 0, 0, 0}, {}, {}}));
}

// ---- Matrix Market: malformed files ----------------------------------------------------

struct Malformed {
  const char* name;
  std::string content;
  int line;
  const char* what;
};

TEST_F(MatrixMarket, MalformedMatrixFilesNameFileAndLine) {
  const std::vector<Malformed> cases = {
      {"empty", "", 1, "empty file"},
      {"no_banner", "3 3 1\n1 1 1\n", 1, "missing banner"},
      {"short_banner", "%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n", 1, "malformed banner"},
      {"long_banner", "%%MatrixMarket matrix coordinate real general x\n1 1 1\n1 1 1\n", 1, "malformed banner"},
      {"object", "%%MatrixMarket vector coordinate real general\n", 1, "unsupported object 'vector'"},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1,
       "unsupported field 'complex'"},
      {"pattern", "%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1\n", 1, "unsupported field 'pattern'"},
      {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n", 1, "unsupported symmetry 'hermitian'"},
      {"skew", "%%MatrixMarket matrix coordinate real skew-symmetric\n", 1, "unsupported symmetry 'skew-symmetric'"},
      {"array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "unsupported format 'array'"},
      {"size_fields", "%%MatrixMarket matrix coordinate real general\n% c\n3 3\n", 3, "expected 3 fields"},
      {"size_text", "%%MatrixMarket matrix coordinate real general\n3 x 1\n1 1 1\n", 2,
       "the number of columns 'x' is not a nonnegative integer"},
      {"size_negative", "%%MatrixMarket matrix coordinate real general\n-3 3 1\n", 2, "'-3' is not a nonnegative"},
      {"size_fraction", "%%MatrixMarket matrix coordinate real general\n3 3 1.5\n", 2, "'1.5' is not a nonnegative"},
      {"size_huge", "%%MatrixMarket matrix coordinate real general\n3000000000 3 0\n", 2, "exceed what an int"},
      {"no_size", "%%MatrixMarket matrix coordinate real general\n% only comments\n\n", 3, "before the size line"},
      {"symmetric_rectangle", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", 2,
       "must be square, not 3 x 4"},
      {"text_value", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 2 abc\n", 4,
       "value 'abc' is not a number"},
      {"trailing_junk", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1.5x\n", 3, "'1.5x' is not a number"},
      {"nan", "%%MatrixMarket matrix coordinate real general\n3 3 2\n\n1 1 1\n2 2 nan\n", 5, "'nan' is not finite"},
      {"inf", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 -inf\n", 3, "'-inf' is not finite"},
      {"overflow", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1e400\n", 3, "out of the range"},
      {"row_zero", "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n", 3,
       "row index 0 is out of range [1, 3]"},
      {"column_big", "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 1\n% c\n1 3 1\n", 5,
       "column index 3 is out of range [1, 2]"},
      {"index_fraction", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1.0 1 1\n", 3,
       "row index '1.0' is not a nonnegative integer"},
      {"upper", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n1 2 5\n", 4,
       "entry (1, 2) is in the upper triangle"},
      {"two_fields", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1\n", 3,
       "expected 3 fields (row, column, value), found 2"},
      {"four_fields", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1 0\n", 3, "found 4"},
      {"truncated", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 1\n", 4,
       "the file ends after 2 of the 3 entries announced (truncated file)"},
      {"truncated_comment", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n% end\n", 4,
       "ends after 1 of the 2"},
      {"too_many", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n\n2 2 1\n", 5,
       "more entries than the 1 announced"},
      // sizes checked before anything is allocated: entries that cannot be in the file, and
      // a matrix whose row offsets alone take 48 GiB (more than this machine has)
      {"entries_beyond_file", "%%MatrixMarket matrix coordinate real general\n100 100 1000\n1 1 1\n", 2,
       "the size line announces 1000 entries, but the file has 65 bytes (an entry takes at least 6)"},
      {"rows_beyond_memory", "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n1 1 1\n", 2,
       "a matrix of 2147483647 rows and 1 entries needs about 48.0 GiB of memory, and "},
      {"duplicates_overflow", "%%MatrixMarket matrix coordinate real general\n1 1 2\n1 1 1e308\n1 1 1e308\n", 0,
       "the duplicate entries of (1, 1) sum to a value beyond the range of double"},
      {"line_without_end", "%%MatrixMarket matrix coordinate real general\n3 3 1\n" + std::string(1 << 21, '1'), 3,
       "a line longer than 1048576 bytes: not a Matrix Market file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = text_file(std::string(c.name) + ".mtx", c.content);
    const std::string e = error_of([&] { ebla::read_matrix_market(path); });
    const std::string where = c.line > 0 ? path + ":" + std::to_string(c.line) : path;  // 0: the whole file
    EXPECT_EQ(e.rfind("ebla::read_matrix_market: " + where + ": ", 0), 0u) << e;
    EXPECT_TRUE(contains(e, c.what));
  }
}

// A device without line ends: an error after one line's worth of bytes, not all the memory.
TEST_F(MatrixMarket, EndlessInputWithoutLineEnds) {
  const std::string e = error_of([] { ebla::read_matrix_market("/dev/zero"); });
  EXPECT_TRUE(contains(e, "ebla::read_matrix_market: /dev/zero:1: a line longer than 1048576 bytes")) << e;
}

TEST_F(MatrixMarket, MissingFile) {
  const std::string path = file("absent.mtx");
  const std::string e = error_of([&] { ebla::read_matrix_market(path); });
  EXPECT_TRUE(contains(e, "ebla::read_matrix_market: cannot open '" + path + "'"));
  EXPECT_TRUE(contains(error_of([&] { ebla::read_matrix_market_vector(path); }), path));
}

// ---- Matrix Market: vectors -----------------------------------------------------------

TEST_F(MatrixMarket, VectorRoundTrip) {
  const std::vector<double> x{0.1, -1.0 / 3, 1e308, -2.5e-310, 0, 42};
  const std::string path = file("x.mtx");
  ebla::write_matrix_market_vector(path, ebla::test::vec(x));
  EXPECT_EQ(to_host(ebla::read_matrix_market_vector(path)), x);
  EXPECT_EQ(read_text(path).rfind("%%MatrixMarket matrix array real general\n% written by ebla\n6 1\n0.1\n", 0), 0u);
  ebla::write_matrix_market_vector(path, ebla::test::vec({}));
  EXPECT_TRUE(to_host(ebla::read_matrix_market_vector(path)).empty());
  EXPECT_EQ(listing(), std::vector<std::string>{"x.mtx"});
}

TEST_F(MatrixMarket, VectorArrayAndCoordinateForms) {
  const std::string array = text_file("a.mtx",
                                      "%%MatrixMarket matrix array real general\n"
                                      "% comment\n"
                                      "3 1\n"
                                      "1.5\n"
                                      "\n"
                                      "-2\n"
                                      "3e-3\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market_vector(array)), (std::vector<double>{1.5, -2, 3e-3}));
  const std::string coordinate = text_file("c.mtx",
                                           "%%MatrixMarket matrix coordinate integer general\n"
                                           "4 1 3\n"
                                           "4 1 7\n"
                                           "2 1 1\n"
                                           "4 1 -2\n");
  EXPECT_EQ(to_host(ebla::read_matrix_market_vector(coordinate)), (std::vector<double>{0, 1, 0, 5}));
}

TEST_F(MatrixMarket, MalformedVectorFilesNameFileAndLine) {
  const std::vector<Malformed> cases = {
      {"two_columns", "%%MatrixMarket matrix array real general\n3 2\n1\n2\n3\n4\n5\n6\n", 2,
       "a vector has one column, not 2"},
      {"coordinate_columns", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n", 2,
       "a vector has one column, not 3"},
      {"symmetric", "%%MatrixMarket matrix array real symmetric\n1 1\n1\n", 1, "unsupported symmetry 'symmetric'"},
      {"complex", "%%MatrixMarket matrix array complex general\n1 1\n1 0\n", 1, "unsupported field 'complex'"},
      {"array_size", "%%MatrixMarket matrix array real general\n3 1 3\n", 2, "expected 2 fields (rows, columns)"},
      {"two_values", "%%MatrixMarket matrix array real general\n2 1\n1 2\n", 3, "expected 1 field (value), found 2"},
      {"too_many", "%%MatrixMarket matrix array real general\n2 1\n1\n2\n3\n", 5, "more entries than the 2"},
      {"truncated", "%%MatrixMarket matrix array real general\n3 1\n1\n2\n", 4, "ends after 2 of the 3"},
      {"nan", "%%MatrixMarket matrix array real general\n2 1\n1\nNaN\n", 4, "'NaN' is not finite"},
      {"column_index", "%%MatrixMarket matrix coordinate real general\n3 1 1\n1 2 1\n", 3,
       "column index 2 is out of range [1, 1]"},
      {"row_index", "%%MatrixMarket matrix coordinate real general\n3 1 1\n4 1 1\n", 3,
       "row index 4 is out of range [1, 3]"},
      {"duplicates_overflow", "%%MatrixMarket matrix coordinate real general\n2 1 2\n2 1 -1e308\n2 1 -1e308\n", 4,
       "the entries of row 2 sum to a value beyond the range of double"},
      {"array_beyond_file", "%%MatrixMarket matrix array real general\n2147483647 1\n1\n", 2,
       "announces 2147483647 entries, but the file has 56 bytes (an entry takes at least 2)"},
      {"coordinate_beyond_memory", "%%MatrixMarket matrix coordinate real general\n2147483647 1 1\n1 1 1\n", 2,
       "a vector of 2147483647 rows needs about 32.0 GiB of memory, and "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = text_file(std::string(c.name) + ".mtx", c.content);
    const std::string e = error_of([&] { ebla::read_matrix_market_vector(path); });
    EXPECT_EQ(e.rfind("ebla::read_matrix_market_vector: " + path + ":" + std::to_string(c.line) + ": ", 0), 0u) << e;
    EXPECT_TRUE(contains(e, c.what));
  }
}

// ---- HDF5 -------------------------------------------------------------------------------

struct Handle {  // closes an HDF5 identifier (tests only)
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

// Writes a dataset of `file_type` with the given dims from `data` (of `mem_type`),
// creating the groups on the way.
template <class T>
void put(hid_t file, const std::string& name, hid_t file_type, hid_t mem_type, const std::vector<T>& data,
         std::vector<hsize_t> dims = {}) {
  if (dims.empty()) dims = {data.size()};
  Handle lcpl{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Pset_create_intermediate_group(lcpl.id, 1);
  Handle space{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose};
  Handle set{H5Dcreate2(file, name.c_str(), file_type, space.id, lcpl.id, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  ASSERT_GE(set.id, 0) << name;
  if (!data.empty()) {
    ASSERT_GE(H5Dwrite(set.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0) << name;
  }
}

template <class T>
void put_attribute(hid_t file, const std::string& object, const char* name, hid_t file_type, hid_t mem_type, T value) {
  Handle obj{H5Oopen(file, object.c_str(), H5P_DEFAULT), H5Oclose};
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  Handle attr{H5Acreate2(obj.id, name, file_type, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  ASSERT_GE(H5Awrite(attr.id, mem_type, &value), 0);
}

// The CSR arrays in the types the file should store.
struct Csr {
  std::vector<std::uint64_t> ptr;
  std::vector<std::int64_t> col;
  std::vector<double> val;
};

Csr csr_of(const HostCsr& h) {
  return Csr{std::vector<std::uint64_t>(h.ptr.begin(), h.ptr.end()), std::vector<std::int64_t>(h.col.begin(), h.col.end()),
             h.val};
}

// The file types of the three datasets; by default those ebla writes. HDF5's type names are
// expressions (H5open(), id): they appear in function bodies only, since nvcc's front end turns
// them into statement expressions, which are not allowed in default member initializers or in
// a range-for's braced list.
struct Types {
  hid_t ptr, col, val;
  Types() {
    ptr = H5T_STD_U64LE;
    col = H5T_STD_I32LE;
    val = H5T_IEEE_F64LE;
  }
  Types(hid_t p, hid_t c, hid_t v) : ptr(p), col(c), val(v) {}
};

class Hdf5Input : public Scratch {
protected:
  // Creates `name` and lets `fill` write into it.
  template <class F>
  std::string h5(const std::string& name, F&& fill) {
    const std::string path = file(name);
    Handle f{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
    EXPECT_GE(f.id, 0);
    fill(f.id);
    return path;
  }
  // Writes the matrix under `group` in the given file types (HDF5 converts from memory).
  static void put_matrix(hid_t f, const Csr& A, Types t = {}, const std::string& group = "/A") {
    put(f, group + "/row_ptr", t.ptr, H5T_NATIVE_UINT64, A.ptr);
    put(f, group + "/col_idx", t.col, H5T_NATIVE_INT64, A.col);
    put(f, group + "/values", t.val, H5T_NATIVE_DOUBLE, A.val);
  }
  std::string matrix_file(const std::string& name, const Csr& A, Types t = {}) {
    return h5(name, [&](hid_t f) { put_matrix(f, A, t); });
  }
};

HostCsr square_example() { return HostCsr{3, 3, {0, 2, 3, 5}, {0, 2, 1, 0, 2}, {4, -1.5, 0.1, -1, 1e-300}}; }

TEST_F(Hdf5Input, ReadsMatrixAndVectors) {
  const HostCsr A = square_example();
  const std::vector<double> b{1, 2, 3}, x0{0.5, -0.25, 1.0 / 3};
  const std::string path = h5("p.h5", [&](hid_t f) {
    put_matrix(f, csr_of(A));
    put(f, "/b", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, b);
    put(f, "/x0", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, x0);
  });
  EXPECT_EQ(to_host(ebla::read_hdf5_matrix(path)), A);
  EXPECT_EQ(to_host(ebla::read_hdf5_vector(path, "b")), b);
  EXPECT_EQ(to_host(ebla::read_hdf5_vector(path, "/x0", true)), x0);
}

TEST_F(Hdf5Input, EveryAcceptedTypeAndByteOrder) {
  const HostCsr A = square_example();
  int k = 0;
  const hid_t ptr_types[] = {H5T_STD_U64LE, H5T_STD_I64LE, H5T_STD_U64BE, H5T_STD_I64BE};
  const hid_t col_types[] = {H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_I32BE, H5T_STD_I64BE};
  const hid_t val_types[] = {H5T_IEEE_F64LE, H5T_IEEE_F64BE};
  for (hid_t p : ptr_types)
    for (hid_t c : col_types)
      for (hid_t v : val_types) {
        SCOPED_TRACE("combination " + std::to_string(k));
        const std::string path = matrix_file("t" + std::to_string(k++) + ".h5", csr_of(A), Types{p, c, v});
        EXPECT_EQ(to_host(ebla::read_hdf5_matrix(path)), A);
      }
}

TEST_F(Hdf5Input, HpccgRoundTripOtherGroupAndNcols) {
  const HostCsr A = to_host(ebla::hpccg_problem(4, 3, 3).A);
  const HostCsr R{2, 5, {0, 1, 3}, {4, 0, 3}, {1, 2, 3}};
  const std::string path = h5("g.h5", [&](hid_t f) {
    put_matrix(f, csr_of(A), {}, "/A");
    put_matrix(f, csr_of(R), {}, "/R");
    put_attribute(f, "/R", "ncols", H5T_STD_I64LE, H5T_NATIVE_INT64, std::int64_t{5});
    put_matrix(f, csr_of(HostCsr{0, 0, {0}, {}, {}}), {}, "/nested/E");
  });
  EXPECT_EQ(to_host(ebla::read_hdf5_matrix(path)), A);
  EXPECT_EQ(to_host(ebla::read_hdf5_matrix(path, "/R")), R);
  EXPECT_EQ(to_host(ebla::read_hdf5_matrix(path, "nested/E")), (HostCsr{0, 0, {0}, {}, {}}));
}

TEST_F(Hdf5Input, OptionalVectorMayBeMissing) {
  const std::string path = matrix_file("m.h5", csr_of(square_example()));
  EXPECT_EQ(ebla::read_hdf5_vector(path, "x0", true).extent(0), 0u);
  EXPECT_EQ(ebla::read_hdf5_vector(path, "/deep/x0", true).extent(0), 0u);
  const std::string e = error_of([&] { ebla::read_hdf5_vector(path, "x0"); });
  EXPECT_TRUE(contains(e, "ebla::read_hdf5_vector: " + path + ": /x0: missing dataset"));
}

TEST_F(Hdf5Input, MissingOrUnreadableFile) {
  const std::string absent = file("absent.h5");
  EXPECT_TRUE(contains(error_of([&] { ebla::read_hdf5_matrix(absent); }),
                       "ebla::read_hdf5_matrix: " + absent + ": no such file"));
  EXPECT_TRUE(contains(error_of([&] { ebla::read_hdf5_vector(absent, "b", true); }), absent + ": no such file"));
  const std::string text = text_file("text.h5", "not HDF5\n");
  EXPECT_TRUE(contains(error_of([&] { ebla::read_hdf5_matrix(text); }), text + ": cannot open as an HDF5 file"));
}

// One defect per file; the message must name the file and the dataset.
struct Defect {
  const char* name;
  std::string dataset;
  std::string what;
};

TEST_F(Hdf5Input, DefectsNameFileAndDataset) {
  const Csr good = csr_of(square_example());
  auto variant = [&](auto change) {
    Csr c = good;
    change(c);
    return c;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    Defect d;
    std::function<void(hid_t)> fill;
  };
  const std::vector<Case> cases = {
      {{"no_group", "/A", "missing group"}, [&](hid_t f) { put_matrix(f, good, {}, "/B"); }},
      {{"no_values", "/A/values", "missing dataset"},
       [&](hid_t f) {
         put(f, "/A/row_ptr", H5T_STD_U64LE, H5T_NATIVE_UINT64, good.ptr);
         put(f, "/A/col_idx", H5T_STD_I32LE, H5T_NATIVE_INT64, good.col);
       }},
      {{"no_row_ptr", "/A/row_ptr", "missing dataset"},
       [&](hid_t f) {
         put(f, "/A/col_idx", H5T_STD_I32LE, H5T_NATIVE_INT64, good.col);
         put(f, "/A/values", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, good.val);
       }},
      {{"values_int", "/A/values", "type int32, expected float64"},
       [&](hid_t f) { put_matrix(f, good, Types{H5T_STD_U64LE, H5T_STD_I32LE, H5T_STD_I32LE}); }},
      {{"values_float32", "/A/values", "type float32, expected float64"},
       [&](hid_t f) { put_matrix(f, good, Types{H5T_STD_U64LE, H5T_STD_I32LE, H5T_IEEE_F32LE}); }},
      {{"row_ptr_float", "/A/row_ptr", "type float64, expected uint64 or int64"},
       [&](hid_t f) { put_matrix(f, good, Types{H5T_IEEE_F64LE, H5T_STD_I32LE, H5T_IEEE_F64LE}); }},
      {{"row_ptr_int32", "/A/row_ptr", "type int32, expected uint64 or int64"},
       [&](hid_t f) { put_matrix(f, good, Types{H5T_STD_I32LE, H5T_STD_I32LE, H5T_IEEE_F64LE}); }},
      {{"col_idx_uint32", "/A/col_idx", "type uint32, expected int32 or int64"},
       [&](hid_t f) { put_matrix(f, good, Types{H5T_STD_U64LE, H5T_STD_U32LE, H5T_IEEE_F64LE}); }},
      {{"values_rank2", "/A/values", "rank 2, expected 1"},
       [&](hid_t f) {
         put(f, "/A/row_ptr", H5T_STD_U64LE, H5T_NATIVE_UINT64, good.ptr);
         put(f, "/A/col_idx", H5T_STD_I32LE, H5T_NATIVE_INT64, std::vector<std::int64_t>{0, 1, 2, 0, 1, 2});
         put(f, "/A/values", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::vector<double>(6, 1.0), {3, 2});
       }},
      {{"values_short", "/A/values", "4 elements but /A/col_idx has 5"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.val.pop_back(); })); }},
      {{"last_offset", "/A/row_ptr", "the last offset is 4 but there are 5 column indices"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.ptr[3] = 4; })); }},
      {{"first_offset", "/A/row_ptr", "element 0 = 1, expected 0"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.ptr[0] = 1; })); }},
      {{"decreasing", "/A/row_ptr", "element 2 = 1 < element 1 = 2: offsets must be nondecreasing"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.ptr[2] = 1; })); }},
      {{"negative_offset", "/A/row_ptr", "element 1 = -2 is negative"},
       [&](hid_t f) {
         put(f, "/A/row_ptr", H5T_STD_I64LE, H5T_NATIVE_INT64, std::vector<std::int64_t>{0, -2, 3, 5});
         put(f, "/A/col_idx", H5T_STD_I32LE, H5T_NATIVE_INT64, good.col);
         put(f, "/A/values", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, good.val);
       }},
      {{"empty_row_ptr", "/A/row_ptr", "empty"},
       [&](hid_t f) { put_matrix(f, Csr{{}, {}, {}}); }},
      {{"column_big", "/A/col_idx", "element 4 = 3 is outside [0, 3)"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.col[4] = 3; })); }},
      {{"column_negative", "/A/col_idx", "element 1 = -1 is outside [0, 3)"},
       [&](hid_t f) { put_matrix(f, variant([](Csr& c) { c.col[1] = -1; })); }},
      {{"column_int64", "/A/col_idx", "element 2 = 1099511627776 is outside [0, 3)"},
       [&](hid_t f) {
         put_matrix(f, variant([](Csr& c) { c.col[2] = std::int64_t{1} << 40; }),
                    Types{H5T_STD_U64LE, H5T_STD_I64LE, H5T_IEEE_F64LE});
       }},
      {{"nan", "/A/values", "element 3 = nan is not finite"},
       [&](hid_t f) { put_matrix(f, variant([&](Csr& c) { c.val[3] = nan; })); }},
      {{"inf", "/A/values", "element 0 = -inf is not finite"},
       [&](hid_t f) {
         put_matrix(f, variant([](Csr& c) { c.val[0] = -std::numeric_limits<double>::infinity(); }));
       }},
      {{"ncols_type", "/A attribute 'ncols'", "type float64, expected int64"},
       [&](hid_t f) {
         put_matrix(f, good);
         put_attribute(f, "/A", "ncols", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3.0);
       }},
      {{"ncols_negative", "/A attribute 'ncols'", "ncols = -1 is outside [0, INT_MAX]"},
       [&](hid_t f) {
         put_matrix(f, good);
         put_attribute(f, "/A", "ncols", H5T_STD_I64LE, H5T_NATIVE_INT64, std::int64_t{-1});
       }},
      {{"ncols_small", "/A/col_idx", "element 1 = 2 is outside [0, 2)"},
       [&](hid_t f) {
         put_matrix(f, good);
         put_attribute(f, "/A", "ncols", H5T_STD_I64LE, H5T_NATIVE_INT64, std::int64_t{2});
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.d.name);
    const std::string path = h5(std::string(c.d.name) + ".h5", c.fill);
    const std::string e = error_of([&] { ebla::read_hdf5_matrix(path); });
    EXPECT_TRUE(contains(e, "ebla::read_hdf5_matrix: " + path + ": " + c.d.dataset + ": " + c.d.what));
  }
}

TEST_F(Hdf5Input, VectorDefectsNameFileAndDataset) {
  const std::string path = h5("v.h5", [&](hid_t f) {
    put(f, "/b_int", H5T_STD_I64LE, H5T_NATIVE_INT64, std::vector<std::int64_t>{1, 2});
    put(f, "/b_rank", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::vector<double>{1, 2, 3, 4}, {2, 2});
    put(f, "/b_nan", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::vector<double>{1, std::nan("")});
    put(f, "/b_inf", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
        std::vector<double>{std::numeric_limits<double>::infinity()});
    Handle g{H5Gcreate2(f, "/group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    // declared, never written: a few KB of file for 32 GiB of vector
    put(f, "/b_huge", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::vector<double>{}, {hsize_t{1} << 32});
  });
  EXPECT_LT(std::filesystem::file_size(path), 100000u);
  auto error = [&](const char* name, bool optional = false) {
    return error_of([&] { ebla::read_hdf5_vector(path, name, optional); });
  };
  const std::string prefix = "ebla::read_hdf5_vector: " + path + ": ";
  EXPECT_TRUE(contains(error("b_int"), prefix + "/b_int: type int64, expected float64"));
  EXPECT_TRUE(contains(error("b_rank"), prefix + "/b_rank: rank 2, expected 1"));
  EXPECT_TRUE(contains(error("b_nan", true), prefix + "/b_nan: element 1 = nan is not finite"));
  EXPECT_TRUE(contains(error("/b_inf"), prefix + "/b_inf: element 0 = inf is not finite"));
  EXPECT_TRUE(contains(error("group"), prefix + "/group: cannot open as a dataset"));
  EXPECT_TRUE(contains(error("b_huge"), prefix + "/b_huge: a vector of 4294967296 rows needs about 32.0 GiB of memory, and "));
}

// A matrix whose declared sizes exceed the memory is refused before anything is allocated.
TEST_F(Hdf5Input, DeclaredSizesBeyondMemory) {
  const std::string path = h5("huge.h5", [&](hid_t f) {
    put(f, "/A/row_ptr", H5T_STD_U64LE, H5T_NATIVE_UINT64, std::vector<std::uint64_t>{}, {hsize_t{1} << 30});
    put(f, "/A/col_idx", H5T_STD_I32LE, H5T_NATIVE_INT64, std::vector<std::int64_t>{}, {hsize_t{1} << 32});
    put(f, "/A/values", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::vector<double>{}, {hsize_t{1} << 32});
  });
  const std::string e = error_of([&] { ebla::read_hdf5_matrix(path); });
  EXPECT_TRUE(contains(e, "ebla::read_hdf5_matrix: " + path + ": /A: a matrix of 1073741823 rows and 4294967296 "
                          "entries needs about 88.0 GiB of memory, and ")) << e;
}

}  // namespace

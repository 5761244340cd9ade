// Fuzz target: the Matrix Market readers. The input is the content of a file, read both as
// a matrix and as a vector. A reader must either return or throw ebla::InvalidArgument; what
// it returns must satisfy the CSR invariants (finite values, sorted columns without
// duplicates) and come back unchanged through the writer and the reader again.
#include "fuzz_common.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/io.hpp>

#include <cstdint>
#include <cstring>

namespace {

using ebla::fuzz::violated;

const ebla::fuzz::ScratchFile* input = nullptr;
const ebla::fuzz::ScratchFile* output = nullptr;

template <class View>
bool same(const View& a, const View& b) {
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  if (ha.extent(0) != hb.extent(0)) return false;
  using T = typename View::non_const_value_type;
  return ha.extent(0) == 0 || std::memcmp(ha.data(), hb.data(), ha.extent(0) * sizeof(T)) == 0;
}

bool same(const ebla::CsrMatrix& a, const ebla::CsrMatrix& b) {
  return a.numRows() == b.numRows() && a.numCols() == b.numCols() && same(a.graph.row_map, b.graph.row_map) &&
         same(a.graph.entries, b.graph.entries) && same(a.values, b.values);
}

void matrix(const std::string& path) {
  ebla::CsrMatrix A;
  try {
    A = ebla::read_matrix_market(path);
  } catch (const ebla::InvalidArgument&) {
    return;
  }
  ebla::fuzz::check_csr(A, true, "read_matrix_market");
  ebla::write_matrix_market(output->path(), A, false);
  if (!same(A, ebla::read_matrix_market(output->path())))
    violated("read_matrix_market: a matrix written as general reads back different");
  if (A.numRows() != A.numCols()) return;
  try {
    ebla::write_matrix_market(output->path(), A, true);
  } catch (const ebla::InvalidArgument&) {
    return;  // not symmetric
  }
  if (!same(A, ebla::read_matrix_market(output->path())))
    violated("read_matrix_market: a matrix written as symmetric reads back different");
}

void vector(const std::string& path) {
  ebla::Vector v;
  try {
    v = ebla::read_matrix_market_vector(path);
  } catch (const ebla::InvalidArgument&) {
    return;
  }
  ebla::fuzz::check_finite(v, "read_matrix_market_vector");
  ebla::write_matrix_market_vector(output->path(), v);
  if (!same(v, ebla::read_matrix_market_vector(output->path())))
    violated("read_matrix_market_vector: a vector written reads back different");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ebla::fuzz::limit_reader_memory();
  ebla::fuzz::start_kokkos();
  // never destroyed before Kokkos is finalised: the files are removed by the exit handler
  static const ebla::fuzz::ScratchFile in("mm", ".mtx"), out("mm-out", ".mtx");
  input = &in;
  output = &out;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input->write(data, size);
  matrix(input->path());
  vector(input->path());
  return 0;
}

// Reading matrices and vectors for the solvers: Matrix Market and HDF5.
//
// Matrix Market (https://math.nist.gov/MatrixMarket/formats.html): `coordinate real
// general` and `coordinate real symmetric` (also `integer`, read as real) for matrices;
// `array real general` with one column, or `coordinate real general` with one column,
// for vectors. Comments (%) and blank lines are skipped; duplicate entries are summed
// (the format's convention); a symmetric file stores one triangle and is expanded.
// Errors throw InvalidArgument with "<file>:<line>: <what>": a missing or malformed
// banner, an unsupported field or symmetry, a bad size line, a non-numeric or
// non-finite value, an index out of range, an entry of the upper triangle in a
// symmetric file, fewer entries than announced (truncated file) or more.
//
// HDF5 layout (one file, any of these at the root; names fixed so that files written
// by other tools can be read):
//   /A/row_ptr  uint64 or int64 [n + 1]   CSR row offsets, row_ptr[0] = 0, nondecreasing
//   /A/col_idx  int32 or int64  [nnz]     column indices, 0-based, in [0, n)
//   /A/values   float64         [nnz]
//   /A attribute "ncols" (int64, optional: defaults to the number of rows)
//   /b, /x0     float64         [n]       right-hand side, start vector (optional)
// Errors throw InvalidArgument naming the file and dataset: missing, wrong rank or
// type, inconsistent sizes, offsets not nondecreasing, an index out of range, NaN/Inf.
//
// Where it runs: the files are read and written on the host; vectors and matrices are returned
// as Views of the default memory space (copied to a device's memory through host mirrors) and
// written from host mirrors.
#pragma once

#include <ebla/solvers/operators.hpp>

#include <string>

namespace ebla {

CsrMatrix read_matrix_market(const std::string& path);
Vector read_matrix_market_vector(const std::string& path);
/// Writes `coordinate real general` (or `symmetric`: the lower triangle only) to a
/// temporary name and renames it onto path.
void write_matrix_market(const std::string& path, const CsrMatrix& A, bool symmetric);
void write_matrix_market_vector(const std::string& path, ConstVector v);

CsrMatrix read_hdf5_matrix(const std::string& path, const std::string& group = "A");
/// Returns an empty view if `optional` and the dataset is missing.
Vector read_hdf5_vector(const std::string& path, const std::string& dataset, bool optional = false);

}  // namespace ebla

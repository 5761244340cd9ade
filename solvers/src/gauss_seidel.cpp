// Symmetric Gauss-Seidel in a multicolour ordering: the greedy colouring, the split of A into
// L, D and L^T in colour order, and z = M^-1 r by two sweeps over the colours
// (preconditioner.hpp).
#include <ebla/solvers/preconditioner.hpp>

#include "preconditioner_host.hpp"

#include <ebla/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ebla {

namespace {

using detail::HostRows;

void check_square(const CsrMatrix& A, const std::string& function) {
  if (A.numRows() != A.numCols())
    throw_invalid(function, "A is " + std::to_string(A.numRows()) + " x " + std::to_string(A.numCols()) + ", not square");
}

// The graph of A made symmetric, without the diagonal: row i's neighbours are the columns of
// row i and the rows whose columns hold i, each once.
std::vector<std::vector<int>> neighbours_of(const HostRows& A, std::size_t n) {
  std::vector<std::vector<int>> adj(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = A.ptr(i); k < A.ptr(i + 1); ++k) {
      const std::size_t j = static_cast<std::size_t>(A.col(k));
      if (j == i) continue;
      adj[i].push_back(static_cast<int>(j));
      adj[j].push_back(static_cast<int>(i));
    }
  for (auto& a : adj) {  // each neighbour once
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  return adj;
}

std::vector<int> colouring(const HostRows& A, std::size_t n) {
  const std::vector<std::vector<int>> adj = neighbours_of(A, n);
  std::vector<int> colour(n, -1);
  std::vector<std::size_t> taken_by;  // taken_by[c] == i + 1: a neighbour of row i has colour c
  for (std::size_t i = 0; i < n; ++i) {
    for (int j : adj[i])                                     // the colours of the rows before i
      if (const int c = colour[static_cast<std::size_t>(j)]; c >= 0) {
        if (static_cast<std::size_t>(c) >= taken_by.size()) taken_by.resize(static_cast<std::size_t>(c) + 1, 0);
        taken_by[static_cast<std::size_t>(c)] = i + 1;
      }
    int c = 0;                                               // the least colour none of them has
    while (static_cast<std::size_t>(c) < taken_by.size() && taken_by[static_cast<std::size_t>(c)] == i + 1) ++c;
    colour[i] = c;
  }
  return colour;
}

}  // namespace

std::vector<int> greedy_colouring(const CsrMatrix& A, const std::string& function) {
  check_square(A, function);
  return colouring(detail::host_rows(A), static_cast<std::size_t>(A.numRows()));
}

SymmetricGaussSeidel::SymmetricGaussSeidel(const CsrMatrix& A, const std::string& function) {
  check_square(A, function);
  const HostRows rows = detail::host_rows(A);
  n_ = static_cast<std::size_t>(A.numRows());
  colour_ = colouring(rows, n_);
  // the order: rows by colour, natural order within a colour (a counting sort)
  int colours = 0;
  for (int c : colour_) colours = std::max(colours, c + 1);
  colour_start_.assign(static_cast<std::size_t>(colours) + 1, 0);
  for (int c : colour_) ++colour_start_[static_cast<std::size_t>(c) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(colours); ++c) colour_start_[c + 1] += colour_start_[c];
  std::vector<int> order(n_);
  std::vector<std::size_t> next(colour_start_.begin(), colour_start_.end() - 1);
  for (std::size_t i = 0; i < n_; ++i) order[next[static_cast<std::size_t>(colour_[i])]++] = static_cast<int>(i);
  // A = L + D + L^T in that order: a_ij is in L where j's colour comes before i's, in L^T
  // where it comes after (never the same colour: such rows are not coupled)
  detail::HostSplit split;
  split.diagonal.assign(n_, 0.0);
  for (std::size_t i = 0; i < n_; ++i) {
    for (std::size_t k = rows.ptr(i); k < rows.ptr(i + 1); ++k) {
      const int j = rows.col(k);
      if (static_cast<std::size_t>(j) == i) {
        split.diagonal[i] += rows.val(k);
      } else if (colour_[static_cast<std::size_t>(j)] < colour_[i]) {
        split.lower_col.push_back(j), split.lower_val.push_back(rows.val(k));
      } else {
        split.upper_col.push_back(j), split.upper_val.push_back(rows.val(k));
      }
    }
    split.end_row();
    if (!(split.diagonal[i] > 0) || !std::isfinite(split.diagonal[i]))
      throw_invalid(function, "symmetric Gauss-Seidel divides by a_ii, and a_" + std::to_string(i) + "," +
                                  std::to_string(i) + " = " + detail::number_text(split.diagonal[i]) +
                                  " is not positive and finite");
  }
  order_ = detail::device_copy(order, "ebla::sgs order");
  split_ = detail::to_device(split, "ebla::sgs");
}

double SymmetricGaussSeidel::bytes() const {
  return split_.bytes() + static_cast<double>(order_.extent(0) * sizeof(int));
}

void SymmetricGaussSeidel::apply(ConstVector r, Vector z) const {
  detail::check_apply_sizes("ebla::SymmetricGaussSeidel::apply", r, z, n_);
  // forward: (D + L) y = r, y into z, colour by colour
  detail::triangular_sweep("ebla::sgs_forward", colour_start_, order_, split_.lower_ptr, split_.lower_col,
                           split_.lower_val, split_.diagonal, r, z);
  const auto order = order_;
  const auto up = split_.upper_ptr;
  const auto uc = split_.upper_col;
  const auto uv = split_.upper_val;
  const auto d = split_.diagonal;
  // backward, colour by colour from the last: (D + L^T) z = D y, i.e. z = y - D^-1 L^T z
  detail::grouped_rows("ebla::sgs_backward", colour_start_, true, uc.extent(0), KOKKOS_LAMBDA(const std::size_t k) {
    const std::size_t i = static_cast<std::size_t>(order(k));
    double s = 0;
    for (std::size_t e = up(i); e < up(i + 1); ++e) s += uv(e) * z(uc(e));  // sum_(j in L^T) a_ij z_j
    z(i) -= s / d(i);                                                       // z_i = y_i - s / a_ii
  });
}

}  // namespace ebla

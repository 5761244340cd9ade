// Incomplete Cholesky with zero fill: the factorisation with its diagonal shifts, the levels
// of the two triangular solves, and z = (L L^T)^-1 r (preconditioner.hpp).
#include <ebla/solvers/preconditioner.hpp>

#include "preconditioner_host.hpp"

#include <ebla/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace ebla {

namespace {

using detail::HostRows;

// A's lower triangle, each row's columns increasing, the diagonal last (0 where A has no
// a_ii; entries given twice summed).
struct Lower {
  std::vector<std::size_t> ptr{0};
  std::vector<int> col;
  std::vector<double> val;
};

Lower lower_triangle(const HostRows& A, std::size_t n) {
  Lower L;
  std::vector<std::pair<int, double>> row;
  for (std::size_t i = 0; i < n; ++i) {
    row.clear();
    for (std::size_t k = A.ptr(i); k < A.ptr(i + 1); ++k)
      if (static_cast<std::size_t>(A.col(k)) <= i) row.emplace_back(A.col(k), A.val(k));
    row.emplace_back(static_cast<int>(i), 0.0);  // the diagonal, present even where A has none
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (!L.col.empty() && L.col.size() > L.ptr.back() && L.col.back() == row[k].first) {
        L.val.back() += row[k].second;  // the same column again
      } else {
        L.col.push_back(row[k].first);
        L.val.push_back(row[k].second);
      }
    }
    L.ptr.push_back(L.col.size());
  }
  return L;
}

// Where a factorisation broke down: the row and its pivot.
struct Breakdown {
  std::size_t row = 0;
  double pivot = 0;
  bool failed = false;
};

// IC(0) of A + alpha diag(A) on A's lower pattern, l over a's pattern (its last entry in each
// row l_ii); the first pivot that is not positive and finite stops it.
Breakdown factorise(const Lower& a, double alpha, std::vector<double>& l) {
  const std::size_t n = a.ptr.size() - 1;
  l = a.val;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = a.ptr[i], diag = a.ptr[i + 1] - 1;
    for (std::size_t p = first; p < diag; ++p) {  // l_ij, j = col(p) < i
      const std::size_t j = static_cast<std::size_t>(a.col[p]);
      double s = a.val[p];
      // s -= l_ik l_jk over the k < j in both rows, in increasing k (a merge of the two rows)
      std::size_t u = first, v = a.ptr[j];
      const std::size_t u_end = p, v_end = a.ptr[j + 1] - 1;
      while (u < u_end && v < v_end) {
        if (a.col[u] < a.col[v]) ++u;
        else if (a.col[v] < a.col[u]) ++v;
        else s -= l[u++] * l[v++];
      }
      l[p] = s / l[a.ptr[j + 1] - 1];               // l_ij = (a_ij - sum_k l_ik l_jk) / l_jj
    }
    double d = a.val[diag] * (1 + alpha);           // a_ii + alpha a_ii
    for (std::size_t p = first; p < diag; ++p) d -= l[p] * l[p];  // - sum_(j<i) l_ij^2
    if (!(d > 0) || !std::isfinite(d)) return {i, d, true};
    l[diag] = std::sqrt(d);                         // l_ii
  }
  return {};
}

// Rows ordered level by level (a counting sort, natural order within a level), and where
// each level begins.
std::pair<std::vector<int>, std::vector<std::size_t>> by_level(const std::vector<std::size_t>& level, std::size_t levels) {
  std::vector<std::size_t> start(levels + 1, 0);
  for (std::size_t v : level) ++start[v + 1];
  for (std::size_t k = 0; k < levels; ++k) start[k + 1] += start[k];
  std::vector<int> order(level.size());
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < level.size(); ++i) order[next[level[i]]++] = static_cast<int>(i);
  return {order, start};
}

}  // namespace

IncompleteCholesky::IncompleteCholesky(const CsrMatrix& A, int max_restarts, const std::string& function) {
  if (A.numRows() != A.numCols())
    throw_invalid(function, "A is " + std::to_string(A.numRows()) + " x " + std::to_string(A.numCols()) + ", not square");
  if (max_restarts < 0) throw_invalid(function, "max_restarts " + std::to_string(max_restarts) + " is negative");
  n_ = static_cast<std::size_t>(A.numRows());
  const Lower a = lower_triangle(detail::host_rows(A), n_);
  std::vector<double> l;
  // A, then A + alpha diag(A) with alpha = ic0_first_shift, 2 alpha, 4 alpha, ...
  for (double alpha = 0;; alpha = alpha == 0 ? ic0_first_shift : 2 * alpha) {
    const Breakdown b = factorise(a, alpha, l);
    if (!b.failed) {
      shift_ = alpha;
      break;
    }
    if (restarts_ == max_restarts)
      throw_invalid(function, "incomplete Cholesky breaks down at row " + std::to_string(b.row) + ": its pivot a_ii - sum_j l_ij^2 is " +
                                  detail::number_text(b.pivot) + " (not positive and finite) on A + alpha diag(A), alpha = " +
                                  detail::short_text(alpha) + ", after " + std::to_string(restarts_) + " shift" +
                                  (restarts_ == 1 ? "" : "s") + " (at most " + std::to_string(max_restarts) + ")");
    ++restarts_;
  }
  // L by rows (strict lower entries, then l_ii apart) and L^T by rows (L's columns)
  detail::HostSplit t;
  t.diagonal.resize(n_);
  t.upper_ptr.assign(n_ + 1, 0);
  for (std::size_t i = 0; i < n_; ++i) {
    for (std::size_t p = a.ptr[i]; p + 1 < a.ptr[i + 1]; ++p) {
      t.lower_col.push_back(a.col[p]);
      t.lower_val.push_back(l[p]);
      ++t.upper_ptr[static_cast<std::size_t>(a.col[p]) + 1];
    }
    t.lower_ptr.push_back(t.lower_col.size());
    t.diagonal[i] = l[a.ptr[i + 1] - 1];
  }
  for (std::size_t i = 0; i < n_; ++i) t.upper_ptr[i + 1] += t.upper_ptr[i];
  t.upper_col.resize(t.lower_col.size());
  t.upper_val.resize(t.lower_col.size());
  std::vector<std::size_t> next(t.upper_ptr.begin(), t.upper_ptr.end() - 1);
  for (std::size_t i = 0; i < n_; ++i)  // row j of L^T gets l_ij for i increasing
    for (std::size_t p = t.lower_ptr[i]; p < t.lower_ptr[i + 1]; ++p) {
      const std::size_t j = static_cast<std::size_t>(t.lower_col[p]);
      t.upper_col[next[j]] = static_cast<int>(i);
      t.upper_val[next[j]++] = t.lower_val[p];
    }
  // levels: L y = r's row i after every row j < i it reads; L^T z = y's row i after every k > i
  std::vector<std::size_t> lower_level(n_, 0), upper_level(n_, 0);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t p = t.lower_ptr[i]; p < t.lower_ptr[i + 1]; ++p)
      lower_level[i] = std::max(lower_level[i], lower_level[static_cast<std::size_t>(t.lower_col[p])] + 1);
  for (std::size_t i = n_; i-- > 0;)
    for (std::size_t p = t.upper_ptr[i]; p < t.upper_ptr[i + 1]; ++p)
      upper_level[i] = std::max(upper_level[i], upper_level[static_cast<std::size_t>(t.upper_col[p])] + 1);
  // the longest chain of dependent rows, the same both ways
  levels_ = n_ == 0 ? 0 : *std::max_element(lower_level.begin(), lower_level.end()) + 1;
  auto [lower_order, lower_start] = by_level(lower_level, levels_);
  auto [upper_order, upper_start] = by_level(upper_level, levels_);
  lower_start_ = std::move(lower_start);
  upper_start_ = std::move(upper_start);
  lower_order_ = detail::device_copy(lower_order, "ebla::ic0 lower_order");
  upper_order_ = detail::device_copy(upper_order, "ebla::ic0 upper_order");
  split_ = detail::to_device(t, "ebla::ic0");
}

double IncompleteCholesky::bytes() const {
  return split_.bytes() + static_cast<double>((lower_order_.extent(0) + upper_order_.extent(0)) * sizeof(int));
}

void IncompleteCholesky::apply(ConstVector r, Vector z) const {
  detail::check_apply_sizes("ebla::IncompleteCholesky::apply", r, z, n_);
  // L y = r, level by level, y into z; then L^T z = y, level by level
  detail::triangular_sweep("ebla::ic0_lower", lower_start_, lower_order_, split_.lower_ptr, split_.lower_col,
                           split_.lower_val, split_.diagonal, r, z);
  detail::triangular_sweep("ebla::ic0_upper", upper_start_, upper_order_, split_.upper_ptr, split_.upper_col,
                           split_.upper_val, split_.diagonal, z, z);
}

}  // namespace ebla

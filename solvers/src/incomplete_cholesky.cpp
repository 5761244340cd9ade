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
  std::vector<std::size_t> lower_ptr{0}, upper_ptr(n_ + 1, 0);
  std::vector<int> lower_col;
  std::vector<double> lower_val, diagonal(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    for (std::size_t p = a.ptr[i]; p + 1 < a.ptr[i + 1]; ++p) {
      lower_col.push_back(a.col[p]);
      lower_val.push_back(l[p]);
      ++upper_ptr[static_cast<std::size_t>(a.col[p]) + 1];
    }
    lower_ptr.push_back(lower_col.size());
    diagonal[i] = l[a.ptr[i + 1] - 1];
  }
  for (std::size_t i = 0; i < n_; ++i) upper_ptr[i + 1] += upper_ptr[i];
  std::vector<int> upper_col(lower_col.size());
  std::vector<double> upper_val(lower_col.size());
  std::vector<std::size_t> next(upper_ptr.begin(), upper_ptr.end() - 1);
  for (std::size_t i = 0; i < n_; ++i)  // row j of L^T gets l_ij for i increasing
    for (std::size_t p = lower_ptr[i]; p < lower_ptr[i + 1]; ++p) {
      const std::size_t j = static_cast<std::size_t>(lower_col[p]);
      upper_col[next[j]] = static_cast<int>(i);
      upper_val[next[j]++] = lower_val[p];
    }
  // levels: L y = r's row i after every row j < i it reads; L^T z = y's row i after every k > i
  std::vector<std::size_t> lower_level(n_, 0), upper_level(n_, 0);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t p = lower_ptr[i]; p < lower_ptr[i + 1]; ++p)
      lower_level[i] = std::max(lower_level[i], lower_level[static_cast<std::size_t>(lower_col[p])] + 1);
  for (std::size_t i = n_; i-- > 0;)
    for (std::size_t p = upper_ptr[i]; p < upper_ptr[i + 1]; ++p)
      upper_level[i] = std::max(upper_level[i], upper_level[static_cast<std::size_t>(upper_col[p])] + 1);
  // the longest chain of dependent rows, the same both ways
  levels_ = n_ == 0 ? 0 : *std::max_element(lower_level.begin(), lower_level.end()) + 1;
  auto [lower_order, lower_start] = by_level(lower_level, levels_);
  auto [upper_order, upper_start] = by_level(upper_level, levels_);
  lower_start_ = std::move(lower_start);
  upper_start_ = std::move(upper_start);
  lower_order_ = detail::device_copy(lower_order, "ebla::ic0 lower_order");
  upper_order_ = detail::device_copy(upper_order, "ebla::ic0 upper_order");
  lower_ptr_ = detail::device_copy(lower_ptr, "ebla::ic0 lower_ptr");
  upper_ptr_ = detail::device_copy(upper_ptr, "ebla::ic0 upper_ptr");
  lower_col_ = detail::device_copy(lower_col, "ebla::ic0 lower_col");
  upper_col_ = detail::device_copy(upper_col, "ebla::ic0 upper_col");
  lower_val_ = detail::device_copy(lower_val, "ebla::ic0 lower_val");
  upper_val_ = detail::device_copy(upper_val, "ebla::ic0 upper_val");
  diagonal_ = detail::device_copy(diagonal, "ebla::ic0 diagonal");
}

double IncompleteCholesky::bytes() const {
  const std::size_t entries = lower_col_.extent(0) + upper_col_.extent(0);
  return static_cast<double>(entries * (sizeof(double) + sizeof(int)) +
                             (lower_ptr_.extent(0) + upper_ptr_.extent(0)) * sizeof(std::size_t) +
                             n_ * (sizeof(double) + 2 * sizeof(int)));
}

void IncompleteCholesky::apply(ConstVector r, Vector z) const {
  if (r.extent(0) != n_ || z.extent(0) != n_)
    throw_invalid("ebla::IncompleteCholesky::apply", "r has " + std::to_string(r.extent(0)) + " entries, z " +
                                                         std::to_string(z.extent(0)) + ", the preconditioner " +
                                                         std::to_string(n_) + " rows");
  using Range = Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>;
  const auto lo = lower_order_, uo = upper_order_;
  const auto lp = lower_ptr_, up = upper_ptr_;
  const auto lc = lower_col_, uc = upper_col_;
  const auto lv = lower_val_, uv = upper_val_;
  const auto d = diagonal_;
  for (std::size_t v = 0; v < levels_; ++v)  // L y = r, level by level, y into z
    Kokkos::parallel_for(
        "ebla::ic0_lower", Range(lower_start_[v], lower_start_[v + 1]), KOKKOS_LAMBDA(const std::size_t k) {
          const std::size_t i = static_cast<std::size_t>(lo(k));
          double s = r(i);
          for (std::size_t e = lp(i); e < lp(i + 1); ++e) s -= lv(e) * z(lc(e));  // r_i - sum_(j<i) l_ij y_j
          z(i) = s / d(i);                                                        // y_i
        });
  for (std::size_t v = 0; v < levels_; ++v)  // L^T z = y, level by level
    Kokkos::parallel_for(
        "ebla::ic0_upper", Range(upper_start_[v], upper_start_[v + 1]), KOKKOS_LAMBDA(const std::size_t k) {
          const std::size_t i = static_cast<std::size_t>(uo(k));
          double s = z(i);
          for (std::size_t e = up(i); e < up(i + 1); ++e) s -= uv(e) * z(uc(e));  // y_i - sum_(k>i) l_ki z_k
          z(i) = s / d(i);                                                        // z_i
        });
}

}  // namespace ebla

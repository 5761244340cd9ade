// Block-Jacobi: blocks by supervariable agglomeration, Cholesky factors, and z = M^-1 r
// (preconditioner.hpp).
#include <ebla/solvers/preconditioner.hpp>

#include "preconditioner_host.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ebla {

namespace {

constexpr PcKind pc_kinds[] = {PcKind::none, PcKind::jacobi, PcKind::block_jacobi, PcKind::sgs, PcKind::ic0};

using detail::host_rows;
using detail::HostRows;
using detail::number_text;

// Whether rows i - 1 and i have the same column indices, in the same order.
bool same_pattern(const HostRows& A, std::size_t i) {
  const std::size_t a = A.ptr(i - 1), b = A.ptr(i), e = A.ptr(i + 1);
  if (e - b != b - a) return false;
  for (std::size_t k = 0; k < e - b; ++k)
    if (A.col(a + k) != A.col(b + k)) return false;
  return true;
}

// The supervariables: runs of consecutive rows of one pattern, at most `most` rows each.
std::vector<std::size_t> supervariables(const HostRows& A, std::size_t n, std::size_t most) {
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 1; i < n; ++i)
    if (i - starts.back() >= most || !same_pattern(A, i)) starts.push_back(i);
  starts.push_back(n);
  return starts;
}

// Consecutive supervariables merged while the block has at most `most` rows.
std::vector<std::size_t> agglomerate(const std::vector<std::size_t>& super, std::size_t most) {
  std::vector<std::size_t> starts{0};
  for (std::size_t s = 1; s + 1 < super.size(); ++s)
    if (super[s + 1] - starts.back() > most) starts.push_back(super[s]);  // the next one does not fit
  starts.push_back(super.back());
  return starts;
}

std::vector<std::size_t> checked_blocks(const HostRows& A, const CsrMatrix& M, int max_block_size,
                                        const std::string& function) {
  if (M.numRows() != M.numCols())
    throw_invalid(function, "A is " + std::to_string(M.numRows()) + " x " + std::to_string(M.numCols()) + ", not square");
  if (max_block_size < 1)
    throw_invalid(function, "block size " + std::to_string(max_block_size) + " must be at least 1");
  const std::size_t n = static_cast<std::size_t>(M.numRows()), most = static_cast<std::size_t>(max_block_size);
  if (n == 0) return {0};
  return agglomerate(supervariables(A, n, most), most);
}

// L of the block of rows [first, first + m), its lower triangle row by row into l
// (Cholesky-Banachiewicz, row by row: l_ij = (a_ij - sum_(k<j) l_ik l_jk) / l_jj,
// l_ii = sqrt(a_ii - sum_(k<i) l_ik^2)); the lower triangle of A_bb is read, its upper one
// is taken to be its transpose. A block of one row keeps 1 / a_ii instead, so that apply
// computes Jacobi's (1 / a_ii) r_i, bit for bit. Throws at a pivot that is not positive and
// finite (or, in a block of one row, whose inverse overflows).
void factor_block(const HostRows& A, std::size_t first, std::size_t m, double* l, const std::string& function) {
  auto at = [l](std::size_t i, std::size_t j) -> double& { return l[i * (i + 1) / 2 + j]; };
  for (std::size_t i = 0; i < m; ++i) {  // row i of A_bb, below and on the diagonal
    for (std::size_t j = 0; j <= i; ++j) at(i, j) = 0;
    for (std::size_t k = A.ptr(first + i); k < A.ptr(first + i + 1); ++k) {
      const long j = static_cast<long>(A.col(k)) - static_cast<long>(first);
      if (j >= 0 && static_cast<std::size_t>(j) <= i) at(i, static_cast<std::size_t>(j)) += A.val(k);
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      double s = at(i, j);
      for (std::size_t k = 0; k < j; ++k) s -= at(i, k) * at(j, k);  // a_ij - sum_(k<j) l_ik l_jk
      if (j < i) {
        at(i, j) = s / at(j, j);                                     // l_ij
      } else if (s > 0 && std::isfinite(s) && (m > 1 || std::isfinite(1 / s))) {
        at(i, i) = m > 1 ? std::sqrt(s) : 1 / s;                     // l_ii, or Jacobi's 1 / a_ii
      } else {
        throw_invalid(function, "the diagonal block of rows " + std::to_string(first) + ".." +
                                    std::to_string(first + m - 1) + " is not positive definite: Cholesky pivot " +
                                    std::to_string(i) + " (row " + std::to_string(first + i) + ") is " +
                                    number_text(s));
      }
    }
  }
}

}  // namespace

const char* to_string(PcKind k) {
  switch (k) {
    case PcKind::none: return "none";
    case PcKind::jacobi: return "jacobi";
    case PcKind::block_jacobi: return "block-jacobi";
    case PcKind::sgs: return "sgs";
    case PcKind::ic0: return "ic0";
  }
  return "?";
}

const char* pc_title(PcKind k) {
  switch (k) {
    case PcKind::none: return "no preconditioner";
    case PcKind::jacobi: return "Jacobi";
    case PcKind::block_jacobi: return "block-Jacobi";
    case PcKind::sgs: return "SGS";
    case PcKind::ic0: return "IC(0)";
  }
  return "?";
}

bool from_matrix(PcKind k) { return k == PcKind::block_jacobi || k == PcKind::sgs || k == PcKind::ic0; }

PcKind pc_kind_by_name(const std::string& name, const std::string& function) {
  std::string known, nearest;
  std::size_t best = 3;  // suggest only a name within two edits
  for (PcKind k : pc_kinds) {
    if (name == to_string(k)) return k;
    known += (known.empty() ? "" : ", ") + std::string(to_string(k));
    if (const std::size_t d = edit_distance(name, to_string(k)); d < best) best = d, nearest = to_string(k);
  }
  throw_invalid(function, "unknown preconditioner '" + name + "'" +
                              (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") + "; known: " + known);
}

std::vector<std::size_t> supervariable_blocks(const CsrMatrix& A, int max_block_size, const std::string& function) {
  return checked_blocks(host_rows(A), A, max_block_size, function);
}

BlockJacobi::BlockJacobi(const CsrMatrix& A, int max_block_size, const std::string& function) {
  const HostRows rows = host_rows(A);
  starts_ = checked_blocks(rows, A, max_block_size, function);
  n_ = starts_.back();
  blocks_ = starts_.size() - 1;
  std::vector<std::size_t> offset(blocks_ + 1, 0);
  for (std::size_t b = 0; b < blocks_; ++b) {
    const std::size_t m = starts_[b + 1] - starts_[b];
    largest_ = std::max(largest_, m);
    offset[b + 1] = offset[b] + m * (m + 1) / 2;  // the block's lower triangle
  }
  first_ = Kokkos::View<std::size_t*>("ebla::block_jacobi first", blocks_ + 1);
  offset_ = Kokkos::View<std::size_t*>("ebla::block_jacobi offset", blocks_ + 1);
  factor_ = Kokkos::View<double*>("ebla::block_jacobi factor", offset.back());
  auto factor = Kokkos::create_mirror_view(Kokkos::HostSpace(), factor_);
  for (std::size_t b = 0; b < blocks_; ++b)
    factor_block(rows, starts_[b], starts_[b + 1] - starts_[b], factor.data() + offset[b], function);
  Kokkos::deep_copy(factor_, factor);
  Kokkos::deep_copy(first_, Kokkos::View<const std::size_t*, Kokkos::HostSpace>(starts_.data(), blocks_ + 1));
  Kokkos::deep_copy(offset_, Kokkos::View<const std::size_t*, Kokkos::HostSpace>(offset.data(), blocks_ + 1));
}

double BlockJacobi::bytes() const {
  return static_cast<double>(factor_.extent(0) * sizeof(double) + (first_.extent(0) + offset_.extent(0)) * sizeof(std::size_t));
}

void BlockJacobi::apply(ConstVector r, Vector z) const {
  detail::check_apply_sizes("ebla::BlockJacobi::apply", r, z, n_);
  const auto first = first_;
  const auto offset = offset_;
  const auto factor = factor_;
  Kokkos::parallel_for(
      "ebla::block_jacobi", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, blocks_),
      KOKKOS_LAMBDA(const std::size_t b) {
        const std::size_t f = first(b), m = first(b + 1) - f;
        const double* l = factor.data() + offset(b);  // l_ij at l[i (i + 1) / 2 + j]
        if (m == 1) {                                  // Jacobi: z_i = (1 / a_ii) r_i
          z(f) = l[0] * r(f);
          return;
        }
        for (std::size_t i = 0; i < m; ++i) {          // L y = r_b, y into z_b
          double s = r(f + i);
          for (std::size_t k = 0; k < i; ++k) s -= l[i * (i + 1) / 2 + k] * z(f + k);
          z(f + i) = s / l[i * (i + 1) / 2 + i];
        }
        for (std::size_t i = m; i-- > 0;) {            // L^T z_b = y
          double s = z(f + i);
          for (std::size_t k = i + 1; k < m; ++k) s -= l[k * (k + 1) / 2 + i] * z(f + k);
          z(f + i) = s / l[i * (i + 1) / 2 + i];
        }
      });
}

}  // namespace ebla

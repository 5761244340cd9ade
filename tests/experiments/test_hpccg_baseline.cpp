// The HPCCG baseline of the CG benchmark called directly: its matrix is ebla's HPCCG matrix
// row for row, and its CG solves A x = A 1.
#include <ebla/experiments/hpccg_baseline.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using namespace ebla::experiments::hpccg;

TEST(HpccgBaseline, MatrixIsTheHpccgMatrixOfTheSolvers) {
  const int nx = 4, ny = 5, nz = 3;
  const HpcMatrix A = hpc_matrix(nx, ny, nz);
  const ebla::HpccgProblem p = ebla::hpccg_problem(nx, ny, nz);
  const auto rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.A.graph.row_map);
  const auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.A.graph.entries);
  const auto vals = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.A.values);
  ASSERT_EQ(A.nrow, nx * ny * nz);
  ASSERT_EQ(static_cast<std::size_t>(A.nrow), p.A.numRows());
  for (int i = 0; i < A.nrow; ++i) {
    ASSERT_EQ(static_cast<std::size_t>(A.nnz_in_row[i]), rows(i + 1) - rows(i)) << "row " << i;
    for (int j = 0; j < A.nnz_in_row[i]; ++j) {  // both visit the neighbours in column order
      EXPECT_EQ(A.inds_in_row[i][j], cols(rows(i) + j)) << "row " << i;
      EXPECT_EQ(A.vals_in_row[i][j], vals(rows(i) + j)) << "row " << i;
    }
  }
}

TEST(HpccgBaseline, CgSolvesForTheVectorOfOnes) {
  const int nx = 8, ny = 8, nz = 8, n = nx * ny * nz;
  const HpcMatrix A = hpc_matrix(nx, ny, nz);
  const std::vector<double> ones(n, 1.0);
  std::vector<double> b(n), x(n, 0.0);
  hpc_sparsemv(A, ones.data(), b.data());  // b = A 1
  HpcVectors v;
  const int iterations = hpc_cg(A, b.data(), x.data(), 200, 1e-10, v);
  EXPECT_GT(iterations, 3);
  EXPECT_LT(iterations, 200);  // stopped by its tolerance
  double worst = 0;
  for (const double xi : x) worst = std::max(worst, std::fabs(xi - 1));
  EXPECT_LT(worst, 1e-9);
  // r is b - A x up to rounding, and hpc_cg's stopping test is on the ||r|| before the last
  // step: the final ||r|| is below the tolerance
  EXPECT_LT(std::sqrt(hpc_ddot(n, v.r.get(), v.r.get())), 1e-10);
  // waxpby's three forms agree with the plain formula
  std::vector<double> w(n);
  hpc_waxpby(n, 2.0, b.data(), 1.0, ones.data(), w.data());
  EXPECT_EQ(w[5], 2 * b[5] + 1);
  hpc_waxpby(n, 1.0, b.data(), -3.0, ones.data(), w.data());
  EXPECT_EQ(w[7], b[7] - 3);
  hpc_waxpby(n, 0.5, b.data(), 0.25, ones.data(), w.data());
  EXPECT_EQ(w[9], 0.5 * b[9] + 0.25);
}

}  // namespace

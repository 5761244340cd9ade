// Preconditioners: block-Jacobi's blocks on matrices of known structure, its z = M^-1 r
// against a __float128 reference, its errors, and CG with none, Jacobi and block-Jacobi on
// SuiteSparse matrices.
#include "../quad_vector.hpp"
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/preconditioner.hpp>
#include <ebla/solvers/problems.hpp>

#include <gtest/gtest.h>

#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace {

using namespace ebla;
using namespace ebla::test;
using ebla_test::QuadMatrix;  // binary128 host references (the sources must compile where nvcc compiles them)
using ebla_test::QuadVector;

// A finite element-like matrix of `nodes` nodes with 3 unknowns each: node i is coupled to
// i +- 1 and i +- 7 by random 3 x 3 blocks (B_ji = B_ij^T), and its diagonal block is a
// random symmetric one plus a shift that makes every row diagonally dominant (so A is SPD).
// The 3 rows of a node have one pattern; nodes next to each other have different ones.
HostCsr node_matrix(int nodes, std::uint64_t seed) {
  const int n = 3 * nodes;
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int i = 0; i < nodes; ++i)
    for (int j : {i, i + 1, i + 7}) {
      if (j >= nodes) continue;
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) {
          if (j == i && q < p) continue;  // the diagonal block: its upper triangle, mirrored
          const double v = u(rng);
          a[3 * i + p][3 * j + q] = v;
          a[3 * j + q][3 * i + p] = v;
        }
    }
  for (int r = 0; r < n; ++r) {
    double off = 0;
    for (int c = 0; c < n; ++c) off += c == r ? 0.0 : std::abs(a[r][c]);
    a[r][r] = off + 1.0 + std::abs(a[r][r]);
  }
  HostCsr h{n, n, {0}, {}, {}};
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c)
      if (a[r][c] != 0 || r / 3 == c / 3) h.col.push_back(c), h.val.push_back(a[r][c]);
    h.ptr.push_back(h.col.size());
  }
  return h;
}

std::vector<std::size_t> sizes_of(const std::vector<std::size_t>& starts) {
  std::vector<std::size_t> s;
  for (std::size_t b = 0; b + 1 < starts.size(); ++b) s.push_back(starts[b + 1] - starts[b]);
  return s;
}

// Nodes of 3 rows are supervariables of 3; merged up to the largest block, every block holds
// whole nodes: 10 nodes under 32 rows, 2 under 8, and a node cut in 2 + 1 under 2.
TEST(BlockJacobi, NodeBlocksOfThreeGiveBlocksOfWholeNodes) {
  const CsrMatrix A = make_csr(node_matrix(35, 1));
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 32)), (std::vector<std::size_t>{30, 30, 30, 15}));
  std::vector<std::size_t> pairs(17, 6);  // 2 nodes a block, the last node alone
  pairs.push_back(3);
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 8)), pairs);
  for (int most : {1, 2, 3, 4, 7, 31, 32, 33}) {
    const std::vector<std::size_t> starts = supervariable_blocks(A, most);
    ASSERT_EQ(starts.front(), 0u);
    ASSERT_EQ(starts.back(), 105u);
    for (std::size_t m : sizes_of(starts)) {
      EXPECT_LE(m, static_cast<std::size_t>(most));
      if (most >= 3) {
        EXPECT_EQ(m % 3, 0u) << "block of " << m << " rows under " << most;
      }
    }
  }
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 2)).size(), 70u);  // 2 + 1 per node
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 1)), std::vector<std::size_t>(105, 1));
}

// Rows of a tridiagonal matrix all differ in pattern: blocks of the largest size and the rest.
TEST(BlockJacobi, RowsOfDistinctPatternsMakeBlocksOfTheLargestSize) {
  std::vector<std::vector<double>> a(100, std::vector<double>(100, 0.0));
  for (int i = 0; i < 100; ++i) {
    a[i][i] = 2;
    if (i > 0) a[i][i - 1] = a[i - 1][i] = -1;
  }
  const CsrMatrix A = csr_from_dense(a);
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 32)), (std::vector<std::size_t>{32, 32, 32, 4}));
  EXPECT_EQ(sizes_of(supervariable_blocks(A, 100)), (std::vector<std::size_t>{100}));
  const BlockJacobi M(A, 32);
  EXPECT_EQ(M.blocks(), 4u);
  EXPECT_EQ(M.largest_block(), 32u);
  EXPECT_EQ(M.bytes(), 8.0 * (3 * 32 * 33 / 2 + 4 * 5 / 2) + 2 * 8.0 * 5);
}

// z = M^-1 r against the exact solution of each block's system, computed in __float128
// (Cholesky and the two solves): by Higham's Theorem 10.4 the computed z_b solves
// (A_bb + E) z_b = r_b with |E| <= gamma_(3m+1) |L| |L^T|, so to first order
// |z_b - z*_b| <= gamma_(3m+1) |A_bb^-1| |L| |L^T| |z_b|, which the test asks for with a
// factor 2 for the second-order terms.
TEST(BlockJacobi, ApplyMatchesAQuadPrecisionReferenceWithinTheCholeskyBound) {
  const HostCsr h = node_matrix(40, 7);
  const CsrMatrix A = make_csr(h);
  const std::size_t n = 120;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> r(n);
  for (double& v : r) v = u(rng);
  for (int most : {1, 5, 12, 32}) {
    const BlockJacobi M(A, most);
    Vector z("z", n);
    M.apply(vec(r), z);
    const std::vector<double> zh = host(z);
    const std::vector<std::size_t>& s = M.starts();
    for (std::size_t b = 0; b + 1 < s.size(); ++b) {
      const std::size_t f = s[b], m = s[b + 1] - f;
      QuadMatrix a(m, m), l = a, inv = a;
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t k = h.ptr[f + i]; k < h.ptr[f + i + 1]; ++k)
          if (h.col[k] >= static_cast<int>(f) && h.col[k] < static_cast<int>(f + m)) a[i][h.col[k] - f] = h.val[k];
      for (std::size_t i = 0; i < m; ++i)  // L L^T = A_bb in __float128
        for (std::size_t j = 0; j <= i; ++j) {
          __float128 t = a[i][j];
          for (std::size_t k = 0; k < j; ++k) t -= l[i][k] * l[j][k];
          l[i][j] = i == j ? sqrtq(t) : t / l[j][j];
        }
      auto solve = [&](QuadVector x) {  // A_bb^-1 x in __float128
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t k = 0; k < i; ++k) x[i] -= l[i][k] * x[k];
          x[i] /= l[i][i];
        }
        for (std::size_t i = m; i-- > 0;) {
          for (std::size_t k = i + 1; k < m; ++k) x[i] -= l[k][i] * x[k];
          x[i] /= l[i][i];
        }
        return x;
      };
      QuadVector rb(m), zb(m), e(m);
      for (std::size_t i = 0; i < m; ++i) rb[i] = r[f + i], zb[i] = std::abs(zh[f + i]);
      const QuadVector exact = solve(rb);
      for (std::size_t j = 0; j < m; ++j) {  // column j of A_bb^-1
        e = QuadVector(m);
        e[j] = 1;
        const QuadVector c = solve(e);
        for (std::size_t i = 0; i < m; ++i) inv[i][j] = fabsq(c[i]);
      }
      QuadVector t(m), w(m), bound(m);  // |L| |L^T| |z|, then |A^-1| times it
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t k = i; k < m; ++k) t[i] += fabsq(l[k][i]) * zb[k];
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t k = 0; k <= i; ++k) w[i] += fabsq(l[i][k]) * t[k];
      const double u53 = 0x1p-53, gamma = (3.0 * m + 1) * u53 / (1 - (3.0 * m + 1) * u53);
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t k = 0; k < m; ++k) bound[i] += inv[i][k] * w[k];
        const double err = static_cast<double>(fabsq(static_cast<__float128>(zh[f + i]) - exact[i]));
        EXPECT_LE(err, 2 * gamma * static_cast<double>(bound[i]))
            << "row " << f + i << " of the block of " << m << " rows from " << f << " (largest " << most << ")";
      }
    }
  }
}

// The solve is in place where r and z are one vector.
TEST(BlockJacobi, AppliesInPlace) {
  const CsrMatrix A = make_csr(node_matrix(20, 5));
  const BlockJacobi M(A, 12);
  std::vector<double> r(60);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::sin(1.0 + static_cast<double>(i));
  Vector z("z", 60);
  M.apply(vec(r), z);
  const Vector w = vec(r);
  M.apply(w, w);
  EXPECT_EQ(host(z), host(w));
}

// A block that is not positive definite: its rows and the pivot that failed, also from cg.
TEST(BlockJacobi, NamesTheBlockThatIsNotPositiveDefinite) {
  // rows 3..5 hold [[1, 2, 0], [2, 1, 0], [0, 0, 1]]: pivot 1 is 1 - 4 = -3
  std::vector<std::vector<double>> a(9, std::vector<double>(9, 0.0));
  for (int i = 0; i < 9; ++i) a[i][i] = 1;
  a[3][4] = a[4][3] = 2;
  const CsrMatrix A = csr_from_dense(a);
  const std::string e = error_of([&] { BlockJacobi(A, 3); });
  EXPECT_TRUE(contains(e, "ebla::BlockJacobi")) << e;
  EXPECT_TRUE(contains(e, "the diagonal block of rows 3..5 is not positive definite")) << e;
  EXPECT_TRUE(contains(e, "Cholesky pivot 1 (row 4) is -3")) << e;
  CgOptions o;
  o.pc = PcKind::block_jacobi;
  o.pc_block_size = 3;
  Vector b("b", 9), x0("x0", 9);
  Kokkos::deep_copy(b, 1.0);
  const std::string c = error_of([&] { cg(CsrOperator(A), b, x0, DotPolicy::exact(), o); });
  EXPECT_TRUE(contains(c, "ebla::cg: block-Jacobi: the diagonal block of rows 3..5")) << c;
}

TEST(BlockJacobi, RefusesBadArguments) {
  const CsrMatrix A = make_csr(node_matrix(4, 1));
  EXPECT_TRUE(contains(error_of([&] { BlockJacobi(A, 0); }), "block size 0 must be at least 1"));
  EXPECT_TRUE(contains(error_of([&] { supervariable_blocks(csr_from_dense({{1, 0}}, 2), 4); }), "not square"));
  const BlockJacobi M(A, 6);
  Vector r("r", 11), z("z", 12);
  EXPECT_TRUE(contains(error_of([&] { M.apply(r, z); }), "r has 11 entries, z 12, the preconditioner 12 rows"));
}

TEST(PcKind, NamesRoundTripAndTyposAreNamed) {
  for (PcKind k : {PcKind::none, PcKind::jacobi, PcKind::block_jacobi, PcKind::sgs, PcKind::ic0})
    EXPECT_EQ(pc_kind_by_name(to_string(k), "f"), k);
  const std::string e = error_of([] { pc_kind_by_name("blok-jacobi", "ebla cg --pc"); });
  EXPECT_EQ(e, "ebla cg --pc: unknown preconditioner 'blok-jacobi' (did you mean 'block-jacobi'?); known: none, "
               "jacobi, block-jacobi, sgs, ic0");
  EXPECT_EQ(error_of([] { pc_kind_by_name("ilu", "f"); }),
            "f: unknown preconditioner 'ilu' (did you mean 'ic0'?); known: none, jacobi, block-jacobi, sgs, ic0");
  EXPECT_EQ(error_of([] { pc_kind_by_name("amg", "f"); }),
            "f: unknown preconditioner 'amg'; known: none, jacobi, block-jacobi, sgs, ic0");
}

// CG on A with b = A 1, x0 = 0, relative tolerance 1e-8.
CgResult solve(const CsrOperator& A, PcKind pc, int block_size = default_pc_block_size) {
  const std::size_t n = A.size();
  Vector b("b", n), x0("x0", n);
  A.apply(vec(std::vector<double>(n, 1.0)), b);
  CgOptions o;
  o.norm = Norm::relative;
  o.pc = pc;
  o.pc_block_size = block_size;
  return cg(A, b, x0, DotPolicy::exact(), o);
}

// With blocks of one row, block-Jacobi is Jacobi: z_i = (1 / a_ii) r_i in both, so the same
// iterations and the same x, bit for bit.
TEST(CgBlockJacobi, BlocksOfOneRowTakeJacobisIterations) {
  const DiffusionProblem d = diffusion_problem(12, 12, 12, 3);
  for (const CsrMatrix& m : {d.A, read_matrix_market(EBLA_DATA_DIR "/matrices/bcsstk13.mtx")}) {
    const CsrOperator A(m);
    const CgResult jacobi = solve(A, PcKind::jacobi), blocks = solve(A, PcKind::block_jacobi, 1);
    ASSERT_EQ(jacobi.status, SolverStatus::converged);
    ASSERT_EQ(blocks.status, SolverStatus::converged);
    EXPECT_EQ(blocks.iterations, jacobi.iterations);
    EXPECT_EQ(blocks.pc_blocks, A.size());
    EXPECT_EQ(jacobi.pc_blocks, A.size());
    EXPECT_EQ(host(blocks.x), host(jacobi.x));
  }
}

// SuiteSparse matrices: block-Jacobi converges, certified (the true residual within tau),
// in fewer iterations than Jacobi; the counts are printed (docs/solvers.md quotes them).
TEST(CgBlockJacobi, ConvergesOnSuiteSparseMatricesInFewerIterationsThanJacobi) {
  for (const char* name : {"bcsstk13", "1138_bus"}) {
    const CsrOperator A(read_matrix_market(std::string(EBLA_DATA_DIR "/matrices/") + name + ".mtx"));
    const CgResult none = solve(A, PcKind::none), jacobi = solve(A, PcKind::jacobi),
                   blocks = solve(A, PcKind::block_jacobi);
    std::printf("%s: none %d (%s), jacobi %d, block-jacobi %d (%zu blocks, %.0f bytes)\n", name, none.iterations,
                to_string(none.status), jacobi.iterations, blocks.iterations, blocks.pc_blocks, blocks.pc_bytes);
    EXPECT_EQ(blocks.status, SolverStatus::converged) << name;
    EXPECT_LE(blocks.true_residual, blocks.tolerance_used) << name;
    EXPECT_LT(blocks.iterations, jacobi.iterations) << name;
    EXPECT_EQ(blocks.pc, "block-jacobi");
    EXPECT_EQ(jacobi.pc, "jacobi");
    EXPECT_EQ(none.pc, "none");
    EXPECT_GT(blocks.pc_bytes, 0);
  }
}

// The stencil's block-Jacobi is that of its matrix, built once: the iterations of the CSR
// operator.
TEST(CgBlockJacobi, TheStencilBuildsItsMatrix) {
  const HpccgProblem p = hpccg_problem(8, 8, 8);
  CgOptions o;
  o.pc = PcKind::block_jacobi;
  const CgResult csr = cg(CsrOperator(p.A), p.b, p.x0, DotPolicy::exact(), o);
  const CgResult stencil = cg(StencilOperator(8, 8, 8), p.b, p.x0, DotPolicy::exact(), o);
  EXPECT_EQ(stencil.status, SolverStatus::converged);
  EXPECT_EQ(stencil.iterations, csr.iterations);
  EXPECT_EQ(stencil.pc_blocks, 16u);
}

TEST(CgBlockJacobi, RefusesWhatItCannotDo) {
  const HpccgProblem p = hpccg_problem(4, 4, 4);
  const CsrOperator A(p.A);
  auto error = [&](const CgOptions& o) { return error_of([&] { cg(A, p.b, p.x0, DotPolicy::exact(), o); }); };
  CgOptions o;
  o.pc = PcKind::block_jacobi;
  o.jacobi = true;
  EXPECT_TRUE(contains(error(o), "Jacobi and block-Jacobi: give one preconditioner"));
  o.jacobi = false;
  o.preconditioner = [](ConstVector r, Vector z) { Kokkos::deep_copy(z, r); };
  EXPECT_TRUE(contains(error(o), "block-Jacobi and a preconditioner function"));
  o.preconditioner = nullptr;
  o.pc_block_size = 0;
  EXPECT_TRUE(contains(error(o), "block-Jacobi block size 0 must be at least 1"));
  o.pc_block_size = 4;
  o.stop = StopTest::certified;
  EXPECT_TRUE(contains(error(o), "use exact_norm with block-Jacobi"));
  o.stop = StopTest::exact_norm;
  o.storage = StoragePolicy::of(Storage::binary32);
  EXPECT_TRUE(contains(error(o), "block-Jacobi needs binary64 storage"));
  o.storage = StoragePolicy();
  const std::string dense = error_of([&] {
    cg(DenseOperator(dense_view(stencil_dense(4, 4, 4))), p.b, p.x0, DotPolicy::exact(), o);
  });
  EXPECT_TRUE(contains(dense, "block-Jacobi needs the matrix: a csr or stencil operator, on one process")) << dense;
  o.pc = PcKind::jacobi;  // pc = jacobi is jacobi = true
  const CgResult r = cg(A, p.b, p.x0, DotPolicy::exact(), o);
  o.pc = PcKind::none;
  o.jacobi = true;
  const CgResult s = cg(A, p.b, p.x0, DotPolicy::exact(), o);
  EXPECT_EQ(host(r.x), host(s.x));
  EXPECT_EQ(r.pc, "jacobi");
  EXPECT_EQ(r.pc_bytes, 8.0 * 64);
}

// ---- block storage ------------------------------------------------------------------------

// r^T M^-1 r for the preconditioner's apply, in binary128 from its binary64 z.
__float128 quadratic_form(const BlockJacobi& M, const std::vector<double>& r) {
  Vector z("z", r.size());
  M.apply(vec(r), z);
  const std::vector<double> h = to_host(ConstVector(z));
  __float128 s = 0;
  for (std::size_t i = 0; i < r.size(); ++i) s += static_cast<__float128>(r[i]) * h[i];
  return s;
}

// Narrow factors: M~ = L~ L~^T lies between (1 - d)^2 M and (1 + d)^2 M (preconditioner.hpp,
// "Block storage"), so r^T M~^-1 r / r^T M^-1 r lies in [(1 + d)^-2, (1 - d)^-2] for every r,
// and is positive. Checked for auto, binary32 and bfloat16 on two SuiteSparse matrices with
// 1,000 random r (entries of random signs spanning four decades) and every unit vector e_i
// (the factors' diagonals alone), each run's own d; slack 1e-9 for apply's binary64 rounding.
TEST(BlockStorage, NarrowFactorsStayWithinTheirBound) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-1.0, 1.0), decades(0.0, 4.0);
  for (const char* name : {"bcsstk13", "1138_bus"}) {
    const CsrMatrix A = read_matrix_market(std::string(EBLA_DATA_DIR "/matrices/") + name + ".mtx");
    const std::size_t n = static_cast<std::size_t>(A.numRows());
    const BlockJacobi exact(A);
    for (const BlockStorage storage : {BlockStorage::chosen(), BlockStorage::of(Storage::binary32),
                                       BlockStorage::of(Storage::bfloat16)}) {
      const BlockJacobi M(A, default_pc_block_size, "test", storage);
      const double d = M.delta();
      const std::string what = std::string(name) + " " + to_string(storage) + " d " + std::to_string(d);
      ASSERT_LT(d, 1) << what;
      if (storage.automatic) {
        EXPECT_LE(d, block_storage_delta) << what;
      }
      EXPECT_LT(M.bytes(), exact.bytes()) << what;
      EXPECT_EQ(M.binary64_bytes(), exact.bytes()) << what;
      const double lo = 1 / ((1 + d) * (1 + d)) * (1 - 1e-9), hi = 1 / ((1 - d) * (1 - d)) * (1 + 1e-9);
      double least = HUGE_VAL, most = 0;
      int outside = 0;
      for (std::size_t c = 0; c < 1000 + n; ++c) {
        std::vector<double> r(n, 0.0);
        if (c < 1000)
          for (double& v : r) v = u(rng) * std::pow(10.0, decades(rng));
        else
          r[c - 1000] = 1;
        const double ratio = static_cast<double>(quadratic_form(M, r) / quadratic_form(exact, r));
        outside += ratio >= lo && ratio <= hi ? 0 : 1;
        least = std::min(least, ratio);
        most = std::max(most, ratio);
      }
      std::printf("%s: %s, ratios in [%.6f, %.6f], bound [%.6f, %.6f]\n", what.c_str(), M.formats().c_str(), least,
                  most, lo, hi);
      EXPECT_EQ(outside, 0) << what;
      EXPECT_GT(least, 0) << what;
    }
  }
}

// A block whose factor a narrow format cannot hold: l_11 = 1e-50 is 0 in binary32 and
// bfloat16 (L~ singular). A fixed format refuses it, naming the block; auto keeps that block
// in binary64, whose rows then get binary64's bits.
TEST(BlockStorage, AFactorANarrowFormatCannotHoldStaysBinary64) {
  std::vector<std::vector<double>> a(4, std::vector<double>(4, 0.0));
  a[0][0] = 1e-100, a[0][1] = a[1][0] = 1e-101, a[1][1] = 1;  // rows 0..1: one block, SPD
  a[2][2] = a[3][3] = 2, a[2][3] = a[3][2] = 1;              // rows 2..3: one block, well conditioned
  const CsrMatrix A = csr_from_dense(a);
  for (Storage s : {Storage::binary32, Storage::bfloat16}) {
    const std::string e = error_of([&] { BlockJacobi(A, 2, "f", BlockStorage::of(s)); });
    EXPECT_TRUE(contains(e, std::string("f: the factor of the diagonal block of rows 0..1 does not fit ") + to_string(s)))
        << e;
  }
  const BlockJacobi M(A, 2, "f", BlockStorage::chosen()), exact(A, 2);
  EXPECT_EQ(M.blocks_in()[static_cast<int>(Storage::binary64)], 1u);
  EXPECT_EQ(M.blocks_in()[static_cast<int>(Storage::bfloat16)], 1u);
  EXPECT_EQ(M.formats(), "bfloat16 1, binary64 1");
  Vector z("z", 4), z64("z64", 4);
  const Vector r = vec({1e-100, 0.5, 1, -1});
  M.apply(r, z);
  exact.apply(r, z64);
  const std::vector<double> h = to_host(ConstVector(z)), h64 = to_host(ConstVector(z64));
  EXPECT_EQ(h[0], h64[0]);
  EXPECT_EQ(h[1], h64[1]);
  EXPECT_EQ(error_of([] { block_storage_by_name("half", "g"); }),
            "g: unknown block storage 'half'; known: auto, binary64, binary32, bfloat16");
}

// CG with block-Jacobi whose factors are stored by the rule: the certified residual, at most
// 3% (+1) more iterations than binary64 factors, fewer bytes, and its record.
TEST(BlockStorage, AutoKeepsTheIterationsOfBinary64Factors) {
  for (const char* name : {"bcsstk13", "1138_bus", "gr_30_30", "nos3"}) {
    const CsrOperator A(read_matrix_market(std::string(EBLA_DATA_DIR "/matrices/") + name + ".mtx"));
    const std::size_t n = A.size();
    Vector b("b", n), x0("x0", n);
    A.apply(vec(std::vector<double>(n, 1.0)), b);
    CgOptions o;
    o.norm = Norm::relative;
    o.pc = PcKind::block_jacobi;
    const CgResult exact = cg(A, b, x0, DotPolicy::exact(), o);
    o.pc_storage = BlockStorage::chosen();
    const CgResult r = cg(A, b, x0, DotPolicy::exact(), o);
    std::printf("%s: binary64 factors %d iterations (%.0f bytes), auto %d (%.0f bytes; bfloat16 %zu, binary32 %zu, "
                "binary64 %zu blocks, d %.4f)\n",
                name, exact.iterations, exact.pc_bytes, r.iterations, r.pc_bytes, r.pc_blocks_in[2], r.pc_blocks_in[1],
                r.pc_blocks_in[0], r.pc_delta);
    ASSERT_EQ(r.status, SolverStatus::converged) << name;
    EXPECT_LE(r.true_residual, r.tolerance_used) << name;
    EXPECT_LE(r.iterations, 1.03 * exact.iterations + 1) << name;
    EXPECT_LT(r.pc_bytes, exact.pc_bytes) << name;
    EXPECT_EQ(r.pc_binary64_bytes, exact.pc_bytes) << name;
    EXPECT_EQ(r.pc_blocks_in[0] + r.pc_blocks_in[1] + r.pc_blocks_in[2], r.pc_blocks) << name;
    EXPECT_LE(r.pc_delta, block_storage_delta) << name;
  }
  // block storage is block-Jacobi's
  const HpccgProblem p = hpccg_problem(4, 4, 4);
  CgOptions o;
  o.pc = PcKind::jacobi;
  o.pc_storage = BlockStorage::chosen();
  EXPECT_TRUE(contains(error_of([&] { cg(CsrOperator(p.A), p.b, p.x0, DotPolicy::exact(), o); }),
                       "block storage auto stores the blocks of block-Jacobi, not of Jacobi"));
}

}  // namespace

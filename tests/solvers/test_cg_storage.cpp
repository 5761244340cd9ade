// CG with p, q and r stored narrow (CgOptions::storage): every format certifies its result
// against a binary128 residual, vectors built to underflow an unscaled narrow format still
// solve, the gap bound G_k holds at every iteration, the residual is replaced where the gap
// grows and CG falls back to binary64 when the rule says so, and bad combinations throw.
#include <ebla/core/error.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/problems.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../../solvers/src/cg_steps.hpp"
#include "regime_matrix.hpp"
#include "util.hpp"

namespace {

using ebla::Storage;

ebla::CgOptions options(ebla::StoragePolicy storage, double tolerance = 1e-10) {
  ebla::CgOptions o;
  o.tolerance = tolerance;
  o.norm = ebla::Norm::relative;
  o.storage = storage;
  return o;
}

ebla::StoragePolicy fixed(Storage s) { return ebla::StoragePolicy::of(s); }

// ||b - A x|| in binary128 from the CSR matrix (each product and sum exact to 113 bits).
double quad_residual(const ebla::CsrMatrix& A, ebla::ConstVector b, ebla::ConstVector x) {
  const auto rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  const auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  const auto vals = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  __float128 sum = 0;
  for (std::size_t i = 0; i + 1 < rows.extent(0); ++i) {
    __float128 r = hb(i);
    for (std::size_t k = rows(i); k < rows(i + 1); ++k) r -= static_cast<__float128>(vals(k)) * hx(cols(k));
    sum += r * r;
  }
  return std::sqrt(static_cast<double>(sum));
}

ebla::Vector scaled(ebla::ConstVector v, double s) {
  ebla::Vector w("w", v.extent(0));
  Kokkos::parallel_for(
      "scale", v.extent(0), KOKKOS_LAMBDA(const std::size_t i) { w(i) = s * v(i); });
  return w;
}

// The iteration of the event whose text has `what` (-1: none; it must not come twice).
int event_at(const ebla::CgResult& r, const char* what) {
  int at = -1;
  for (const auto& e : r.events)
    if (e.what.find(what) != std::string::npos) {
      EXPECT_EQ(at, -1) << "twice: " << what;
      at = e.iteration;
    }
  return at;
}
int late_switch(const ebla::CgResult& r) { return event_at(r, "q and r stored in binary32 from here"); }
int p_switch(const ebla::CgResult& r) { return event_at(r, "p stored in binary32 from here"); }

// A fault injected into x (a soft error, say): x_0 += 1e-3 through a writable view. (A
// function of its own: a device lambda may not be defined in a test's body.)
void inject_fault(ebla::ConstVector x) {
  const Kokkos::View<double*, Kokkos::MemoryTraits<Kokkos::Unmanaged>> w(const_cast<double*>(x.data()), x.extent(0));
  Kokkos::parallel_for("fault", 1, KOKKOS_LAMBDA(int) { w(0) += 1e-3; });
  Kokkos::fence();
}

TEST(CgStorage, EveryFormatCertifiesItsResidualOnBothOperators) {
  const auto P = ebla::hpccg_problem(16, 16, 16);
  const ebla::CsrOperator csr(P.A);
  const ebla::StencilOperator stencil(16, 16, 16);
  const auto exact = ebla::cg(csr, P.b, P.x0, ebla::DotPolicy::exact(), options({}));
  ASSERT_EQ(exact.status, ebla::SolverStatus::converged);
  for (Storage s : ebla::storage_formats()) {
    for (bool jacobi : {false, true}) {
      ebla::CgOptions o = options(fixed(s));
      o.jacobi = jacobi;
      for (const ebla::CgResult& r : {ebla::cg(csr, P.b, P.x0, ebla::DotPolicy::exact(), o),
                                      ebla::cg(stencil, P.b, P.x0, ebla::DotPolicy::exact(), o)}) {
        const std::string what = std::string(ebla::to_string(s)) + (jacobi ? " jacobi" : "");
        ASSERT_EQ(r.status, ebla::SolverStatus::converged) << what << ": " << r.stop_reason;
        const double truth = quad_residual(P.A, P.b, r.x);
        EXPECT_LE(truth, r.tolerance_used) << what;
        EXPECT_LE(std::fabs(truth - r.true_residual), 1e-12 * truth) << what;
        // narrow storage costs iterations, within reason on this easy problem
        EXPECT_LE(r.iterations, 2 * exact.iterations) << what;
        if (s != Storage::binary64) {
          EXPECT_EQ(r.storage, ebla::to_string(s));
          EXPECT_GT(r.bytes_moved, 0.0);
          for (const auto& it : r.history) EXPECT_TRUE(it.storage == (ebla::StorageFormats{s, s})) << what;
        }
      }
    }
  }
}

// The model of the bytes an iteration moves, on the stencil (no matrix) with binary32 p, q
// and r: q = A p reads p and writes q (8 n); r -= alpha q reads q and r and writes r (12 n);
// x += alpha p, p = r + beta p reads r and p and writes p, and reads and writes x in binary64
// (28 n): 48 n, each vector once per pass, p once in the update and direction passes
// together. With Jacobi D^-1 is read in the last two (64 n).
TEST(CgStorage, TheBytesModelCountsEachVectorOncePerPass) {
  const auto P = ebla::hpccg_problem(16, 16, 16);
  const ebla::StencilOperator stencil(16, 16, 16);
  const double n = 16 * 16 * 16;
  for (bool jacobi : {false, true}) {
    ebla::CgOptions o = options(fixed(Storage::binary32));
    o.jacobi = jacobi;
    const auto r = ebla::cg(stencil, P.b, P.x0, ebla::DotPolicy::exact(), o);
    ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
    int checked = 0;
    for (std::size_t k = 1; k < r.history.size(); ++k) {
      if (r.history[k].replaced) continue;  // a replacement's pass adds its own bytes
      EXPECT_EQ(r.history[k].bytes, (jacobi ? 64 : 48) * n) << k << (jacobi ? " jacobi" : "");
      ++checked;
    }
    EXPECT_GT(checked, 10);
  }
}

TEST(CgStorage, Binary32KeepsTheIterationCountOnHpccg) {
  const ebla::StencilOperator A(24, 24, 24);
  const auto b = ebla::hpccg_rhs(24, 24, 24);
  const ebla::Vector x0("x0", A.size());
  const auto exact = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), options({}));
  ebla::StoragePolicy automatic;
  automatic.kind = ebla::StoragePolicy::Kind::automatic;
  const auto narrow = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), options(automatic));
  ASSERT_EQ(narrow.status, ebla::SolverStatus::converged);
  EXPECT_EQ(narrow.storage, "auto");
  EXPECT_LE(narrow.iterations, exact.iterations * 1.03 + 1) << exact.iterations;
}

TEST(CgStorage, VectorsBelowTheNarrowFormatsRangeStillSolve) {
  // b = 2^-160 A 1: every entry below binary32's smallest subnormal (unscaled storage would
  // hold zeros), while ||b||^2 stays inside double's range (no scaling of the system)
  const auto P = ebla::hpccg_problem(10, 10, 10);
  const ebla::CsrOperator A(P.A);
  const ebla::Vector b = scaled(P.b, 0x1p-160);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  for (std::size_t i = 0; i < hb.extent(0); ++i) ASSERT_EQ(static_cast<float>(hb(i)), 0.0f);
  for (Storage s : {Storage::binary32, Storage::bfloat16, Storage::binary16, Storage::block16, Storage::block8}) {
    const auto r = ebla::cg(A, b, P.x0, ebla::DotPolicy::exact(), options(fixed(s)));
    ASSERT_EQ(r.status, ebla::SolverStatus::converged) << ebla::to_string(s) << ": " << r.stop_reason;
    EXPECT_TRUE(r.events.empty() || r.events.front().what.find("scaled") == std::string::npos) << ebla::to_string(s);
    EXPECT_LE(quad_residual(P.A, b, r.x), r.tolerance_used) << ebla::to_string(s);
  }
}

TEST(CgStorage, TheGapBoundHoldsAtEveryIteration) {
  // stopped after k iterations: | ||b - A x_k|| - ||r_k|| | <= ||b - A x_k - r_k|| <= G_k
  // (plus binary64's own rounding, far below G_k here)
  const auto P = ebla::hpccg_problem(12, 12, 12);
  const ebla::CsrOperator A(P.A);
  int checked = 0, violations = 0;
  for (Storage s : {Storage::bfloat16, Storage::binary16, Storage::block8, Storage::block16, Storage::binary32})
    for (int k = 1; k <= 30; ++k) {
      ebla::CgOptions o = options(fixed(s));
      o.max_iterations = k;
      o.storage.gap_ratio = 0.5;  // few replacements: let the gap grow
      const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), o);
      if (r.status != ebla::SolverStatus::max_iterations) continue;
      const double truth = quad_residual(P.A, P.b, r.x);
      const double gap = r.history.back().gap;
      const double rounding = 1e-14 * r.b_norm;
      ++checked;
      if (!(std::fabs(truth - r.recursive_residual) <= gap + rounding)) {
        ++violations;
        ADD_FAILURE() << ebla::to_string(s) << " k = " << k << ": true " << truth << ", recursive "
                      << r.recursive_residual << ", gap " << gap;
      }
    }
  EXPECT_GE(checked, 100);
  EXPECT_EQ(violations, 0);
}

TEST(CgStorage, TheResidualIsReplacedWhereTheGapGrows) {
  const auto P = ebla::hpccg_problem(12, 12, 12);
  const ebla::CsrOperator A(P.A);
  const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options(fixed(Storage::bfloat16)));
  ASSERT_EQ(r.status, ebla::SolverStatus::converged);
  EXPECT_GT(r.replacements, 0);
  int flagged = 0, said = 0;
  for (const auto& it : r.history) flagged += it.replaced ? 1 : 0;
  for (const auto& e : r.events) said += e.what.find("r replaced by b - A x") != std::string::npos ? 1 : 0;
  EXPECT_EQ(said, r.replacements);
  EXPECT_GE(flagged, 1);
  EXPECT_LE(flagged, r.replacements);
  // each replacement closed the gap to the rounding of r alone
  for (std::size_t k = 1; k < r.history.size(); ++k)
    if (r.history[k].replaced) {
      EXPECT_LT(r.history[k].gap, r.history[k - 1].gap) << k;
    }
}

// The diagonal matrix of n eigenvalues from 1 to 1e4 (geometric), in CSR.
ebla::CsrMatrix geometric_diagonal(std::size_t n) {
  ebla::CsrMatrix::row_map_type::non_const_type rows("rows", n + 1);
  ebla::CsrMatrix::index_type::non_const_type cols("cols", n);
  ebla::CsrMatrix::values_type::non_const_type vals("vals", n);
  auto hr = Kokkos::create_mirror_view(rows);
  auto hc = Kokkos::create_mirror_view(cols);
  auto hv = Kokkos::create_mirror_view(vals);
  for (std::size_t i = 0; i <= n; ++i) hr(i) = i;
  for (std::size_t i = 0; i < n; ++i) {
    hc(i) = static_cast<int>(i);
    hv(i) = std::pow(1e4, static_cast<double>(i) / static_cast<double>(n - 1));
  }
  Kokkos::deep_copy(rows, hr);
  Kokkos::deep_copy(cols, hc);
  Kokkos::deep_copy(vals, hv);
  return ebla::CsrMatrix("diag", static_cast<int>(n), static_cast<int>(n), static_cast<int>(n), vals, rows, cols);
}

TEST(CgStorage, TheStallSafeguardKeepsTheStorageInBinary64) {
  // CG's residual on this matrix stays above ||r_0|| for its first 40 iterations: a stall
  // window of 1 fires at once, and nothing is narrowed afterwards, although with a window
  // of 80 p goes to binary32 once kappa(T_k) settles (iteration 362; 980 iterations
  // against exact CG's 972)
  const ebla::CsrMatrix M = geometric_diagonal(4000);
  const ebla::CsrOperator A(M);
  ebla::Vector b("b", M.numRows()), x0("x0", M.numRows());
  Kokkos::deep_copy(b, 1.0);
  ebla::CgOptions o = options(ebla::StoragePolicy::automatic(), 1e-8);
  o.max_iterations = 5000;
  o.stall_window = 80;
  const auto free = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), o);
  EXPECT_GT(p_switch(free), 0);
  o.stall_window = 1;
  const auto r = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), o);
  ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
  EXPECT_EQ(event_at(r, "p, q and r stay in binary64 from here"), 1);
  EXPECT_EQ(p_switch(r), -1);
  EXPECT_EQ(late_switch(r), -1);
  for (const auto& it : r.history) EXPECT_TRUE(it.storage == ebla::StorageFormats{});
  EXPECT_LE(quad_residual(M, b, r.x), r.tolerance_used);
}

TEST(CgStorage, TheFinitePrecisionRegimeKeepsTheStorageInBinary64) {
  // ten isolated eigenvalues above 39990 spread ones: CG finds two of them within its first
  // 64 steps, the run is in the finite-precision regime (lanczos_condition.hpp) and nothing
  // is narrowed; without that test this solve did not converge in 5000 iterations
  const ebla::CsrMatrix M = ebla::test::isolated_top_diagonal(40000);
  const ebla::CsrOperator A(M);
  ebla::Vector b("b", M.numRows()), x0("x0", M.numRows());
  Kokkos::deep_copy(b, 1.0);
  ebla::CgOptions o = options(ebla::StoragePolicy::automatic(), 1e-8);
  o.max_iterations = 5000;
  ebla::CgOptions plain = options(ebla::StoragePolicy(), 1e-8);
  plain.max_iterations = 5000;
  const auto exact = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), plain);
  const auto r = ebla::cg(A, b, x0, ebla::DotPolicy::exact(), o);
  ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
  const int at = event_at(r, "finite-precision regime");
  EXPECT_GT(at, 0);
  EXPECT_LE(at, 64);
  EXPECT_EQ(p_switch(r), -1);
  EXPECT_EQ(late_switch(r), -1);
  for (const auto& it : r.history) EXPECT_TRUE(it.storage == ebla::StorageFormats{});
  EXPECT_LE(r.iterations, exact.iterations * 103 / 100 + 1) << r.iterations << " against " << exact.iterations;
  EXPECT_LE(quad_residual(M, b, r.x), r.tolerance_used);
}

TEST(CgStorage, AFailedCertificateReturnsTheStorageToBinary64) {
  // x moved behind CG's back after q and r went to binary32 (a fault injected into x): the
  // recursive residual no longer tracks b - A x, the stopping test passes on it, the
  // double-double certificate fails, and CG stores everything in binary64, replaces r and
  // converges for real
  const auto P = ebla::hpccg_problem(16, 16, 16);
  const ebla::CsrOperator A(P.A);
  ebla::CgOptions o = options(ebla::StoragePolicy::automatic());
  const auto plain = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), o);
  const int at = late_switch(plain);
  ASSERT_GT(at, 0);
  o.on_iterate = [at](int k, ebla::ConstVector x) {
    if (k == at + 1) inject_fault(x);
  };
  const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), o);
  ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
  const int fell = event_at(r, "p, q and r stored in binary64 from here");
  ASSERT_GT(fell, at) << "no fallback";
  bool said = false;
  for (const auto& e : r.events) said = said || (e.iteration == fell && e.what.rfind("certificate: ||b - A x||", 0) == 0);
  EXPECT_TRUE(said);
  for (std::size_t k = static_cast<std::size_t>(fell); k < r.history.size(); ++k)
    EXPECT_TRUE(r.history[k].storage == ebla::StorageFormats{}) << k;
  EXPECT_GT(r.iterations, plain.iterations);
  EXPECT_LE(quad_residual(P.A, P.b, r.x), r.tolerance_used);
}

TEST(CgStorage, ExactMatrixValuesAreReadInTheNarrowestFormatThatHoldsThem) {
  // HPCCG's -1 and 27: bfloat16; a value of binary32 but not bfloat16: binary32; 0.1: binary64
  const auto P = ebla::hpccg_problem(6, 6, 6);
  ebla::RowsOf rows = ebla::rows_of(ebla::CsrOperator(P.A));
  ebla::detail::narrow_values(rows);
  // with the columns as offsets, in slices of eight rows (a slice's shorter rows padded)
  EXPECT_EQ(rows.values16.extent(0), rows.offsets16.extent(0));
  EXPECT_GE(rows.values16.extent(0), P.A.values.extent(0));
  EXPECT_EQ(rows.slices.extent(0), 6u * 6 * 6 / 8 + 1);
  for (double extra : {1.0 + 0x1p-15, 0.1}) {
    ebla::CsrMatrix B("B", P.A);  // a copy with one diagonal entry changed
    Kokkos::View<double*> values("values", P.A.values.extent(0));
    Kokkos::deep_copy(values, P.A.values);
    Kokkos::deep_copy(Kokkos::subview(values, 0), 27 * extra);
    B.values = values;
    ebla::RowsOf r = ebla::rows_of(ebla::CsrOperator(B));
    ebla::detail::narrow_values(r);
    EXPECT_EQ(r.values16.extent(0), 0u) << extra;
    EXPECT_EQ(r.values32.extent(0), extra == 0.1 ? 0u : r.offsets16.extent(0)) << extra;
    // binary64 values in slices would take 1.03 times the CSR arrays' bytes here (5040 words
    // for 4096 nonzeros, 10 bytes each against 12): in the order of the rows' entries
    EXPECT_EQ(r.values64.extent(0), 0u) << extra;
    EXPECT_EQ(r.slices.extent(0), extra == 0.1 ? 0u : rows.slices.extent(0)) << extra;
    EXPECT_EQ(r.offsets16.extent(0), extra == 0.1 ? P.A.values.extent(0) : r.values32.extent(0)) << extra;
    // and the solve reading them certifies its residual against the binary64 matrix
    const auto res = ebla::cg(ebla::CsrOperator(B), P.b, P.x0, ebla::DotPolicy::exact(),
                              options(ebla::StoragePolicy::automatic()));
    ASSERT_EQ(res.status, ebla::SolverStatus::converged);
    EXPECT_LE(quad_residual(B, P.b, res.x), res.tolerance_used);
    EXPECT_EQ(res.nonzero_bytes, extra == 0.1 ? 10.0 : 6.0);  // columns as 16-bit offsets
    // the record says which copy the passes read, and why
    EXPECT_EQ(event_at(res, extra == 0.1 ? "not all exact in bfloat16 or binary32: the passes read them in binary64"
                                         : "A's values are exact in binary32"),
              0)
        << extra;
  }
}

// A of order n: 4 on the diagonal, -1 beside it, and 1 at (0, w) and (w, 0): the band's
// half-width is w.
ebla::CsrMatrix banded(std::size_t n, std::size_t w) {
  ebla::test::HostCsr h{static_cast<int>(n), static_cast<int>(n), {0}, {}, {}};
  const auto put = [&](std::size_t j, double v) {
    h.col.push_back(static_cast<int>(j));
    h.val.push_back(v);
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (i == w) put(0, 1);
    if (i > 0) put(i - 1, -1);
    put(i, 4);
    if (i + 1 < n) put(i + 1, -1);
    if (i == 0) put(w, 1);
    h.ptr.push_back(h.col.size());
  }
  return ebla::test::make_csr(h);
}

TEST(CgStorage, ColumnsWithinTheBandAreReadAsSixteenBitOffsets) {
  // HPCCG's matrix: every offset column - row is kept, and the product reading the offsets
  // and the bfloat16 values is bit for bit the one reading binary64 values and 32-bit columns
  const auto P = ebla::hpccg_problem(9, 7, 8);
  const ebla::RowsOf plain = ebla::rows_of(ebla::CsrOperator(P.A));
  const ebla::RowsOf narrow = ebla::detail::narrowed(plain);
  ASSERT_EQ(narrow.slices.extent(0), P.b.extent(0) / 8 + 1);  // 504 rows: 63 slices of eight
  const auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.A.graph.row_map);
  const auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.A.graph.entries);
  const auto offsets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), narrow.offsets16);
  const auto slices = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), narrow.slices);
  for (std::size_t i = 0; i + 1 < row_map.extent(0); ++i)  // entry m of row i: word slices(i / 8) + 8 m + i % 8
    for (std::size_t m = 0; m < row_map(i + 1) - row_map(i); ++m)
      ASSERT_EQ(static_cast<int>(i) + offsets(slices(i / 8) + 8 * m + i % 8), entries(row_map(i) + m));
  const std::size_t n = P.b.extent(0);
  for (Storage sp : {Storage::binary64, Storage::binary32, Storage::block16}) {
    ebla::StoredVector p = ebla::make_stored_vector(sp, n, "p");
    ebla::store(p, scaled(P.b, 0.37));
    ebla::StoredVector q1 = ebla::make_stored_vector(Storage::binary64, n, "q1");
    ebla::StoredVector q2 = ebla::make_stored_vector(Storage::binary64, n, "q2");
    const double a_norm = ebla::detail::infinity_norm_bound(plain);
    const auto s1 = ebla::detail::apply_stored(plain, a_norm, p, q1, 3.0, true);
    const auto s2 = ebla::detail::apply_stored(narrow, a_norm, p, q2, 3.0, true);
    const auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q1.f64);
    const auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q2.f64);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h1(i), h2(i)) << ebla::to_string(sp) << " row " << i;
    EXPECT_EQ(s1.dot, s2.dot);
    EXPECT_EQ(s1.amax, s2.amax);
  }
  // a band of half-width 32767 fits, 32768 does not; either way the solve certifies
  for (std::size_t w : {32767u, 32768u}) {
    const ebla::CsrMatrix A = banded(w + 2, w);
    ebla::RowsOf r = ebla::rows_of(ebla::CsrOperator(A));
    ebla::detail::narrow_values(r);
    EXPECT_EQ(r.offsets16.extent(0) > 0, w == 32767) << w;
    EXPECT_EQ(r.slices.extent(0) > 0, w == 32767) << w;
    ebla::Vector b("b", w + 2);
    Kokkos::deep_copy(b, 1.0);
    ebla::Vector x0("x0", w + 2);
    const auto res = ebla::cg(ebla::CsrOperator(A), b, x0, ebla::DotPolicy::exact(),
                              options(ebla::StoragePolicy::automatic()));
    ASSERT_EQ(res.status, ebla::SolverStatus::converged) << w;
    EXPECT_LE(quad_residual(A, b, res.x), res.tolerance_used) << w;
    EXPECT_EQ(res.nonzero_bytes, w == 32767 ? 4.0 : 6.0) << w;
    EXPECT_EQ(event_at(res, "16-bit offsets") >= 0, w == 32767) << w;
  }
}

TEST(CgStorage, Binary64StoredProductIsTheStencilsOwn) {
  // the stored-vector stencil sums in apply's order: binary64 storage gives apply's bits
  const int nx = 37, ny = 5, nz = 6;  // lines that do not fill tiles
  const ebla::StencilOperator A(nx, ny, nz);
  const std::size_t n = A.size();
  ebla::Vector x("x", n), y("y", n);
  auto hx = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < n; ++i) hx(i) = std::sin(1.0 + static_cast<double>(i)) * std::ldexp(1.0, static_cast<int>(i % 40) - 20);
  Kokkos::deep_copy(x, hx);
  A.apply(x, y);
  ebla::StoredVector p = ebla::make_stored_vector(Storage::binary64, n, "p"), q = ebla::make_stored_vector(Storage::binary64, n, "q");
  ebla::store(p, x);
  ebla::detail::apply_stored(ebla::rows_of(A), ebla::detail::infinity_norm_bound(ebla::rows_of(A)), p, q, 1.0);
  const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  const auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.f64);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hq(i), hy(i)) << i;
  // a binary32 p (summed as words, scaled once) gives the bits of its values in binary64
  for (Storage s : {Storage::binary32, Storage::bfloat16, Storage::binary16}) {
    ebla::StoredVector narrow = ebla::make_stored_vector(s, n, "p"), q32 = ebla::make_stored_vector(Storage::binary64, n, "q");
    ebla::store(narrow, x);
    ebla::Vector values("values", n);
    ebla::load(narrow, values);
    A.apply(values, y);
    ebla::detail::apply_stored(ebla::rows_of(A), 53.0, narrow, q32, 1.0);
    const auto hy2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    const auto hq2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q32.f64);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hq2(i), hy2(i)) << ebla::to_string(s) << " " << i;
  }
}

TEST(CgStorage, RefusesWhatCannotReadStoredVectors) {
  const auto P = ebla::hpccg_problem(4, 4, 4);
  Kokkos::View<double**, Kokkos::LayoutRight> dense("A", 64, 64);
  auto h = Kokkos::create_mirror_view(dense);
  for (int i = 0; i < 64; ++i) h(i, i) = 2;
  Kokkos::deep_copy(dense, h);
  const ebla::DenseOperator D(dense);
  auto expect = [](auto call, const char* fragment) {
    try {
      call();
      ADD_FAILURE() << "no exception for " << fragment;
    } catch (const ebla::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect([&] { ebla::cg(D, P.b, P.x0, ebla::DotPolicy::exact(), options(fixed(Storage::block8))); }, "storage block8 needs an operator");
  ebla::CgOptions certified = options(fixed(Storage::binary32));
  certified.stop = ebla::StopTest::certified;
  const ebla::CsrOperator A(P.A);
  expect([&] { ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), certified); }, "exact_norm");
  ebla::CgOptions levels = options(fixed(Storage::binary16));
  levels.record_levels = true;
  expect([&] { ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), levels); }, "no ladder maps");
  ebla::CgOptions ratio = options(fixed(Storage::binary16));
  ratio.storage.gap_ratio = 1;
  expect([&] { ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), ratio); }, "gap_ratio");
  expect([] { ebla::storage_policy_by_name("fp8", "ebla cg --storage"); }, "ebla cg --storage: unknown storage 'fp8'");
  ebla::CgOptions share = options(ebla::StoragePolicy::automatic());
  share.storage.late_share = 1;
  expect([&] { ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), share); }, "late_share 1.000000 must lie in [0, 1)");
  ebla::CgOptions limit = options(ebla::StoragePolicy::automatic());
  limit.storage.late_limit = 0;
  expect([&] { ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), limit); }, "late_limit 0.000000 must lie in (0, 1)");
}

TEST(CgStorage, TheDirectionPassReadsPBeforeItOverwritesIt) {
  // p in binary64 is updated in place: p_i = z_i + beta p_i must read the old p_i (a pass
  // that wrote z over p first took p = (1 + beta) z)
  const std::size_t n = 1500;  // three tiles, the last one short
  ebla::Vector r64("r", n), p64("p", n), dinv("dinv", n), out("out", n);
  auto hr = Kokkos::create_mirror_view(r64);
  auto hp = Kokkos::create_mirror_view(p64);
  auto hd = Kokkos::create_mirror_view(dinv);
  for (std::size_t i = 0; i < n; ++i) {
    hr(i) = std::sin(0.37 * static_cast<double>(i));
    hp(i) = std::cos(1.3 * static_cast<double>(i)) * 1e-3;
    hd(i) = 1.0 / (2.0 + static_cast<double>(i % 7));
  }
  Kokkos::deep_copy(r64, hr);
  Kokkos::deep_copy(p64, hp);
  Kokkos::deep_copy(dinv, hd);
  const double beta = 0.75, alpha = -0.375;
  for (const bool jacobi : {false, true})
    for (const bool moves_x : {false, true}) {
      // and x += alpha p (line 8) with the p of before the pass, where CG asks for it
      ebla::StoredVector r = ebla::make_stored_vector(Storage::binary64, n, "r");
      ebla::StoredVector p = ebla::make_stored_vector(Storage::binary64, n, "p");
      ebla::Vector x("x", n);
      Kokkos::deep_copy(x, 0.5);
      ebla::store(r, r64);
      const double p_max = ebla::store(p, p64).amax;
      const ebla::ConstVector d = jacobi ? ebla::ConstVector(dinv) : ebla::ConstVector();
      if (moves_x) ebla::detail::direction_stored(beta, r, d, p, 1.0, p_max, alpha, x);
      else ebla::detail::direction_stored(beta, r, d, p, 1.0, p_max);
      ebla::load(p, out);
      const auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
      int wrong = 0, wrong_x = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double z = jacobi ? hd(i) * hr(i) : hr(i);
        wrong += ho(i) == z + beta * hp(i) ? 0 : 1;
        wrong_x += hx(i) == (moves_x ? 0.5 + alpha * hp(i) : 0.5) ? 0 : 1;
      }
      EXPECT_EQ(wrong, 0) << (jacobi ? "with" : "without") << " Jacobi, x " << moves_x;
      EXPECT_EQ(wrong_x, 0) << (jacobi ? "with" : "without") << " Jacobi, x " << moves_x;
    }
}

TEST(CgStorage, PInBinary64KeepsExactCgsIterations) {
  // p in binary64, q and r in binary32: the directions are binary64's, so the count is close
  // to exact CG's (the direction pass that overwrote p with z took 80 against 19 here)
  const auto P = ebla::hpccg_problem(12, 12, 12);
  const ebla::CsrOperator A(P.A);
  const auto exact = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options({}));
  const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(),
                          options(ebla::StoragePolicy::of(Storage::binary64, Storage::binary32)));
  ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
  EXPECT_LE(r.iterations, exact.iterations * 1.3 + 2) << exact.iterations;
  EXPECT_LE(quad_residual(P.A, P.b, r.x), r.tolerance_used);
}

TEST(CgStorage, AutoNarrowsPThenQAndRWithoutCostingIterations) {
  // HPCCG 12^3 to 24^3 in CSR: binary64 until kappa(T_k) settles, then p in binary32, then,
  // once the gap binary32 q and r would add until ||r|| reaches tau is predicted below tau /
  // 8, q and r too. Exact CG's iterations at every size (a binary32 p from the start took 2
  // more at 12^3 and 16^3), no replacement, the measured gap below the prediction's share
  for (int g : {12, 16, 24}) {
    const auto P = ebla::hpccg_problem(g, g, g);
    const ebla::CsrOperator A(P.A);
    const auto exact = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options({}));
    const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options(ebla::StoragePolicy::automatic()));
    ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
    const int at_p = p_switch(r), at = late_switch(r);
    ASSERT_GE(at_p, 10) << g;  // kappa(T_k)'s growth is known from step 11 on
    ASSERT_GE(at, at_p) << g;
    EXPECT_LT(at, r.iterations) << g;
    EXPECT_EQ(r.iterations, exact.iterations) << g;
    EXPECT_EQ(r.replacements, 0) << g;
    for (std::size_t k = 0; k < r.history.size(); ++k) {
      const int i = static_cast<int>(k);
      const ebla::StorageFormats want{i < at_p ? Storage::binary64 : Storage::binary32,
                                      i < at ? Storage::binary64 : Storage::binary32};
      EXPECT_TRUE(r.history[k].storage == want) << g << ": " << k;
    }
    EXPECT_GT(r.history.back().gap, 0);
    EXPECT_LE(r.history.back().gap, ebla::StoragePolicy().late_share * r.tolerance_used) << g;
    EXPECT_LE(quad_residual(P.A, P.b, r.x), r.tolerance_used) << g;
  }
  const auto P = ebla::hpccg_problem(24, 24, 24);
  const ebla::CsrOperator A(P.A);
  const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options(ebla::StoragePolicy::automatic()));
  // late narrowing turned off: q and r stay binary64 throughout
  ebla::CgOptions off = options(ebla::StoragePolicy::automatic());
  off.storage.late_share = 0;
  const auto kept = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), off);
  EXPECT_EQ(late_switch(kept), -1);
  EXPECT_GE(p_switch(kept), 10);
  for (const auto& it : kept.history) EXPECT_EQ(it.storage.r, Storage::binary64);
  EXPECT_LT(r.bytes_moved, kept.bytes_moved);
  // a fixed policy never switches
  const auto fixed_split = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(),
                                    options(ebla::StoragePolicy::of(Storage::binary32, Storage::binary64)));
  EXPECT_EQ(late_switch(fixed_split), -1);
  EXPECT_EQ(p_switch(fixed_split), -1);
}

TEST(CgStorage, TheGapBoundHoldsAcrossTheLateSwitch) {
  // stopped after k iterations, before and after q and r went to binary32:
  // | ||b - A x_k|| - ||r_k|| | <= G_k (plus binary64's own rounding)
  const auto P = ebla::hpccg_problem(16, 16, 16);
  const ebla::CsrOperator A(P.A);
  const auto full = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options(ebla::StoragePolicy::automatic()));
  const int at = late_switch(full);
  ASSERT_GT(at, 0);
  int checked = 0;
  for (int k = at - 2; k < full.iterations; ++k) {
    ebla::CgOptions o = options(ebla::StoragePolicy::automatic());
    o.max_iterations = k;
    const auto r = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), o);
    if (r.status != ebla::SolverStatus::max_iterations) continue;
    const double truth = quad_residual(P.A, P.b, r.x);
    ++checked;
    EXPECT_LE(std::fabs(truth - r.recursive_residual), r.history.back().gap + 1e-14 * r.b_norm)
        << "k = " << k << ": true " << truth << ", recursive " << r.recursive_residual;
    if (k > at) {
      EXPECT_GT(r.history.back().gap, 0) << k;
    }
  }
  EXPECT_GE(checked, 8);
}

// The bytes of Kokkos allocations alive at once, counted through Kokkos' tool callbacks:
// the peak over what runs between start() and stop().
struct LiveBytes {
  static inline std::int64_t live = 0, peak = 0;
  static void allocated(Kokkos::Profiling::SpaceHandle, const char*, const void*, std::uint64_t size) {
    live += static_cast<std::int64_t>(size);
    peak = std::max(peak, live);
  }
  static void freed(Kokkos::Profiling::SpaceHandle, const char*, const void*, std::uint64_t size) {
    live -= static_cast<std::int64_t>(size);
  }
  template <class F>
  static std::int64_t peak_of(F&& f) {
    live = peak = 0;
    Kokkos::Tools::Experimental::set_allocate_data_callback(allocated);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(freed);
    f();
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
    return peak;
  }
};

TEST(CgStorage, AutoStorageNeedsNoMoreMemoryThanExactCgButTheNarrowMatrix) {
  // Narrowing p, then q and r, moves each vector's binary32 words into the memory of a
  // binary64 vector that is dead at that point (q between products): the vectors of an auto
  // solve never take more bytes than exact CG's. On the stencil nothing else is stored; in
  // CSR the passes read A's exact bfloat16 values and 16-bit column offsets, about 4 bytes a
  // nonzero kept beside the caller's binary64 matrix (which the certificate reads), unless
  // the operator holds A in those words (hpccg_narrowest): then there is no copy. Without the
  // reuse, the auto solve on the stencil took 44 n bytes where exact CG takes 32 n.
  const int g = 24;
  const auto P = ebla::hpccg_problem(g, g, g);
  const ebla::StencilOperator S(g, g, g);
  const ebla::CsrOperator A(P.A), N = ebla::hpccg_narrowest(g, g, g);
  const std::size_t n = P.b.extent(0), nnz = P.A.nnz();
  enum { stencil, csr, narrowest };
  for (const int op : {stencil, csr, narrowest}) {
    ebla::CgResult exact, automatic;
    const auto solve = [&](const ebla::StoragePolicy& storage, ebla::CgResult& r) {
      return LiveBytes::peak_of([&] {
        r = op == stencil ? ebla::cg(S, P.b, P.x0, ebla::DotPolicy::exact(), options(storage))
                          : ebla::cg(op == csr || !storage.narrow() ? A : N, P.b, P.x0, ebla::DotPolicy::exact(),
                                     options(storage));
      });
    };
    const std::int64_t exact_peak = solve({}, exact), auto_peak = solve(ebla::StoragePolicy::automatic(), automatic);
    ASSERT_EQ(automatic.status, ebla::SolverStatus::converged) << automatic.stop_reason;
    ASSERT_GT(late_switch(automatic), p_switch(automatic)) << op;  // p, then q and r narrowed
    ASSERT_GE(p_switch(automatic), 0) << op;
    EXPECT_GE(exact_peak, static_cast<std::int64_t>(4 * 8 * n)) << op;  // x, r, p, q: the count sees them
    // the stored passes' partial sums: six doubles per tile of 512 rows (0.1 byte a row)
    const std::int64_t tiles = static_cast<std::int64_t>(48 * ((n + 511) / 512));
    // beside a binary64 operator, the narrow copy of A (4 bytes a word, in slices of eight
    // rows: the words of nnz entries and of the padding past shorter rows, and the slices'
    // offsets); an operator held narrow has none
    const std::size_t words = N.words().values16.extent(0), slices = N.words().slices.extent(0);
    ASSERT_GE(words, nnz);
    ASSERT_LE(words, nnz + nnz / 20);
    const std::int64_t matrix = op == csr ? static_cast<std::int64_t>(4 * words + 8 * slices) : 0;
    EXPECT_LE(auto_peak, exact_peak + tiles + matrix) << op << ": auto " << auto_peak << " bytes, exact " << exact_peak;
  }
}

TEST(CgStorage, AnOperatorHeldNarrowSolvesWithTheSameBits) {
  // The stored passes read the same words whether the operator holds A in them or they were
  // narrowed from its binary64 matrix, and the certificate's double-double residual takes
  // the same operations: the same bits. Exact CG on the narrow operator (its own product,
  // entries summed in order) certifies its result too.
  for (int g : {10, 16}) {
    const auto P = ebla::hpccg_problem(g, g, g);
    const ebla::CsrOperator A(P.A), N = ebla::hpccg_narrowest(g, g, g);
    for (const auto& storage : {ebla::StoragePolicy::automatic(), fixed(Storage::binary32), fixed(Storage::block16)}) {
      const auto a = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options(storage));
      const auto r = ebla::cg(N, P.b, P.x0, ebla::DotPolicy::exact(), options(storage));
      ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
      EXPECT_EQ(r.iterations, a.iterations) << g;
      EXPECT_EQ(r.replacements, a.replacements) << g;
      EXPECT_EQ(r.true_residual, a.true_residual) << g;
      EXPECT_EQ(r.bytes_moved, a.bytes_moved) << g;
      const auto xa = ebla::test::to_host(a.x), xr = ebla::test::to_host(r.x);
      EXPECT_TRUE(xa == xr) << g;
      EXPECT_NE(event_at(r, "the operator holds them so"), -1) << g;
      EXPECT_EQ(event_at(a, "the operator holds them so"), -1) << g;
    }
    const auto exact = ebla::cg(A, P.b, P.x0, ebla::DotPolicy::exact(), options({}));
    const auto r = ebla::cg(N, P.b, P.x0, ebla::DotPolicy::exact(), options({}));
    ASSERT_EQ(r.status, ebla::SolverStatus::converged) << r.stop_reason;
    EXPECT_LE(std::abs(r.iterations - exact.iterations), 1) << g;
    EXPECT_LE(quad_residual(P.A, P.b, r.x), r.tolerance_used) << g;
  }
}

}  // namespace

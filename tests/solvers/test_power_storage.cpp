// The power method with a stored iterate (PowerOptions::storage): in every format the
// reported residual is the binary128 residual of the returned pair and an eigenvalue of A lies
// within it (for symmetric A, min_j |lambda - lambda_j| <= ||A x - lambda x|| for a unit x),
// including matrices whose iterates underflow or overflow an unscaled narrow format;
// binary32 and auto keep the binary64 method's iterations and eigenvalue; auto falls back
// to binary64 where binary32's rounding would show in lambda; bad combinations throw.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problems.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace ebla;
using namespace ebla::test;

// A symmetric matrix with its spectrum.
struct Known {
  std::string name;
  CsrMatrix A;
  std::vector<double> eigenvalues;
};

// diag(d).
Known diagonal(const std::string& name, const std::vector<double>& d) {
  HostCsr h;
  h.rows = h.cols = static_cast<int>(d.size());
  h.ptr.push_back(0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    h.col.push_back(static_cast<int>(i));
    h.val.push_back(d[i]);
    h.ptr.push_back(i + 1);
  }
  return {name, make_csr(h), d};
}

// The Laplacian of the path on n vertices times s: eigenvalues s (2 - 2 cos(pi k / n)).
Known path(std::size_t n, double s) {
  HostCsr h;
  h.rows = h.cols = static_cast<int>(n);
  h.ptr.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    const double degree = (i > 0) + (i + 1 < n);
    if (i > 0) h.col.push_back(static_cast<int>(i - 1)), h.val.push_back(-s);
    h.col.push_back(static_cast<int>(i)), h.val.push_back(degree * s);
    if (i + 1 < n) h.col.push_back(static_cast<int>(i + 1)), h.val.push_back(-s);
    h.ptr.push_back(h.col.size());
  }
  std::vector<double> lambda;
  for (std::size_t k = 0; k < n; ++k) lambda.push_back(s * (2 - 2 * std::cos(M_PI * static_cast<double>(k) / n)));
  char name[64];
  std::snprintf(name, sizeof name, "path Laplacian n = %zu times %g", n, s);
  return {name, make_csr(h), lambda};
}

// diag(top, top (1 - gap), then values in [0, top / 2)), scaled by s.
Known gapped(std::size_t n, double gap, double s, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 0.5);
  std::vector<double> d{s, s * (1 - gap)};
  while (d.size() < n) d.push_back(s * u(g));
  std::shuffle(d.begin(), d.end(), g);
  char name[64];
  std::snprintf(name, sizeof name, "diag, gap %g, scale %g", gap, s);
  return diagonal(name, d);
}

// ||A x - lambda x|| in binary128.
double quad_residual(const CsrMatrix& A, ConstVector x, double lambda) {
  const HostCsr h = to_host(A);
  const std::vector<double> v = to_host(x);
  __float128 sum = 0;
  for (int i = 0; i < h.rows; ++i) {
    __float128 r = -static_cast<__float128>(lambda) * v[i];
    for (std::size_t k = h.ptr[i]; k < h.ptr[i + 1]; ++k) r += static_cast<__float128>(h.val[k]) * v[h.col[k]];
    sum += r * r;
  }
  return std::sqrt(static_cast<double>(sum));
}

double norm(ConstVector x) {
  double s = 0;
  for (double v : to_host(x)) s += v * v;
  return std::sqrt(s);
}

PowerOptions options(const StoragePolicy& s, double tolerance, int max_iterations) {
  PowerOptions o;
  o.storage = s;
  o.tolerance = tolerance;
  o.max_iterations = max_iterations;
  return o;
}

std::vector<StoragePolicy> every_policy() {
  std::vector<StoragePolicy> all;
  for (Storage s : storage_formats()) all.push_back(StoragePolicy::of(s));
  all.push_back(StoragePolicy::automatic());
  return all;
}

TEST(PowerStorage, EveryFormatCertifiesItsEigenvalue) {
  // scales 2^-160 and 2^600: unscaled, the first underflows binary16, bfloat16 and binary32,
  // the second overflows all three
  const std::vector<Known> problems{gapped(3000, 0.05, 1.0, 1), gapped(3000, 0.05, 0x1p-160, 2),
                                    gapped(3000, 0.05, 0x1p600, 3), path(300, 1.0), path(300, 0x1p-200)};
  int checked = 0;
  for (const Known& k : problems) {
    const double top = *std::max_element(k.eigenvalues.begin(), k.eigenvalues.end());
    for (const StoragePolicy& s : every_policy()) {
      const std::string what = k.name + ", storage " + to_string(s);
      const PowerResult r =
          power_method(CsrOperator(k.A), random_unit_vector(k.eigenvalues.size(), 7), DotPolicy::exact(),
                       options(s, 1e-6 * top, 400));
      ASSERT_NE(r.status, SolverStatus::breakdown) << what << ": " << r.stop_reason;
      ASSERT_TRUE(std::isfinite(r.eigenvalue) && std::isfinite(r.residual)) << what;
      EXPECT_NEAR(norm(r.eigenvector), 1.0, 1e-12) << what;
      // the reported residual is the pair's own (double-double against binary128)
      const double exact = quad_residual(k.A, r.eigenvector, r.eigenvalue);
      EXPECT_NEAR(r.residual, exact, 1e-10 * exact + 1e-300) << what;
      // and an eigenvalue lies within it (the eigenvalues as doubles: 4 u |lambda| of room)
      double nearest = INFINITY;
      for (double l : k.eigenvalues) nearest = std::min(nearest, std::fabs(r.eigenvalue - l));
      EXPECT_LE(nearest, r.residual * (1 + 1e-10) + 0x1p-51 * std::fabs(r.eigenvalue)) << what;
      EXPECT_EQ(r.storage, to_string(s)) << what;
      if (s.narrow()) {
        EXPECT_GT(r.bytes_moved, 0) << what;  // binary64: the plain method
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 35);
}

// Rounding the stored iterate to binary32 perturbs directions by about 2^-24 each step; on
// problems that converge in tens of iterations the count and the eigenvalue stay.
TEST(PowerStorage, Binary32AndAutoKeepTheBinary64Method) {
  const CsrOperator L(graph_laplacian(20000, 10, 1));
  const StencilOperator S(24, 24, 24);
  for (int op = 0; op < 2; ++op) {
    const std::size_t n = op == 0 ? 20000 : 24 * 24 * 24;
    const double tau = op == 0 ? 1e-6 : 1e-4;  // the stencil's top eigenvalues are close
    auto run = [&](const StoragePolicy& s) {
      const PowerOptions o = options(s, tau, 3000);
      return op == 0 ? power_method(L, random_unit_vector(n, 3), DotPolicy::exact(), o)
                     : power_method(S, random_unit_vector(n, 3), DotPolicy::exact(), o);
    };
    const PowerResult exact = run(StoragePolicy{});
    ASSERT_EQ(exact.status, SolverStatus::converged);
    for (const StoragePolicy& s : {StoragePolicy::of(Storage::binary32), StoragePolicy::automatic()}) {
      const PowerResult r = run(s);
      EXPECT_EQ(r.status, SolverStatus::converged) << to_string(s);
      EXPECT_LE(std::abs(r.iterations - exact.iterations), 1) << to_string(s);
      EXPECT_LE(std::fabs(r.eigenvalue - exact.eigenvalue), tau) << to_string(s);
      // auto stays in binary32 here: the rounding is far below every change it must tell
      for (const PowerIteration& it : r.history) EXPECT_EQ(it.storage, Storage::binary32) << to_string(s);
      EXPECT_TRUE(r.events.empty() || r.events.front().what.find("exact in") != std::string::npos);
    }
  }
}

// 0.7 diag(1, 1 - 1e-3, ...): rho^2 = (1 - 1e-3)^2 per step, thousands of iterations; asked
// for 1e-13, the bound on how far binary32's rounding of the iterate moves lambda passes
// tau / 8 before the end, so auto must give up binary32 and still end within tau of the
// binary64 method. (With lambda_1 = 1 the rounding of the dominant entry would be exact.)
TEST(PowerStorage, AutoFallsBackWhereBinary32WouldShow) {
  const Known k = gapped(1000, 1e-3, 0.7, 5);
  const double tau = 1e-13;
  const PowerOptions o = options(StoragePolicy::automatic(), tau, 40000);
  const PowerResult r = power_method(CsrOperator(k.A), random_unit_vector(1000, 9), DotPolicy::exact(), o);
  PowerOptions plain = o;
  plain.storage = {};
  const PowerResult exact = power_method(CsrOperator(k.A), random_unit_vector(1000, 9), DotPolicy::exact(), plain);
  ASSERT_EQ(exact.status, SolverStatus::converged);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.stop_reason;
  bool fell_back = false;
  for (const SolverEvent& e : r.events) fell_back |= e.what.find("binary32 -> binary64") != std::string::npos;
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(r.history.front().storage, Storage::binary32);
  EXPECT_EQ(r.history.back().storage, Storage::binary64);
  EXPECT_LE(std::fabs(r.eigenvalue - 0.7), r.residual * (1 + 1e-10) + 1e-15);
  EXPECT_LE(std::fabs(r.eigenvalue - exact.eigenvalue), 10 * tau);
}

TEST(PowerStorage, RefusesWhatItCannotRun) {
  const auto x0 = vec({1, 1});
  auto message = [&](const auto& A, const PowerOptions& o) {
    try {
      power_method(A, x0, DotPolicy::exact(), o);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  PowerOptions o = options(StoragePolicy::of(Storage::binary32), 1e-8, 10);
  EXPECT_NE(message(DenseOperator(dense_view({{2, 0}, {0, 1}})), o).find("csr or stencil"), std::string::npos);
  const CsrOperator A(csr_from_dense({{2, 0}, {0, 1}}));
  o.storage = StoragePolicy::of(Storage::binary32, Storage::binary64);
  EXPECT_NE(message(A, o).find("one format"), std::string::npos);
  o.storage = StoragePolicy::automatic();
  o.record_levels = true;
  EXPECT_NE(message(A, o).find("ladder"), std::string::npos);
}

}  // namespace

// Test problems from a ProblemSpec: each source and operator at small sizes (sizes, the
// vectors that go with the problem, b = A x*), and a bad spec or file -> InvalidArgument
// naming the field and the value.
#include <ebla/solvers/problem_spec.hpp>

#include <ebla/core/error.hpp>

#include "util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace {

using ebla::OperatorKind;
using ebla::ProblemSource;
using ebla::ProblemSpec;
using ebla::ProblemUse;
using ebla::test::contains;
using ebla::test::error_of;
using ebla::test::host;

const std::string matrices = std::string(EBLA_DATA_DIR) + "/matrices";
const std::string test_data = std::string(EBLA_DATA_DIR) + "/../tests/apps/data";

ProblemSpec grid(int nx, int ny, int nz, OperatorKind op = OperatorKind::csr) {
  ProblemSpec s;
  s.nx = nx;
  s.ny = ny;
  s.nz = nz;
  s.op = op;
  return s;
}

ProblemSpec laplacian(std::size_t n, double degree, double shift) {
  ProblemSpec s;
  s.source = ProblemSource::laplacian;
  s.n = n;
  s.degree = degree;
  s.shift = shift;
  return s;
}

// A x, on the problem's own operator.
std::vector<double> times_a(const ebla::Problem& p, ebla::ConstVector x) {
  ebla::Vector y("y", p.n);
  std::visit([&](const auto& A) { A.apply(x, y); }, p.op);
  return host(y);
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

TEST(ProblemSpec, HpccgForCgIsAOnesWithZeroStart) {
  const ebla::Problem p = ebla::load_problem(grid(3, 4, 2), ProblemUse::cg);
  EXPECT_EQ(p.name, "hpccg");
  EXPECT_EQ(p.operator_name, "csr");
  EXPECT_EQ(p.n, 24u);
  EXPECT_EQ(p.nx * p.ny * p.nz, 24);
  EXPECT_TRUE(std::holds_alternative<ebla::CsrOperator>(p.op));
  EXPECT_EQ(p.x_exact_source, "1");
  EXPECT_EQ(host(p.x_exact), std::vector<double>(24, 1.0));
  EXPECT_EQ(host(p.x0), std::vector<double>(24, 0.0));
  EXPECT_EQ(host(p.b), times_a(p, p.x_exact));  // integer sums: exact
}

TEST(ProblemSpec, StencilAndDenseOperatorsApplyTheSameMatrix) {
  const ebla::Problem csr = ebla::load_problem(grid(3, 3, 3), ProblemUse::cg);
  const ebla::Problem stencil = ebla::load_problem(grid(3, 3, 3, OperatorKind::stencil), ProblemUse::cg);
  const ebla::Problem dense = ebla::load_problem(grid(3, 3, 3, OperatorKind::dense), ProblemUse::cg);
  EXPECT_TRUE(std::holds_alternative<ebla::StencilOperator>(stencil.op));
  EXPECT_TRUE(std::holds_alternative<ebla::DenseOperator>(dense.op));
  EXPECT_EQ(stencil.nnz, csr.nnz);
  EXPECT_EQ(host(stencil.b), host(csr.b));
  EXPECT_EQ(host(dense.b), host(csr.b));
}

ProblemSpec diffusion(int nx, int ny, int nz, std::uint64_t seed, OperatorKind op = OperatorKind::csr) {
  ProblemSpec s = grid(nx, ny, nz, op);
  s.source = ProblemSource::diffusion;
  s.seed = seed;
  return s;
}

TEST(ProblemSpec, DiffusionForCgIsAOnesWithZeroStart) {
  const ebla::Problem p = ebla::load_problem(diffusion(4, 3, 5, 2), ProblemUse::cg);
  EXPECT_EQ(p.name, "diffusion");
  EXPECT_TRUE(contains(p.description, "of seed 2, on a 4 x 3 x 5 grid"));
  EXPECT_EQ(p.n, 60u);
  EXPECT_EQ(p.nnz, 60u + 2u * (3u * 15u + 4u * 2u * 5u + 12u * 4u));
  EXPECT_EQ(p.nx * 100 + p.ny * 10 + p.nz, 435);
  EXPECT_EQ(p.x_exact_source, "1");
  EXPECT_EQ(host(p.x0), std::vector<double>(60, 0.0));
  EXPECT_EQ(host(p.b), times_a(p, p.x_exact));  // entries on a grid of 2^-38: exact sums
  const ebla::Problem dense = ebla::load_problem(diffusion(4, 3, 5, 2, OperatorKind::dense), ProblemUse::cg);
  EXPECT_EQ(host(dense.b), host(p.b));
  EXPECT_EQ(times_a(dense, p.x_exact), host(p.b));
  const ebla::Problem power = ebla::load_problem(diffusion(4, 3, 5, 2), ProblemUse::power);
  EXPECT_EQ(power.b.extent(0), 0u);
  EXPECT_EQ(power.x0_source, "random unit vector, seed 2");
  EXPECT_NE(host(ebla::load_problem(diffusion(4, 3, 5, 3), ProblemUse::cg).b), host(p.b));  // another k
}

TEST(ProblemSpec, PowerStartsFromTheSeedsUnitVector) {
  ProblemSpec s = laplacian(200, 6, 0);
  s.seed = 5;
  const ebla::Problem p = ebla::load_problem(s, ProblemUse::power);
  EXPECT_EQ(p.n, 200u);
  EXPECT_EQ(p.b.extent(0), 0u);  // the power method needs no b
  EXPECT_NEAR(norm(host(p.x0)), 1.0, 1e-14);
  EXPECT_EQ(p.x0_source, "random unit vector, seed 5");
  EXPECT_EQ(host(p.x0), host(ebla::load_problem(s, ProblemUse::power).x0));  // the same seed, the same vector
}

TEST(ProblemSpec, ShiftedLaplacianForCgHasARandomSolution) {
  const ebla::Problem p = ebla::load_problem(laplacian(300, 8, 0.5), ProblemUse::cg);
  EXPECT_TRUE(contains(p.description, "plus 0.5 I"));
  EXPECT_EQ(p.b_source, "A x*");
  const std::vector<double> x = host(p.x_exact);
  EXPECT_NEAR(norm(x), std::sqrt(300.0), 1e-10);  // sqrt(n) times a unit vector
  EXPECT_EQ(host(p.b), times_a(p, p.x_exact));
}

TEST(ProblemSpec, MatrixMarketWithRightHandSide) {
  ProblemSpec s;
  s.source = ProblemSource::matrix;
  s.matrix = matrices + "/hpccg_2x2x2.mtx";
  s.rhs = matrices + "/hpccg_2x2x2_b.mtx";
  const ebla::Problem p = ebla::load_problem(s, ProblemUse::cg);
  EXPECT_EQ(p.name, "matrix");
  EXPECT_EQ(p.n, 8u);
  EXPECT_EQ(p.nnz, 64u);
  EXPECT_EQ(p.b_source, "file " + s.rhs);
  EXPECT_TRUE(p.x_exact_source.empty());  // b from a file: x* unknown
}

TEST(ProblemSpec, Hdf5FileWithB) {
  ProblemSpec s;
  s.source = ProblemSource::hdf5;
  s.hdf5 = test_data + "/spd3.h5";
  const ebla::Problem p = ebla::load_problem(s, ProblemUse::cg);
  EXPECT_EQ(p.n, 3u);
  EXPECT_EQ(p.b_source, s.hdf5 + " /b");
}

TEST(ProblemSpec, BadSpecsNameTheFieldAndTheValue) {
  const auto error = [](const ProblemSpec& s, ProblemUse use = ProblemUse::cg) {
    return error_of([&] { ebla::check_problem_spec(s, use); });
  };
  EXPECT_EQ(error(grid(4, 0, 4)), "ebla::ProblemSpec::ny: 0 is not a positive size");
  EXPECT_TRUE(contains(error(grid(2000, 2000, 2000)), "ebla::ProblemSpec::nx: grid 2000 x 2000 x 2000 has"));
  EXPECT_TRUE(contains(error(laplacian(1, 1, 1)), "ebla::ProblemSpec::n: 1 is not a number of vertices"));
  EXPECT_TRUE(contains(error(laplacian(100, 200, 1)), "ebla::ProblemSpec::degree: mean degree 200 is outside"));
  EXPECT_TRUE(contains(error(laplacian(100, 5, -1)), "ebla::ProblemSpec::shift: -1 is not a nonnegative"));
  EXPECT_TRUE(contains(error(laplacian(100, 5, 0)), "ebla::ProblemSpec::problem laplacian: a graph Laplacian is singular"));
  EXPECT_EQ(error(laplacian(100, 5, 0), ProblemUse::power), "(no InvalidArgument thrown)");
  ProblemSpec stencil = laplacian(100, 5, 1);
  stencil.op = OperatorKind::stencil;
  EXPECT_TRUE(contains(error(stencil), "ebla::ProblemSpec::operator: stencil is HPCCG's 27-point stencil"));
  EXPECT_TRUE(contains(error(grid(20, 20, 20, OperatorKind::dense)), "ebla::ProblemSpec::operator: dense: n = 8000 exceeds 5000"));
  EXPECT_EQ(error(diffusion(0, 2, 2, 1)), "ebla::ProblemSpec::nx: 0 is not a positive size");
  EXPECT_TRUE(contains(error(diffusion(2000, 2000, 2000, 1)), "ebla::ProblemSpec::nx: grid 2000 x 2000 x 2000 has"));
  EXPECT_TRUE(contains(error(diffusion(4, 4, 4, 1, OperatorKind::stencil)),
                       "ebla::ProblemSpec::operator: stencil is HPCCG's 27-point stencil: only for hpccg, not for diffusion"));
  EXPECT_TRUE(contains(error(diffusion(20, 20, 20, 1, OperatorKind::dense)), "dense: n = 8000 exceeds 5000"));
  EXPECT_TRUE(contains(error(diffusion(1290, 1290, 1290, 1)),
                       "the 1290 x 1290 x 1290 diffusion grid (csr operator) needs about"));
  ProblemSpec named = grid(-3, 2, 2);
  named.name_field = [](const std::string& field) { return "my --" + field; };
  EXPECT_EQ(error(named), "my --nx: -3 is not a positive size");
}

TEST(ProblemSpec, BadFilesNameTheFile) {
  ProblemSpec s;
  s.source = ProblemSource::matrix;
  s.matrix = "/nonexistent/A.mtx";
  const std::string missing = error_of([&] { ebla::load_problem(s, ProblemUse::cg); });
  EXPECT_TRUE(contains(missing, "ebla::ProblemSpec::matrix"));
  EXPECT_TRUE(contains(missing, "/nonexistent/A.mtx"));
  s.matrix = test_data + "/spd3.mtx";
  s.rhs = test_data + "/vector2.mtx";
  EXPECT_TRUE(contains(error_of([&] { ebla::load_problem(s, ProblemUse::cg); }),
                       "ebla::ProblemSpec::rhs: '" + s.rhs + "' has 2 entries, but A has 3 rows"));
  s.rhs.clear();
  s.matrix = test_data + "/nonsymmetric.mtx";
  EXPECT_TRUE(contains(error_of([&] { ebla::load_problem(s, ProblemUse::cg); }), "CG needs a symmetric"));
  const ebla::Problem p = ebla::load_problem(s, ProblemUse::power);  // a warning for the power method
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_TRUE(contains(p.warnings[0], "the power method still runs"));
}

TEST(ProblemSpec, MaxDifference) {
  EXPECT_EQ(ebla::max_difference(ebla::test::vec({1, 2, 3}), ebla::test::vec({1, 2.5, 2})), 1.0);
}

}  // namespace

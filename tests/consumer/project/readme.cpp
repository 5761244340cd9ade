// The C++ examples of README.md, whole: each part between "README: begin" and "README: end"
// is a block of the README as shown there (tests/apps/doc_snippets.py compares them), and
// this program, built against an installed ebla, runs them and checks what they compute.
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("readme_cxx: FAILED: %s\n", what);
    ++failures;
  }
}

// x_i = 1 / (i + 1), y_i = (-1)^i: a dot product with cancellation.
void qdot_example(std::size_t n) {
  Kokkos::View<double*> x("x", n), y("y", n);
  Kokkos::parallel_for(
      "readme x, y", n, KOKKOS_LAMBDA(const std::size_t i) {
        x(i) = 1.0 / static_cast<double>(i + 1);
        y(i) = i % 2 == 0 ? 1.0 : -1.0;
      });
  double exact = 0;  // sum of (-1)^i / (i + 1), in reverse for accuracy
  for (std::size_t i = n; i-- > 0;) exact += (i % 2 == 0 ? 1.0 : -1.0) / static_cast<double>(i + 1);
  // README: begin
#include <ebla/kernels/qdot.hpp>

ebla::QdotOptions opt;  opt.tolerance = 1e-8;           // budget policy, default ladder
ebla::QdotResult r = ebla::qdot(x, y, opt);             // x, y: Kokkos views or pointers + n
std::printf("%g +- %g, %zu components perforated\n", r.value, r.bound, r.stats.count_per_level.back());
double h = ebla::round_to(0.1, ebla::format_by_name("fp8_e4m3"), ebla::Rounding::nearest_even);
  // README: end
  check(std::fabs(r.value - exact) <= r.bound + 1e-12 * std::fabs(exact), "qdot: |value - x^T y| <= bound");
  check(h == 0.1015625, "round_to(0.1, fp8_e4m3) = 0.1015625");
}

void cg_example() {
  // README: begin
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/problems.hpp>

ebla::HpccgProblem p = ebla::hpccg_problem(100, 100, 10);
ebla::QdotOptions q;  q.tolerance = 1e2;  q.policy = ebla::QdotPolicy::paper;
ebla::CgResult r = ebla::cg(ebla::CsrOperator(p.A), p.b, p.x0, ebla::DotPolicy::approximate(q), {});
std::printf("%s after %d iterations, ||b - Ax|| = %g\n", ebla::to_string(r.status), r.iterations, r.true_residual);
  // README: end
  check(r.status == ebla::SolverStatus::converged && r.true_residual <= 1e-8, "ACG on HPCCG converges");
}

void gemm_example(ebla::HostMatrix A, ebla::HostMatrix B) {
  // README: begin
#include <ebla/kernels/gemm.hpp>

ebla::GemmOptions opt;  opt.tolerance = 1e-5;           // ||C - AB|| <= 1e-5 ||A|| ||B||
ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);     // A, B: ebla::HostMatrix (row-major views)
ebla::GemmResult r = ebla::gemm(A, B, plan);            // r.C, r.normwise_bound, r.bound(i, j)
std::printf("%s: bound %g\n", ebla::describe(plan.config).c_str(), r.normwise_bound);
  // README: end
  check(r.normwise_bound > 0 && r.C.extent(0) == A.extent(0), "gemm: a product with a bound");
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  qdot_example(100000);
  cg_example();
  ebla::HostMatrix A("A", 64, 48), B("B", 48, 32);
  for (std::size_t i = 0; i < A.size(); ++i) A.data()[i] = std::sin(static_cast<double>(i));
  for (std::size_t i = 0; i < B.size(); ++i) B.data()[i] = std::cos(static_cast<double>(i));
  gemm_example(A, B);
  std::printf("readme_cxx: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

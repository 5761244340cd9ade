// Rounds through the installed headers and library, on the host and in a Kokkos kernel,
// and solves an HPCCG problem with approximate CG.
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/quantize.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int failures = 0;
  {
    const ebla::Format half = ebla::format_by_name("binary16");
    const double y = ebla::round_to(0.1, half, ebla::Rounding::nearest_even);
    if (y != 0x1.998p-4) ++failures;
    Kokkos::View<double*> x("x", 3);
    Kokkos::deep_copy(x, 0.1);
    ebla::quantize(x, x, half, ebla::Rounding::toward_zero);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    for (int i = 0; i < 3; ++i)
      if (h(i) != 0x1.998p-4) ++failures;
    std::printf("consumer_cxx: round_to(0.1, binary16) = %a, failures = %d\n", y, failures);
  }
  {
    const ebla::HpccgProblem p = ebla::hpccg_problem(8, 8, 8);
    ebla::QdotOptions q;
    q.tolerance = 1e-4;
    const ebla::CgResult r = ebla::cg(ebla::CsrOperator(p.A), p.b, p.x0, ebla::DotPolicy::approximate(q), {});
    if (r.status != ebla::SolverStatus::converged || !(r.true_residual <= 1e-8)) ++failures;
    std::printf("consumer_cxx: ACG on HPCCG 8x8x8: %d iterations, true residual %.3g\n", r.iterations, r.true_residual);
  }
  Kokkos::finalize();
  return failures == 0 ? 0 : 1;
}

// The installed ebla::mpi: a distributed qdot and a distributed CG on HPCCG stacked in z,
// run under mpiexec.
#include <ebla/mpi/qdot.hpp>
#include <ebla/mpi/solvers.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Kokkos::initialize(argc, argv);
  int failures = 0;
  {
    // sum over the ranks of 1000 products 0.5 * 2: exactly 1000 P
    std::vector<double> x(1000, 0.5), y(1000, 2.0);
    ebla::QdotOptions q;
    q.tolerance = 1e-10;
    const ebla::QdotResult r = ebla::mpi::qdot({x.data(), x.size(), MPI_COMM_WORLD}, {y.data(), y.size(), MPI_COMM_WORLD}, q);
    if (std::fabs(r.value - 1000.0 * ranks) > r.bound) ++failures;
    const ebla::mpi::DistributedStencil A(6, 6, 4, MPI_COMM_WORLD);
    const ebla::Vector b = ebla::mpi::hpccg_rhs(A), x0("x0", A.size());
    const ebla::CgResult c = ebla::mpi::cg(A, b, x0, ebla::DotPolicy::approximate(q), ebla::CgOptions{});
    if (c.status != ebla::SolverStatus::converged) ++failures;
    if (rank == 0)
      std::printf("consumer_mpi on %d ranks: qdot = %.17g, ACG %d iterations, failures = %d\n", ranks, r.value,
                  c.iterations, failures);
  }
  {  // README.md's distributed CG, as shown there (tests/apps/doc_snippets.py compares them)
    ebla::QdotOptions q;
    q.tolerance = 1e2;
    q.policy = ebla::QdotPolicy::paper;
    // README: begin
#include <ebla/mpi/solvers.hpp>

ebla::mpi::DistributedStencil A(100, 100, 10, MPI_COMM_WORLD);   // halo exchange in apply()
ebla::Vector b = ebla::mpi::hpccg_rhs(A), x0("x0", A.size());     // this rank's rows
ebla::CgResult r = ebla::mpi::cg(A, b, x0, ebla::DotPolicy::approximate(q), {});  // one MPI_Allreduce per qdot
    // README: end
    if (r.status != ebla::SolverStatus::converged) ++failures;
    if (rank == 0) std::printf("consumer_mpi: README's ACG on %d ranks: %d iterations\n", ranks, r.iterations);
  }
  {  // docs/mpi.md's distributed qdot, as shown there (tests/apps/doc_snippets.py compares them)
    std::vector<double> xs(500, 0.25), ys(500, -4.0);  // sum over the ranks: exactly -500 P
    double* xp = xs.data();
    double* yp = ys.data();
    const std::size_t local_n = xs.size();
    // docs/mpi.md: begin
#include <ebla/mpi/qdot.hpp>

ebla::mpi::DistributedVector x{xp, local_n, MPI_COMM_WORLD}, y{yp, local_n, MPI_COMM_WORLD};
ebla::QdotOptions opt;  opt.tolerance = 1e-8;
ebla::QdotResult r = ebla::mpi::qdot(x, y, opt);         // collective: 1 MPI_Allreduce
ebla::QdotPlan used;
r = ebla::mpi::qdot(x, y, opt, &used);                   // the same, and the plan it applied
// or, in two phases (a plan to reuse):
//     auto plan = ebla::mpi::qdot_select(x, y, opt);    // 1 MPI_Allreduce
//     r = ebla::mpi::qdot_compute(x, y, plan);          // 1 MPI_Allreduce
    // docs/mpi.md: end
    if (std::fabs(r.value + 500.0 * ranks) > r.bound) ++failures;
    // the plan it applied, applied again in the two-phase form: a value within its own bound
    const ebla::QdotResult again = ebla::mpi::qdot_compute(x, y, used);
    if (std::fabs(again.value + 500.0 * ranks) > again.bound) ++failures;
    if (rank == 0)
      std::printf("consumer_mpi: docs/mpi.md's qdot on %d ranks: %.17g +- %g, again %.17g +- %g\n", ranks, r.value,
                  r.bound, again.value, again.bound);
  }
  {  // docs/mpi.md's distributed ACG, as shown there
    const int nx = 8, ny = 8, nz = 4;
    ebla::QdotOptions q;
    q.tolerance = 1e-10;
    ebla::CgOptions options;
    options.tolerance = 1e-8;
    // docs/mpi.md: begin
#include <ebla/mpi/solvers.hpp>

ebla::mpi::DistributedStencil A(nx, ny, nz, MPI_COMM_WORLD);  // this rank's nx x ny x nz block
ebla::Vector b = ebla::mpi::hpccg_rhs(A), x0("x0", A.size());  // the owned rows only
ebla::CgResult r = ebla::mpi::cg(A, b, x0, ebla::DotPolicy::approximate(q), options);
// or: auto D = ebla::mpi::DistributedCsr::from_global(csr, MPI_COMM_WORLD);
//     ebla::PowerResult e = ebla::mpi::power_method(D, x0_rows, dots, power_options);
    // docs/mpi.md: end
    if (r.status != ebla::SolverStatus::converged) ++failures;
    if (rank == 0) std::printf("consumer_mpi: docs/mpi.md's ACG on %d ranks: %d iterations\n", ranks, r.iterations);
  }
  Kokkos::finalize();
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

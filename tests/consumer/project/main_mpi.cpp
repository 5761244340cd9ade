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
  {  // README.md's distributed CG, as shown there (tests/apps/readme_snippets.py compares them)
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
  Kokkos::finalize();
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

// What the MPI test programs share: the rank, and checks counted per rank and summed at the
// end (a program exits 1 if any check failed on any rank).
#pragma once

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

namespace ebla_mpi_test {

inline int rank = 0, ranks = 1;
inline long checks = 0, failures = 0;

/// MPI_Init, and rank and ranks set (Kokkos is initialised after this, finalised before
/// MPI_Finalize).
inline void start_mpi(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
}

/// Counts a check; a failure is printed with the rank (the first 30 per rank).
inline void check(bool ok, const std::string& what) {
  ++checks;
  if (ok) return;
  ++failures;
  if (failures <= 30) std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
}

/// A double with all its digits.
inline std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// {checks, failures} summed over MPI_COMM_WORLD (through PMPI: not counted by a test
/// that counts collectives).
inline void totals(long out[2]) {
  const long mine[2] = {checks, failures};
  PMPI_Allreduce(mine, out, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
}

/// A test program's main(): MPI, then Kokkos around run() (an exception it throws is a
/// failure that aborts every rank), then "<name> on P ranks: C checks, F failed" from rank 0.
/// Returns the exit code: 0 if every check passed on every rank, else 1.
template <class Run>
int run_program(int argc, char** argv, const char* name, Run run) {
  start_mpi(&argc, &argv);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    try {
      run();
    } catch (const std::exception& e) {
      std::printf("rank %d: FAILED: unexpected exception: %s\n", rank, e.what());
      ++failures;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  long total[2];
  totals(total);
  if (rank == 0) std::printf("%s on %d ranks: %ld checks, %ld failed\n", name, ranks, total[0], total[1]);
  MPI_Finalize();
  return total[1] == 0 ? 0 : 1;
}

}  // namespace ebla_mpi_test

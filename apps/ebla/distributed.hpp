// `ebla cg` and `ebla power` under mpirun: the processes of a run and the distribution of
// a problem over them (docs/mpi.md).
//
// An ebla built with EBLA_ENABLE_MPI joins MPI when it was started by mpirun / mpiexec
// (Open MPI's OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment), before it
// parses its options; otherwise it runs as one process, as an ebla built without MPI does.
// The ranks first check that they were given the same options; cg and power then run
// distributed, any other command on rank 0 alone. Rank 0 prints and writes the output file;
// the other ranks print only errors. An error on any rank of a distributed run aborts all
// of them (MPI_Abort with exit code 2 for bad input): no rank is left waiting in a collective.
#pragma once

#include "solver_common.hpp"

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace ebla::cli {

struct Processes {
  int rank = 0, ranks = 1;
  bool mpi = false;   ///< MPI was initialised (by start_processes)
  bool solo = false;  ///< the command runs on rank 0 alone (every command but cg and power)
};

/// Joins MPI if started by a launcher (see above; at most once), silences stdout and the
/// log on ranks other than 0, and returns the processes of the run.
const Processes& start_processes();
/// The processes of the run (one, until start_processes joined MPI).
const Processes& processes();
/// Under mpirun: true if every rank was given the same arguments as rank 0, ignoring the
/// program's path and --kokkos-num-threads (one collective, before any other). Otherwise
/// rank 0 logs its command line and each rank that differs logs its own, and all return
/// false. True on one process.
bool same_options_on_every_rank(int argc, const char* const* argv);
/// Marks the run as not distributed: rank 0 runs the command, the other ranks end.
void run_on_rank0_alone();
/// Exit with `code`: a plain return value on one process; on several ranks of a distributed
/// run, prints nothing more and aborts every rank with that code.
int finish_with(int code);

/// This rank's rows of the problem (ebla::mpi::load_problem on MPI_COMM_WORLD, its warnings
/// logged). Only with processes().ranks > 1.
RunProblem load_distributed_problem(const ProblemSpec& spec, Solver s);
#ifdef EBLA_WITH_MPI
template <class Op>
constexpr bool distributed_operator = std::is_same_v<Op, mpi::DistributedStencil> || std::is_same_v<Op, mpi::DistributedCsr>;
inline mpi::QdotCollectives qdot_collectives(int c) { return c == 2 ? mpi::QdotCollectives::two : mpi::QdotCollectives::one; }
#endif

/// The solvers on any operator of a Problem: the serial ones, or under mpirun the
/// distributed ones with qdot in `collectives` (1 or 2) MPI_Allreduce.
template <class Op>
CgResult solve_cg(const Op& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o,
                  [[maybe_unused]] int collectives) {
#ifdef EBLA_WITH_MPI
  if constexpr (distributed_operator<Op>) return mpi::cg(A, b, x0, dots, o, qdot_collectives(collectives));
  else
#endif
  return cg(A, b, x0, dots, o);
}
template <class Op>
PowerResult solve_power(const Op& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o,
                        [[maybe_unused]] int collectives) {
#ifdef EBLA_WITH_MPI
  if constexpr (distributed_operator<Op>) return mpi::power_method(A, x0, dots, o, qdot_collectives(collectives));
  else
#endif
  return power_method(A, x0, dots, o);
}

/// max over the ranks.
double global_max(double v);
/// Gathers a per-row map to rank 0 (rank order: the global map), empty elsewhere.
void gather_to_root(std::vector<std::uint8_t>& map);
/// Under mpirun the rung maps `a` and `b` of every iteration gathered to rank 0 (if recorded).
template <class Result, class Iteration>
void gather_levels(Result& r, bool recorded, std::vector<std::uint8_t> Iteration::*a,
                   std::vector<std::uint8_t> Iteration::*b) {
  if (!recorded) return;
  for (Iteration& it : r.history) {
    gather_to_root(it.*a);
    gather_to_root(it.*b);
  }
}

}  // namespace ebla::cli

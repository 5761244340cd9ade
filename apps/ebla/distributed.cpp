#include "distributed.hpp"

#include <ebla/core/error.hpp>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef EBLA_WITH_MPI
#include <ebla/mpi/problem.hpp>

#include <mpi.h>
#endif

namespace ebla::cli {

namespace {

Processes& state() {
  static Processes p;
  return p;
}

#ifdef EBLA_WITH_MPI
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
#endif

}  // namespace

const Processes& processes() { return state(); }

const Processes& start_processes() {
#ifdef EBLA_WITH_MPI
  Processes& p = state();
  if (p.mpi || !launched_by_mpirun()) return p;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw std::runtime_error("MPI_Init failed");
    std::atexit(finalize_at_exit);
  }
  p.mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p.ranks);
  if (p.rank > 0) {  // rank 0 speaks for the run; the others report errors only
    if (std::freopen("/dev/null", "w", stdout) == nullptr) throw std::runtime_error("cannot silence stdout");
    spdlog::set_level(spdlog::level::err);
  }
  if (p.ranks > 1) spdlog::default_logger()->set_pattern("ebla (rank " + std::to_string(p.rank) + "): %^%l%$: %v");
  return p;
#else
  return state();
#endif
}

#ifdef EBLA_WITH_MPI
namespace {
// FNV-1a over the arguments that decide what a run computes: all but argv[0] (the path
// of the program) and --kokkos-num-threads N (a rank's threads), each with a 0 byte after it.
std::uint64_t options_fingerprint(int argc, const char* const* argv) {
  std::uint64_t h = 14695981039346656037ull;
  const auto add = [&h](const char* s) {
    for (const char* c = s;; ++c) {
      h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
      if (*c == '\0') break;
    }
  };
  const std::string threads = "--kokkos-num-threads";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == threads) {
      ++i;  // and its value
      continue;
    }
    if (arg.compare(0, threads.size() + 1, threads + "=") == 0) continue;
    add(argv[i]);
  }
  return h;
}
}  // namespace
#endif

bool same_options_on_every_rank([[maybe_unused]] int argc, [[maybe_unused]] const char* const* argv) {
#ifdef EBLA_WITH_MPI
  const Processes& P = processes();
  if (!P.mpi || P.ranks == 1) return true;
  const std::uint64_t mine = options_fingerprint(argc, argv);
  std::uint64_t low_high[2] = {mine, ~mine};  // min of ~h is ~(max of h): one collective
  MPI_Allreduce(MPI_IN_PLACE, low_high, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (low_high[0] == ~low_high[1]) return true;
  std::uint64_t root = mine;
  MPI_Bcast(&root, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (P.rank == 0)
    spdlog::error("the ranks were started with different options (every rank must be given the same ones; "
                  "only --kokkos-num-threads may differ): rank 0 runs '{}'",
                  command_line());
  else if (mine != root)
    spdlog::error("rank {} runs '{}', not rank 0's options", P.rank, command_line());
  return false;
#else
  return true;
#endif
}

void run_on_rank0_alone() { state().solo = true; }

int finish_with(int code) {
#ifdef EBLA_WITH_MPI
  if (state().mpi && state().ranks > 1 && !state().solo && code != 0) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);  // the others may wait in a collective: end them too
  }
#endif
  return code;
}

#ifdef EBLA_WITH_MPI

RunProblem load_distributed_problem(const ProblemSpec& spec, Solver s) {
  mpi::DistributedProblem d = mpi::load_problem(spec, use_of(s), MPI_COMM_WORLD);
  for (const std::string& w : d.warnings) spdlog::warn("{}", w);
  RunProblem p;
  p.op = std::visit([](const auto& A) { return AnyOperator(A); }, d.op);
  static_cast<ProblemData&>(p) = std::move(d);
  return p;
}

double global_max(double v) { return processes().mpi ? mpi::global_max(v, MPI_COMM_WORLD) : v; }

void gather_to_root(std::vector<std::uint8_t>& map) {
  if (processes().mpi) mpi::gather_to_root(map, MPI_COMM_WORLD);
}

#else

RunProblem load_distributed_problem(const ProblemSpec& spec, Solver s) { return load_serial_problem(spec, s); }
double global_max(double v) { return v; }
void gather_to_root(std::vector<std::uint8_t>&) {}

#endif

}  // namespace ebla::cli

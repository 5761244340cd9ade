#include "distributed.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/problems.hpp>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef EBLA_WITH_MPI
#include <ebla/mpi/solvers.hpp>

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

// Rows [first, first + count) of v, in a view of their own.
Vector rows(ConstVector v, std::size_t first, std::size_t count) {
  Vector r(std::string(v.label()) + " (owned rows)", count);
  Kokkos::deep_copy(r, Kokkos::subview(v, Kokkos::make_pair(first, first + count)));
  return r;
}

void keep_rows(Vector& v, std::size_t first, std::size_t count) {
  if (v.extent(0) > 0) v = rows(v, first, count);
}

// HPCCG stacked in z on the operator A of this rank's planes: sizes, and the vectors on the
// owned rows (for cg b = A 1, exact: integer sums; x0 = 0; the solution 1; for power the
// rows of the serial run's random unit start vector).
template <class Op>
void set_hpccg(RunProblem& p, const Op& A, const char* operator_name, const ProblemSpec& spec, Solver s) {
  p.name = "hpccg";
  p.operator_name = operator_name;
  p.n = A.global_size();
  p.nnz = A.nonzeros();
  p.nx = spec.nx;
  p.ny = spec.ny;
  p.nz = spec.nz;
  if (s == Solver::cg) {
    p.x_exact = Vector("ebla ones", A.size());
    Kokkos::deep_copy(p.x_exact, 1.0);
    p.x_exact_source = "1";
    p.b = Vector("ebla hpccg b", A.size());
    A.apply(p.x_exact, p.b);
    p.b_source = "A 1 (HPCCG)";
    p.x0 = Vector("ebla x0", A.size());
    p.x0_source = "0";
  } else {
    p.x0 = rows(random_unit_vector(p.n, spec.seed), A.first_row(), A.size());
    p.x0_source = "random unit vector, seed " + std::to_string(spec.seed);
  }
  p.op = A;
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
  const Processes& P = processes();
  const char* how = "";
  if (spec.op == OperatorKind::dense)
    throw_invalid(option_name(s, "--operator"), "dense is not distributed: use csr (or stencil for hpccg) under mpirun");
  RunProblem p;
  if (spec.source == ProblemSource::hpccg) {
    // each rank builds its own planes, matrix-free or as rows with global columns
    const int gz = spec.nz * P.ranks;
    if (spec.op == OperatorKind::stencil) {
      set_hpccg(p, mpi::DistributedStencil(spec.nx, spec.ny, spec.nz, MPI_COMM_WORLD), "stencil", spec, s);
    } else {
      const std::size_t first = static_cast<std::size_t>(spec.nx) * spec.ny * spec.nz * P.rank;
      set_hpccg(p,
                mpi::DistributedCsr(hpccg_rows(spec.nx, spec.ny, gz, spec.nz * P.rank, spec.nz), first,
                                    static_cast<std::size_t>(spec.nx) * spec.ny * gz, MPI_COMM_WORLD),
                "csr", spec, s);
    }
    p.description = strf("HPCCG 27-point stencil on a %d x %d x %d grid", spec.nx, spec.ny, gz);
    how = "ranks stacked in z";
  } else {
    // the serial problem on every rank, then each keeps its rows
    p = load_serial_problem(spec, s);
    const auto& csr = std::get<CsrOperator>(p.op);
    const mpi::DistributedCsr A = mpi::DistributedCsr::from_global(csr.matrix(), MPI_COMM_WORLD);
    for (Vector* v : {&p.b, &p.x0, &p.x_exact}) keep_rows(*v, A.first_row(), A.size());
    p.op = A;
    how = "rows in blocks";
  }
  p.description += strf(", on %d MPI ranks (%s)", P.ranks, how);
  return p;
}

double global_max(double v) {
  if (!processes().mpi) return v;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

void gather_to_root(std::vector<std::uint8_t>& map) {
  const Processes& P = processes();
  if (!P.mpi || P.ranks == 1) return;
  int mine = static_cast<int>(map.size());
  std::vector<int> counts(P.rank == 0 ? P.ranks : 0), offsets(counts.size(), 0);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<std::uint8_t> all;
  if (P.rank == 0) {
    for (int r = 1; r < P.ranks; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + counts.back()));
  }
  MPI_Gatherv(map.data(), mine, MPI_UINT8_T, all.data(), counts.data(), offsets.data(), MPI_UINT8_T, 0, MPI_COMM_WORLD);
  map = std::move(all);
}

#else

RunProblem load_distributed_problem(const ProblemSpec& spec, Solver s) { return load_serial_problem(spec, s); }
double global_max(double v) { return v; }
void gather_to_root(std::vector<std::uint8_t>&) {}

#endif

}  // namespace ebla::cli

// Distributed CG on HPCCG stacked in z, and the dot products it takes, under mpirun:
//   mpirun -np P bench_mpi [Google Benchmark options]
//
// Problem: every rank owns a 100 x 100 x 100 block (--nx/--ny/--nz change it) of the global
// 100 x 100 x (100 P) grid, with the matrix-free stencil (ebla::mpi::DistributedStencil,
// one plane exchanged with each neighbour per product); b = A 1, x0 = 0.
//  - cg_exact, acg_qdot, acg_qdot_two: ebla::mpi::cg with exact dots, with qdot (tolerance
//    1e-6, budget policy) in one MPI_Allreduce per dot, and in two; 20 iterations per solve
//    (tolerance 1e-300: never met); the time shown is per CG iteration (the solve's
//    iteration time / 20, the largest over the ranks);
//  - dot_plain_mpi: the plain distributed dot product (KokkosBlas::dot of the owned block,
//    then MPI_Allreduce of one double), on r and p of the exact run after 20 iterations;
//  - dot_qdot_mpi, dot_qdot_two_mpi: ebla::mpi::qdot on the same vectors (tolerance 1e-6), and
//    qdot_select then qdot_compute;
//  - stencil_apply: one distributed product A p (halo exchange included).
// Every benchmark runs a fixed number of iterations, the same on every rank (the ranks
// must take part in the same collectives), with the time of one iteration the largest over
// the ranks (manual time); 5 repetitions, medians shown. Only rank 0 reports.
#include <ebla/mpi/problem.hpp>  // global_max
#include <ebla/mpi/qdot.hpp>
#include <ebla/mpi/solvers.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace {

int nx = 100, ny = 100, nz = 100;
constexpr int cg_iterations = 20;

struct Setup {
  ebla::mpi::DistributedStencil A{nx, ny, nz, MPI_COMM_WORLD};
  ebla::Vector b = ebla::mpi::hpccg_rhs(A);
  ebla::Vector x0{"x0", A.size()};
  ebla::Vector r, p, q{"q", A.size()};
  Setup() {
    ebla::CgOptions o;
    o.tolerance = 1e-300;
    o.max_iterations = cg_iterations;
    const ebla::CgResult res = ebla::mpi::cg(A, b, x0, ebla::DotPolicy::exact(), o);
    r = ebla::Vector("r", A.size());  // b - A x as the vector of the dot products, p = A r
    A.apply(res.x, q);
    Kokkos::parallel_for(
        "r", A.size(), KOKKOS_LAMBDA(const std::size_t i) { r(i) = b(i) - q(i); });
    p = ebla::Vector("p", A.size());
    A.apply(r, p);
  }
};
std::unique_ptr<Setup> setup;

// The time of the slowest rank.
double slowest(double seconds) { return ebla::mpi::global_max(seconds, MPI_COMM_WORLD); }

template <class F>
void timed(benchmark::State& state, F f) {
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    state.SetIterationTime(slowest(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
}

void solve(benchmark::State& state, const ebla::DotPolicy& dots,
           ebla::mpi::QdotCollectives collectives = ebla::mpi::QdotCollectives::one) {
  ebla::CgOptions o;
  o.tolerance = 1e-300;
  o.max_iterations = cg_iterations;
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const ebla::CgResult res = ebla::mpi::cg(setup->A, setup->b, setup->x0, dots, o, collectives);
    state.SetIterationTime(slowest(res.iteration_seconds / res.iterations));
  }
  state.counters["ranks"] = [] { int n; MPI_Comm_size(MPI_COMM_WORLD, &n); return n; }();
  state.counters["rows_per_rank"] = static_cast<double>(setup->A.size());
}

ebla::QdotOptions qdot_options() {
  ebla::QdotOptions q;
  q.tolerance = 1e-6;
  return q;
}

void cg_exact(benchmark::State& state) { solve(state, ebla::DotPolicy::exact()); }
void acg_qdot(benchmark::State& state) { solve(state, ebla::DotPolicy::approximate(qdot_options())); }
void acg_qdot_two(benchmark::State& state) {
  solve(state, ebla::DotPolicy::approximate(qdot_options()), ebla::mpi::QdotCollectives::two);
}

void dot_plain_mpi(benchmark::State& state) {
  timed(state, [] {
    double v = KokkosBlas::dot(setup->r, setup->p);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    benchmark::DoNotOptimize(v);
  });
}

void dot_qdot_mpi(benchmark::State& state) {
  const ebla::mpi::DistributedVector x{setup->r.data(), setup->r.extent(0), MPI_COMM_WORLD};
  const ebla::mpi::DistributedVector y{setup->p.data(), setup->p.extent(0), MPI_COMM_WORLD};
  const ebla::QdotOptions q = qdot_options();
  timed(state, [&] { benchmark::DoNotOptimize(ebla::mpi::qdot(x, y, q).value); });
}

void dot_qdot_two_mpi(benchmark::State& state) {
  const ebla::mpi::DistributedVector x{setup->r.data(), setup->r.extent(0), MPI_COMM_WORLD};
  const ebla::mpi::DistributedVector y{setup->p.data(), setup->p.extent(0), MPI_COMM_WORLD};
  const ebla::QdotOptions q = qdot_options();
  timed(state, [&] { benchmark::DoNotOptimize(ebla::mpi::qdot_compute(x, y, ebla::mpi::qdot_select(x, y, q)).value); });
}

void stencil_apply(benchmark::State& state) {
  timed(state, [] { setup->A.apply(setup->r, setup->q); });
}

void options(benchmark::internal::Benchmark* b, int iterations) {
  b->UseManualTime()->Iterations(iterations)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
}

// Rank 0 reports; the others run the same benchmarks in silence.
class Silent : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 1; i < argc; ++i) {  // --nx=N --ny=N --nz=N: the block of one rank
    for (auto [name, dim] : {std::pair{"--nx=", &nx}, std::pair{"--ny=", &ny}, std::pair{"--nz=", &nz}})
      if (std::strncmp(argv[i], name, 5) == 0) *dim = std::atoi(argv[i] + 5);
  }
  Kokkos::initialize(argc, argv);
  setup = std::make_unique<Setup>();
  options(benchmark::RegisterBenchmark("cg_exact", cg_exact), 1);
  options(benchmark::RegisterBenchmark("acg_qdot", acg_qdot), 1);
  options(benchmark::RegisterBenchmark("acg_qdot_two", acg_qdot_two), 1);
  options(benchmark::RegisterBenchmark("stencil_apply", stencil_apply), 20);
  options(benchmark::RegisterBenchmark("dot_plain_mpi", dot_plain_mpi), 50);
  options(benchmark::RegisterBenchmark("dot_qdot_mpi", dot_qdot_mpi), 50);
  options(benchmark::RegisterBenchmark("dot_qdot_two_mpi", dot_qdot_two_mpi), 50);
  benchmark::Initialize(&argc, argv);
  Silent silent;
  if (rank == 0) benchmark::RunSpecifiedBenchmarks();
  else benchmark::RunSpecifiedBenchmarks(&silent);
  setup.reset();
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}

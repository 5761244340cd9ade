// The thread-count test of the distributed qdot: every case runs the one-collective qdot
// (every instruction-set variant of its local pass) and the two phases on fixed vectors,
// double and float, with local lengths around the chunk size of the local passes, and
// records the bits of the plans and results. Rank 0 prints a line naming the host execution
// space and its thread count (the same on every rank), then "name bytes digest" per case;
// tests/threads/run_threads.cmake runs the program under mpiexec on 1, 2 and 3 threads per
// rank and requires the same lines every time. A case whose digest differs between the
// ranks is printed as such and fails the run (exit code 1).
#include "../threads/digest.hpp"
#include "../threads/qdot_record.hpp"
#include "mpi_checks.hpp"

#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/mpi/qdot.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

using ebla_mpi_test::rank;
using ebla_mpi_test::ranks;
using ebla_threads::Digest;
using ebla_threads::record;

// Component i of global vectors of n components: s 2^p, s in [0.5, 1), a random sign, p
// per kind, all drawn from a hash of (seed, i), so that a rank draws its block alone.
//  spread: p uniform in [-w, w], w = 2 + 16 i / n, rounded (the bins change along the vector);
//  ramp:   p = -90 + 120 i / n + a uniform in [-3, 3], rounded (new top bins keep arriving,
//          so chunks' and ranks' windows are re-anchored and most bins fall below the
//          global window);
//  inf:    spread with x[n - 1] = +Inf (the plain dot of the last rank gives the value).
enum class Kind { spread, ramp, inf };

const char* name_of(Kind k) { return k == Kind::spread ? "spread" : k == Kind::ramp ? "ramp" : "inf"; }

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double component(Kind kind, std::size_t i, std::size_t n, std::uint64_t seed) {
  const std::uint64_t a = mix(seed * 0x9e3779b97f4a7c15ull + 2 * i), b = mix(seed * 0x9e3779b97f4a7c15ull + 2 * i + 1);
  const double s = 0.5 + std::ldexp(static_cast<double>(a >> 12), -53);  // [0.5, 1)
  const double u = std::ldexp(static_cast<double>(b >> 11), -52) - 1;    // [-1, 1)
  const double t = static_cast<double>(i) / static_cast<double>(n);
  const double p = kind == Kind::ramp ? -90 + 120 * t + 3 * u : (2 + 16 * t) * u;
  return (a & 1 ? -1 : 1) * std::ldexp(s, static_cast<int>(std::lround(p)));
}

// The options of a case: the default ladder under the budget policy, or a longer ladder
// under the paper policy.
ebla::QdotOptions options_of(int which, bool is_float) {
  ebla::QdotOptions o;
  if (which == 0) {
    o.tolerance = 1e-6;
    return o;
  }
  o.tolerance = 1e-3;
  o.policy = ebla::QdotPolicy::paper;
  o.ladder = ebla::qdot_ladder_by_names(is_float ? "binary32,bfloat16,perforate" : "binary64,binary32,bfloat16,perforate");
  return o;
}

// Both distributed qdots on this rank's block of x and y.
template <class T>
void run_case(Digest& d, const std::vector<T>& x, const std::vector<T>& y, const ebla::QdotOptions& o) {
  const ebla::mpi::BasicDistributedVector<T> xd{x.data(), x.size(), MPI_COMM_WORLD}, yd{y.data(), y.size(), MPI_COMM_WORLD};
  const ebla::QdotPlan plan = ebla::mpi::qdot_select(xd, yd, o);
  record(d, plan);
  record(d, ebla::mpi::qdot_compute(xd, yd, plan));
  for (const auto isa : ebla::detail::supported_host_isas()) {
    ebla::QdotPlan used;
    record(d, ebla::mpi::qdot_with_isa(xd, yd, o, &used, isa));
    record(d, used);
  }
  ebla::QdotPlan used;
  record(d, ebla::mpi::qdot(xd, yd, o, &used));
  record(d, used);
}

// This rank's blocks of the global x and y of a case (rank r owns base + r components).
template <class T>
void blocks(Kind kind, std::size_t base, std::vector<T>& x, std::vector<T>& y) {
  const auto r = static_cast<std::size_t>(rank), P = static_cast<std::size_t>(ranks);
  const std::size_t n = base * P + P * (P - 1) / 2, first = base * r + r * (r - 1) / 2;
  x.resize(base + r);
  y.resize(base + r);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<T>(component(kind, first + i, n, 2 * base + 1));
    y[i] = static_cast<T>(component(kind, first + i, n, 2 * base + 2));
  }
  if (kind == Kind::inf && r == P - 1) x.back() = std::numeric_limits<T>::infinity();
}

// true when v is the same on every rank
bool agreed(std::uint64_t v) {
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

// Runs a case and prints its digest (rank 0); false if the ranks' digests differ.
template <class T>
bool report(Kind kind, std::size_t base, int which) {
  const std::string name = std::string(sizeof(T) == 4 ? "float" : "double") + "." + name_of(kind) + ".local" +
                           std::to_string(base) + (which == 0 ? ".budget" : ".paper");
  std::vector<T> x, y;
  blocks(kind, base, x, y);
  Digest d;
  run_case(d, x, y, options_of(which, sizeof(T) == 4));
  const bool same = agreed(d.hash()) && agreed(d.size());
  if (rank == 0) {
    if (same)
      std::printf("%s %zu %016" PRIx64 "\n", name.c_str(), d.size(), d.hash());
    else
      std::printf("%s differs between the ranks\n", name.c_str());
  }
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  ebla_mpi_test::start_mpi(&argc, &argv);
  Kokkos::initialize(argc, argv);
  bool ok = true;
  {
    const int threads = ebla::detail::host_threads();
    const bool same_threads = agreed(static_cast<std::uint64_t>(threads));
    if (rank == 0) {
      if (same_threads)
        std::printf("host %s threads %d\n", Kokkos::DefaultHostExecutionSpace::name(), threads);
      else
        std::printf("the ranks run different numbers of host threads\n");
    }
    ok = same_threads;
    // local lengths around the chunk size of the local passes (ebla::detail::stream_chunk:
    // 4096 up to 2^18 components, 8192 just above)
    for (const std::size_t base : {1000, 4095, 4096, 4097, 12289, 262145})
      for (const Kind kind : {Kind::spread, Kind::ramp, Kind::inf})
        for (int which = 0; which < 2; ++which) {
          ok = report<double>(kind, base, which) && ok;
          ok = report<float>(kind, base, which) && ok;
        }
  }
  Kokkos::finalize();
  MPI_Finalize();
  return ok ? 0 : 1;
}

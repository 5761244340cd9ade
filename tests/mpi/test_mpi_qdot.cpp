// Distributed qdot against the serial qdot of the concatenated vectors and against an exact
// reference, on 2 or 3 ranks (mpiexec -n P): the plan is the same on every rank and equals
// the serial plan; value and bound are the same on every rank; the distributed value is
// within the bounds of the serial one; the bound holds against x^T y; and each dot costs
// the collectives claimed (counted through the MPI profiling interface).
//
// Reference. Every product of two doubles is exact in __float128 (106 < 113 bits, and no
// product here leaves its exponent range); their sum in __float128 has an error of at most
// n 2^-113 sum |x_i y_i|, which the checks add to the bound.
//
// Every rank draws the same global vectors (std::mt19937_64, fixed seeds) and owns the
// block of its split. Exit code: 0 if every check passed on every rank, 1 otherwise.
#include <ebla/kernels/qdot.hpp>
#include <ebla/mpi/qdot.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

__extension__ typedef __float128 quad;

// ---- collectives counted through the profiling interface --------------------------------

namespace {
long collectives = 0;
}

extern "C" {
int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  ++collectives;
  return PMPI_Allreduce(s, r, n, t, op, comm);
}
int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  ++collectives;
  return PMPI_Reduce(s, r, n, t, op, root, comm);
}
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm comm) {
  ++collectives;
  return PMPI_Bcast(b, n, t, root, comm);
}
int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm comm) {
  ++collectives;
  return PMPI_Allgather(s, sn, st, r, rn, rt, comm);
}
int MPI_Barrier(MPI_Comm comm) {
  ++collectives;
  return PMPI_Barrier(comm);
}
}

namespace {

int rank = 0, ranks = 1;
int failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---- data ------------------------------------------------------------------------------

struct Data {
  std::string name;
  std::vector<double> x, y;
};

// Distribution B of qdot's experiments: s 2^p, s ~ U[0.5, 1), p = round(N(0, t/2)).
Data dist_b(double t, std::size_t n, std::uint64_t seed, bool signs) {
  Data d{"B(t=" + num(t) + (signs ? ", signed" : "") + ", n=" + std::to_string(n) + ")", {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::normal_distribution<double> p(0.0, t / 2);
  std::bernoulli_distribution minus(0.5);
  for (auto* v : {&d.x, &d.y}) {
    v->resize(n);
    for (auto& e : *v) e = (signs && minus(gen) ? -1 : 1) * std::ldexp(s(gen), static_cast<int>(std::lround(p(gen))));
  }
  return d;
}

// Exponents uniform in [-480, 480] per factor, random signs, some zeros and a few products
// near the underflow threshold.
Data wide(std::size_t n, std::uint64_t seed) {
  Data d{"wide exponents with zeros, n=" + std::to_string(n), {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::uniform_int_distribution<int> p(-480, 480), pick(0, 19);
  std::bernoulli_distribution minus(0.5);
  d.x.resize(n);
  d.y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = pick(gen);
    d.x[i] = (minus(gen) ? -1 : 1) * std::ldexp(s(gen), p(gen));
    d.y[i] = (minus(gen) ? -1 : 1) * std::ldexp(s(gen), p(gen));
    if (k == 0) d.x[i] = 0;
    if (k == 1) d.y[i] = 0;
    if (k == 2) {  // a product of about 2^-1060: subnormal
      d.x[i] = std::ldexp(s(gen), -1040);
      d.y[i] = std::ldexp(s(gen), -20);
    }
  }
  return d;
}

// Cancellation across ranks: the second half is the first with y negated, plus a few
// small terms: x^T y is the sum of the small terms, far below sum |x_i y_i|.
Data cancel(std::size_t half, std::uint64_t seed) {
  Data d{"cancellation across the halves, n=" + std::to_string(2 * half + 3), {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::uniform_int_distribution<int> p(-30, 30);
  for (std::size_t i = 0; i < half; ++i) {
    d.x.push_back(std::ldexp(s(gen), p(gen)));
    d.y.push_back(std::ldexp(s(gen), p(gen)));
  }
  for (std::size_t i = 0; i < half; ++i) {
    d.x.push_back(d.x[i]);
    d.y.push_back(-d.y[i]);
  }
  for (int i = 0; i < 3; ++i) {
    d.x.push_back(std::ldexp(s(gen), -40 - i));
    d.y.push_back(1.0);
  }
  return d;
}

// One component per rank on 3 ranks (split even): 1, 3 2^-60, -1. Adding the ranks' sums
// in double loses the middle one; TwoSum keeps it.
Data tiny_between() {
  return Data{"1, 3 2^-60, -1", {1.0, 3 * std::ldexp(1.0, -60), -1.0}, {1.0, 1.0, 1.0}};
}

Data zeros(std::size_t n) {
  Data d{"all zero, n=" + std::to_string(n), std::vector<double>(n, 0.0), std::vector<double>(n, 1.0)};
  return d;
}

// ---- splits: the block [first[r], first[r + 1]) of rank r -------------------------------

using Split = std::function<std::vector<std::size_t>(std::size_t n)>;

std::vector<std::size_t> even(std::size_t n) {
  std::vector<std::size_t> f(ranks + 1);
  for (int r = 0; r <= ranks; ++r) f[r] = n * r / ranks;
  return f;
}

// rank 0 a sliver, rank 1 empty (from 3 ranks on), the last ranks the rest
std::vector<std::size_t> skewed(std::size_t n) {
  std::vector<std::size_t> f(ranks + 1, 0);
  if (ranks > 1) f[1] = std::min<std::size_t>(n, 5);
  if (ranks > 2) f[2] = f[1];
  for (int r = 3; r < ranks; ++r) f[r] = f[r - 1] + (n - f[r - 1]) / 2;
  f[ranks] = n;
  return f;
}

// everything on the last rank
std::vector<std::size_t> last_only(std::size_t n) {
  std::vector<std::size_t> f(ranks + 1, 0);
  f[ranks] = n;
  return f;
}

// ---- checks ----------------------------------------------------------------------------

bool same_plan(const ebla::QdotPlan& a, const ebla::QdotPlan& b) {
  return a.n == b.n && a.input_t == b.input_t && a.policy == b.policy && a.tolerance == b.tolerance &&
         ebla::to_string(a.ladder) == ebla::to_string(b.ladder) && a.e_min == b.e_min && a.e_max == b.e_max &&
         a.level == b.level && a.count == b.count && a.nonzero == b.nonzero && a.nonfinite == b.nonfinite &&
         a.early_termination == b.early_termination && a.budget_used == b.budget_used;
}

std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::uint64_t fingerprint(const ebla::QdotPlan& p) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(p.n);
  mix(static_cast<std::uint64_t>(p.e_min));
  mix(static_cast<std::uint64_t>(p.e_max));
  for (auto l : p.level) mix(l);
  for (auto c : p.count) mix(static_cast<std::uint64_t>(c));
  mix(p.nonzero);
  mix(bits(p.budget_used));
  return h;
}

// true when v is the same on every rank (outside the counted collectives)
bool agreed(std::uint64_t v) {
  std::uint64_t lo = 0, hi = 0;
  PMPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  PMPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

void run(const Data& d, const std::string& split_name, const Split& split, const ebla::QdotOptions& opt) {
  const std::string what = d.name + ", split " + split_name + ", " + ebla::to_string(opt.policy) +
                           " tol " + num(opt.tolerance) + ": ";
  const std::size_t n = d.x.size();
  const auto f = split(n);
  const ebla::mpi::DistributedVector x{d.x.data() + f[rank], f[rank + 1] - f[rank], MPI_COMM_WORLD};
  const ebla::mpi::DistributedVector y{d.y.data() + f[rank], f[rank + 1] - f[rank], MPI_COMM_WORLD};

  // the two phases: one collective each
  long before = collectives;
  const ebla::QdotPlan plan = ebla::mpi::qdot_select(x, y, opt);
  check(collectives - before == 1, what + "qdot_select made " + std::to_string(collectives - before) + " collectives");
  before = collectives;
  const ebla::QdotResult r = ebla::mpi::qdot_compute(x, y, plan);
  check(collectives - before == 1, what + "qdot_compute made " + std::to_string(collectives - before) + " collectives");
  before = collectives;
  const ebla::QdotResult r2 = ebla::mpi::qdot(x, y, opt);
  check(collectives - before == 2, what + "qdot made " + std::to_string(collectives - before) + " collectives");
  check(bits(r2.value) == bits(r.value) && bits(r2.bound) == bits(r.bound), what + "qdot != qdot_compute(qdot_select)");

  // the same plan, value and bound on every rank; the plan of the serial qdot
  check(agreed(fingerprint(plan)), what + "the plans differ between ranks");
  check(agreed(bits(r.value)) && agreed(bits(r.bound)), what + "value or bound differ between ranks");
  const ebla::QdotPlan serial_plan = ebla::qdot_select(d.x.data(), d.y.data(), n, opt);
  check(same_plan(plan, serial_plan), what + "plan differs from the serial plan:\n" + plan.to_string() + "serial:\n" +
                                          serial_plan.to_string());
  const ebla::QdotResult s = ebla::qdot_compute(d.x.data(), d.y.data(), n, serial_plan);
  check(r.stats.count_per_level == s.stats.count_per_level, what + "components per level differ from the serial qdot");
  check(r.stats.zeros == s.stats.zeros, what + "zeros differ from the serial qdot");
  check(std::isfinite(r.bound), what + "bound not finite");
  check(std::fabs(r.value - s.value) <= r.bound + s.bound,
        what + "|distributed - serial| = " + num(std::fabs(r.value - s.value)) + " > the sum of the bounds " +
            num(r.bound + s.bound));

  // the same plan gives the same products q_i on one machine: only the summations differ,
  // so the values agree within the accumulation bounds alone (a combination of the ranks'
  // sums that is not error-free fails this on cancellation)
  check(std::fabs(r.value - s.value) <= r.accumulation_bound + s.accumulation_bound,
        what + "|distributed - serial| = " + num(std::fabs(r.value - s.value)) +
            " > the sum of the accumulation bounds " + num(r.accumulation_bound + s.accumulation_bound));

  // the bound against the exact dot product
  quad ref = 0, abs_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const quad p = static_cast<quad>(d.x[i]) * static_cast<quad>(d.y[i]);
    ref += p;
    abs_sum += p < 0 ? -p : p;
  }
  const quad ref_err = static_cast<quad>(n) * static_cast<quad>(0x1p-113) * abs_sum;
  const quad err = static_cast<quad>(r.value) - ref;
  check((err < 0 ? -err : err) <= static_cast<quad>(r.bound) + ref_err,
        what + "|value - x^T y| = " + num(static_cast<double>(err < 0 ? -err : err)) + " > bound " + num(r.bound));
}

// One rank with a local length mismatch: every rank throws, none hangs.
void invalid_arguments() {
  std::vector<double> a(10, 1.0), b(10, 1.0);
  const ebla::mpi::DistributedVector x{a.data(), 10, MPI_COMM_WORLD};
  const ebla::mpi::DistributedVector y{b.data(), rank == ranks - 1 ? 9u : 10u, MPI_COMM_WORLD};
  bool thrown = false;
  try {
    ebla::mpi::qdot(x, x, ebla::QdotOptions{});  // valid: fine
    ebla::mpi::qdot(x, y, ebla::QdotOptions{});
  } catch (const ebla::InvalidArgument&) {
    thrown = true;
  }
  check(thrown, "a local length mismatch on the last rank did not throw on every rank");
  // a plan for another global length
  ebla::QdotPlan plan = ebla::mpi::qdot_select(x, x, ebla::QdotOptions{});
  plan.n += 1;
  thrown = false;
  try {
    ebla::mpi::qdot_compute(x, x, plan);
  } catch (const ebla::InvalidArgument&) {
    thrown = true;
  }
  check(thrown, "a plan for another global length was accepted");
}

// Inf on the last rank: every rank gets the plain dot's +inf, an infinite bound and the flag.
void nonfinite() {
  std::vector<double> a{1.0, 2.0, 3.0, 4.0}, b(4, 1.0);
  if (rank == ranks - 1) a[2] = std::numeric_limits<double>::infinity();
  const ebla::mpi::DistributedVector x{a.data(), a.size(), MPI_COMM_WORLD};
  const ebla::mpi::DistributedVector y{b.data(), b.size(), MPI_COMM_WORLD};
  const ebla::QdotResult r = ebla::mpi::qdot(x, y, ebla::QdotOptions{});
  check(r.stats.nonfinite && std::isinf(r.value) && r.value > 0 && std::isinf(r.bound),
        "Inf on the last rank: value " + num(r.value) + ", bound " + num(r.bound));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Kokkos::initialize(argc, argv);
  {
    std::vector<Data> data;
    data.push_back(dist_b(9, 20000, 11, false));
    data.push_back(dist_b(30, 20000, 12, true));
    data.push_back(dist_b(60, 1001, 13, true));
    data.push_back(wide(5000, 14));
    data.push_back(cancel(3000, 15));
    data.push_back(tiny_between());
    data.push_back(zeros(17));
    data.push_back(Data{"empty", {}, {}});
    const std::vector<std::pair<std::string, Split>> splits{{"even", even}, {"skewed", skewed}, {"last-only", last_only}};
    std::vector<ebla::QdotOptions> options;
    for (double tol : {1e-16, 1e-8, 1e-3, 1e2}) {
      ebla::QdotOptions o;
      o.tolerance = tol;
      options.push_back(o);
      o.policy = ebla::QdotPolicy::paper;
      options.push_back(o);
    }
    int runs = 0;
    for (const auto& d : data)
      for (const auto& s : splits)
        for (const auto& o : options) {
          run(d, s.first, s.second, o);
          ++runs;
        }
    invalid_arguments();
    nonfinite();
    int total = 0;
    PMPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("test_mpi_qdot: %d ranks, %d cases, %d failed checks\n", ranks, runs, total);
    failures = total;
  }
  Kokkos::finalize();
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

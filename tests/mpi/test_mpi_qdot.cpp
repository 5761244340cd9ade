// Distributed qdot against the serial qdot of the concatenated vectors and against an exact
// reference, on 2 or 3 ranks (mpiexec -n P), for the two-phase API (qdot_select +
// qdot_compute) and for the one-collective ebla::mpi::qdot: the plan is the same on every
// rank and equals the serial plan (the one-collective qdot: when the bins span fewer than
// qdot_window); value and bound are the same on every rank; the distributed value is
// within the bounds of the serial one; the bound holds against x^T y; and each dot costs
// the collectives claimed (counted through the MPI profiling interface). With --timing,
// the program also times the one-collective qdot, the two phases and a plain dot.
//
// Reference. Every product of two doubles is exact in __float128 (106 < 113 bits, and no
// product here leaves its exponent range); their sum in __float128 has an error of at most
// n 2^-113 sum |x_i y_i|, which the checks add to the bound.
//
// Every rank draws the same global vectors (std::mt19937_64, fixed seeds) and owns the
// block of its split. Exit code: 0 if every check passed on every rank, 1 otherwise.
#include <ebla/kernels/qdot.hpp>
#include <ebla/mpi/qdot.hpp>

#include "mpi_checks.hpp"

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

using namespace ebla_mpi_test;

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

// Cancellation across ranks: the second half is the first with y negated, plus 3 small
// terms about 2^(tail - i): x^T y is their sum, far below sum |x_i y_i|. Exponents uniform
// in [-range, range], x signed if `signs`.
Data cancellation(std::size_t half, std::uint64_t seed, int range, int tail, bool signs, const std::string& name) {
  Data d{name + " across the halves, n=" + std::to_string(2 * half + 3), {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::uniform_int_distribution<int> p(-range, range);
  std::bernoulli_distribution minus(0.5);
  for (std::size_t i = 0; i < half; ++i) {
    d.x.push_back((signs && minus(gen) ? -1 : 1) * std::ldexp(s(gen), p(gen)));
    d.y.push_back(std::ldexp(s(gen), p(gen)));
  }
  for (std::size_t i = 0; i < half; ++i) {
    d.x.push_back(d.x[i]);
    d.y.push_back(-d.y[i]);
  }
  for (int i = 0; i < 3; ++i) {
    d.x.push_back(std::ldexp(s(gen), tail - i));
    d.y.push_back(1.0);
  }
  return d;
}

Data cancel(std::size_t half, std::uint64_t seed) { return cancellation(half, seed, 30, -40, false, "cancellation"); }

// One component per rank on 3 ranks (split even): 1, 3 2^-60, -1. Adding the ranks' sums
// in double loses the middle one; TwoSum keeps it.
Data tiny_between() {
  return Data{"1, 3 2^-60, -1", {1.0, 3 * std::ldexp(1.0, -60), -1.0}, {1.0, 1.0, 1.0}};
}

Data zeros(std::size_t n) {
  Data d{"all zero, n=" + std::to_string(n), std::vector<double>(n, 0.0), std::vector<double>(n, 1.0)};
  return d;
}

// Two clusters of products: about 1 and about 2^-gap, interleaved, random signs. gap near
// qdot_window puts the small cluster just inside or just below the window.
Data clusters(std::size_t n, int gap, std::uint64_t seed) {
  Data d{"clusters 1 and 2^-" + std::to_string(gap) + ", n=" + std::to_string(n), {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::bernoulli_distribution minus(0.5);
  for (std::size_t i = 0; i < n; ++i) {
    d.x.push_back((minus(gen) ? -1 : 1) * std::ldexp(s(gen), i % 2 == 0 ? 0 : -gap / 2));
    d.y.push_back((minus(gen) ? -1 : 1) * std::ldexp(s(gen), i % 2 == 0 ? 0 : -(gap - gap / 2)));
  }
  return d;
}

// Products ordered by growing exponent over [-lo, hi] (new largest bins keep arriving, so
// the local windows are re-anchored again and again) and then falling: small ones on the
// first ranks, large ones further on.
Data ramp(std::size_t n, int lo, int hi, std::uint64_t seed) {
  Data d{"ramp of exponents -" + std::to_string(lo) + " .. " + std::to_string(hi) + ", n=" + std::to_string(n), {}, {}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::bernoulli_distribution minus(0.5);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(n);
    const int e = static_cast<int>(-lo + (lo + hi) * (t < 0.7 ? t / 0.7 : (1 - t) / 0.3));
    d.x.push_back((minus(gen) ? -1 : 1) * std::ldexp(s(gen), e / 2));
    d.y.push_back(std::ldexp(s(gen), e - e / 2));
  }
  return d;
}

// Cancellation across ranks over a wide range: the second half is the first with y negated
// (products spread over more than qdot_window bins), plus small terms; x^T y is their sum.
Data cancel_wide(std::size_t half, std::uint64_t seed) {
  return cancellation(half, seed, 100, -150, true, "wide cancellation");
}

// Two large products that cancel (the first and the last component: on different ranks)
// around many tiny ones of one sign just below the window of the large ones (bin -64 or
// -65): x^T y is the tiny ones' sum, larger than u times sum |x_i y_i|, so a qdot that
// loses the bins below its window misses by more than its bound.
Data needle(std::size_t tiny, std::uint64_t seed) {
  Data d{"needle: 2.25, " + std::to_string(tiny) + " products near 2^-62, -2.25", {1.5}, {1.5}};
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(1.5, 2.0);
  std::bernoulli_distribution lower(0.5);
  for (std::size_t i = 0; i < tiny; ++i) {
    d.x.push_back(std::ldexp(s(gen), -32));
    d.y.push_back(std::ldexp(s(gen), lower(gen) ? -33 : -32));
  }
  d.x.push_back(-1.5);
  d.y.push_back(1.5);
  return d;
}

// A random case: length, exponent spread, signs and zeros drawn from gen.
Data random_case(std::mt19937_64& gen, int index) {
  std::uniform_int_distribution<int> len(0, 3000), spread_pick(0, 5), coin(0, 1);
  const int spreads[] = {0, 4, 20, 50, 120, 480};
  const int spread = spreads[spread_pick(gen)];
  const std::size_t n = static_cast<std::size_t>(len(gen));
  const bool signs = coin(gen) == 1, with_zeros = coin(gen) == 1;
  Data d{"random case " + std::to_string(index) + " (spread " + std::to_string(spread) + (signs ? ", signed" : "") +
             (with_zeros ? ", zeros" : "") + ", n=" + std::to_string(n) + ")",
         {}, {}};
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::uniform_int_distribution<int> p(-spread, spread), zero(0, 9);
  std::bernoulli_distribution minus(0.5);
  for (std::size_t i = 0; i < n; ++i) {
    double xi = (signs && minus(gen) ? -1 : 1) * std::ldexp(s(gen), p(gen));
    const double yi = (signs && minus(gen) ? -1 : 1) * std::ldexp(s(gen), p(gen));
    if (with_zeros && zero(gen) == 0) xi = 0;
    d.x.push_back(xi);
    d.y.push_back(yi);
  }
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

// random cut points (drawn from the same generator on every rank)
std::vector<std::size_t> random_split(std::size_t n, std::mt19937_64& gen) {
  std::uniform_int_distribution<std::size_t> cut(0, n);
  std::vector<std::size_t> f(ranks + 1, 0);
  for (int r = 1; r < ranks; ++r) f[r] = cut(gen);
  f[ranks] = n;
  std::sort(f.begin(), f.end());
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

// the exact x^T y and sum |x_i y_i| (every product of two doubles is exact in __float128)
struct Reference {
  quad value = 0, abs_sum = 0;
};

Reference reference(const Data& d) {
  Reference ref;
  for (std::size_t i = 0; i < d.x.size(); ++i) {
    const quad p = static_cast<quad>(d.x[i]) * static_cast<quad>(d.y[i]);
    ref.value += p;
    ref.abs_sum += p < 0 ? -p : p;
  }
  return ref;
}

// |value - x^T y| <= bound, with the reference's own error added
bool bound_holds(const ebla::QdotResult& r, const Reference& ref, std::size_t n, double* error = nullptr) {
  const quad ref_err = static_cast<quad>(n) * static_cast<quad>(0x1p-113) * ref.abs_sum;
  const quad err = static_cast<quad>(r.value) - ref.value;
  const quad abs_err = err < 0 ? -err : err;
  if (error != nullptr) *error = static_cast<double>(abs_err);
  return abs_err <= static_cast<quad>(r.bound) + ref_err;
}

// Cases of the one-collective qdot: all of them, those whose bins spanned at least
// qdot_window (so that some fell below the window), and bound violations.
long one_cases = 0, one_beyond_window = 0, one_violations = 0;

// The one-collective qdot against the serial qdot (plan s_plan, result s) and the reference.
void check_one_collective(const Data& d, const std::string& what, const ebla::mpi::DistributedVector& x,
                          const ebla::mpi::DistributedVector& y, const ebla::QdotOptions& opt,
                          const ebla::QdotPlan& s_plan, const ebla::QdotResult& s, const Reference& ref,
                          const ebla::QdotResult* two_phase) {
  const std::size_t n = d.x.size();
  ebla::QdotPlan used;
  const long before = collectives;
  const ebla::QdotResult r = ebla::mpi::qdot(x, y, opt, &used);
  check(collectives - before == 1, what + "qdot made " + std::to_string(collectives - before) + " collectives");
  ++one_cases;
  check(agreed(bits(r.value)) && agreed(bits(r.bound)), what + "one collective: value or bound differ between ranks");
  check(agreed(fingerprint(used)), what + "one collective: the plans differ between ranks");
  check(std::isfinite(r.bound), what + "one collective: bound not finite");
  double error = 0;
  const bool holds = bound_holds(r, ref, n, &error);
  one_violations += holds ? 0 : 1;
  check(holds, what + "one collective: |value - x^T y| = " + num(error) + " > bound " + num(r.bound));
  check(std::fabs(r.value - s.value) <= r.bound + s.bound,
        what + "one collective: |value - serial| = " + num(std::fabs(r.value - s.value)) +
            " > the sum of the bounds " + num(r.bound + s.bound));
  // what was done is what the plan says, every component counted once
  std::size_t counted = r.stats.zeros;
  for (auto c : r.stats.count_per_level) counted += c;
  check(counted == n, what + "one collective: " + std::to_string(counted) + " components counted, not " + std::to_string(n));
  check(r.stats.count_per_level == used.count_per_level(), what + "one collective: counts per level differ from its plan");
  check(used.n == n && used.e_min == s_plan.e_min && used.e_max == s_plan.e_max && used.nonzero == s_plan.nonzero,
        what + "one collective: plan length, range or nonzero count differ from the serial plan");
  // the other variants of the local pass (AVX2, baseline: round_significand; AVX-512:
  // Veltkamp's splitting, whose ties may round the other way): the same plan, a bound that
  // holds, values within the two bounds
  for (const auto isa : ebla::detail::supported_host_isas()) {
    if (isa == ebla::detail::best_host_isa()) continue;
    ebla::QdotPlan isa_plan;
    const ebla::QdotResult v = ebla::mpi::qdot_with_isa(x, y, opt, &isa_plan, isa);
    const std::string variant = what + "one collective, " + ebla::detail::to_string(isa) + ": ";
    check(agreed(bits(v.value)) && agreed(bits(v.bound)), variant + "value or bound differ between ranks");
    check(same_plan(isa_plan, used) && v.stats.count_per_level == r.stats.count_per_level,
          variant + "plan or counts differ from the best variant's");
    const bool v_holds = bound_holds(v, ref, n, &error);
    one_violations += v_holds ? 0 : 1;
    check(v_holds, variant + "|value - x^T y| = " + num(error) + " > bound " + num(v.bound));
    check(std::fabs(v.value - r.value) <= v.bound + r.bound, variant + "|value - best variant's| > the sum of the bounds");
  }
  // the same on one rank (MPI_COMM_SELF, the whole vectors): the same bins fall below the
  // window whatever the number of ranks, so the plans are equal and only roundings differ
  const ebla::mpi::DistributedVector whole_x{d.x.data(), n, MPI_COMM_SELF}, whole_y{d.y.data(), n, MPI_COMM_SELF};
  ebla::QdotPlan self_plan;
  const ebla::QdotResult self = ebla::mpi::qdot(whole_x, whole_y, opt, &self_plan);
  check(same_plan(used, self_plan), what + "one collective: the plan differs from the plan on one rank:\n" +
                                        used.to_string() + "one rank:\n" + self_plan.to_string());
  check(std::fabs(r.value - self.value) <= r.accumulation_bound + self.accumulation_bound,
        what + "one collective: |value - value on one rank| = " + num(std::fabs(r.value - self.value)) +
            " > the sum of the accumulation bounds");
  const bool within = s_plan.e_max - s_plan.e_min < ebla::mpi::qdot_window;
  if (!within) {
    ++one_beyond_window;
    // the bins below the window are one pseudo-bin at the smallest bin, at the input precision
    check(used.count.size() > 0 && used.level[0] == 0 && used.count[0] > 0,
          what + "one collective: the pseudo-bin is not at the smallest bin at level 0");
    // the pseudo-bin counts the bins below the window; the window's bins are the serial ones
    const int first = s_plan.e_max - ebla::mpi::qdot_window + 1;  // lowest bin of the window
    std::int64_t below = 0;
    bool same_window = used.count.size() == s_plan.count.size();
    for (std::size_t j = 0; j < s_plan.count.size() && same_window; ++j) {
      const int e = s_plan.e_min + static_cast<int>(j);
      if (e < first) {
        below += s_plan.count[j];
        same_window = j == 0 || used.count[j] == 0;
      } else {
        same_window = used.count[j] == s_plan.count[j];
      }
    }
    check(same_window && used.count[0] == below,
          what + "one collective: the window's bins or the pseudo-bin's count differ from the serial histogram");
    return;
  }
  check(same_plan(used, s_plan), what + "one collective: plan differs from the serial plan:\n" + used.to_string() +
                                     "serial:\n" + s_plan.to_string());
  check(r.stats.count_per_level == s.stats.count_per_level, what + "one collective: counts per level differ");
  if (two_phase != nullptr)  // the same products: only the order of the sums differs
    check(std::fabs(r.value - two_phase->value) <= r.accumulation_bound + two_phase->accumulation_bound,
          what + "one collective: |value - two-phase value| = " + num(std::fabs(r.value - two_phase->value)) +
              " > the sum of the accumulation bounds");
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
  const Reference ref = reference(d);
  double error = 0;
  check(bound_holds(r, ref, n, &error), what + "|value - x^T y| = " + num(error) + " > bound " + num(r.bound));

  check_one_collective(d, what, x, y, opt, serial_plan, s, ref, &r);
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

  // the one-collective qdot: an invalid tolerance on the first rank only
  ebla::QdotOptions bad;
  if (rank == 0) bad.tolerance = -1;
  thrown = false;
  long before = collectives;
  try {
    ebla::mpi::qdot(x, x, bad);
  } catch (const ebla::InvalidArgument&) {
    thrown = true;
  }
  check(thrown, "an invalid tolerance on the first rank did not throw on every rank");
  check(collectives - before == 1, "qdot with an invalid tolerance made " + std::to_string(collectives - before) + " collectives");
  // a null block of positive length on the last rank
  const ebla::mpi::DistributedVector null_x{rank == ranks - 1 ? nullptr : a.data(), 10, MPI_COMM_WORLD};
  thrown = false;
  try {
    ebla::mpi::qdot(null_x, x, ebla::QdotOptions{});
  } catch (const ebla::InvalidArgument&) {
    thrown = true;
  }
  check(thrown, "a null block on the last rank did not throw on every rank");
  // valid options that differ between the ranks
  ebla::QdotOptions differ;
  differ.tolerance = rank == 0 ? 1e-8 : 1e-3;
  thrown = false;
  try {
    ebla::mpi::qdot(x, x, differ);
  } catch (const ebla::InvalidArgument&) {
    thrown = true;
  }
  check(thrown || ranks == 1, "options that differ between the ranks did not throw on every rank");
  // and after all that, a valid call still works
  const ebla::QdotResult r = ebla::mpi::qdot(x, x, ebla::QdotOptions{});
  check(r.value == 10.0 * ranks, "a valid qdot after the errors gave " + num(r.value));
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
  // NaN on the first rank and +Inf on the last: NaN, as the plain dot gives
  std::vector<double> c{1.0, 2.0, 3.0, 4.0};
  if (rank == 0) c[1] = std::numeric_limits<double>::quiet_NaN();
  const ebla::mpi::DistributedVector z{c.data(), c.size(), MPI_COMM_WORLD};
  const ebla::QdotResult rn = ebla::mpi::qdot(z, y, ebla::QdotOptions{});
  check(rn.stats.nonfinite && std::isnan(rn.value) && std::isinf(rn.bound),
        "NaN on the first rank: value " + num(rn.value) + ", bound " + num(rn.bound));
  // Inf only: the value is the sum of the ranks' plain dots
  std::vector<double> big{1e308, 1e308, 1.0, 1.0};
  const ebla::mpi::DistributedVector xb{big.data(), big.size(), MPI_COMM_WORLD};
  const ebla::QdotResult ro = ebla::mpi::qdot(xb, y, ebla::QdotOptions{});
  check(std::isinf(ro.value) && std::isinf(ro.bound), "overflowing products: value " + num(ro.value) + ", bound " + num(ro.bound));
}

// Time per dot product (the best of `reps`, after a barrier) of the one-collective qdot,
// the two phases, and a plain local dot with one MPI_Allreduce, on n components per rank.
void timing(double t, std::size_t n, int reps) {
  const Data d = dist_b(t, n, 100 + static_cast<std::uint64_t>(rank), true);
  const ebla::mpi::DistributedVector x{d.x.data(), n, MPI_COMM_WORLD}, y{d.y.data(), n, MPI_COMM_WORLD};
  const ebla::QdotOptions opt;
  double sink = 0;
  auto best = [&](const std::function<double()>& f) {
    double t = 1e30;
    for (int k = 0; k < reps; ++k) {
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      sink += f();
      double dt = MPI_Wtime() - t0, worst = 0;
      PMPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t = std::min(t, worst);
    }
    return t;
  };
  const double one = best([&] { return ebla::mpi::qdot(x, y, opt).value; });
  const double two = best([&] { return ebla::mpi::qdot_compute(x, y, ebla::mpi::qdot_select(x, y, opt)).value; });
  const double plain = best([&] {
    double local = 0, global = 0;
    for (std::size_t i = 0; i < n; ++i) local += d.x[i] * d.y[i];
    PMPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
  });
  if (rank == 0)
    std::printf("timing, B(t=%g, signed), %d ranks, %zu components per rank (best of %d): one collective %.3f ms, "
                "two phases %.3f ms, plain dot + MPI_Allreduce %.3f ms (%g)\n",
                t, ranks, n, reps, one * 1e3, two * 1e3, plain * 1e3, sink * 0);
}

}  // namespace

// ---- float input -------------------------------------------------------------------------

long float_cases = 0;

// The data rounded to float; false if some value leaves float's range (overflow, or a
// nonzero that underflows to zero).
bool to_float(const Data& d, std::vector<float>& x, std::vector<float>& y) {
  x.assign(d.x.begin(), d.x.end());
  y.assign(d.y.begin(), d.y.end());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || (x[i] == 0) != (d.x[i] == 0) || (y[i] == 0) != (d.y[i] == 0))
      return false;
  return true;
}

// Float vectors: both distributed qdots against the serial qdot on the same float arrays
// (its plan, counts and value) and against the exact x^T y (products of floats are exact).
void run_float(const Data& dd, const std::string& split_name, const Split& split, const ebla::QdotOptions& opt) {
  std::vector<float> fx, fy;
  if (!to_float(dd, fx, fy)) return;
  const Data d{dd.name, std::vector<double>(fx.begin(), fx.end()), std::vector<double>(fy.begin(), fy.end())};
  const std::string what = "float " + d.name + ", split " + split_name + ", " + ebla::to_string(opt.policy) + " tol " +
                           num(opt.tolerance) + ": ";
  const std::size_t n = fx.size();
  const auto f = split(n);
  const ebla::mpi::DistributedVectorFloat x{fx.data() + f[rank], f[rank + 1] - f[rank], MPI_COMM_WORLD};
  const ebla::mpi::DistributedVectorFloat y{fy.data() + f[rank], f[rank + 1] - f[rank], MPI_COMM_WORLD};
  ++float_cases;
  const ebla::QdotPlan serial_plan = ebla::qdot_select(fx.data(), fy.data(), n, opt);
  const ebla::QdotResult s = ebla::qdot_compute(fx.data(), fy.data(), n, serial_plan);
  const Reference ref = reference(d);
  double error = 0;
  // two phases
  long before = collectives;
  const ebla::QdotPlan plan = ebla::mpi::qdot_select(x, y, opt);
  const ebla::QdotResult r = ebla::mpi::qdot_compute(x, y, plan);
  check(collectives - before == 2, what + "two phases made " + std::to_string(collectives - before) + " collectives");
  check(agreed(bits(r.value)) && agreed(bits(r.bound)), what + "value or bound differ between ranks");
  check(plan.input_t == 24 && same_plan(plan, serial_plan), what + "plan differs from the serial float plan");
  check(r.stats.count_per_level == s.stats.count_per_level, what + "components per level differ from the serial qdot");
  check(std::fabs(r.value - s.value) <= r.accumulation_bound + s.accumulation_bound,
        what + "|distributed - serial| > the sum of the accumulation bounds");
  check(bound_holds(r, ref, n, &error), what + "|value - x^T y| = " + num(error) + " > bound " + num(r.bound));
  // one collective
  ebla::QdotPlan used;
  before = collectives;
  const ebla::QdotResult o = ebla::mpi::qdot(x, y, opt, &used);
  check(collectives - before == 1, what + "qdot made " + std::to_string(collectives - before) + " collectives");
  check(agreed(bits(o.value)) && agreed(bits(o.bound)), what + "one collective: value or bound differ between ranks");
  check(bound_holds(o, ref, n, &error), what + "one collective: |value - x^T y| = " + num(error) + " > bound " +
                                            num(o.bound));
  if (serial_plan.e_max - serial_plan.e_min < ebla::mpi::qdot_window) {
    check(same_plan(used, serial_plan), what + "one collective: plan differs from the serial float plan");
    check(std::fabs(o.value - r.value) <= o.accumulation_bound + r.accumulation_bound,
          what + "one collective: |value - two-phase value| > the sum of the accumulation bounds");
  }
}

int main(int argc, char** argv) {
  start_mpi(&argc, &argv);
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
    // the one-collective qdot beyond the fixed sets: windows, clusters at the window's edge,
    // cancellation, random cases and ladders
    std::vector<Data> more;
    for (int gap : {40, 60, 61, 62, 63, 64, 65, 66, 100, 1000}) more.push_back(clusters(4000, gap, 20 + static_cast<std::uint64_t>(gap)));
    more.push_back(ramp(6000, 300, 200, 16));
    more.push_back(ramp(3001, 1000, 900, 17));
    more.push_back(cancel_wide(2500, 18));
    more.push_back(dist_b(150, 8000, 19, true));
    more.push_back(needle(20000, 21));
    more.push_back(needle(3000, 22));
    for (const auto& d : more)
      for (const auto& s : splits)
        for (const auto& o : options) {
          run(d, s.first, s.second, o);
          ++runs;
        }
    // float input: the sets that stay in float's range, with float's ladders
    for (const auto* set : {&data, &more})
      for (const auto& d : *set)
        for (const auto& s : splits)
          for (auto o : options) {
            for (const char* ladder : {"", "binary32,bfloat16,perforate"}) {
              o.ladder = *ladder ? ebla::qdot_ladder_by_names(ladder) : std::vector<ebla::QdotLevel>{};
              run_float(d, s.first, s.second, o);
            }
          }
    std::mt19937_64 gen(2024);
    std::vector<std::vector<ebla::QdotLevel>> ladders{
        {},
        ebla::qdot_ladder_by_names("binary64,binary32"),
        ebla::qdot_ladder_by_names("binary64,bfloat16,perforate"),
        ebla::qdot_ladder_by_names("binary64,binary32,binary16,bfloat16,fp8_e4m3,perforate"),
        ebla::qdot_ladder_by_names("binary64")};
    std::uniform_int_distribution<std::size_t> pick_ladder(0, ladders.size() - 1);
    std::uniform_real_distribution<double> log_tol(-17, 1);
    std::bernoulli_distribution paper(0.25);
    for (int k = 0; k < 400; ++k) {
      const Data d = random_case(gen, k);
      const auto f = random_split(d.x.size(), gen);
      ebla::QdotOptions o;
      o.tolerance = std::pow(10.0, log_tol(gen));
      o.policy = paper(gen) ? ebla::QdotPolicy::paper : ebla::QdotPolicy::budget;
      o.ladder = ladders[pick_ladder(gen)];
      run(d, "random", [&f](std::size_t) { return f; }, o);
      ++runs;
    }
    invalid_arguments();
    nonfinite();
    long total[2], cases[4] = {one_cases, one_beyond_window, one_violations, float_cases},
                   all_cases[4] = {0, 0, 0, 0};
    totals(total);
    PMPI_Allreduce(cases, all_cases, 4, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("test_mpi_qdot: %d ranks, %d cases, %ld checks, %ld failed; one collective: %ld cases, %ld with bins "
                  "below the window, %ld bound violations; float input: %ld cases\n",
                  ranks, runs, total[0], total[1], all_cases[0], all_cases[1], all_cases[2], all_cases[3]);
    for (int k = 1; k < argc; ++k)
      if (std::strcmp(argv[k], "--timing") == 0) {
        for (double t : {9.0, 20.0}) {
          timing(t, 1000000, 15);
          timing(t, 100000, 30);
          timing(t, 1000, 200);
        }
      }
    failures = total[1];
  }
  Kokkos::finalize();
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

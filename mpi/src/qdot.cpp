// Distributed qdot: the serial phases of ebla::qdot with one MPI_Allreduce each.
#include <ebla/mpi/qdot.hpp>

#include <ebla/kernels/qdot_host.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ebla::mpi {

namespace {

// What the computation phase reduces: the serial accumulator and the number of ranks that
// found their arguments invalid (so that every rank throws, none waits).
struct State {
  detail::QdotAccum acc;
  std::int64_t invalid;
};

// inout = in (lower ranks) joined with inout: the join of the serial kernel's lanes.
void join_states(void* in, void* inout, int* len, MPI_Datatype*) {
  const State* a = static_cast<const State*>(in);
  State* b = static_cast<State*>(inout);
  for (int i = 0; i < *len; ++i) {
    State r = a[i];
    detail::qdot_accum_join(r.acc, b[i].acc);
    r.invalid += b[i].invalid;
    b[i] = r;
  }
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("ebla::mpi::qdot: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
}

// Local argument checks: an empty string when the arguments are valid on this rank.
std::string local_problem(const DistributedVector& x, const DistributedVector& y) {
  if (x.local_size != y.local_size)
    return "x has " + std::to_string(x.local_size) + " local components but y has " + std::to_string(y.local_size);
  if (x.local_size > 0 && (x.data == nullptr || y.data == nullptr))
    return std::string(x.data == nullptr ? "x" : "y") + " is null but its local length is " + std::to_string(x.local_size);
  int same = MPI_UNEQUAL;
  check_mpi(MPI_Comm_compare(x.comm, y.comm, &same), "MPI_Comm_compare");
  if (same != MPI_IDENT && same != MPI_CONGRUENT) return "x and y live on different communicators";
  return {};
}

[[noreturn]] void throw_collective(const char* function, const std::string& mine, std::int64_t ranks) {
  throw_invalid(function, mine.empty() ? "invalid arguments on " + std::to_string(ranks) + " rank(s)" : mine);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

QdotPlan qdot_select(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string problem = local_problem(x, y);
  if (problem.empty()) {
    try {
      detail::resolve_ladder(options, 53, "ebla::mpi::qdot_select");
    } catch (const InvalidArgument& e) {
      problem = e.what();
    }
  }
  // slots [0, qdot_hist_size): the histogram; the last one: ranks with invalid arguments
  std::vector<std::int64_t> h(detail::qdot_hist_size + 1, 0);
  if (problem.empty())
    detail::qdot_histogram_host(x.data, y.data, x.local_size, h.data());
  else
    h[detail::qdot_hist_size] = 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(h.size()), MPI_INT64_T, MPI_SUM, x.comm),
            "MPI_Allreduce");
  if (h[detail::qdot_hist_size] > 0) throw_collective("ebla::mpi::qdot_select", problem, h[detail::qdot_hist_size]);
  // every component has exactly one slot (a bin, zero or nonfinite): the global length
  std::int64_t n = 0;
  for (int j = 0; j < detail::qdot_hist_size; ++j) n += h[j];
  QdotPlan plan = detail::plan_from_histogram(h.data(), static_cast<std::size_t>(n), 53, options);
  plan.select_seconds = seconds_since(t0);
  return plan;
}

QdotResult qdot_compute(const DistributedVector& x, const DistributedVector& y, const QdotPlan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string problem = local_problem(x, y);
  if (problem.empty()) {
    try {
      detail::check_plan(plan, plan.n, 53, "ebla::mpi::qdot_compute");
    } catch (const InvalidArgument& e) {
      problem = e.what();
    }
  }
  State st;
  detail::qdot_accum_init(st.acc);
  st.invalid = problem.empty() ? 0 : 1;
  if (problem.empty()) {
    st.acc = detail::qdot_accumulate_host(x.data, y.data, x.local_size, plan);
    if (st.acc.nonfinite > 0 || plan.nonfinite) {  // the plain dot product, NaN/Inf as it gives them
      double sum = 0;
      for (std::size_t i = 0; i < x.local_size; ++i) sum += x.data[i] * y.data[i];
      st.acc.s = sum;
      st.acc.c = 0;
    }
  }
  MPI_Datatype type;
  MPI_Op op;
  check_mpi(MPI_Type_contiguous(static_cast<int>(sizeof(State)), MPI_BYTE, &type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Op_create(&join_states, 0, &op), "MPI_Op_create");  // not commutative: rank order
  State global;
  const int rc = MPI_Allreduce(&st, &global, 1, type, op, x.comm);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  check_mpi(rc, "MPI_Allreduce");
  if (global.invalid > 0) throw_collective("ebla::mpi::qdot_compute", problem, global.invalid);
  std::int64_t n = global.acc.zeros + global.acc.nonfinite;
  for (int l = 0; l < detail::qdot_max_levels; ++l) n += global.acc.count[l];
  if (static_cast<std::size_t>(n) != plan.n)
    throw_invalid("ebla::mpi::qdot_compute", "the plan was selected for vectors of global length " +
                                                 std::to_string(plan.n) + ", not " + std::to_string(n));
  QdotResult r = detail::finish_result(plan, global.acc, plan.n);
  if (r.stats.nonfinite) r.value = global.acc.s;  // the sum of the ranks' plain dots
  r.stats.compute_seconds = seconds_since(t0);
  return r;
}

QdotResult qdot(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options) {
  const QdotPlan plan = qdot_select(x, y, options);
  QdotResult r = qdot_compute(x, y, plan);
  r.stats.select_seconds = plan.select_seconds;
  return r;
}

}  // namespace ebla::mpi

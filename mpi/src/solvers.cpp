// The reductions of the distributed solvers, and the solvers on the distributed operators.
#include <ebla/mpi/solvers.hpp>

#include <ebla/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ebla::mpi {

namespace {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(std::string("ebla::mpi: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
}

// inout = in (the lower ranks' sum) + inout, in double-double: rank order, so every rank
// gets the same sum whatever the reduction tree.
void join_double_doubles(void* in, void* inout, int* len, MPI_Datatype*) {
  const DoubleDouble* a = static_cast<const DoubleDouble*>(in);
  DoubleDouble* b = static_cast<DoubleDouble*>(inout);
  for (int i = 0; i < *len; ++i) {
    DoubleDouble r = a[i];
    r.join(b[i]);
    b[i] = r;
  }
}

// The exact dot product's record: one MPI_Allreduce of (x^T y, local length, 1 if x and y
// differ in length here) (a length is exact in a double up to 2^53).
DotRecord exact_dot(ConstVector x, ConstVector y, MPI_Comm comm) {
  const bool same = x.extent(0) == y.extent(0);
  double v[3] = {same ? ebla::plain_dot(x, y) : 0.0, static_cast<double>(x.extent(0)), same ? 0.0 : 1.0};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  if (v[2] > 0)  // every rank throws, none waits
    throw_invalid("ebla::mpi::dot", same ? "the local lengths of x and y differ on " + std::to_string(static_cast<long>(v[2])) + " rank(s)"
                                         : "x has " + std::to_string(x.extent(0)) + " local entries, y " + std::to_string(y.extent(0)));
  if (x.data() == y.data()) return exact_squares_record(v[0], static_cast<std::size_t>(v[1]));
  DotRecord d;  // as dots.hpp: for x != y, |x|^T|y| is not known
  d.value = v[0];
  d.bound = std::numeric_limits<double>::quiet_NaN();
  d.abs_sum = std::numeric_limits<double>::quiet_NaN();
  d.fraction = {1.0};
  return d;
}

DistributedVector part(ConstVector v, MPI_Comm comm) { return DistributedVector{v.data(), v.extent(0), comm}; }

}  // namespace

DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y, MPI_Comm comm, std::vector<std::uint8_t>* levels,
              QdotCollectives collectives) {
  if (policy.kind == DotKind::automatic)  // the same on every rank: all throw
    throw_invalid("ebla::mpi::dot", "the automatic policy chooses each tolerance inside a solver; "
                                    "a dot product alone takes DotPolicy::approximate");
  const auto t0 = std::chrono::steady_clock::now();
  Kokkos::fence();  // the vectors must be complete before the host kernels read them
  DotRecord d;
  if (policy.kind == DotKind::exact) {
    d = exact_dot(x, y, comm);
    if (levels) levels->assign(x.extent(0), 0);
  } else if (policy.kind == DotKind::qdot && collectives == QdotCollectives::one) {
    QdotPlan plan;
    const QdotResult r = qdot(part(x, comm), part(y, comm), policy.qdot, levels ? &plan : nullptr);
    std::size_t n = r.stats.zeros;
    for (auto c : r.stats.count_per_level) n += c;
    d = detail::record_of(r, n);
    if (levels) detail::level_map(plan, x, y, *levels);
  } else {  // fixed (whose plan is known only after the selection), or qdot in two collectives
    QdotPlan plan = qdot_select(part(x, comm), part(y, comm), policy.qdot);
    if (policy.kind == DotKind::fixed)  // every bin at the format (as the serial policy)
      std::fill(plan.level.begin(), plan.level.end(), std::uint8_t{1});
    d = detail::record_of(qdot_compute(part(x, comm), part(y, comm), plan), plan.n);
    if (levels) detail::level_map(plan, x, y, *levels);
  }
  if (policy.kind == DotKind::qdot) d.tolerance = policy.qdot.tolerance;
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

double sum(double v, MPI_Comm comm) {
  // MPI_SUM on one double: every rank gets the same value (each partial sum is formed once,
  // or by both partners of a pair as a + b and b + a, which are equal in IEEE arithmetic)
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  return v;
}

double max(double v, MPI_Comm comm) {
  // MPI_MAX ignores a NaN on some implementations: a flag carries it
  double both[2] = {std::isnan(v) ? 1.0 : 0.0, std::isnan(v) ? 0.0 : v};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  return both[0] > 0 ? std::nan("") : both[1];
}

double global_norm(const DoubleDouble& local_squares, MPI_Comm comm) {
  MPI_Datatype type;
  MPI_Op op;
  check_mpi(MPI_Type_contiguous(2, MPI_DOUBLE, &type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Op_create(&join_double_doubles, 0, &op), "MPI_Op_create");  // not commutative: rank order
  DoubleDouble global;
  const int rc = MPI_Allreduce(&local_squares, &global, 1, type, op, comm);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  check_mpi(rc, "MPI_Allreduce");
  return std::sqrt(global.value());
}

bool all(bool ok, MPI_Comm comm) {
  int v = ok ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce");
  return v != 0;
}

CgResult cg(const DistributedStencil& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o,
            QdotCollectives c) {
  return ebla::cg(MpiSpace<DistributedStencil>(A, c), b, x0, dots, o);
}
CgResult cg(const DistributedCsr& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o,
            QdotCollectives c) {
  return ebla::cg(MpiSpace<DistributedCsr>(A, c), b, x0, dots, o);
}
PowerResult power_method(const DistributedStencil& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o,
                         QdotCollectives c) {
  return ebla::power_method(MpiSpace<DistributedStencil>(A, c), x0, dots, o);
}
PowerResult power_method(const DistributedCsr& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& o,
                         QdotCollectives c) {
  return ebla::power_method(MpiSpace<DistributedCsr>(A, c), x0, dots, o);
}

}  // namespace ebla::mpi

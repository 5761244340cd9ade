// The solvers (conjugate gradients, the power method) on CSR or dense matrices with every dot
// policy of solvers/dots.hpp, CG also on a Python operator with a Python preconditioner and
// callback, and the test problems of solvers/problems.hpp.
#include "common.hpp"

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problem_spec.hpp>
#include <ebla/solvers/problems.hpp>

#include <cstdio>
#include <initializer_list>
#include <optional>

namespace ebla::python {

namespace {

using RowMap = CsrMatrix::row_map_type::non_const_type;
using Entries = CsrMatrix::index_type::non_const_type;
using Values = CsrMatrix::values_type::non_const_type;
using IndexArray = py::array_t<std::int64_t, py::array::c_style>;
using ColumnArray = py::array_t<std::int32_t, py::array::c_style>;

// A square CSR matrix from scipy's arrays, checked entry by entry (a bad index would make
// the kernels read out of bounds) and copied into Kokkos's views (their index types differ
// from scipy's, so this copy cannot be avoided).
CsrMatrix csr_from_arrays(const IndexArray& indptr, const ColumnArray& indices, const DoubleArray& data,
                          std::int64_t n, const char* function) {
  require(n >= 0, function, "the matrix has " + std::to_string(n) + " rows");
  require(indptr.size() == n + 1, function,
          "indptr has " + std::to_string(indptr.size()) + " entries, not rows + 1 = " + std::to_string(n + 1));
  const std::int64_t* p = indptr.data();
  require(p[0] == 0, function, "indptr[0] is " + std::to_string(p[0]) + ", not 0");
  // (each message is built only for an entry that fails: a string per entry took longer
  // than the solve on HPCCG 100^3's 26 million)
  for (std::int64_t i = 0; i < n; ++i)
    if (p[i] > p[i + 1]) throw_invalid(function, "indptr decreases at row " + std::to_string(i));
  const std::int64_t nnz = p[n];
  require(indices.size() == nnz && data.size() == nnz, function,
          "indptr ends at " + std::to_string(nnz) + " but there are " + std::to_string(indices.size()) +
              " indices and " + std::to_string(data.size()) + " values");
  const std::int32_t* c = indices.data();
  for (std::int64_t k = 0; k < nnz; ++k)
    if (c[k] < 0 || c[k] >= n)
      throw_invalid(function, "column index " + std::to_string(c[k]) + " is outside [0, " + std::to_string(n) + ")");
  RowMap row_map(Kokkos::ViewAllocateWithoutInitializing("ebla.python row_map"), static_cast<std::size_t>(n + 1));
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla.python entries"), static_cast<std::size_t>(nnz));
  Values values(Kokkos::ViewAllocateWithoutInitializing("ebla.python values"), static_cast<std::size_t>(nnz));
  auto h_ptr = Kokkos::create_mirror_view(row_map);
  auto h_col = Kokkos::create_mirror_view(entries);
  auto h_val = Kokkos::create_mirror_view(values);
  for (std::int64_t i = 0; i <= n; ++i) h_ptr(i) = static_cast<std::size_t>(p[i]);
  for (std::int64_t k = 0; k < nnz; ++k) {
    h_col(k) = c[k];
    h_val(k) = data.data()[k];
  }
  Kokkos::deep_copy(row_map, h_ptr);
  Kokkos::deep_copy(entries, h_col);
  Kokkos::deep_copy(values, h_val);
  return CsrMatrix("ebla.python", static_cast<int>(n), static_cast<int>(n), static_cast<std::size_t>(nnz), values,
                   row_map, entries);
}

// scipy's arrays of a CSR matrix (indptr int64, indices int32, data float64), as a tuple.
py::tuple csr_to_arrays(const CsrMatrix& A) {
  auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  py::array_t<std::int64_t> indptr(static_cast<py::ssize_t>(ptr.extent(0)));
  py::array_t<std::int32_t> indices(static_cast<py::ssize_t>(col.extent(0)));
  py::array_t<double> data(static_cast<py::ssize_t>(val.extent(0)));
  for (std::size_t i = 0; i < ptr.extent(0); ++i) indptr.mutable_data()[i] = static_cast<std::int64_t>(ptr(i));
  for (std::size_t k = 0; k < col.extent(0); ++k) {
    indices.mutable_data()[k] = col(k);
    data.mutable_data()[k] = val(k);
  }
  return py::make_tuple(indptr, indices, data, static_cast<std::int64_t>(A.numRows()),
                        static_cast<std::int64_t>(A.numCols()));
}

// A dense row-major matrix copied into the view DenseOperator applies.
DenseOperator dense_from_array(const DoubleArray& A, const char* function) {
  require(A.ndim() == 2, function, "A has " + std::to_string(A.ndim()) + " dimensions, not 2");
  Kokkos::View<double**, Kokkos::LayoutRight> M("ebla.python dense", static_cast<std::size_t>(A.shape(0)),
                                                static_cast<std::size_t>(A.shape(1)));
  auto h = Kokkos::create_mirror_view(M);
  std::copy(A.data(), A.data() + A.size(), h.data());
  Kokkos::deep_copy(M, h);
  return DenseOperator(M);
}

// The dot policy of the Python arguments: kind "exact", "qdot", "fixed" or "auto".
DotPolicy make_policy(const std::string& kind, double qdot_tol, const std::string& qdot_policy,
                      const std::string& ladder, const std::string& format, int plan_margin, const char* function) {
  // every name is checked, also those the kind of policy does not use
  QdotOptions o;
  o.policy = for_argument(function, "qdot_policy", [&] { return qdot_policy_by_name(qdot_policy); });
  if (!ladder.empty()) o.ladder = for_argument(function, "ladder", [&] { return qdot_ladder_by_names(ladder); });
  std::optional<Format> fixed;
  if (!format.empty()) fixed = for_argument(function, "format", [&] { return format_by_name(format); });
  o.plan_margin = plan_margin;
  if (kind == "exact") return DotPolicy::exact();
  if (kind == "qdot") {
    o.tolerance = qdot_tol;
    return DotPolicy::approximate(o);
  }
  if (kind == "fixed") {
    require(fixed.has_value(), function, "dot='fixed' needs a format (e.g. format='bfloat16')");
    return DotPolicy::fixed(*fixed);
  }
  if (kind == "auto") return DotPolicy::automatic(nullptr, o);
  throw_invalid(function, "unknown dot policy '" + kind + "' (known: exact, qdot, fixed, auto)");
}

// The records of one kind of dot product over the iterations, as arrays named prefix_*.
void add_records(py::dict& d, const std::string& prefix, const std::vector<const DotRecord*>& records,
                 std::size_t rungs) {
  const auto k = static_cast<py::ssize_t>(records.size());
  py::array_t<double> value(k), bound(k), tolerance(k), accuracy(k), abs_sum(k), zero(k);
  py::array_t<double> fraction({k, static_cast<py::ssize_t>(rungs)});
  for (py::ssize_t i = 0; i < k; ++i) {
    const DotRecord& r = *records[static_cast<std::size_t>(i)];
    value.mutable_data()[i] = r.value;
    bound.mutable_data()[i] = r.bound;
    tolerance.mutable_data()[i] = r.tolerance;
    accuracy.mutable_data()[i] = r.accuracy;
    abs_sum.mutable_data()[i] = r.abs_sum;
    zero.mutable_data()[i] = r.zero_fraction;
    for (std::size_t l = 0; l < rungs; ++l)
      fraction.mutable_data()[static_cast<std::size_t>(i) * rungs + l] = l < r.fraction.size() ? r.fraction[l] : 0.0;
  }
  d[(prefix + "_value").c_str()] = value;
  d[(prefix + "_bound").c_str()] = bound;
  d[(prefix + "_tolerance").c_str()] = tolerance;
  d[(prefix + "_accuracy").c_str()] = accuracy;
  d[(prefix + "_abs_sum").c_str()] = abs_sum;
  d[(prefix + "_zero_fraction").c_str()] = zero;
  d[(prefix + "_fraction").c_str()] = fraction;
}

// Per-component ladder maps of every iteration (record_levels), k x n.
py::array_t<std::uint8_t> level_maps(const std::vector<const std::vector<std::uint8_t>*>& maps) {
  const std::size_t n = maps.empty() ? 0 : maps.front()->size();
  py::array_t<std::uint8_t> a({static_cast<py::ssize_t>(maps.size()), static_cast<py::ssize_t>(n)});
  for (std::size_t i = 0; i < maps.size(); ++i)
    std::copy(maps[i]->begin(), maps[i]->end(), a.mutable_data() + i * n);
  return a;
}

// One number of every iteration as an array.
template <class Iteration>
py::array_t<double> series(const std::vector<Iteration>& history, double Iteration::*field) {
  py::array_t<double> a(static_cast<py::ssize_t>(history.size()));
  for (std::size_t i = 0; i < history.size(); ++i) a.mutable_data()[i] = history[i].*field;
  return a;
}

// A dot product of the iterations: its name, its record and its map of levels.
template <class Iteration>
struct DotField {
  const char* name;
  DotRecord Iteration::*record;
  std::vector<std::uint8_t> Iteration::*levels;
};

// Each dot product's records of every iteration (add_records), and with record_levels its
// maps of levels as NAME_levels.
template <class Iteration>
void add_dot_history(py::dict& h, const std::vector<Iteration>& history,
                     std::initializer_list<DotField<Iteration>> fields, std::size_t rungs, bool record_levels) {
  for (const DotField<Iteration>& f : fields) {
    std::vector<const DotRecord*> records;
    std::vector<const std::vector<std::uint8_t>*> maps;
    for (const Iteration& it : history) {
      records.push_back(&(it.*f.record));
      maps.push_back(&(it.*f.levels));
    }
    add_records(h, f.name, records, rungs);
    if (record_levels) h[py::str(std::string(f.name) + "_levels")] = level_maps(maps);
  }
}

py::list events_list(const std::vector<SolverEvent>& events) {
  py::list l;
  for (const SolverEvent& e : events) l.append(py::make_tuple(e.iteration, e.what));
  return l;
}

py::dict cg_dict(const CgResult& r, const DotPolicy& dots, bool record_levels) {
  py::dict d;
  d["x"] = vector_to_numpy(r.x);
  d["iterations"] = r.iterations;
  d["status"] = std::string(to_string(r.status));
  d["stop_reason"] = r.stop_reason;
  d["breakdown"] = r.breakdown;
  d["tolerance_used"] = r.tolerance_used;
  d["initial_residual"] = r.initial_residual;
  d["recursive_residual"] = r.recursive_residual;
  d["true_residual"] = r.true_residual;
  d["b_norm"] = r.b_norm;
  d["seconds"] = r.seconds;
  d["iteration_seconds"] = r.iteration_seconds;
  d["storage"] = r.storage;
  d["replacements"] = r.replacements;
  d["bytes_moved"] = r.bytes_moved;
  d["pc"] = r.pc;
  d["pc_blocks"] = r.pc_blocks;
  d["pc_bytes"] = r.pc_bytes;
  d["pc_binary64_bytes"] = r.pc_binary64_bytes;
  d["pc_block_formats"] = py::dict(py::arg("bfloat16") = r.pc_blocks_in[static_cast<int>(Storage::bfloat16)],
                                   py::arg("binary32") = r.pc_blocks_in[static_cast<int>(Storage::binary32)],
                                   py::arg("binary64") = r.pc_blocks_in[static_cast<int>(Storage::binary64)]);
  d["pc_delta"] = r.pc_delta;
  d["pc_colours"] = r.pc_colours;
  d["pc_levels"] = r.pc_levels;
  d["pc_shift"] = r.pc_shift;
  d["pc_restarts"] = r.pc_restarts;
  d["dots"] = dots.to_string();
  const std::vector<std::string> rungs = dots.level_names();
  d["levels"] = rungs;
  d["events"] = events_list(r.events);
  py::dict h;
  h["residual"] = series(r.history, &CgIteration::residual);
  h["alpha"] = series(r.history, &CgIteration::alpha);
  h["beta"] = series(r.history, &CgIteration::beta);
  add_dot_history<CgIteration>(h, r.history, {{"pq", &CgIteration::pq, &CgIteration::pq_levels},
                                              {"rr", &CgIteration::rr, &CgIteration::rr_levels}},
                               rungs.size(), record_levels);
  d["history"] = h;
  py::dict rr0;
  add_records(rr0, "rr0", {&r.rr0}, rungs.size());
  d["rr0"] = rr0;
  return d;
}

py::dict power_dict(const PowerResult& r, const DotPolicy& dots, bool record_levels) {
  py::dict d;
  d["eigenvalue"] = r.eigenvalue;
  d["eigenvector"] = vector_to_numpy(r.eigenvector);
  d["iterations"] = r.iterations;
  d["status"] = std::string(to_string(r.status));
  d["stop_reason"] = r.stop_reason;
  d["breakdown"] = r.breakdown;
  d["residual"] = r.residual;
  d["seconds"] = r.seconds;
  d["dots"] = dots.to_string();
  const std::vector<std::string> rungs = dots.level_names();
  d["levels"] = rungs;
  d["events"] = events_list(r.events);
  d["storage"] = r.storage;
  d["bytes_moved"] = r.bytes_moved;
  py::dict h;
  h["eigenvalue"] = series(r.history, &PowerIteration::eigenvalue);
  h["change"] = series(r.history, &PowerIteration::change);
  add_dot_history<PowerIteration>(h, r.history, {{"yy", &PowerIteration::yy, &PowerIteration::yy_levels},
                                                 {"xy", &PowerIteration::xy, &PowerIteration::xy_levels}},
                                  rungs.size(), record_levels);
  d["history"] = h;
  return d;
}

// check_symmetric for a dense matrix: the first A(i, j) != A(j, i) in row order.
void check_symmetric_dense(const DoubleArray& A, const std::string& what) {
  const auto n = static_cast<std::size_t>(A.shape(0));
  const double* a = A.data();
  const auto entry = [&](std::size_t i, std::size_t j) {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", a[i * n + j]);  // as check_symmetric writes values
    return "A(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + value;
  };
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i; j < n; ++j)
      if (!(a[i * n + j] == a[j * n + i]))
        throw_invalid("ebla::check_symmetric", what + ": not symmetric: " + entry(i, j) + " but " + entry(j, i) +
                                                   " (0-based indices)");
}

// What a solver does with a matrix that is not symmetric, as the command line does: CG
// refuses it, the power method warns (a RuntimeWarning) and runs; check_symmetry=False skips
// the test.
enum class Asymmetry { skip, refuse, warn };

template <class Check>
void check_symmetry(Asymmetry asymmetry, const char* function, Check&& check) {
  if (asymmetry == Asymmetry::skip) return;
  try {
    check();
  } catch (const InvalidArgument& e) {
    if (asymmetry == Asymmetry::refuse)
      throw_invalid(function, std::string(e.what()) + "; CG needs a symmetric positive definite matrix "
                                                      "(check_symmetry=False skips this test)");
    const std::string warning = std::string(function) + ": " + e.what() +
                                "; the power method still runs, but its Rayleigh quotient converges more slowly";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) < 0) throw py::error_already_set();
  }
}

// The operator of the Python arguments: CSR arrays (indptr given), a dense matrix, or a
// Python function y = A x of n entries (matvec not None).
struct OperatorArgs {
  std::optional<IndexArray> indptr;
  std::optional<ColumnArray> indices;
  std::optional<DoubleArray> data;
  std::int64_t n = 0;
  std::optional<DoubleArray> dense;
  py::object matvec = py::none();
};

// y = f(x) for a Python function of the Python layer, which returns a C-contiguous float64
// array of y's length (it checks what the user's function returns), called with the GIL
// taken: the solvers run without it. f lives in the caller's frame (a copy of a py::object
// would count references without the GIL); a Python exception propagates as
// py::error_already_set.
void call_python(const py::object& f, const double* x, double* y, std::size_t n, const char* function,
                 const char* what) {
  py::gil_scoped_acquire gil;
  py::array_t<double> in(static_cast<py::ssize_t>(n));
  std::copy(x, x + n, in.mutable_data());
  const py::object out = f(in);
  const auto a = py::cast<DoubleArray>(out);
  require(a.ndim() == 1 && static_cast<std::size_t>(a.size()) == n, function,
          std::string(what) + " returned " + std::to_string(a.size()) + " values, not " + std::to_string(n));
  std::copy(a.data(), a.data() + n, y);
}

template <class F>
auto with_operator(const OperatorArgs& a, Asymmetry asymmetry, const char* function, F&& f) {
  if (!a.matvec.is_none()) {  // the user's operator: its symmetry is the user's to ensure
    const py::object* matvec = &a.matvec;
    const auto n = static_cast<std::size_t>(a.n);
    const FunctionOperator A(n, [matvec, n, function](FunctionOperator::HostConstVector x,
                                                       FunctionOperator::HostVector y) {
      call_python(*matvec, x.data(), y.data(), n, function, "A.matvec");
    });
    return f(A);
  }
  if (a.indptr) {
    const CsrMatrix M = csr_from_arrays(*a.indptr, *a.indices, *a.data, a.n, function);
    check_symmetry(asymmetry, function, [&] { check_symmetric(M, "A"); });
    const CsrOperator A(M);
    return f(A);
  }
  check_symmetry(asymmetry, function, [&] { check_symmetric_dense(*a.dense, "A"); });
  const DenseOperator A = dense_from_array(*a.dense, function);
  return f(A);
}

// The Python functions of a CG call (None where not given): the preconditioner z = M r and
// the callback(x_k) after every iteration.
struct CgFunctions {
  py::object precondition = py::none();
  py::object callback = py::none();
};

py::dict cg_call(const OperatorArgs& op, const DoubleArray& b, std::optional<DoubleArray> x0, double tol,
                 double atol, const std::string& norm, const std::string& stop, int max_iterations, bool jacobi,
                 const std::string& pc, int pc_block_size, const std::string& dot, double qdot_tol, const std::string& qdot_policy, const std::string& ladder,
                 const std::string& format, int plan_margin, bool record_levels, int stall_window,
                 bool check_symmetry, const std::string& storage, const std::string& pc_storage,
                 const CgFunctions& functions) {
  const char* function = "ebla.cg";
  const DotPolicy dots = make_policy(dot, qdot_tol, qdot_policy, ladder, format, plan_margin, function);
  CgOptions o;
  o.tolerance = tol;
  o.absolute_tolerance = atol;
  if (norm == "absolute") o.norm = Norm::absolute;
  else if (norm == "relative") o.norm = Norm::relative;
  else throw_invalid(function, "unknown norm '" + norm + "' (known: absolute, relative)");
  // the command line's names (exact), and exact_norm as before
  if (stop == "exact" || stop == "exact_norm") o.stop = StopTest::exact_norm;
  else if (stop == "certified") o.stop = StopTest::certified;
  else if (stop == "approximate") o.stop = StopTest::approximate;
  else throw_invalid(function, "unknown stop test '" + stop + "' (known: exact, certified, approximate)");
  o.max_iterations = max_iterations;
  o.jacobi = jacobi;
  o.pc = pc_kind_by_name(pc, "ebla.cg: M");
  o.pc_block_size = pc_block_size;
  o.pc_storage = block_storage_by_name(pc_storage, "ebla.cg: pc_storage");
  const std::size_t n = static_cast<std::size_t>(b.size());
  if (!functions.precondition.is_none()) {
    const py::object* m = &functions.precondition;
    o.preconditioner = [m, n, function](ConstVector r, Vector z) {
      const auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r);
      const auto hz = Kokkos::create_mirror_view(Kokkos::HostSpace(), z);
      call_python(*m, hr.data(), hz.data(), n, function, "M");
      Kokkos::deep_copy(z, hz);
    };
  }
  if (!functions.callback.is_none()) {
    const py::object* callback = &functions.callback;
    o.on_iterate = [callback](int, ConstVector x) {
      const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
      py::gil_scoped_acquire gil;
      (*callback)(vector_to_numpy(hx));
    };
  }
  o.record_levels = record_levels;
  o.stall_window = stall_window;
  o.storage = storage_policy_by_name(storage, "ebla.cg: storage");
  const ConstVector bv(b.data(), static_cast<std::size_t>(b.size()));
  Vector zeros;
  ConstVector xv;
  if (x0) {
    xv = ConstVector(x0->data(), static_cast<std::size_t>(x0->size()));
  } else {
    zeros = Vector("ebla.python x0", static_cast<std::size_t>(b.size()));
    xv = zeros;
  }
  return with_operator(op, check_symmetry ? Asymmetry::refuse : Asymmetry::skip, function, [&](const auto& A) {
    CgResult r;
    {
      py::gil_scoped_release release;
      r = cg(A, bv, xv, dots, o);
    }
    return cg_dict(r, dots, record_levels);
  });
}

py::dict power_call(const OperatorArgs& op, const DoubleArray& x0, double tol, int max_iterations,
                    const std::string& dot, double qdot_tol, const std::string& qdot_policy,
                    const std::string& ladder, const std::string& format, int plan_margin, bool record_levels,
                    bool check_symmetry, const std::string& storage) {
  const char* function = "ebla.power_method";
  const DotPolicy dots = make_policy(dot, qdot_tol, qdot_policy, ladder, format, plan_margin, function);
  PowerOptions o;
  o.storage = storage_policy_by_name(storage, "ebla.power_method: storage");
  o.tolerance = tol;
  o.max_iterations = max_iterations;
  o.record_levels = record_levels;
  const ConstVector xv(x0.data(), static_cast<std::size_t>(x0.size()));
  return with_operator(op, check_symmetry ? Asymmetry::warn : Asymmetry::skip, function, [&](const auto& A) {
    PowerResult r;
    {
      py::gil_scoped_release release;
      r = power_method(A, xv, dots, o);
    }
    return power_dict(r, dots, record_levels);
  });
}

// A problem spec whose messages name the Python function and its argument.
ProblemSpec named_for(const char* function) {
  ProblemSpec spec;
  spec.name_field = [function](const std::string& field) {
    return std::string(function) + ": " + (field == "degree" ? "mean_degree" : field);
  };
  return spec;
}

// The checks of the command line's grid options, with messages that name the Python function.
void check_grid(const char* function, ProblemSource source, int nx, int ny, int nz) {
  ProblemSpec spec = named_for(function);
  spec.source = source;
  spec.nx = nx;
  spec.ny = ny;
  spec.nz = nz;
  check_problem_spec(spec, ProblemUse::cg);
}

OperatorArgs operator_args(std::optional<IndexArray> indptr, std::optional<ColumnArray> indices,
                           std::optional<DoubleArray> data, std::int64_t n, std::optional<DoubleArray> dense) {
  OperatorArgs a;
  a.indptr = std::move(indptr);
  a.indices = std::move(indices);
  a.data = std::move(data);
  a.n = n;
  a.dense = std::move(dense);
  return a;
}

}  // namespace

void register_solvers(py::module_& m) {
  m.def("cg",
        [](std::optional<IndexArray> indptr, std::optional<ColumnArray> indices, std::optional<DoubleArray> data,
           std::int64_t n, std::optional<DoubleArray> dense, py::object matvec, const DoubleArray& b,
           std::optional<DoubleArray> x0, double tol, double atol, const std::string& norm, const std::string& stop,
           int max_iterations, bool jacobi, const std::string& pc, int pc_block_size, py::object precondition,
           py::object callback, const std::string& dot,
           double qdot_tol, const std::string& qdot_policy, const std::string& ladder, const std::string& format,
           int plan_margin, bool record_levels, int stall_window, bool check_symmetry, const std::string& storage,
           const std::string& pc_storage) {
          OperatorArgs op = operator_args(indptr, indices, data, n, dense);
          op.matvec = std::move(matvec);
          CgFunctions functions;
          functions.precondition = std::move(precondition);
          functions.callback = std::move(callback);
          return cg_call(op, b, std::move(x0), tol, atol, norm, stop, max_iterations, jacobi, pc, pc_block_size, dot,
                         qdot_tol,
                         qdot_policy, ladder, format, plan_margin, record_levels, stall_window, check_symmetry,
                         storage, pc_storage, functions);
        },
        py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n"), py::arg("dense"), py::arg("matvec"),
        py::arg("b"), py::arg("x0"), py::arg("tol"), py::arg("atol"), py::arg("norm"), py::arg("stop"),
        py::arg("max_iterations"), py::arg("jacobi"), py::arg("pc"), py::arg("pc_block_size"),
        py::arg("precondition"), py::arg("callback"), py::arg("dot"),
        py::arg("qdot_tol"), py::arg("qdot_policy"), py::arg("ladder"), py::arg("format"), py::arg("plan_margin"),
        py::arg("record_levels"), py::arg("stall_window"), py::arg("check_symmetry"), py::arg("storage"),
        py::arg("pc_storage"),
        "ebla::cg on a CSR (indptr, indices, data, n) or dense matrix, or a Python matvec(x) of n entries, "
        "with a preconditioner pc (none, jacobi, block-jacobi, sgs, ic0) or a Python one precondition(r), and an optional "
        "callback(x); a dict of the result.");
  m.def("power_method",
        [](std::optional<IndexArray> indptr, std::optional<ColumnArray> indices, std::optional<DoubleArray> data,
           std::int64_t n, std::optional<DoubleArray> dense, const DoubleArray& x0, double tol, int max_iterations,
           const std::string& dot, double qdot_tol, const std::string& qdot_policy, const std::string& ladder,
           const std::string& format, int plan_margin, bool record_levels, bool check_symmetry,
           const std::string& storage) {
          return power_call(operator_args(indptr, indices, data, n, dense), x0, tol, max_iterations, dot, qdot_tol,
                            qdot_policy, ladder, format, plan_margin, record_levels, check_symmetry, storage);
        },
        py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n"), py::arg("dense"), py::arg("x0"),
        py::arg("tol"), py::arg("max_iterations"), py::arg("dot"), py::arg("qdot_tol"), py::arg("qdot_policy"),
        py::arg("ladder"), py::arg("format"), py::arg("plan_margin"), py::arg("record_levels"),
        py::arg("check_symmetry"), py::arg("storage"),
        "ebla::power_method on a CSR or dense matrix; a dict of the result.");
  m.def("hpccg_problem", [](int nx, int ny, int nz) {
    check_grid("ebla.hpccg_problem", ProblemSource::hpccg, nx, ny, nz);
    const HpccgProblem p = hpccg_problem(nx, ny, nz);
    return py::make_tuple(csr_to_arrays(p.A), vector_to_numpy(p.b));
  }, py::arg("nx"), py::arg("ny"), py::arg("nz"), "HPCCG's 27-point matrix and right-hand side (CSR arrays, b).");
  m.def("diffusion_problem", [](int nx, int ny, int nz, std::uint64_t seed) {
    check_grid("ebla.diffusion_problem", ProblemSource::diffusion, nx, ny, nz);
    const DiffusionProblem p = diffusion_problem(nx, ny, nz, seed);
    return py::make_tuple(csr_to_arrays(p.A), vector_to_numpy(p.b));
  }, py::arg("nx"), py::arg("ny"), py::arg("nz"), py::arg("seed"),
     "The 7-point variable-coefficient diffusion matrix and b = A 1 (CSR arrays, b).");
  m.def("graph_laplacian", [](std::size_t n, double mean_degree, std::uint64_t seed) {
    ProblemSpec spec = named_for("ebla.graph_laplacian");
    spec.source = ProblemSource::laplacian;
    spec.n = n;
    spec.degree = mean_degree;
    check_problem_spec(spec, ProblemUse::power);
    return csr_to_arrays(graph_laplacian(n, mean_degree, seed));
  }, py::arg("n"), py::arg("mean_degree"), py::arg("seed"), "The Laplacian of a seeded random graph (CSR arrays).");
  m.def("random_unit_vector", [](std::size_t n, std::uint64_t seed) { return vector_to_numpy(random_unit_vector(n, seed)); },
        py::arg("n"), py::arg("seed"), "The power method's seeded start vector.");
  m.def("read_matrix_market", [](const std::string& path) { return csr_to_arrays(read_matrix_market(path)); },
        py::arg("path"), "A Matrix Market file as CSR arrays (ebla's reader).");
}

}  // namespace ebla::python

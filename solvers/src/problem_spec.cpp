// Test problems from a ProblemSpec (see problem_spec.hpp).
#include <ebla/solvers/problem_spec.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace ebla {

namespace {

__attribute__((format(printf, 1, 2))) std::string text(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string s(static_cast<std::size_t>(std::max(length, 0)) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), format, again);
  va_end(again);
  s.pop_back();
  return s;
}

std::size_t grid_rows(const ProblemSpec& spec) {
  return static_cast<std::size_t>(spec.nx) * static_cast<std::size_t>(spec.ny) * static_cast<std::size_t>(spec.nz);
}

// ---- checks ------------------------------------------------------------------------------

void check_positive_size(const ProblemSpec& spec, const char* field, int v) {
  if (v < 1) throw_invalid(spec.named(field), std::to_string(v) + " is not a positive size");
}

void check_grid(const ProblemSpec& spec) {
  check_positive_size(spec, "nx", spec.nx);
  check_positive_size(spec, "ny", spec.ny);
  check_positive_size(spec, "nz", spec.nz);
  const double rows = static_cast<double>(spec.nx) * spec.ny * spec.nz;
  if (rows > INT_MAX)
    throw_invalid(spec.named("nx"),
                  text("grid %d x %d x %d has %.0f rows, more than %d", spec.nx, spec.ny, spec.nz, rows, INT_MAX));
}

bool on_grid(const ProblemSpec& spec) {
  return spec.source == ProblemSource::hpccg || spec.source == ProblemSource::diffusion;
}

void check_laplacian(const ProblemSpec& spec, ProblemUse use) {
  const double n = static_cast<double>(spec.n);
  if (spec.n < 2 || spec.n > static_cast<std::size_t>(INT_MAX))
    throw_invalid(spec.named("n"), text("%zu is not a number of vertices in [2, %d]", spec.n, INT_MAX));
  if (!(spec.degree > 0) || !(spec.degree <= n - 1))
    throw_invalid(spec.named("degree"), text("mean degree %g is outside (0, n - 1 = %.0f]", spec.degree, n - 1));
  if (!(spec.shift >= 0) || !std::isfinite(spec.shift))
    throw_invalid(spec.named("shift"), text("%g is not a nonnegative finite number", spec.shift));
  if (use == ProblemUse::cg && !(spec.shift > 0))
    throw_invalid(spec.named("problem laplacian"),
                  "a graph Laplacian is singular (L 1 = 0), so CG has no unique solution to find: give "
                  "--shift s > 0 to solve (L + s I) x = b");
}

void check_dense_size(const ProblemSpec& spec, std::size_t n) {
  if (n > max_dense_size)
    throw_invalid(spec.named("operator"),
                  text("dense: n = %zu exceeds %zu (the matrix is stored as n^2 doubles); use csr", n, max_dense_size));
}

// What a generated problem needs before it is built (files are checked by their readers):
// per row, HPCCG's 27-point CSR about 400 bytes (measured: the matrix's 324 and CG's
// vectors), matrix-free 64 (the vectors); the diffusion matrix's 7-point CSR 92 bytes and its
// coefficients 8 while it is built, beside the vectors; the graph Laplacian 32 bytes per
// stored entry (building and holding it) and 64 a row; dense 8 n^2 more.
void check_problem_memory(const ProblemSpec& spec) {
  if (!on_grid(spec) && spec.source != ProblemSource::laplacian) return;
  const bool grid = on_grid(spec);
  const double n = static_cast<double>(grid ? grid_rows(spec) : spec.n);
  double bytes = 64 * n;
  if (spec.op == OperatorKind::dense) bytes += 8 * n * n;
  else if (!grid) bytes += 32 * n * (spec.degree + 1);
  else if (spec.source == ProblemSource::diffusion) bytes += 100 * n;
  else if (spec.op == OperatorKind::csr) bytes += 336 * n;
  const std::string what =
      grid ? text("the %d x %d x %d %sgrid (%s operator)", spec.nx, spec.ny, spec.nz,
                  spec.source == ProblemSource::diffusion ? "diffusion " : "", to_string(spec.op))
           : text("the Laplacian of %.0f vertices of mean degree %g", n, spec.degree);
  detail::check_memory(spec.named(grid ? "nx" : "n"), what, bytes);
}

// ---- the matrix ----------------------------------------------------------------------------

// A + s I for a matrix that stores its whole diagonal.
void add_shift(const CsrMatrix& A, double shift) {
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  for (std::size_t i = 0; i < row_map.extent(0) - 1; ++i)
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
      if (static_cast<std::size_t>(cols(k)) == i) values(k) += shift;
  Kokkos::deep_copy(A.values, values);
}

Kokkos::View<double**, Kokkos::LayoutRight> dense_of(const CsrMatrix& A) {
  const auto n = static_cast<std::size_t>(A.numRows());
  Kokkos::View<double**, Kokkos::LayoutRight> D("ebla dense A", n, n);
  auto h = Kokkos::create_mirror_view(D);
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k) h(i, cols(k)) += values(k);
  Kokkos::deep_copy(D, h);
  return D;
}

// Symmetry: required by CG (bad input otherwise), a warning for the power method.
void check_symmetry(const CsrMatrix& A, const std::string& file, const char* field, const ProblemSpec& spec,
                    ProblemUse use, Problem& p) {
  try {
    check_symmetric(A, "'" + file + "'");
  } catch (const InvalidArgument& e) {
    if (use == ProblemUse::cg)
      throw_invalid(spec.named(field), std::string(e.what()) +
                                           "; CG needs a symmetric positive definite matrix "
                                           "(--no-symmetry-check skips this test)");
    p.warnings.push_back(std::string(e.what()) +
                         "; the power method still runs, but its Rayleigh quotient converges more slowly");
  }
}

// What a solve of an n x n matrix from a file holds beside the matrix: CG 10 vectors of n
// doubles (b, x0, x*, and the iteration's x, r, p, q, z, D^-1 and the diagonal), the power
// method 6 (x0, x, y, lambda x, the residual's), a dense operator 8 n^2 bytes more.
void check_run_memory(const ProblemSpec& spec, ProblemUse use, const CsrMatrix& A, const char* field,
                      const std::string& file) {
  const double n = static_cast<double>(A.numRows());
  double bytes = (use == ProblemUse::cg ? 10 : 6) * 8 * n;
  if (spec.op == OperatorKind::dense) bytes += 8 * n * n;
  detail::check_memory(spec.named(field), text("solving with the %.0f x %.0f matrix of '%s'", n, n, file.c_str()),
                       bytes);
}

// CG's matrix must be SPD, so each a_ii = e_i^T A e_i > 0: a row without entries (the 1-entry
// file that declares 2e8 rows) or without a positive diagonal entry is refused before any
// vector of the solve exists. Duplicates of (i, i) add up, as the operator sums them.
void check_positive_diagonal(const CsrMatrix& A, const ProblemSpec& spec, const char* field, const std::string& file) {
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  for (std::size_t i = 0; i + 1 < row_map.extent(0); ++i) {
    if (row_map(i) == row_map(i + 1))
      throw_invalid(spec.named(field), text("'%s': row %zu (counting from 1) has no entry, so A is singular; CG needs "
                                            "a symmetric positive definite matrix", file.c_str(), i + 1));
    double d = 0;
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
      if (static_cast<std::size_t>(cols(k)) == i) d += values(k);
    if (!(d > 0))
      throw_invalid(spec.named(field), text("'%s': the diagonal entry of row %zu (counting from 1) is %g, so A is not "
                                            "positive definite; CG needs a symmetric positive definite matrix",
                                            file.c_str(), i + 1, d));
  }
}

CsrMatrix read_source_matrix(const ProblemSpec& spec, ProblemUse use, Problem& p) {
  if (spec.source == ProblemSource::laplacian) {
    CsrMatrix A = graph_laplacian(spec.n, spec.degree, spec.seed);
    if (spec.shift > 0) add_shift(A, spec.shift);
    p.description = text("graph Laplacian L of G(n = %zu, mean degree %g), seed %llu%s", spec.n, spec.degree,
                         static_cast<unsigned long long>(spec.seed),
                         spec.shift > 0 ? text(", plus %g I", spec.shift).c_str() : "");
    return A;
  }
  const bool mm = spec.source == ProblemSource::matrix;
  const char* field = mm ? "matrix" : "hdf5";
  const std::string& file = mm ? spec.matrix : spec.hdf5;
  CsrMatrix A = under_option(spec.named(field), [&] { return mm ? read_matrix_market(file) : read_hdf5_matrix(file); });
  if (A.numRows() != A.numCols())
    throw_invalid(spec.named(field), text("'%s': A is %zu x %zu, not square", file.c_str(),
                                          static_cast<std::size_t>(A.numRows()), static_cast<std::size_t>(A.numCols())));
  if (spec.check_symmetry) check_symmetry(A, file, field, spec, use, p);
  if (use == ProblemUse::cg) check_positive_diagonal(A, spec, field, file);
  check_run_memory(spec, use, A, field, file);
  p.description = (mm ? "Matrix Market file " : "HDF5 file ") + file;
  return A;
}

void set_csr_operator(const ProblemSpec& spec, Problem& p, const CsrMatrix& A) {
  p.n = A.numRows();
  p.nnz = A.nnz();
  if (spec.op == OperatorKind::dense) {
    check_dense_size(spec, p.n);
    p.op = DenseOperator(dense_of(A));
  } else {
    p.op = spec.narrowest ? CsrOperator::narrowest(A) : CsrOperator(A);
  }
}

// ---- the vectors ---------------------------------------------------------------------------

Vector apply(const ProblemOperator& op, ConstVector x, std::size_t n) {
  Vector y("ebla A x", n);
  std::visit([&](const auto& A) { A.apply(x, y); }, op);
  return y;
}

Vector ones(std::size_t n) {
  Vector v("ebla ones", n);
  Kokkos::deep_copy(v, 1.0);
  return v;
}

void set_solution(Problem& p, Vector x, const std::string& source) {
  p.x_exact = x;
  p.x_exact_source = source;
}

// b = (L + s I) 1 = s 1 is an eigenvector, which CG solves in one step: the Laplacian's
// right-hand side comes from a random x* with entries of order 1 instead.
Vector laplacian_solution(std::size_t n, std::uint64_t seed) {
  Vector x = random_unit_vector(n, seed);
  const double scale = std::sqrt(static_cast<double>(n));
  Kokkos::parallel_for(
      "ebla scale", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const std::size_t i) { x(i) *= scale; });
  return x;
}

bool all_zero(ConstVector v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (h(i) != 0) return false;
  return true;
}

void check_length(const ProblemSpec& spec, const char* field, const std::string& file, ConstVector v,
                  std::size_t n) {
  if (v.extent(0) != n)
    throw_invalid(spec.named(field), text("'%s' has %zu entries, but A has %zu rows", file.c_str(),
                                          static_cast<std::size_t>(v.extent(0)), n));
}

// The first entry of v that is NaN or infinite, or v's length.
std::size_t first_not_finite(ConstVector v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (!std::isfinite(h(i))) return i;
  return h.extent(0);
}

// A vector from a file, or computed from one (b = A 1), with a NaN or infinite entry: named
// with its source and the entry, before a solver sees it.
void check_finite(const ProblemSpec& spec, const char* field, const std::string& source, ConstVector v,
                  const char* why = "") {
  const std::size_t i = first_not_finite(v);
  if (i < v.extent(0))
    throw_invalid(spec.named(field), text("%s: entry %zu (counting from 1) is not finite%s", source.c_str(), i + 1, why));
}

Vector read_vector(const ProblemSpec& spec, const std::string& file, const char* field) {
  return under_option(spec.named(field), [&] { return read_matrix_market_vector(file); });
}

Vector read_hdf5_optional(const ProblemSpec& spec, const char* dataset) {
  return under_option(spec.named("hdf5"), [&] { return read_hdf5_vector(spec.hdf5, dataset, true); });
}

void load_hpccg(const ProblemSpec& spec, ProblemUse use, Problem& p) {
  p.nx = spec.nx;
  p.ny = spec.ny;
  p.nz = spec.nz;
  p.description = text("HPCCG 27-point stencil on a %d x %d x %d grid", spec.nx, spec.ny, spec.nz);
  const bool cg = use == ProblemUse::cg;
  if (spec.op == OperatorKind::stencil) {
    const StencilOperator A(spec.nx, spec.ny, spec.nz);
    p.n = A.size();
    p.nnz = A.nonzeros();
    p.op = A;
    if (cg) p.b = hpccg_rhs(spec.nx, spec.ny, spec.nz);
  } else if (spec.narrowest && spec.op == OperatorKind::csr) {  // never in binary64
    const CsrOperator A = hpccg_narrowest(spec.nx, spec.ny, spec.nz);
    p.n = A.size();
    p.nnz = A.nonzeros();
    p.op = A;
    if (cg) p.b = hpccg_rhs(spec.nx, spec.ny, spec.nz);
  } else {
    const HpccgProblem h = hpccg_problem(spec.nx, spec.ny, spec.nz);
    set_csr_operator(spec, p, h.A);
    if (cg) p.b = h.b;
  }
  if (cg) set_solution(p, ones(p.n), "1");
  p.b_source = "A 1 (HPCCG)";
}

void load_diffusion(const ProblemSpec& spec, ProblemUse use, Problem& p) {
  p.nx = spec.nx;
  p.ny = spec.ny;
  p.nz = spec.nz;
  p.description = text("diffusion -div(k grad u), 7-point finite volumes, k in [1e-3, 1e3] of seed %llu, on a "
                       "%d x %d x %d grid",
                       static_cast<unsigned long long>(spec.seed), spec.nx, spec.ny, spec.nz);
  if (spec.narrowest && spec.op == OperatorKind::csr) {  // never in the CSR arrays as well
    const DiffusionOperator d = diffusion_narrowest(spec.nx, spec.ny, spec.nz, spec.seed);
    p.n = d.A.size();
    p.nnz = d.A.nonzeros();
    p.op = d.A;
    if (use == ProblemUse::cg) p.b = d.b;
  } else {
    const DiffusionProblem d = diffusion_problem(spec.nx, spec.ny, spec.nz, spec.seed);
    set_csr_operator(spec, p, d.A);
    if (use == ProblemUse::cg) p.b = d.b;
  }
  if (use == ProblemUse::cg) set_solution(p, ones(p.n), "1");
  p.b_source = "A 1 (exact)";
}

void load_rhs(const ProblemSpec& spec, Problem& p) {
  if (!spec.rhs.empty()) {
    p.b = read_vector(spec, spec.rhs, "rhs");
    check_length(spec, "rhs", spec.rhs, p.b, p.n);
    check_finite(spec, "rhs", "'" + spec.rhs + "'", p.b);
    p.b_source = "file " + spec.rhs;
    set_solution(p, Vector(), "");
    return;
  }
  if (p.b.extent(0) > 0) return;  // hpccg, diffusion
  if (spec.source == ProblemSource::hdf5) {
    p.b = read_hdf5_optional(spec, "b");
    if (p.b.extent(0) > 0) {
      check_length(spec, "hdf5", spec.hdf5 + "/b", p.b, p.n);
      check_finite(spec, "hdf5", "'" + spec.hdf5 + "' /b", p.b);
      p.b_source = spec.hdf5 + " /b";
      return;
    }
  }
  if (spec.source == ProblemSource::laplacian)
    set_solution(p, laplacian_solution(p.n, spec.seed), "sqrt(n) times the random unit vector of --seed");
  else
    set_solution(p, ones(p.n), "1");
  p.b = apply(p.op, p.x_exact, p.n);
  p.b_source = p.x_exact_source == "1" ? "A 1" : "A x*";
  if (spec.source == ProblemSource::matrix || spec.source == ProblemSource::hdf5)
    check_finite(spec, spec.source == ProblemSource::matrix ? "matrix" : "hdf5",
                 text("b = %s of '%s'", p.b_source.c_str(), (spec.source == ProblemSource::matrix ? spec.matrix : spec.hdf5).c_str()),
                 p.b, ": a row's sum overflows double; give --rhs");
}

// The start vector from a file, if one is given: x0, else /x0 of the HDF5 file.
bool read_start(const ProblemSpec& spec, Problem& p) {
  if (!spec.x0.empty()) {
    p.x0 = read_vector(spec, spec.x0, "x0");
    check_length(spec, "x0", spec.x0, p.x0, p.n);
    check_finite(spec, "x0", "'" + spec.x0 + "'", p.x0);
    p.x0_source = "file " + spec.x0;
    return true;
  }
  if (spec.source != ProblemSource::hdf5) return false;
  p.x0 = read_hdf5_optional(spec, "x0");
  if (p.x0.extent(0) == 0) return false;
  check_length(spec, "hdf5", spec.hdf5 + "/x0", p.x0, p.n);
  check_finite(spec, "hdf5", "'" + spec.hdf5 + "' /x0", p.x0);
  p.x0_source = spec.hdf5 + " /x0";
  return true;
}

void load_start(const ProblemSpec& spec, ProblemUse use, Problem& p) {
  if (read_start(spec, p)) {
    if (use == ProblemUse::power && all_zero(p.x0))
      throw_invalid(spec.named(spec.x0.empty() ? "hdf5" : "x0"),
                    "the start vector (" + p.x0_source + ") is zero: the power method needs a nonzero start");
  } else if (use == ProblemUse::power) {
    p.x0 = random_unit_vector(p.n, spec.seed);
    p.x0_source = text("random unit vector, seed %llu", static_cast<unsigned long long>(spec.seed));
  } else {
    p.x0 = Vector("ebla x0", p.n);
    p.x0_source = "0";
  }
}

}  // namespace

const char* to_string(ProblemSource s) {
  switch (s) {
    case ProblemSource::hpccg: return "hpccg";
    case ProblemSource::laplacian: return "laplacian";
    case ProblemSource::matrix: return "matrix";
    case ProblemSource::hdf5: return "hdf5";
    case ProblemSource::diffusion: return "diffusion";
  }
  return "?";
}

const char* to_string(OperatorKind k) {
  return k == OperatorKind::csr ? "csr" : k == OperatorKind::stencil ? "stencil" : "dense";
}

std::string ProblemSpec::named(const std::string& field) const {
  return name_field ? name_field(field) : "ebla::ProblemSpec::" + field;
}

void check_problem_spec(const ProblemSpec& spec, ProblemUse use) {
  if (on_grid(spec)) check_grid(spec);
  if (spec.source == ProblemSource::laplacian) check_laplacian(spec, use);
  if (spec.op == OperatorKind::stencil && spec.source != ProblemSource::hpccg)
    throw_invalid(spec.named("operator"), std::string("stencil is HPCCG's 27-point stencil: only for hpccg, not for ") +
                                              to_string(spec.source));
  if (spec.op == OperatorKind::dense && on_grid(spec)) check_dense_size(spec, grid_rows(spec));
  if (spec.op == OperatorKind::dense && spec.source == ProblemSource::laplacian) check_dense_size(spec, spec.n);
  check_problem_memory(spec);
  if (spec.source == ProblemSource::matrix && spec.matrix.empty()) throw_invalid(spec.named("matrix"), "empty file name");
  if (spec.source == ProblemSource::hdf5 && spec.hdf5.empty()) throw_invalid(spec.named("hdf5"), "empty file name");
}

Problem load_problem(const ProblemSpec& spec, ProblemUse use) {
  check_problem_spec(spec, use);
  Problem p;
  p.name = to_string(spec.source);
  p.operator_name = to_string(spec.op);
  if (spec.source == ProblemSource::hpccg) {
    load_hpccg(spec, use, p);
  } else if (spec.source == ProblemSource::diffusion) {
    load_diffusion(spec, use, p);
  } else {
    const CsrMatrix A = read_source_matrix(spec, use, p);
    if (A.numRows() == 0)
      throw_invalid(spec.named(to_string(spec.source)),
                    text("'%s': A is empty (0 x 0)", (spec.source == ProblemSource::matrix ? spec.matrix : spec.hdf5).c_str()));
    set_csr_operator(spec, p, A);
  }
  if (use == ProblemUse::cg) load_rhs(spec, p);
  load_start(spec, use, p);
  return p;
}

double max_difference(ConstVector x, ConstVector y) {
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  double m = 0;
  for (std::size_t i = 0; i < hx.extent(0); ++i) m = std::max(m, std::fabs(hx(i) - hy(i)));
  return m;
}

}  // namespace ebla

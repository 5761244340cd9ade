// A test problem of the solvers as data: which matrix (HPCCG's stencil, the variable-coefficient
// diffusion matrix, a shifted random graph Laplacian, a Matrix Market or HDF5 file), which
// operator applies it, and the vectors that go with it (b and the known solution for CG, the
// start vector).
//
//   ebla::ProblemSpec spec;
//   spec.source = ebla::ProblemSource::laplacian;
//   spec.n = 1000;
//   spec.degree = 10;
//   spec.shift = 1e-2;
//   const ebla::Problem p = ebla::load_problem(spec, ebla::ProblemUse::cg);
//   const ebla::CgResult r = std::visit([&](const auto& A) { return ebla::cg(A, p.b, p.x0, dots, o); }, p.op);
//
// Where it runs: the problems are built on the host and returned as Views of the default memory
// space (copied to a device's memory through host mirrors).
#pragma once

#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace ebla {

/// Where A (and b, x0) come from.
enum class ProblemSource { hpccg, laplacian, matrix, hdf5, diffusion };
/// How A is applied: stored rows, HPCCG's stencil without a matrix (hpccg only), or dense.
enum class OperatorKind { csr, stencil, dense };
/// What the problem is for: CG needs b (and knows x* where b = A x*); the power method
/// starts from a random unit vector unless x0 is given.
enum class ProblemUse { cg, power };

const char* to_string(ProblemSource);  ///< hpccg, laplacian, matrix, hdf5, diffusion
const char* to_string(OperatorKind);   ///< csr, stencil, dense

/// The largest n of a dense operator (it stores n^2 doubles).
constexpr std::size_t max_dense_size = 5000;

struct ProblemSpec {
  ProblemSource source = ProblemSource::hpccg;
  OperatorKind op = OperatorKind::csr;
  int nx = 20, ny = 20, nz = 20;  ///< hpccg, diffusion: the grid
  std::size_t n = 1000;           ///< laplacian: vertices
  double degree = 10;             ///< laplacian: mean degree of the random graph
  double shift = 0;               ///< laplacian: L + shift I (CG needs shift > 0)
  std::uint64_t seed = 1;         ///< laplacian's graph and x*; diffusion's k; the power method's start vector
  std::string matrix;             ///< source matrix: the Matrix Market file of A
  std::string hdf5;               ///< source hdf5: the file with /A, optional /b and /x0
  std::string rhs, x0;            ///< optional Matrix Market files of b (CG) and x0
  bool check_symmetry = true;     ///< of a matrix read from a file
  /// csr: hold A in its narrowest exact words (CsrOperator::narrowest; HPCCG's written in them
  /// directly), as solvers with narrow storage read it, instead of in binary64
  bool narrowest = false;
  /// How messages name a field ("nx", "degree", "operator", "matrix", "rhs", ...): by
  /// default "ebla::ProblemSpec::nx"; a command line names its option instead.
  std::function<std::string(const std::string& field)> name_field;

  /// The name of `field` in messages (see name_field).
  std::string named(const std::string& field) const;
  /// The files the problem reads (for an output that must not replace one of them).
  std::vector<std::string> inputs() const { return {matrix, rhs, x0, hdf5}; }
};

/// Everything of a loaded problem but its operator.
struct ProblemData {
  std::string name;           ///< hpccg, laplacian, matrix, hdf5, diffusion
  std::string description;    ///< one line for humans
  std::string operator_name;  ///< csr, stencil, dense
  std::size_t n = 0, nnz = 0;
  int nx = 0, ny = 0, nz = 0;  ///< hpccg and diffusion only
  Vector b;                    ///< cg only
  Vector x0;                   ///< the start vector (cg: zeros unless given; power: random unit)
  Vector x_exact;              ///< cg: the x* of b = A x* when b was made so (else empty)
  std::string x_exact_source;  ///< "1" (ones), or how x* was drawn; empty if unknown
  std::string b_source, x0_source;
  std::vector<std::string> warnings;  ///< e.g. a nonsymmetric matrix for the power method
};

/// A problem with its operator, one of `Operator` (a std::variant).
template <class Operator>
struct BasicProblem : ProblemData {
  Operator op;
};

using ProblemOperator = std::variant<CsrOperator, StencilOperator, DenseOperator>;
using Problem = BasicProblem<ProblemOperator>;

/// Throws InvalidArgument naming the field (spec.named) for a choice that cannot be built:
/// a grid size < 1 or of more than INT_MAX rows (hpccg, diffusion), a Laplacian of fewer than
/// 2 vertices or a mean degree outside (0, n - 1], a negative or non-finite shift (for CG:
/// shift <= 0, the Laplacian being singular), the stencil operator on anything but hpccg, a
/// dense operator above max_dense_size, or a generated problem larger than the available
/// memory. Reads no file and needs no Kokkos.
void check_problem_spec(const ProblemSpec& spec, ProblemUse use);

/// Checks the spec, then reads or generates the problem (Kokkos must be initialised). b:
/// the file rhs, else /b of an HDF5 file, else A x* (HPCCG, diffusion and files: x* = 1; the Laplacian:
/// x* = sqrt(n) times the random unit vector of seed, since A 1 = shift 1 is an eigenvector).
/// x0: the file x0, else /x0 of an HDF5 file, else 0 (CG) or the random unit vector of seed
/// (power). Bad files throw InvalidArgument naming the field and the file; a matrix from a
/// file must be square, and symmetric for CG (unless check_symmetry is false; for the power
/// method a nonsymmetric matrix is a warning).
Problem load_problem(const ProblemSpec& spec, ProblemUse use);

/// max |x_i - y_i|.
double max_difference(ConstVector x, ConstVector y);

}  // namespace ebla

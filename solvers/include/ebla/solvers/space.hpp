// Where the solvers' vectors live. CG and the power method touch their vectors in two ways:
// row-wise (updates, the operator's rows) and through global reductions (dot products, norms).
// A SolverSpace supplies both for the rows one process owns:
//
//   - size() rows here, global_size() in all; apply(x, y) gives the owned rows of A x
//     (exchanging whatever entries of x other processes own), diagonal() the owned
//     diagonal, residual_norm(x, b) the GLOBAL ||b - A x|| in double-double;
//   - dot(policy, x, y) the GLOBAL dot product under a DotPolicy with its record (bound
//     and fractions for the global vectors), sum(v) the sum of v over the processes, max(v)
//     their largest v (the scale of a vector whose squares leave double's range), and
//     all(ok) whether ok holds on every process (so that argument checks agree and no
//     process waits in a collective another one has left).
//
// Every process must get the same value from dot, sum, max, all and residual_norm: the
// solvers take their decisions (stop, break down) from them, and all processes must take
// the same ones. LocalSpace<Op> is the one-process space of the operators of
// operators.hpp; ebla::mpi provides spaces over MPI communicators.
//
// Where it runs: apply, dot and the updates in the execution space of the Views (on the device
// for Views in its memory); the collectives between processes through host memory.
#pragma once

#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ebla {

class SolverSpace {
public:
  virtual ~SolverSpace() = default;
  virtual std::size_t size() const = 0;
  virtual std::size_t global_size() const = 0;
  virtual void apply(ConstVector x, Vector y) const = 0;
  virtual Vector diagonal() const = 0;
  virtual double residual_norm(ConstVector x, ConstVector b) const = 0;
  /// levels (if not null) receives the ladder index of each OWNED component (dots.hpp).
  virtual DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y,
                        std::vector<std::uint8_t>* levels) const = 0;
  virtual double sum(double local) const = 0;
  virtual double max(double local) const = 0;
  virtual bool all(bool ok) const = 0;
  /// Whether the space is one process (dot is ebla::dot on the owned vectors themselves):
  /// then a solver may compute a dot product inside a pass of its own (cg.cpp).
  virtual bool single_process() const { return false; }
  /// The operator's rows for kernels that read stored vectors (operators.hpp), or Kind::none
  /// where the space cannot give them (then CG refuses narrow storage).
  virtual RowsOf rows() const { return {}; }
};

/// One process: the operator's own rows, ebla::dot, no communication.
template <class Op>
class LocalSpace final : public SolverSpace {
public:
  explicit LocalSpace(const Op& A) : A_(A) {}
  std::size_t size() const override { return A_.size(); }
  std::size_t global_size() const override { return A_.size(); }
  void apply(ConstVector x, Vector y) const override { A_.apply(x, y); }
  Vector diagonal() const override { return A_.diagonal(); }
  double residual_norm(ConstVector x, ConstVector b) const override { return A_.residual_norm(x, b); }
  DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y,
                std::vector<std::uint8_t>* levels) const override {
    return ebla::dot(policy, x, y, levels);
  }
  double sum(double local) const override { return local; }
  double max(double local) const override { return local; }
  bool all(bool ok) const override { return ok; }
  bool single_process() const override { return true; }
  RowsOf rows() const override { return rows_of(A_); }

private:
  const Op& A_;
};

}  // namespace ebla

// CG with narrow storage (storage_rule.hpp), called by cg.cpp once the arguments are checked
// and the system is scaled into double's range.
#pragma once

#include <ebla/solvers/cg.hpp>

#include <string>

namespace ebla::detail {

/// Why the storage policy of `o` cannot run on A (empty if it can, or if it is binary64).
std::string storage_problem(const SolverSpace& A, const CgOptions& o);
/// The iteration with p, q and r in o.storage (narrow); dinv is D^-1 with Jacobi, else empty.
CgResult stored_cg(const SolverSpace& A, ConstVector b, ConstVector x0, ConstVector dinv, const CgOptions& o);

}  // namespace ebla::detail

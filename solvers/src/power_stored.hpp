// The power method with a stored iterate (power.hpp, PowerOptions::storage), called by
// power.cpp once the arguments are checked and x0 is normalised.
#pragma once

#include <ebla/solvers/power.hpp>

#include <string>

namespace ebla::detail {

/// Why the storage policy of `o` cannot run on A (empty if it can, or if it is binary64).
std::string power_storage_problem(const SolverSpace& A, const PowerOptions& o);

/// The iterations from the unit x1 (overwritten): fills res's history, eigenvalue, status,
/// iterations, events, storage and bytes, and leaves the last iterate, of unit norm, in x1.
void stored_power(const SolverSpace& A, Vector x1, const PowerOptions& o, PowerResult& res);

}  // namespace ebla::detail

// Exception types thrown by ebla at its API boundary.
//
// Misuse (a bad argument, an unknown name, an invalid format) throws
// ebla::InvalidArgument; its message names the function and the offending value.
// Numerical outcomes (no convergence, breakdown) are never exceptions: they are
// reported in result structures.
#pragma once

#include <stdexcept>
#include <string>

namespace ebla {

/// Thrown for every invalid argument: bad format parameters, unknown format or
/// rounding-mode names, out-of-range options. what() names the function and value.
class InvalidArgument : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// Builds the message "function: what" and throws InvalidArgument.
[[noreturn]] void throw_invalid(const std::string& function, const std::string& what);

}  // namespace ebla

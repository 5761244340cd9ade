// Exception types thrown by ebla at its API boundary.
//
// Misuse (a bad argument, an unknown name, an invalid format) throws
// ebla::InvalidArgument; its message names the function and the offending value.
// Numerical outcomes (no convergence, breakdown) are never exceptions: they are
// reported in result structures.
//
// Where it runs: on the host (exceptions are thrown at the API boundary, never inside kernels).
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

/// Runs f; an InvalidArgument it throws is rethrown as "option: <its message>" (a spec
/// given as text names the field or option that held the bad value).
template <class F>
auto under_option(const std::string& option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    throw_invalid(option, e.what());
  }
}

}  // namespace ebla

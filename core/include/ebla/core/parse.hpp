// Numbers from text, for specs given as strings (command lines, configuration files).
//
// Where it runs: on the host (text).
#pragma once

#include <string>

namespace ebla {

/// Parses the whole of `text` as a double (decimal, hex float, inf, nan; overflow gives
/// +-inf); throws InvalidArgument naming `what` and the text otherwise.
double parse_double(const std::string& text, const std::string& what);

}  // namespace ebla

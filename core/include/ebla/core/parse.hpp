// Numbers from text, for specs given as strings (command lines, configuration files), and
// the distance between two words (for naming what a mistyped one was meant to be).
//
// Where it runs: on the host (text).
#pragma once

#include <cstddef>
#include <string>

namespace ebla {

/// Parses the whole of `text` as a double (decimal, hex float, inf, nan; overflow gives
/// +-inf); throws InvalidArgument naming `what` and the text otherwise.
double parse_double(const std::string& text, const std::string& what);

/// The Levenshtein distance of a and b: the fewest insertions, deletions and substitutions of
/// one character that turn a into b.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace ebla

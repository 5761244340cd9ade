#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>

#include <cerrno>
#include <cstdlib>

namespace ebla {

double parse_double(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) throw_invalid(what, "'" + text + "' is not a number");
  return v;  // overflow to +-inf and underflow are legitimate values here
}

}  // namespace ebla

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

namespace ebla {

double parse_double(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) throw_invalid(what, "'" + text + "' is not a number");
  return v;  // overflow to +-inf and underflow are legitimate values here
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // one row of the dynamic programme: row[j] = distance of a[0, i) and b[0, j)
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];  // distance of a[0, i-1) and b[0, j-1)
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace ebla

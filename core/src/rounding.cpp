#include <ebla/core/error.hpp>
#include <ebla/core/rounding.hpp>

#include <cctype>

namespace ebla {

Rounding rounding_by_name(const std::string& name) {
  std::string key;
  for (char c : name)
    key += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "nearest_even" || key == "nearest" || key == "rn" || key == "rne")
    return Rounding::nearest_even;
  if (key == "toward_zero" || key == "rz") return Rounding::toward_zero;
  if (key == "upward" || key == "ru") return Rounding::upward;
  if (key == "downward" || key == "rd") return Rounding::downward;
  if (key == "stochastic" || key == "sr") return Rounding::stochastic;
  throw_invalid("ebla::rounding_by_name",
                "unknown rounding mode '" + name +
                    "' (known: nearest_even, toward_zero, upward, downward, stochastic)");
}

const char* to_string(Rounding mode) {
  switch (mode) {
    case Rounding::nearest_even: return "nearest_even";
    case Rounding::toward_zero: return "toward_zero";
    case Rounding::upward: return "upward";
    case Rounding::downward: return "downward";
    case Rounding::stochastic: return "stochastic";
  }
  return "?";
}

}  // namespace ebla

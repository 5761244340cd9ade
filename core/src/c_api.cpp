// The C interface (ebla/ebla.h): exceptions become status codes and a message.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/ebla.h>

#include <exception>
#include <string>

namespace {

thread_local std::string last_error;

template <class Body>
int guarded(const char* function, Body&& body) {
  try {
    body();
    last_error.clear();
    return EBLA_OK;
  } catch (const ebla::InvalidArgument& e) {
    last_error = e.what();
    return EBLA_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    last_error = std::string(function) + ": " + e.what();
    return EBLA_INTERNAL_ERROR;
  }
}

void require(const void* p, const char* function, const char* name) {
  if (p == nullptr) ebla::throw_invalid(function, std::string(name) + " is NULL");
}

}  // namespace

namespace ebla::detail {
/// Sets the message ebla_last_error() returns (for the C entry points of other libraries).
void set_last_error(const std::string& message) { last_error = message; }
}  // namespace ebla::detail

extern "C" int ebla_round(double x, const char* format, const char* mode, double random, double* out) {
  return guarded("ebla_round", [&] {
    require(format, "ebla_round", "format");
    require(mode, "ebla_round", "mode");
    require(out, "ebla_round", "out");
    if (!(random >= 0.0 && random < 1.0))
      ebla::throw_invalid("ebla_round", "random = " + std::to_string(random) + " is outside [0, 1)");
    *out = ebla::round_to(x, ebla::format_by_name(format), ebla::rounding_by_name(mode), random);
  });
}

extern "C" int ebla_unit_roundoff(const char* format, double* out) {
  return guarded("ebla_unit_roundoff", [&] {
    require(format, "ebla_unit_roundoff", "format");
    require(out, "ebla_unit_roundoff", "out");
    *out = ebla::format_by_name(format).u();
  });
}

extern "C" const char* ebla_last_error(void) { return last_error.c_str(); }

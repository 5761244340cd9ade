// ebla_qdot (ebla/qdot.h): the C entry point of qdot.
#include <ebla/kernels/qdot.hpp>
#include <ebla/qdot.h>

#include <cstring>
#include <limits>

namespace ebla::detail {
void set_last_error(const std::string& message);  // core/src/c_api.cpp
}

extern "C" double ebla_qdot(const double* x, const double* y, size_t n, double tolerance,
                            ebla_qdot_info* info) {
  if (info != nullptr) std::memset(info, 0, sizeof *info);
  try {
    ebla::QdotOptions options;
    options.tolerance = tolerance;
    const ebla::QdotResult r = ebla::qdot(x, y, n, options);
    if (info != nullptr) {
      info->status = EBLA_OK;
      info->bound = r.bound;
      for (std::size_t l = 0; l < 4 && l < r.stats.count_per_level.size(); ++l) info->count[l] = r.stats.count_per_level[l];
      info->zeros = r.stats.zeros;
      info->bins = r.stats.bins;
      info->nonfinite = r.stats.nonfinite ? 1 : 0;
      info->select_seconds = r.stats.select_seconds;
      info->compute_seconds = r.stats.compute_seconds;
    }
    ebla::detail::set_last_error("");
    return r.value;
  } catch (const ebla::InvalidArgument& e) {
    ebla::detail::set_last_error(std::string("ebla_qdot: ") + e.what());
    if (info != nullptr) info->status = EBLA_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    ebla::detail::set_last_error(std::string("ebla_qdot: ") + e.what());
    if (info != nullptr) info->status = EBLA_INTERNAL_ERROR;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// ebla_qdot and the BLAS-shaped calls of ebla/qdot.h: the C entry points of qdot.
#include <ebla/kernels/qdot.hpp>
#include <ebla/qdot.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace ebla::detail {
void set_last_error(const std::string& message);  // core/src/c_api.cpp
}

struct ebla_qdot_plan {
  ebla::QdotPlan plan;
};

namespace {

void fill_info(const ebla::QdotResult& r, ebla_qdot_info* info) {
  if (info == nullptr) return;
  info->status = EBLA_OK;
  info->bound = r.bound;
  for (std::size_t l = 0; l < 4 && l < r.stats.count_per_level.size(); ++l) info->count[l] = r.stats.count_per_level[l];
  info->zeros = r.stats.zeros;
  info->bins = r.stats.bins;
  info->nonfinite = r.stats.nonfinite ? 1 : 0;
  info->select_seconds = r.stats.select_seconds;
  info->compute_seconds = r.stats.compute_seconds;
  info->kept_top_bin = r.stats.kept_top_bin ? 1 : 0;
}

// Runs f (which returns the value and fills info) under the C conventions: info cleared
// first; on an exception NaN, the status, and the message prefixed by the function's name.
template <class F>
double guarded(const char* function, ebla_qdot_info* info, F f) {
  if (info != nullptr) std::memset(info, 0, sizeof *info);
  try {
    const double v = f();
    ebla::detail::set_last_error("");
    return v;
  } catch (const ebla::InvalidArgument& e) {
    ebla::detail::set_last_error(std::string(function) + ": " + e.what());
    if (info != nullptr) info->status = EBLA_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    ebla::detail::set_last_error(std::string(function) + ": " + e.what());
    if (info != nullptr) info->status = EBLA_INTERNAL_ERROR;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// The C++ options of the C ones (NULL: the defaults); qdot itself checks the tolerance. A
// dot product from C never comes back exactly 0 with every product perforated
// (QdotOptions::perforate_all = false; ebla_qdot_info::kept_top_bin says when it would have).
ebla::QdotOptions to_options(const ebla_qdot_options* o) {
  ebla::QdotOptions q;
  q.perforate_all = false;
  if (o == nullptr) return q;
  q.tolerance = o->tolerance;
  if (o->policy != nullptr) q.policy = ebla::qdot_policy_by_name(o->policy);
  if (o->ladder != nullptr) q.ladder = ebla::qdot_ladder_by_names(o->ladder);
  return q;
}

template <class T>
void check_length(std::size_t n, const char* function) {  // before any copy of that size
  if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T))
    ebla::throw_invalid(function, "n = " + std::to_string(n) + " is more elements than any array holds");
}

// An array of n elements with BLAS increment inc as n contiguous elements in BLAS order:
// `x` itself for inc = 1, else a copy gathered into `copy`. Element i is x[i inc] for
// inc >= 0 and x[(n - 1 - i) |inc|] for inc < 0.
template <class T>
const T* contiguous(const T* x, std::size_t n, std::ptrdiff_t inc, std::vector<T>& copy, const char* name,
                    const char* function) {
  if (inc == 1 || n == 0) return x;  // qdot checks x and n itself
  if (x == nullptr) ebla::throw_invalid(function, std::string(name) + " is null but n = " + std::to_string(n));
  const std::size_t step = inc < 0 ? static_cast<std::size_t>(-(inc + 1)) + 1 : static_cast<std::size_t>(inc);
  // the last element read, (n - 1) |inc| elements on, must lie in the address space
  if (step > 0 && (n - 1 > (static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T)) / step ||
                   reinterpret_cast<std::uintptr_t>(x) > UINTPTR_MAX - (n - 1) * step * sizeof(T)))
    ebla::throw_invalid(function, std::string(name) + ": n = " + std::to_string(n) + " elements " +
                                      std::to_string(inc) + " apart run past the end of the address space");
  copy.resize(n);
  for (std::size_t i = 0; i < n; ++i) copy[i] = x[(inc >= 0 ? i : n - 1 - i) * step];
  return copy.data();
}

template <class T>
double qdot_strided(const char* function, std::size_t n, const T* x, std::ptrdiff_t incx, const T* y,
                    std::ptrdiff_t incy, const ebla_qdot_options* options, ebla_qdot_info* info) {
  return guarded(function, info, [&] {
    const ebla::QdotOptions o = to_options(options);
    check_length<T>(n, function);
    std::vector<T> cx, cy;
    const T* px = contiguous(x, n, incx, cx, "x", function);
    const T* py = contiguous(y, n, incy, cy, "y", function);
    const ebla::QdotResult r = ebla::qdot(px, py, n, o);
    fill_info(r, info);
    return r.value;
  });
}

template <class T>
int select_strided(const char* function, std::size_t n, const T* x, std::ptrdiff_t incx, const T* y,
                   std::ptrdiff_t incy, const ebla_qdot_options* options, ebla_qdot_plan** plan) {
  ebla_qdot_info info;
  guarded(function, &info, [&] {
    if (plan == nullptr) ebla::throw_invalid(function, "plan is null");
    *plan = nullptr;
    const ebla::QdotOptions o = to_options(options);
    check_length<T>(n, function);
    std::vector<T> cx, cy;
    const T* px = contiguous(x, n, incx, cx, "x", function);
    const T* py = contiguous(y, n, incy, cy, "y", function);
    *plan = new ebla_qdot_plan{ebla::qdot_select(px, py, n, o)};
    return 0.0;
  });
  return info.status;
}

template <class T>
double compute_strided(const char* function, const ebla_qdot_plan* plan, std::size_t n, const T* x,
                       std::ptrdiff_t incx, const T* y, std::ptrdiff_t incy, ebla_qdot_info* info) {
  return guarded(function, info, [&] {
    if (plan == nullptr) ebla::throw_invalid(function, "plan is null");
    check_length<T>(n, function);
    std::vector<T> cx, cy;
    const T* px = contiguous(x, n, incx, cx, "x", function);
    const T* py = contiguous(y, n, incy, cy, "y", function);
    const ebla::QdotResult r = ebla::qdot_compute(px, py, n, plan->plan);
    fill_info(r, info);
    return r.value;
  });
}

}  // namespace

extern "C" double ebla_qdot(const double* x, const double* y, size_t n, double tolerance, ebla_qdot_info* info) {
  return guarded("ebla_qdot", info, [&] {
    ebla::QdotOptions options = to_options(nullptr);
    options.tolerance = tolerance;
    const ebla::QdotResult r = ebla::qdot(x, y, n, options);
    fill_info(r, info);
    return r.value;
  });
}

extern "C" void ebla_qdot_options_init(ebla_qdot_options* options) {
  if (options == nullptr) return;
  options->tolerance = ebla::QdotOptions{}.tolerance;
  options->policy = nullptr;
  options->ladder = nullptr;
}

extern "C" double ebla_dqdot(size_t n, const double* x, ptrdiff_t incx, const double* y, ptrdiff_t incy,
                             const ebla_qdot_options* options, ebla_qdot_info* info) {
  return qdot_strided("ebla_dqdot", n, x, incx, y, incy, options, info);
}

extern "C" double ebla_sqdot(size_t n, const float* x, ptrdiff_t incx, const float* y, ptrdiff_t incy,
                             const ebla_qdot_options* options, ebla_qdot_info* info) {
  return qdot_strided("ebla_sqdot", n, x, incx, y, incy, options, info);
}

extern "C" int ebla_dqdot_select(size_t n, const double* x, ptrdiff_t incx, const double* y, ptrdiff_t incy,
                                 const ebla_qdot_options* options, ebla_qdot_plan** plan) {
  return select_strided("ebla_dqdot_select", n, x, incx, y, incy, options, plan);
}

extern "C" int ebla_sqdot_select(size_t n, const float* x, ptrdiff_t incx, const float* y, ptrdiff_t incy,
                                 const ebla_qdot_options* options, ebla_qdot_plan** plan) {
  return select_strided("ebla_sqdot_select", n, x, incx, y, incy, options, plan);
}

extern "C" double ebla_dqdot_compute(const ebla_qdot_plan* plan, size_t n, const double* x, ptrdiff_t incx,
                                     const double* y, ptrdiff_t incy, ebla_qdot_info* info) {
  return compute_strided("ebla_dqdot_compute", plan, n, x, incx, y, incy, info);
}

extern "C" double ebla_sqdot_compute(const ebla_qdot_plan* plan, size_t n, const float* x, ptrdiff_t incx,
                                     const float* y, ptrdiff_t incy, ebla_qdot_info* info) {
  return compute_strided("ebla_sqdot_compute", plan, n, x, incx, y, incy, info);
}

extern "C" void ebla_qdot_plan_destroy(ebla_qdot_plan* plan) { delete plan; }

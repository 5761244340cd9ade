// ebla_qdot and the BLAS-shaped calls of ebla/qdot.h: the C entry points of qdot.
#include <ebla/core/memory.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_host.hpp>
#include <ebla/kernels/qdot_stored.hpp>
#include <ebla/qdot.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla::detail {
void set_last_error(const std::string& message);  // core/src/c_api.cpp
}

struct ebla_qdot_plan {
  ebla::QdotPlan plan;
};

struct ebla_qdot_stored_vector {
  ebla::QdotStored stored;
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

// "function: message", unless the message already starts with the function's name.
std::string prefixed(const char* function, const std::string& message) {
  const std::string head = std::string(function) + ": ";
  return message.compare(0, head.size(), head) == 0 ? message : head + message;
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
    ebla::detail::set_last_error(prefixed(function, e.what()));
    if (info != nullptr) info->status = EBLA_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    ebla::detail::set_last_error(prefixed(function, e.what()));
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

using ebla::detail::HostVector;

template <class T>
void check_length(std::size_t n, const char* function) {  // before any copy of that size
  if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T))
    ebla::throw_invalid(function, "n = " + std::to_string(n) + " is more elements than any array holds");
}

// Workspaces below this size are not checked against the memory available (reading the
// system's figures costs more than a small dot product).
constexpr double small_workspace = 64.0 * 1024 * 1024;

// Before any allocation that grows with n: the gathered copies of strided inputs and the
// kernels' partial sums (one per chunk of components, core/parallel.hpp). An n whose
// workspace exceeds the memory available is a bad argument, not an internal error.
template <class T>
void check_workspace(std::size_t n, std::ptrdiff_t incx, std::ptrdiff_t incy, const char* function) {
  const auto gathered = [](std::ptrdiff_t inc) { return inc != 0 && inc != 1 ? 1.0 : 0.0; };
  const double chunks = static_cast<double>(ebla::detail::chunk_count(n, ebla::detail::stream_chunk(n)));
  const double bytes = (gathered(incx) + gathered(incy)) * static_cast<double>(n) * sizeof(T) +
                       chunks * sizeof(ebla::detail::QdotAccum);
  if (bytes > small_workspace) ebla::detail::check_memory(function, "n = " + std::to_string(n), bytes);
}

// |inc|, as a size_t (no overflow for PTRDIFF_MIN).
std::size_t step_of(std::ptrdiff_t inc) {
  return inc < 0 ? static_cast<std::size_t>(-(inc + 1)) + 1 : static_cast<std::size_t>(inc);
}

// The n elements of x with BLAS increment inc lie in the address space: x is not null, and
// the last one read, (n - 1) |inc| elements on, lies below the end of the address space.
template <class T>
void check_span(const T* x, std::size_t n, std::ptrdiff_t inc, const char* name, const char* function) {
  if (n == 0) return;
  if (x == nullptr) ebla::throw_invalid(function, std::string(name) + " is null but n = " + std::to_string(n));
  const std::size_t step = step_of(inc);
  if (step > 0 && (n - 1 > (static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T)) / step ||
                   reinterpret_cast<std::uintptr_t>(x) > UINTPTR_MAX - (n - 1) * step * sizeof(T)))
    ebla::throw_invalid(function, std::string(name) + ": n = " + std::to_string(n) + " elements " +
                                      std::to_string(inc) + " apart run past the end of the address space");
}

// An array of n elements with BLAS increment inc as the host kernels read it: `x` itself
// for inc = 1, the constant x[0] for inc = 0 (no copy), else a copy gathered into `copy`.
// Element i is x[i inc] for inc >= 0 and x[(n - 1 - i) |inc|] for inc < 0.
template <class T>
HostVector<T> blas_vector(const T* x, std::size_t n, std::ptrdiff_t inc, std::vector<T>& copy) {
  if (inc == 1 || n == 0) return {x, false};
  if (inc == 0) return {x, true};
  const std::size_t step = step_of(inc);
  copy.resize(n);
  for (std::size_t i = 0; i < n; ++i) copy[i] = x[(inc >= 0 ? i : n - 1 - i) * step];
  return {copy.data(), false};
}

// x and y of a call, checked before any allocation (`cx`, `cy` hold gathered copies).
template <class T>
struct BlasPair {
  std::vector<T> cx, cy;
  HostVector<T> x, y;
  BlasPair(const BlasPair&) = delete;  // x and y may point into cx and cy
  BlasPair(const char* function, std::size_t n, const T* px, std::ptrdiff_t incx, const T* py, std::ptrdiff_t incy) {
    check_length<T>(n, function);
    check_span(px, n, incx, "x", function);
    check_span(py, n, incy, "y", function);
    check_workspace<T>(n, incx, incy, function);
    x = blas_vector(px, n, incx, cx);
    y = blas_vector(py, n, incy, cy);
  }
  bool constant() const { return x.constant || y.constant; }
};

// qdot on the pair: ebla::qdot on arrays (it remembers their plans), the two phases where a
// vector is constant (the same bits: qdot's result is that of its two phases).
template <class T>
ebla::QdotResult qdot_pair(const BlasPair<T>& v, std::size_t n, const ebla::QdotOptions& o) {
  if (!v.constant()) return ebla::qdot(v.x.p, v.y.p, n, o);
  const ebla::QdotPlan plan = ebla::detail::qdot_select_host(v.x, v.y, n, o);
  ebla::QdotResult r = ebla::detail::qdot_compute_host(v.x, v.y, n, plan, false);  // the plan's own data
  r.stats.select_seconds = plan.select_seconds;
  return r;
}

template <class T>
double qdot_strided(const char* function, std::size_t n, const T* x, std::ptrdiff_t incx, const T* y,
                    std::ptrdiff_t incy, const ebla_qdot_options* options, ebla_qdot_info* info) {
  return guarded(function, info, [&] {
    const ebla::QdotOptions o = to_options(options);
    const BlasPair<T> v(function, n, x, incx, y, incy);
    const ebla::QdotResult r = qdot_pair(v, n, o);
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
    const BlasPair<T> v(function, n, x, incx, y, incy);
    *plan = new ebla_qdot_plan{ebla::detail::qdot_select_host(v.x, v.y, n, o)};
    return 0.0;
  });
  return info.status;
}

template <class T>
double compute_strided(const char* function, const ebla_qdot_plan* plan, std::size_t n, const T* x,
                       std::ptrdiff_t incx, const T* y, std::ptrdiff_t incy, ebla_qdot_info* info) {
  return guarded(function, info, [&] {
    if (plan == nullptr) ebla::throw_invalid(function, "plan is null");
    ebla::detail::check_plan(plan->plan, n, std::is_same<T, double>::value ? 53 : 24, "ebla::qdot_compute");
    const BlasPair<T> v(function, n, x, incx, y, incy);
    const ebla::QdotResult r = ebla::detail::qdot_compute_host(v.x, v.y, n, plan->plan);
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

// ---- the stored vector ------------------------------------------------------------------

namespace {

// Kokkos for the stored vector's kernels: initialised here, once, if the program has not,
// and finalised at exit (after every static object of the program that came before).
void ensure_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
#if KOKKOS_VERSION >= 40000
    if (Kokkos::is_finalized()) return;  // Kokkos cannot start again
#endif
    if (Kokkos::is_initialized()) return;
    Kokkos::initialize();
    std::atexit([] {
      if (Kokkos::is_initialized()) Kokkos::finalize();
    });
  });
  if (!Kokkos::is_initialized())
    ebla::throw_invalid("ebla_qdot_store", "Kokkos has been finalised; no stored vector can be made or used");
}

}  // namespace

extern "C" int ebla_qdot_store(size_t n, const double* x, ptrdiff_t incx, const ebla_qdot_options* options,
                               ebla_qdot_stored_vector** stored) {
  const char* function = "ebla_qdot_store";
  ebla_qdot_info info;
  guarded(function, &info, [&] {
    if (stored == nullptr) ebla::throw_invalid(function, "stored is null");
    *stored = nullptr;
    const ebla::QdotOptions o = to_options(options);
    check_length<double>(n, function);
    check_span(x, n, incx, "x", function);
    ensure_kokkos();
    std::vector<double> copy;
    const HostVector<double> v = blas_vector(x, n, incx, copy);
    if (v.constant) copy.assign(n, x[0]);  // the store reads an array
    *stored = new ebla_qdot_stored_vector{ebla::qdot_store(v.constant ? copy.data() : v.p, n, o)};
    return 0.0;
  });
  return info.status;
}

extern "C" double ebla_qdot_stored(const ebla_qdot_stored_vector* stored, size_t n, const double* y, ptrdiff_t incy,
                                   ebla_qdot_info* info) {
  const char* function = "ebla_qdot_stored";
  return guarded(function, info, [&] {
    if (stored == nullptr) ebla::throw_invalid(function, "stored is null");
    check_length<double>(n, function);
    check_span(y, n, incy, "y", function);
    ensure_kokkos();
    std::vector<double> copy;
    const HostVector<double> v = blas_vector(y, n, incy, copy);
    if (v.constant) copy.assign(n, y[0]);
    ebla::QdotResult r = ebla::qdot(stored->stored, v.constant ? copy.data() : v.p, n);
    r.stats.select_seconds = stored->stored.store_seconds;
    fill_info(r, info);
    return r.value;
  });
}

extern "C" size_t ebla_qdot_stored_bytes(const ebla_qdot_stored_vector* stored) {
  return stored == nullptr ? 0 : stored->stored.bytes();
}

extern "C" void ebla_qdot_stored_free(ebla_qdot_stored_vector* stored) { delete stored; }

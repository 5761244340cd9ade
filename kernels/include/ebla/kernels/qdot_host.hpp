// Host specialisation of qdot for contiguous arrays in host memory: the arithmetic of
// the generic kernels of qdot_views.hpp (the AVX-512 variant rounds by Veltkamp's
// splitting, so a tie may round the other way), in loops compiled for several
// instruction sets (see quantize_host.hpp); `isa` defaults to the best this CPU runs.
#pragma once

#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ebla::detail {

QdotPlan qdot_select_host(const double* x, const double* y, std::size_t n, const QdotOptions& options,
                          HostIsa isa = best_host_isa());
QdotPlan qdot_select_host(const float* x, const float* y, std::size_t n, const QdotOptions& options,
                          HostIsa isa = best_host_isa());
/// count_levels = false only for the very data the plan was selected on (qdot itself):
/// the components per level are then the plan's, and the kernel skips counting them and
/// checking that each bin lies inside the plan (other data would be computed wrongly).
QdotResult qdot_compute_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan,
                             HostIsa isa = best_host_isa(), bool count_levels = true);
QdotResult qdot_compute_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan,
                             HostIsa isa = best_host_isa(), bool count_levels = true);

/// n components in host memory: the array from p on, or, if constant, p[0] n times (a
/// vector of BLAS increment 0).
template <class T>
struct HostVector {
  const T* p = nullptr;
  bool constant = false;
};
/// qdot_select_host and qdot_compute_host on vectors that may be constant: the bits of the
/// same calls on contiguous copies of them, with no array of n made (the kernels read a
/// constant vector's chunks from one block of copies, a chunk long). No check of p or n.
QdotPlan qdot_select_host(HostVector<double> x, HostVector<double> y, std::size_t n, const QdotOptions& options);
QdotPlan qdot_select_host(HostVector<float> x, HostVector<float> y, std::size_t n, const QdotOptions& options);
QdotResult qdot_compute_host(HostVector<double> x, HostVector<double> y, std::size_t n, const QdotPlan& plan,
                             bool count_levels = true);
QdotResult qdot_compute_host(HostVector<float> x, HostVector<float> y, std::size_t n, const QdotPlan& plan,
                             bool count_levels = true);

/// qdot with a plan to try: one pass over x and y counts the histogram and accumulates the
/// products under `hint`; if the plan the histogram selects (returned in `selected`) puts
/// every filled bin at the hint's level, that accumulation is the result (stats.passes = 1),
/// else a second pass computes under the selected plan (stats.passes = 2). The result is
/// qdot_compute(x, y, qdot_select(x, y, options)) bit for bit, whatever the hint. With
/// options.plan_margin = m > 0 the hint is first widened by m bins, and its accumulation is
/// also kept (one pass) where it computed every bin at least as precisely as the selected
/// plan asks (see QdotOptions::plan_margin).
/// `widen` >= 0 widens the hint by min(widen, options.plan_margin) bins instead of
/// options.plan_margin (see plan_hint).
QdotResult qdot_one_pass_host(const double* x, const double* y, std::size_t n, const QdotOptions& options,
                              const QdotPlan& hint, QdotPlan& selected, HostIsa isa = best_host_isa(),
                              int widen = -1);
QdotResult qdot_one_pass_host(const float* x, const float* y, std::size_t n, const QdotOptions& options,
                              const QdotPlan& hint, QdotPlan& selected, HostIsa isa = best_host_isa(),
                              int widen = -1);

/// The plan margin options.plan_margin gives a qdot called on its own: automatic_margin is 0.
inline int margin_of(const QdotOptions& options) { return options.plan_margin > 0 ? options.plan_margin : 0; }

/// The least m <= cap by which `before` must be widened (QdotOptions::plan_margin) for its
/// accumulation to compute every bin `now` fills at least as precisely as `now` asks; cap
/// where no such m exists.
int needed_margin(const QdotPlan& before, const QdotPlan& now, int cap);

/// The plan of this thread's last qdot on the arrays x and y of length n with these options
/// (input_t 53 for double, 24 for float), or null (none, or options.reuse_plan is false).
/// The pointer is valid until the next qdot of this thread. `widen`, if given, receives the
/// bins to widen it by: the larger of the margins its last two calls needed
/// (needed_margin of each plan against the one before), at most options.plan_margin;
/// one bin (if options.plan_margin allows) while fewer than two are known.
const QdotPlan* plan_hint(const void* x, const void* y, std::size_t n, const QdotOptions& options, int input_t,
                          int* widen = nullptr);
/// Remembers `plan` as the plan of x and y (see QdotOptions::reuse_plan), with the margin
/// (at most `margin`, the caller's margin_of(options); none is sought for 0) by which the
/// plan remembered before it needed widening to be kept for `plan`.
void remember_plan(const void* x, const void* y, std::size_t n, const QdotPlan& plan, int margin);
/// Forgets this thread's plans of every pair of arrays one of which starts at `array`. A
/// solver calls it on the arrays it just allocated: with QdotOptions::plan_margin the value
/// depends on the plan tried, and a plan left by earlier work that happened to use the same
/// addresses would make a solve depend on that work (and on the allocator).
void forget_plans(const void* array);

/// Conjugate gradients' update of x and r over [0, n): u_i += alpha p_i, r_i -= alpha q_i,
/// and fl(sum r_i^2) of the new r in eight interleaved partial sums s_k (over i = k mod 8,
/// in order of i) added as ((s_0 + s_1) + (s_2 + s_3)) + ((s_4 + s_5) + (s_6 + s_7)): the
/// bits of QdotStream::update on the same chunk.
double cg_update(double alpha, const double* p, const double* q, double* u, double* r, std::size_t n);

/// qdot(x, y, options) for double arrays that the caller writes chunk by chunk in a pass of
/// its own (a solver's vector update), so that the qdot rides in that pass:
///
///   QdotStream s(x, y, n, options);
///   count_over_chunks(s.chunks(), s.histogram_size(), h, [&](c, hc) {
///     ... write components [c * s.chunk(), ...) of x and y ...;
///     s.add(c, hc);               // that chunk's histogram into hc, and its products
///   });
///   QdotResult r = s.finish(h);   // the plan, and the products again if it moved
///
/// add counts the histogram and, where a plan of the last call on x and y is known,
/// accumulates the products under it; finish selects the plan from the histogram and,
/// where that plan puts a bin at another level (or none was known), computes the products
/// in a second pass. The result is qdot(x, y, options) bit for bit (stats.passes: the
/// passes over x and y besides the caller's own, 0 or 1).
class QdotStream {
public:
  QdotStream(const double* x, const double* y, std::size_t n, const QdotOptions& options);
  ~QdotStream();
  QdotStream(const QdotStream&) = delete;
  QdotStream& operator=(const QdotStream&) = delete;
  std::size_t chunk() const;           ///< components per chunk
  std::size_t chunks() const;          ///< chunks covering n
  static std::size_t histogram_size();  ///< counts per histogram
  /// Chunk c of x and y, once written: its histogram added into hist, and its products.
  /// Called once per chunk, from any thread (each with its own hist).
  void add(std::size_t c, std::int64_t* hist);
  /// For r^T r in conjugate gradients (x and y of the stream are r): cg_update on chunk c
  /// (returning its sum of squares), then add(c, hist), in one loop where the CPU allows
  /// (AVX-512), so that r is read once. Throws InvalidArgument if r is not the stream's
  /// x and y.
  double update(std::size_t c, double alpha, const double* p, const double* q, double* u, double* r,
                std::int64_t* hist);
  /// The result, from the summed histogram of every chunk.
  QdotResult finish(const std::int64_t* hist);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The pieces of the two phases, for callers that combine them across processes (ebla::mpi):
/// the exponent histogram of x and y into out[0, qdot_hist_size) (overwritten), and the
/// raw accumulation of the products under `plan` (counting levels; no check of the plan's
/// length against n), which finish_result turns into a value and a bound. float input is
/// read as the serial qdot on float arrays reads it: widened (exactly) to double.
void qdot_histogram_host(const double* x, const double* y, std::size_t n, std::int64_t* out,
                         HostIsa isa = best_host_isa());
void qdot_histogram_host(const float* x, const float* y, std::size_t n, std::int64_t* out,
                         HostIsa isa = best_host_isa());
QdotAccum qdot_accumulate_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa = best_host_isa());
QdotAccum qdot_accumulate_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa = best_host_isa());

}  // namespace ebla::detail

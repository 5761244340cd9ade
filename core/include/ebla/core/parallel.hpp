// Deterministic host parallelism: the host kernels cut their work into chunks of a fixed
// size (independent of the thread count), run the chunks on every thread of
// Kokkos::DefaultHostExecutionSpace, and merge the chunks' results in chunk order. A
// result is then the same bits on 1 or 64 threads, and its error bound needs no term for
// the thread count: the merge tree is the same for every run.
//
// Where it runs: on the host, in its execution space's threads (host kernels only).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ebla::detail {

/// Chunks of `size` that cover n items (the last one may be shorter).
inline std::size_t chunk_count(std::size_t n, std::size_t size) { return (n + size - 1) / size; }

/// Threads of the default host execution space (1 before Kokkos is initialised or after
/// it is finalised: the host kernels then run on the calling thread).
inline int host_threads() {
  if (!Kokkos::is_initialized()) return 1;
  return Kokkos::DefaultHostExecutionSpace().concurrency();
}

/// Calls f(c) for every chunk c in [0, chunks) on the threads of the default host execution
/// space, consecutive chunks on the same thread (static schedule), and returns when all are
/// done. f must write only what belongs to chunk c. One chunk, or one thread, runs inline.
template <class F>
void for_each_chunk(std::size_t chunks, const F& f) {
  if (chunks <= 1 || host_threads() == 1) {
    for (std::size_t c = 0; c < chunks; ++c) f(c);
    return;
  }
  using host = Kokkos::DefaultHostExecutionSpace;
  Kokkos::parallel_for("ebla::chunks", Kokkos::RangePolicy<host, Kokkos::Schedule<Kokkos::Static>>(0, chunks),
                       [&f](const std::size_t c) { f(c); });
  host().fence();
}

/// Chunk size of the streaming host kernels for n items: the power of two from 2^12 to 2^15
/// that gives at least 64 chunks where n allows (work for up to 64 threads; longer chunks
/// where n is large, so that per-chunk costs stay near 1 %, yet two arrays of doubles of a
/// chunk, 512 KiB, stay in a core's L2 cache for a second look). It depends on n alone.
inline std::size_t stream_chunk(std::size_t n) {
  std::size_t c = std::size_t{1} << 12;
  while (c < (std::size_t{1} << 15) && 64 * c < n) c <<= 1;
  return c;
}

namespace impl {
// parallel_reduce functor over chunks whose value is an array of integer counts.
template <class F>
struct CountChunks {
  using value_type = std::int64_t[];
  using size_type = std::size_t;
  const F* f;
  unsigned value_count;
  void operator()(const std::size_t c, value_type out) const { (*f)(c, out); }
  void init(value_type out) const { std::fill(out, out + value_count, std::int64_t{0}); }
  void join(value_type d, const value_type s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#if KOKKOS_VERSION < 30700  // older Kokkos joins through volatile references
  void join(volatile std::int64_t* d, const volatile std::int64_t* s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#endif
};
}  // namespace impl

/// Adds integer counts over chunks: f(c, out) adds chunk c's counts into out[0, size), on
/// the threads of the default host execution space, each thread into an array of its own.
/// Integer sums do not depend on their grouping, so out is the same for any thread count.
/// out is overwritten.
template <class F>
void count_over_chunks(std::size_t chunks, std::size_t size, std::int64_t* out, const F& f) {
  std::fill(out, out + size, std::int64_t{0});
  if (chunks <= 1 || host_threads() == 1) {
    for (std::size_t c = 0; c < chunks; ++c) f(c, out);
    return;
  }
  using host = Kokkos::DefaultHostExecutionSpace;
  Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> result(out, size);
  Kokkos::parallel_reduce("ebla::count_chunks", Kokkos::RangePolicy<host, Kokkos::Schedule<Kokkos::Static>>(0, chunks),
                          impl::CountChunks<F>{&f, static_cast<unsigned>(size)}, result);
  host().fence();
}

}  // namespace ebla::detail

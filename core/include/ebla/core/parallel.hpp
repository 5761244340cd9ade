// Deterministic host parallelism: the host kernels cut their work into chunks of a fixed
// size (independent of the thread count), run the chunks on every thread of
// Kokkos::DefaultHostExecutionSpace, and merge the chunks' results in chunk order. A
// result is then the same bits on 1 or 64 threads, and its error bound needs no term for
// the thread count: the merge tree is the same for every run.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

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

}  // namespace ebla::detail

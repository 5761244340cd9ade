// Scratch memory of ebla::gemm: large matrices kept and handed out again, on huge pages.
#include "gemm_internal.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ebla::gemm_detail {

namespace {

/// Asks the kernel to back a large, untouched allocation with huge pages: the first touch of
/// fresh memory costs one page fault per 4 KiB otherwise, which dominates the O(n^2) passes
/// of a large product. Advice only: nothing changes where it is not taken.
void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{1} << 21;
  if (bytes < 8 * huge) return;
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

/// Scratch matrices of 1 MiB or more are kept after use and handed out again: a fresh
/// allocation costs a page fault and a cleared page per page, which otherwise dominates the
/// O(n^2) passes of a large product. A kept matrix is reused only when nothing else holds it
/// (use_count 1); at most 64 are kept, and all are released at Kokkos::finalize.
struct ScratchPool {
  std::mutex mutex;
  std::vector<HostMatrix> kept;
};

ScratchPool& scratch_pool() {
  static ScratchPool* pool = [] {
    auto* p = new ScratchPool;  // lives as long as the process; its views go at finalize
    Kokkos::push_finalize_hook([p] {
      const std::lock_guard<std::mutex> lock(p->mutex);
      p->kept.clear();
    });
    return p;
  }();
  return *pool;
}

}  // namespace

/// A matrix whose every entry is written before it is read.
HostMatrix uninitialised(const char* label, std::int64_t rows, std::int64_t cols) {
  const bool large = static_cast<double>(rows) * static_cast<double>(cols) * sizeof(double) >= (1 << 20);
  ScratchPool& pool = scratch_pool();
  if (large) {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    for (const HostMatrix& M : pool.kept)
      if (M.use_count() == 1 && static_cast<std::int64_t>(M.extent(0)) == rows &&
          static_cast<std::int64_t>(M.extent(1)) == cols)
        return M;
  }
  HostMatrix M(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), rows, cols);
  advise_huge_pages(M.data(), M.size() * sizeof(double));
  if (large) {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.kept.size() >= 64) {  // forget the oldest one that is free
      const auto free = std::find_if(pool.kept.begin(), pool.kept.end(),
                                     [](const HostMatrix& K) { return K.use_count() == 1; });
      if (free != pool.kept.end()) pool.kept.erase(free);
    }
    if (pool.kept.size() < 64) pool.kept.push_back(M);
  }
  return M;
}

}  // namespace ebla::gemm_detail

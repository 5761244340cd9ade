// Memory before allocation: what a process may still allocate, and a check that names the
// input whose declared size would need more.
//
// Where it runs: on the host (the process's memory).
#pragma once

#include <cstdint>
#include <string>

namespace ebla::detail {

/// Bytes the process may still allocate: the least of the kernel's estimate of available
/// memory (MemAvailable in /proc/meminfo) and, inside a memory-limited control group, the
/// group's limit less its usage (cgroup v2 memory.max, v1 memory.limit_in_bytes), and the
/// environment's EBLA_MEMORY_LIMIT (bytes, or with a suffix K, M, G or T: powers of 1024;
/// InvalidArgument if it is not such a size). Where none of these can be read: the free
/// physical pages (sysconf), else no limit (UINT64_MAX).
std::uint64_t available_memory();

/// Throws InvalidArgument from `function`: "`what` needs about X GiB of memory, and Y GiB
/// are available" if `bytes` exceeds available_memory(); `bytes` may be an estimate (a
/// double, so that products of declared sizes cannot overflow).
void check_memory(const std::string& function, const std::string& what, double bytes);

/// "1.5 GiB", "200 MiB", "12 KiB", "100 bytes".
std::string memory_text(double bytes);

}  // namespace ebla::detail

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace ebla::detail {

namespace {

constexpr std::uint64_t unknown = std::numeric_limits<std::uint64_t>::max();

// The number in a one-value file such as memory.max ("max": no limit).
std::uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return unknown;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return unknown;
  }
}

// MemAvailable of /proc/meminfo, in bytes.
std::uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return unknown;
}

// Limit less usage of this process's control group (v2, then v1), if limited.
std::uint64_t cgroup_headroom() {
  const std::uint64_t v2_limit = read_number("/sys/fs/cgroup/memory.max");
  if (v2_limit != unknown) {
    const std::uint64_t used = read_number("/sys/fs/cgroup/memory.current");
    return used == unknown || used > v2_limit ? 0 : v2_limit - used;
  }
  const std::uint64_t v1_limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (v1_limit != unknown && v1_limit < (std::uint64_t{1} << 60)) {  // v1 writes "no limit" as ~2^63
    const std::uint64_t used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    return used == unknown || used > v1_limit ? 0 : v1_limit - used;
  }
  return unknown;
}

// EBLA_MEMORY_LIMIT: a cap set by the user, in bytes or with a suffix K, M, G or T (powers of 1024).
std::uint64_t user_limit() {
  const char* text = std::getenv("EBLA_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return unknown;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  const std::string suffix(end);
  const double scale = suffix.empty() ? 1 : suffix == "K" ? 0x1p10 : suffix == "M" ? 0x1p20 : suffix == "G" ? 0x1p30
                       : suffix == "T" ? 0x1p40 : -1;
  if (!(v >= 0) || scale < 0 || !(v * scale < 0x1p64))
    throw_invalid("ebla::detail::available_memory", std::string("EBLA_MEMORY_LIMIT='") + text +
                                                        "' is not a size in bytes (suffix K, M, G or T allowed)");
  return static_cast<std::uint64_t>(v * scale);
}

}  // namespace

std::uint64_t available_memory() {
  std::uint64_t bytes = std::min({meminfo_available(), cgroup_headroom(), user_limit()});
  if (bytes != unknown) return bytes;
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : unknown;
}

std::string memory_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

void check_memory(const std::string& function, const std::string& what, double bytes) {
  const std::uint64_t available = available_memory();
  if (available == unknown || !(bytes > static_cast<double>(available))) return;
  throw_invalid(function, what + " needs about " + memory_text(bytes) + " of memory, and " +
                              memory_text(static_cast<double>(available)) + " are available");
}

}  // namespace ebla::detail

#include <ebla/core/temporary.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <unistd.h>

namespace ebla {

namespace {

enum SlotState : int { free_slot = 0, being_changed = 1, holding_path = 2 };

// A slot holds a path only in state holding_path; the handler reads nothing else. A writer
// claims a free slot (free -> being_changed), copies the path, then publishes it
// (-> holding_path); release goes back through being_changed, so the handler never reads a
// path while it is written.
struct Slot {
  std::atomic<int> state{free_slot};
  char path[PATH_MAX];
};

constexpr int slot_count = 64;
Slot slots[slot_count];

}  // namespace

void remove_pending_temporaries() noexcept {
  for (Slot& s : slots)
    if (s.state.load(std::memory_order_acquire) == holding_path) ::unlink(s.path);
}

namespace detail {

namespace {

// Six letters of a..z from a generator seeded by the system's entropy source where it has
// one, else by the clock and the process id.
std::string random_letters(std::mt19937_64& g) {
  std::string s(6, 'a');
  for (char& c : s) c = static_cast<char>('a' + g() % 26);
  return s;
}

std::uint64_t entropy() {
  try {
    std::random_device d;
    return (static_cast<std::uint64_t>(d()) << 32) ^ d();
  } catch (...) {
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           (static_cast<std::uint64_t>(::getpid()) << 40);
  }
}

}  // namespace

int create_temporary(const std::string& target, std::string& name) {
  std::mt19937_64 g(entropy());
  const std::string stem = target + ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = stem + random_letters(g);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

PendingTemporary::PendingTemporary(const std::string& path) noexcept {
  if (path.empty() || path.size() >= PATH_MAX) return;
  for (int i = 0; i < slot_count; ++i) {
    int expected = free_slot;
    if (!slots[i].state.compare_exchange_strong(expected, being_changed, std::memory_order_acquire)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(holding_path, std::memory_order_release);
    slot_ = i;
    return;
  }
}

PendingTemporary& PendingTemporary::operator=(PendingTemporary&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

void PendingTemporary::release() noexcept {
  if (slot_ < 0) return;
  slots[slot_].state.store(being_changed, std::memory_order_release);
  slots[slot_].path[0] = '\0';
  slots[slot_].state.store(free_slot, std::memory_order_release);
  slot_ = -1;
}

}  // namespace detail
}  // namespace ebla

#include <ebla/core/temporary.hpp>

#include <atomic>
#include <climits>
#include <cstring>

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

// The temporary files of ebla's writers, for a signal handler to remove.
//
// Every writer of ebla (Hdf5Writer, the Matrix Market writers) writes to a new file beside
// its target, `<path>.tmp-<pid>-<six letters>` (create_temporary), and renames it onto the
// target when complete, so that the rename is the only step that touches the target; its
// destructor removes an uncommitted one.
// A process ended by a signal runs no destructor, so the writers also record their temporary
// file in a fixed table from creation until commit or removal, and a program's handler of
// SIGINT, SIGTERM, SIGHUP and every other signal whose default ends the process (the ebla
// command installs one; under mpirun an abort ends the other ranks with SIGTERM) calls
// remove_pending_temporaries() before it dies.
//
// Where it runs: on the host (files).
#pragma once

#include <string>

namespace ebla {

/// Removes every temporary file that a writer of this process has created and not yet
/// committed or removed. Async-signal-safe: it calls only unlink(2) on paths held in static
/// storage, so a signal handler may call it. The writers keep their files otherwise intact.
void remove_pending_temporaries() noexcept;

namespace detail {

/// Creates the temporary file for `target`: `<target>.tmp-<pid>-<six random letters>`, opened
/// for writing with O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC and mode 0666 less the umask.
/// A name that exists already, as a file or as a (symbolic or hard) link, is never opened,
/// truncated or followed: another name is drawn, 100 times at most. Returns the descriptor
/// and sets `name`, or returns -1 with errno set (EEXIST if every name drawn existed).
int create_temporary(const std::string& target, std::string& name);

/// Records `path` in the table for as long as it lives (move-only). A path longer than
/// PATH_MAX, or one more than the table holds (64 at once), is not recorded: the writer's
/// destructor still removes it, only a signal leaves it behind.
class PendingTemporary {
public:
  PendingTemporary() = default;
  explicit PendingTemporary(const std::string& path) noexcept;
  PendingTemporary(PendingTemporary&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  PendingTemporary& operator=(PendingTemporary&& other) noexcept;
  PendingTemporary(const PendingTemporary&) = delete;
  PendingTemporary& operator=(const PendingTemporary&) = delete;
  /// Forgets the path (the file was renamed or removed).
  ~PendingTemporary() { release(); }
  void release() noexcept;
  bool recorded() const noexcept { return slot_ >= 0; }

private:
  int slot_ = -1;
};

}  // namespace detail
}  // namespace ebla

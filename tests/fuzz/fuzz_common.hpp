// Shared pieces of the libFuzzer targets: a per-process scratch file that carries an input
// to the readers that take a path, Kokkos for the life of the process, and the checks that
// turn a wrong result into a crash the fuzzer records.
#pragma once

#include <ebla/solvers/operators.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ebla::fuzz {

/// Prints the broken property and aborts: libFuzzer saves the input as a crash.
[[noreturn]] inline void violated(const std::string& what) {
  std::fprintf(stderr, "ebla fuzz: property violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Where the scratch files go: $EBLA_FUZZ_TMPDIR, else /dev/shm (memory: the writers' fsync
/// costs nothing there), else $TMPDIR, else /tmp.
inline std::string scratch_directory() {
  if (const char* d = std::getenv("EBLA_FUZZ_TMPDIR"); d != nullptr && *d != '\0') return d;
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  if (const char* d = std::getenv("TMPDIR"); d != nullptr && *d != '\0') return d;
  return "/tmp";
}

/// One file per process and purpose ("<dir>/ebla-fuzz-<tag>-<pid><suffix>"), rewritten for
/// every input and removed when the process exits normally.
class ScratchFile {
public:
  ScratchFile(const std::string& tag, const std::string& suffix)
      : path_(scratch_directory() + "/ebla-fuzz-" + tag + "-" + std::to_string(static_cast<long>(::getpid())) +
              suffix) {}
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }

  /// Replaces the file's content with the bytes; aborts if that fails (not a finding of
  /// ebla, but the run would test nothing).
  void write(const std::uint8_t* data, std::size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) {
      std::perror(path_.c_str());
      std::abort();
    }
    const bool written = size == 0 || std::fwrite(data, 1, size, f) == size;
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed) {
      std::perror(path_.c_str());
      std::abort();
    }
  }

private:
  std::string path_;
};

inline void finalize_kokkos() {
  if (Kokkos::is_initialized()) Kokkos::finalize();
}

/// The memory the readers may plan to use for a declared size (ebla::detail::available_memory):
/// 128 MiB unless EBLA_MEMORY_LIMIT says otherwise, so that a size they accept fits the limits
/// the fuzzer enforces (2 GiB in all, 10 s an input, in scripts/fuzz.sh) and one they should
/// refuse is refused on any machine, whatever memory it has. With 1 GiB, a 68-byte file
/// declaring 42,947,294 empty rows (24 bytes a row: within the budget) took 15 s to read twice
/// in the instrumented build and failed the run as a timeout
/// (regressions/fuzz_matrix_market/size-line-43-million-empty-rows.mtx).
inline void limit_reader_memory() { ::setenv("EBLA_MEMORY_LIMIT", "128M", 0); }

/// Kokkos for the whole process (one host thread, so that runs are reproducible), finalised
/// at exit. Call from LLVMFuzzerInitialize.
inline void start_kokkos() {
  if (Kokkos::is_initialized()) return;
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings settings;
  settings.set_num_threads(1);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments arguments;
  arguments.num_threads = 1;
  Kokkos::initialize(arguments);
#endif
  std::atexit(finalize_kokkos);
}

/// The CSR invariants every reader promises: row_map(0) = 0, nondecreasing, row_map(n) =
/// nnz, column indices in [0, ncols), finite values; `sorted`: columns strictly increasing
/// in each row (duplicates merged). `what` names the reader in the message.
inline void check_csr(const CsrMatrix& A, bool sorted, const char* what) {
  const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  const auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  const auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  const std::string w = std::string(what) + ": ";
  if (A.numRows() < 0 || A.numCols() < 0) violated(w + "negative dimension");
  const auto n = static_cast<std::size_t>(A.numRows());
  if (ptr.extent(0) != n + 1) violated(w + "row_map has " + std::to_string(ptr.extent(0)) + " entries for " +
                                       std::to_string(n) + " rows");
  if (ptr(0) != 0) violated(w + "row_map(0) = " + std::to_string(ptr(0)));
  const std::size_t nnz = ptr(n);
  if (nnz != col.extent(0) || nnz != val.extent(0) || nnz != static_cast<std::size_t>(A.nnz()))
    violated(w + "row_map(n) = " + std::to_string(nnz) + " but " + std::to_string(col.extent(0)) + " columns, " +
             std::to_string(val.extent(0)) + " values, nnz() = " + std::to_string(A.nnz()));
  for (std::size_t i = 0; i < n; ++i) {
    if (ptr(i + 1) < ptr(i)) violated(w + "row_map decreases at row " + std::to_string(i));
    for (std::size_t k = ptr(i); k < ptr(i + 1); ++k) {
      if (col(k) < 0 || col(k) >= A.numCols())
        violated(w + "column " + std::to_string(col(k)) + " in row " + std::to_string(i) + " outside [0, " +
                 std::to_string(A.numCols()) + ")");
      if (sorted && k > ptr(i) && col(k) <= col(k - 1))
        violated(w + "columns not strictly increasing in row " + std::to_string(i));
      if (!std::isfinite(val(k)))
        violated(w + "entry (" + std::to_string(i) + ", " + std::to_string(col(k)) + ") = " +
                 std::to_string(val(k)) + " is not finite");
    }
  }
}

/// Every element finite.
inline void check_finite(const Vector& v, const char* what) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (!std::isfinite(h(i))) violated(std::string(what) + ": element " + std::to_string(i) + " is not finite");
}

}  // namespace ebla::fuzz

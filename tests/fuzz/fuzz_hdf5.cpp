// Fuzz target: the HDF5 readers. The input is the content of a file in the layout of
// solvers/include/ebla/solvers/io.hpp (/A/row_ptr, /A/col_idx, /A/values, optional "ncols",
// /b, /x0); it is read as the matrix of group A, the vector b (optional) and the vector x0
// (required). A reader must either return or throw ebla::InvalidArgument; a matrix must
// satisfy the CSR invariants (columns in range, finite values) and vectors be finite; and
// every HDF5 object a reader opened must be closed again, whatever happened.
//
// HDF5 1.10 itself crashes on some corrupted files, with or without ebla. So that such a
// file does not end the run as a finding of ebla's, a helper process first makes the HDF5
// calls the readers make (open, look up, query, read), without ebla; an input that kills
// the helper or hangs it for 5 s is skipped (counted, and reported at exit), and the helper
// started again. Set EBLA_FUZZ_HDF5_PRECHECK=0 to give every input to the readers directly,
// EBLA_FUZZ_HDF5_SKIPPED=DIR to keep the skipped inputs in DIR.
#include "fuzz_common.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/io.hpp>

#include <hdf5.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const ebla::fuzz::ScratchFile* input = nullptr;
bool precheck = true;
const char* keep_skipped = nullptr;  // $EBLA_FUZZ_HDF5_SKIPPED: a directory for the skipped inputs
long inputs = 0, skipped = 0;

// The element type a reader would read a dataset as, or -1 if it would refuse the type.
hid_t memory_type(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (c == H5T_FLOAT && size == 8) return H5T_NATIVE_DOUBLE;
  if (c != H5T_INTEGER) return -1;
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  if (size == 4 && is_signed) return H5T_NATIVE_INT32;
  if (size == 8) return is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
  return -1;
}

// Whether every link on the way to `path` exists, as the readers test it.
bool links_exist(hid_t file, const std::string& path) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (prefix.size() > 1 && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
  }
}

// The HDF5 calls of the readers, on their own (run in the child).
void hdf5_calls(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return;
  if (links_exist(file, "/A") && H5Aexists_by_name(file, "/A", "ncols", H5P_DEFAULT) > 0) {
    const hid_t attr = H5Aopen_by_name(file, "/A", "ncols", H5P_DEFAULT, H5P_DEFAULT);
    if (attr >= 0) {
      const hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
      std::int64_t v = 0;
      if (type >= 0 && space >= 0 && memory_type(type) == H5T_NATIVE_INT64 &&
          H5Sget_simple_extent_npoints(space) == 1)
        H5Aread(attr, H5T_NATIVE_INT64, &v);
      if (type >= 0) H5Tclose(type);
      if (space >= 0) H5Sclose(space);
      H5Aclose(attr);
    }
  }
  for (const char* name : {"/A/row_ptr", "/A/col_idx", "/A/values", "/b", "/x0"}) {
    if (!links_exist(file, name)) continue;
    const hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
    if (set < 0) continue;
    const hid_t space = H5Dget_space(set), type = H5Dget_type(set);
    hsize_t n = 0;
    if (space >= 0 && type >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
        H5Sget_simple_extent_dims(space, &n, nullptr) == 1) {
      const hid_t memory = memory_type(type);
      // a declared size beyond 2^27 elements is the readers' business (they should refuse it)
      if (memory >= 0 && n > 0 && n <= (hsize_t{1} << 27)) {
        std::vector<std::uint64_t> buffer(static_cast<std::size_t>(n));
        H5Dread(set, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data());
      }
    }
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    H5Dclose(set);
  }
  H5Fclose(file);
}

// A helper process (this program again, with EBLA_FUZZ_HDF5_HELPER=1) that makes the calls
// above for each path it reads from a pipe and answers one byte. Started again after it died.
class Hdf5Helper {
public:
  ~Hdf5Helper() { stop(); }

  // Whether HDF5 alone got through the file without dying or hanging. (libFuzzer's timer
  // interrupts system calls now and then: EINTR is no answer.)
  bool survives(const std::string& path) {
    if (pid_ < 0) start();
    const std::string line = path + "\n";
    ssize_t n;
    while ((n = ::write(to_, line.data(), line.size())) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(line.size())) return died();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return died();  // hanging: killed below
      pollfd p{from_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r == 1) break;
      if (r < 0 && errno != EINTR) return died();
    }
    char answer = 0;
    while ((n = ::read(from_, &answer, 1)) < 0 && errno == EINTR) {
    }
    return n == 1 || died();
  }

private:
  void start() {
    // close-on-exec: the helper gets them only as its stdin and stdout (dup2 clears the flag)
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) fail("pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    // An allocation above libFuzzer's malloc limit (scripts/fuzz.sh: -rss_limit_mb=2048, which
    // the malloc limit follows) ends the helper as it would end the target: HDF5 asks for
    // gigabytes on some corrupted headers.
    std::string asan = "ASAN_OPTIONS=max_allocation_size_mb=2048";
    std::vector<std::string> env{"EBLA_FUZZ_HDF5_HELPER=1"};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (entry.rfind("ASAN_OPTIONS=", 0) == 0) asan = entry + ":max_allocation_size_mb=2048";
      else env.push_back(entry);
    }
    env.push_back(asan);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char self[] = "/proc/self/exe";
    char* argv[] = {self, nullptr};
    if (posix_spawn(&pid_, self, &actions, nullptr, argv, envp.data()) != 0) fail("posix_spawn");
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }

  bool died() {
    stop();
    return false;
  }

  void stop() {
    if (pid_ < 0) return;
    ::close(to_);
    ::close(from_);
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::abort();
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

// The helper's loop: a path a line, one byte back after the HDF5 calls.
[[noreturn]] void serve() {
  std::string line;
  for (int c; (c = std::getchar()) != EOF;) {
    if (c != '\n') {
      line += static_cast<char>(c);
      continue;
    }
    hdf5_calls(line);
    H5close();  // each file from a library opened anew, as in the target (below)
    line.clear();
    std::putchar('1');
    std::fflush(stdout);
  }
  ::_exit(0);
}

Hdf5Helper* helper = nullptr;

void report() {
  if (skipped > 0)
    std::fprintf(stderr,
                 "fuzz_hdf5: %ld of %ld inputs crash or hang HDF5 by itself (without ebla): skipped; "
                 "EBLA_FUZZ_HDF5_PRECHECK=0 gives them to the readers\n",
                 skipped, inputs);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // HDF5 frees blocks above its free-list limits (64 KiB a list), among them the ~1 MiB
  // metadata cache of every open file; fresh memory for each input made page faults the
  // largest cost. No limits: the blocks are reused.
  H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
  if (std::getenv("EBLA_FUZZ_HDF5_HELPER") != nullptr) serve();
  ebla::fuzz::limit_reader_memory();
  ebla::fuzz::start_kokkos();
  if (const char* p = std::getenv("EBLA_FUZZ_HDF5_PRECHECK"); p != nullptr && std::string(p) == "0")
    precheck = false;
  keep_skipped = std::getenv("EBLA_FUZZ_HDF5_SKIPPED");
  static const ebla::fuzz::ScratchFile in("hdf5", ".h5");
  input = &in;
  static Hdf5Helper h;
  helper = &h;
  ::signal(SIGPIPE, SIG_IGN);  // a helper that died: write() fails instead
  std::atexit(report);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input->write(data, size);
  const std::string& path = input->path();
  ++inputs;
  if (precheck && !helper->survives(path)) {
    ++skipped;
    if (keep_skipped != nullptr) {
      const std::string name = std::string(keep_skipped) + "/skipped-" + std::to_string(::getpid()) + "-" +
                               std::to_string(skipped);
      if (std::FILE* f = std::fopen(name.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
      }
    }
    return -1;  // not kept in the corpus
  }
  try {
    ebla::fuzz::check_csr(ebla::read_hdf5_matrix(path, "A"), false, "read_hdf5_matrix");
  } catch (const ebla::InvalidArgument&) {
  }
  try {
    ebla::fuzz::check_finite(ebla::read_hdf5_vector(path, "b", true), "read_hdf5_vector(b, optional)");
  } catch (const ebla::InvalidArgument&) {
  }
  try {
    ebla::fuzz::check_finite(ebla::read_hdf5_vector(path, "x0"), "read_hdf5_vector(x0)");
  } catch (const ebla::InvalidArgument&) {
  }
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) ebla::fuzz::violated("the readers left " + std::to_string(open) + " HDF5 objects open");
  // HDF5 1.10 carries state from one corrupted file to the next (a use after free inside
  // H5Aexists_by_name, reached only after hundreds of earlier inputs, never by one file on
  // its own): each input starts from a library closed and opened again, as a new process.
  H5close();
  return 0;
}

// A small writer of HDF5 result files (experiments, benchmarks), on the HDF5 C library.
//
//   ebla::Hdf5Writer out("run.h5");           // creates run.h5.tmp-<pid>
//   ebla::Hdf5Group g = out.root().group("tightness");
//   g.attribute("tolerance", 1e-16);
//   g.dataset("relerr", values).attribute("unit", "relative");
//   out.commit();                             // renames run.h5.tmp-<pid> to run.h5
//
// All-or-nothing: the file is built in memory (HDF5's core driver), written by commit()
// under a temporary name next to the target (created, empty, by the constructor), synced,
// and renamed onto the target, so a reader (or a crash) never sees a half-written <path>.
// A write that fails (a full disk) throws Hdf5Error and leaves <path> as it was. A writer
// destroyed without commit() (an exception, an early return) deletes its temporary file,
// and so does remove_pending_temporaries() (temporary.hpp) from a signal handler; only a
// process killed outright (SIGKILL) can leave <path>.tmp-<pid> behind, never a truncated
// <path>. The memory held is about the file's size (twice that during commit).
//
// Groups and datasets are handles by path within the file, cheap to copy; every call
// opens, writes and closes its HDF5 objects, so the only HDF5 resource held between
// calls is the file itself (closed by commit() or the destructor).
//
// Errors:
//  - ebla::InvalidArgument (its message names the path): the file cannot be created
//    (missing directory, no permission, <path> is a directory), a name that is empty,
//    contains '/' or already exists, a 2-D shape that does not match the data, or a
//    handle used after its writer committed or was destroyed.
//  - ebla::Hdf5Error (a std::runtime_error): a failure of the HDF5 library while writing
//    an object that was valid to create, or of writing the file out (with errno's reason)
//    or of the final rename. Each means that nothing was committed.
// HDF5's own printing of error stacks to stderr is silenced during these calls; the
// innermost HDF5 message is part of the exception's message instead.
//
// Where it runs: on the host (files).
#pragma once

#include <ebla/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla {

/// An HDF5 library failure while writing (see the top of this header).
class Hdf5Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

namespace detail {
struct Hdf5State;  // the open file, shared by the writer and its handles

/// While alive, HDF5 does not print its error stacks to stderr (ebla's readers and writer
/// turn failures into exceptions carrying hdf5_innermost_error() instead).
class Hdf5QuietErrors {
public:
  Hdf5QuietErrors();
  ~Hdf5QuietErrors();
  Hdf5QuietErrors(const Hdf5QuietErrors&) = delete;
  Hdf5QuietErrors& operator=(const Hdf5QuietErrors&) = delete;

private:
  struct Saved;  // the previous automatic error handler
  std::unique_ptr<Saved> saved_;
};

/// The description of the most specific entry of HDF5's current error stack. Must be read
/// right after the failing call: the next API call clears the stack.
std::string hdf5_innermost_error();
}  // namespace detail

/// A group or dataset of a file being written: something that carries attributes.
class Hdf5Object {
public:
  /// Path within the file, like "/tightness/A".
  const std::string& path() const { return path_; }

  /// Scalar attributes. A string is stored as variable-length UTF-8.
  const Hdf5Object& attribute(const std::string& name, const std::string& value) const;
  const Hdf5Object& attribute(const std::string& name, const char* value) const;
  const Hdf5Object& attribute(const std::string& name, double value) const;
  const Hdf5Object& attribute(const std::string& name, std::int64_t value) const;
  /// Any other integer (int, std::size_t, ...) is stored as int64 (bool is not accepted,
  /// so that a stray pointer or flag cannot silently become a number).
  template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value &&
                                          !std::is_same<I, std::int64_t>::value, int> = 0>
  const Hdf5Object& attribute(const std::string& name, I value) const {
    return attribute(name, static_cast<std::int64_t>(value));
  }
  /// 1-D array attributes (lists of parameters: tolerances, sizes).
  const Hdf5Object& attribute(const std::string& name, const std::vector<double>& values) const;
  const Hdf5Object& attribute(const std::string& name, const std::vector<std::int64_t>& values) const;

protected:
  Hdf5Object(std::shared_ptr<detail::Hdf5State> state, std::string path);
  std::shared_ptr<detail::Hdf5State> state_;
  std::string path_;
  friend class Hdf5Group;
  friend class Hdf5Writer;
};

/// A 1-D or 2-D dataset (attributes only: datasets are written whole when created).
class Hdf5Dataset : public Hdf5Object {
  using Hdf5Object::Hdf5Object;
  friend class Hdf5Group;
};

/// A group (or the root group "/").
class Hdf5Group : public Hdf5Object {
public:
  /// Creates the subgroup `name` (no '/', not existing yet).
  Hdf5Group group(const std::string& name) const;
  /// Creates a 1-D dataset holding `values` (which may be empty).
  Hdf5Dataset dataset(const std::string& name, const std::vector<double>& values) const;
  Hdf5Dataset dataset(const std::string& name, const std::vector<std::int64_t>& values) const;
  /// Creates a rows x cols dataset from row-major `values` (values.size() == rows * cols).
  Hdf5Dataset dataset(const std::string& name, const std::vector<double>& values, std::size_t rows,
                      std::size_t cols) const;
  /// The same for small codes (per-component maps), stored as uint8.
  Hdf5Dataset dataset(const std::string& name, const std::vector<std::uint8_t>& values, std::size_t rows,
                      std::size_t cols) const;

private:
  using Hdf5Object::Hdf5Object;
  friend class Hdf5Writer;
};

/// Writes one HDF5 file, all or nothing (see the top of this header). Move-only.
class Hdf5Writer {
public:
  /// Creates `<path>.tmp-<pid>` (truncating a stale one). Throws InvalidArgument naming
  /// `path` if it cannot be created, or if `path` exists and is not a regular file (a
  /// directory, device, FIFO, socket or symbolic link), is read-only, or is the same file as
  /// one of `inputs` (the files the run reads): commit() would replace it.
  explicit Hdf5Writer(const std::string& path, const std::vector<std::string>& inputs = {});
  Hdf5Writer(Hdf5Writer&&) noexcept;
  Hdf5Writer& operator=(Hdf5Writer&&) noexcept;
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;
  /// Without commit(): closes and deletes the temporary file.
  ~Hdf5Writer();

  /// The root group "/" (for file attributes and top-level groups).
  Hdf5Group root() const;
  /// Flushes, closes, and renames the temporary file onto path(), replacing any file
  /// there. Throws Hdf5Error (and deletes the temporary) if that fails, InvalidArgument
  /// if already committed. Handles of this writer are unusable afterwards.
  void commit();

  bool committed() const;
  const std::string& path() const;
  const std::string& temporary_path() const;

private:
  std::shared_ptr<detail::Hdf5State> state_;
};

}  // namespace ebla

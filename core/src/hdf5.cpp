// The HDF5 result-file writer (see hdf5.hpp): temporary file, rename on commit, and
// every HDF5 object opened and closed within one call.
#include <ebla/core/hdf5.hpp>
#include <ebla/core/temporary.hpp>

#include "hdf5_handle.hpp"

#include <hdf5.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

namespace ebla {

namespace detail {

struct Hdf5State {
  hid_t file = H5I_INVALID_HID;
  std::string path;       // the target, named in every message
  std::string temporary;  // what is actually being written
  PendingTemporary pending;  // the temporary, for a signal handler to remove
  int fd = -1;               // the temporary, open for writing until commit
  bool committed = false;
};

}  // namespace detail

namespace {

using detail::Hdf5State;

using QuietErrors = detail::Hdf5QuietErrors;
using detail::hdf5_innermost_error;

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

[[noreturn]] void throw_hdf5(const Hdf5State& st, const std::string& what) {
  const std::string hdf5 = hdf5_innermost_error();
  throw Hdf5Error("ebla::Hdf5Writer: " + in_quotes(st.path) + ": " + what + " (" + hdf5 + ")");
}

using Id = detail::Hdf5Handle;

Id checked(const Hdf5State& st, hid_t id, Id::Closer close, const std::string& what) {
  if (id < 0) throw_hdf5(st, what);
  return Id(id, close);
}

void check(const Hdf5State& st, herr_t status, const std::string& what) {
  if (status < 0) throw_hdf5(st, what);
}

Hdf5State& open_state(const std::shared_ptr<Hdf5State>& st, const std::string& object) {
  if (!st) throw_invalid("ebla::Hdf5Writer", "use of a moved-from writer (object " + in_quotes(object) + ")");
  if (st->file < 0)
    throw_invalid("ebla::Hdf5Writer", in_quotes(st->path) + " is already " +
                                          (st->committed ? "committed" : "closed") +
                                          "; cannot write " + in_quotes(object));
  return *st;
}

std::string child_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

// Names are single path components, new within their parent: nested paths and
// overwrites are almost always mistakes in a result file.
void check_new_name(const Hdf5State& st, hid_t parent, const std::string& parent_path,
                    const std::string& name, const char* function) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    throw_invalid(function, in_quotes(name) + " is not a valid name in " + in_quotes(st.path) +
                                " (non-empty, no '/')");
  const htri_t exists = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
  check(st, exists, "cannot look up " + in_quotes(child_path(parent_path, name)));
  if (exists > 0)
    throw_invalid(function, in_quotes(child_path(parent_path, name)) + " already exists in " + in_quotes(st.path));
}

Id open_group(const Hdf5State& st, const std::string& path) {
  return checked(st, H5Gopen2(st.file, path.c_str(), H5P_DEFAULT), H5Gclose, "cannot open group " + in_quotes(path));
}

// A 1-D dataspace; HDF5 accepts zero-length dimensions.
Id simple_space(const Hdf5State& st, std::initializer_list<hsize_t> dims) {
  const std::vector<hsize_t> d(dims);
  return checked(st, H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose,
                 "cannot create a dataspace");
}

// Creates attribute `name` on the object at `object` and writes `data` (skipped when the
// dataspace is empty: there is nothing to write and HDF5 rejects a null buffer).
void write_attribute(const Hdf5State& st, const std::string& object, const std::string& name,
                     hid_t file_type, hid_t mem_type, hid_t space, const void* data, bool empty) {
  const std::string where = "attribute " + in_quotes(name) + " of " + in_quotes(object);
  if (name.empty()) throw_invalid("ebla::Hdf5Object::attribute", "empty attribute name on " + in_quotes(object));
  const Id obj = checked(st, H5Oopen(st.file, object.c_str(), H5P_DEFAULT), H5Oclose, "cannot open " + in_quotes(object));
  const htri_t exists = H5Aexists(obj.get(), name.c_str());
  check(st, exists, "cannot look up " + where);
  if (exists > 0) throw_invalid("ebla::Hdf5Object::attribute", where + " already exists in " + in_quotes(st.path));
  const Id attr = checked(st, H5Acreate2(obj.get(), name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT),
                          H5Aclose, "cannot create " + where);
  if (!empty) check(st, H5Awrite(attr.get(), mem_type, data), "cannot write " + where);
}

template <class T>
void write_array_attribute(const Hdf5State& st, const std::string& object, const std::string& name,
                           hid_t file_type, hid_t mem_type, const std::vector<T>& values) {
  const Id space = simple_space(st, {values.size()});
  write_attribute(st, object, name, file_type, mem_type, space.get(), values.data(), values.empty());
}

void remove_quietly(const std::string& file) { std::remove(file.c_str()); }

// Forces the temporary's contents to disk before the rename makes it visible, so a
// system crash cannot leave an empty or partial file under the final name either.
// Writes all of `bytes` to `fd` and syncs it to the disk; "" or what failed, with errno's words.
std::string write_all(int fd, const std::vector<unsigned char>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "write after " + std::to_string(done) + " bytes: " + std::strerror(n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL) return std::string("fsync: ") + std::strerror(errno);
  return "";
}

// An uncommitted file given up: its descriptor closed, the temporary file removed.
void abandon(Hdf5State& st) {
  if (st.fd >= 0) ::close(st.fd);
  st.fd = -1;
  remove_quietly(st.temporary);
  st.pending.release();
}

}  // namespace

// ---- Hdf5Object ------------------------------------------------------------------

Hdf5Object::Hdf5Object(std::shared_ptr<detail::Hdf5State> state, std::string path)
    : state_(std::move(state)), path_(std::move(path)) {}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, const std::string& value) const {
  const Hdf5State& st = open_state(state_, path_);
  QuietErrors quiet;
  const Id type = checked(st, H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  check(st, H5Tset_size(type.get(), H5T_VARIABLE), "cannot create a string type");
  check(st, H5Tset_cset(type.get(), H5T_CSET_UTF8), "cannot create a string type");
  const Id space = checked(st, H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace");
  const char* text = value.c_str();  // variable-length strings are written as char* values
  write_attribute(st, path_, name, type.get(), type.get(), space.get(), &text, false);
  return *this;
}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, const char* value) const {
  return attribute(name, std::string(value == nullptr ? "" : value));
}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, double value) const {
  const Hdf5State& st = open_state(state_, path_);
  QuietErrors quiet;
  const Id space = checked(st, H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace");
  write_attribute(st, path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), &value, false);
  return *this;
}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, std::int64_t value) const {
  const Hdf5State& st = open_state(state_, path_);
  QuietErrors quiet;
  const Id space = checked(st, H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace");
  write_attribute(st, path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), &value, false);
  return *this;
}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, const std::vector<double>& values) const {
  const Hdf5State& st = open_state(state_, path_);
  QuietErrors quiet;
  write_array_attribute(st, path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values);
  return *this;
}

const Hdf5Object& Hdf5Object::attribute(const std::string& name, const std::vector<std::int64_t>& values) const {
  const Hdf5State& st = open_state(state_, path_);
  QuietErrors quiet;
  write_array_attribute(st, path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values);
  return *this;
}

// ---- Hdf5Group ---------------------------------------------------------------------

Hdf5Group Hdf5Group::group(const std::string& name) const {
  const Hdf5State& st = open_state(state_, child_path(path_, name));
  QuietErrors quiet;
  const Id parent = open_group(st, path_);
  check_new_name(st, parent.get(), path_, name, "ebla::Hdf5Group::group");
  const std::string path = child_path(path_, name);
  checked(st, H5Gcreate2(parent.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
          "cannot create group " + in_quotes(path));
  return Hdf5Group(state_, path);
}

namespace {

// Creates and writes the dataset; returns its path.
std::string make_dataset(const std::shared_ptr<Hdf5State>& state, const std::string& parent_path,
                         const std::string& name, hid_t file_type, hid_t mem_type,
                         std::initializer_list<hsize_t> dims, const void* data, bool empty) {
  const Hdf5State& st = *state;
  QuietErrors quiet;
  const Id parent = open_group(st, parent_path);
  check_new_name(st, parent.get(), parent_path, name, "ebla::Hdf5Group::dataset");
  const std::string path = child_path(parent_path, name);
  const Id space = simple_space(st, dims);
  const Id set = checked(st, H5Dcreate2(parent.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                        H5P_DEFAULT, H5P_DEFAULT),
                         H5Dclose, "cannot create dataset " + in_quotes(path));
  if (!empty)
    check(st, H5Dwrite(set.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
          "cannot write dataset " + in_quotes(path));
  return path;
}

}  // namespace

Hdf5Dataset Hdf5Group::dataset(const std::string& name, const std::vector<double>& values) const {
  open_state(state_, child_path(path_, name));
  return Hdf5Dataset(state_, make_dataset(state_, path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                                          {values.size()}, values.data(), values.empty()));
}

Hdf5Dataset Hdf5Group::dataset(const std::string& name, const std::vector<std::int64_t>& values) const {
  open_state(state_, child_path(path_, name));
  return Hdf5Dataset(state_, make_dataset(state_, path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64,
                                          {values.size()}, values.data(), values.empty()));
}

namespace {

void check_shape(const Hdf5State& st, const std::string& path, std::size_t rows, std::size_t cols, std::size_t size) {
  if (rows * cols != size)
    throw_invalid("ebla::Hdf5Group::dataset", in_quotes(path) + " in " + in_quotes(st.path) + ": shape " +
                                                  std::to_string(rows) + " x " + std::to_string(cols) +
                                                  " does not match " + std::to_string(size) + " values");
}

}  // namespace

Hdf5Dataset Hdf5Group::dataset(const std::string& name, const std::vector<double>& values,
                               std::size_t rows, std::size_t cols) const {
  const Hdf5State& st = open_state(state_, child_path(path_, name));
  check_shape(st, child_path(path_, name), rows, cols, values.size());
  return Hdf5Dataset(state_, make_dataset(state_, path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                                          {rows, cols}, values.data(), values.empty()));
}

Hdf5Dataset Hdf5Group::dataset(const std::string& name, const std::vector<std::uint8_t>& values,
                               std::size_t rows, std::size_t cols) const {
  const Hdf5State& st = open_state(state_, child_path(path_, name));
  check_shape(st, child_path(path_, name), rows, cols, values.size());
  return Hdf5Dataset(state_, make_dataset(state_, path_, name, H5T_STD_U8LE, H5T_NATIVE_UINT8,
                                          {rows, cols}, values.data(), values.empty()));
}

// ---- Hdf5Writer --------------------------------------------------------------------

namespace {

// Why `path` must not be replaced by the finished file, or "": it is a device, a FIFO, a
// socket or a symbolic link (the rename would replace the node itself), a file without
// write permission, or the same file as one of `inputs`.
std::string refusal(const std::string& path, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st)) return "";  // a new file
  if (fs::is_symlink(st)) return "it is a symbolic link (give the file it points to)";
  if (!fs::is_regular_file(st)) return "it exists and is not a regular file (a device, a FIFO or a socket)";
  if ((st.permissions() & fs::perms::owner_write) == fs::perms::none) return "it is read-only";
  for (const std::string& in : inputs) {
    std::error_code e2;
    if (!in.empty() && fs::equivalent(path, in, e2) && !e2) return "it is the input " + in_quotes(in);
  }
  return "";
}

}  // namespace

Hdf5Writer::Hdf5Writer(const std::string& path, const std::vector<std::string>& inputs)
    : state_(std::make_shared<Hdf5State>()) {
  const char* function = "ebla::Hdf5Writer";
  if (path.empty()) throw_invalid(function, "empty output path");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw_invalid(function, "cannot create " + in_quotes(path) + ": it is a directory");
  const std::string refused = refusal(path, inputs);
  if (!refused.empty()) throw_invalid(function, "will not replace " + in_quotes(path) + ": " + refused);
  state_->path = path;
  // the temporary file now, so that a path that cannot be written fails before the run; it
  // is recorded once it is ours (a signal in between leaves an empty file, never removes
  // a file of someone else's that had the name drawn)
  state_->fd = detail::create_temporary(path, state_->temporary);
  if (state_->fd < 0)
    throw_invalid(function, "cannot create " + in_quotes(path) + " (written as " + in_quotes(state_->temporary) +
                                " until committed): " + std::strerror(errno));
  state_->pending = detail::PendingTemporary(state_->temporary);
  // The file is built in memory (HDF5's core driver, no backing store) and written out by
  // commit(): a full disk or a failing device then fails a write of ours, with its errno,
  // instead of an HDF5 close that cannot complete (HDF5 1.10 then crashes at exit, closing
  // the file again).
  QuietErrors quiet;
  const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
  const bool in_memory = access >= 0 && H5Pset_fapl_core(access, std::size_t{1} << 20, 0) >= 0;
  state_->file = in_memory ? H5Fcreate(state_->temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access) : H5I_INVALID_HID;
  if (access >= 0) H5Pclose(access);
  if (state_->file < 0)
    throw_invalid(function, "cannot create " + in_quotes(path) + " in memory: " + hdf5_innermost_error());
}

Hdf5Writer::Hdf5Writer(Hdf5Writer&&) noexcept = default;

Hdf5Writer& Hdf5Writer::operator=(Hdf5Writer&& other) noexcept {
  if (this != &other) {
    Hdf5Writer discarded(std::move(*this));  // abandons (deletes) what this was writing
    state_ = std::move(other.state_);
  }
  return *this;
}

Hdf5Writer::~Hdf5Writer() {
  if (!state_ || state_->committed) return;
  if (state_->file >= 0) {
    QuietErrors quiet;
    H5Fclose(state_->file);  // in memory: nothing to fail
    state_->file = H5I_INVALID_HID;
  }
  abandon(*state_);
}

Hdf5Group Hdf5Writer::root() const {
  open_state(state_, "/");
  return Hdf5Group(state_, "/");
}

void Hdf5Writer::commit() {
  Hdf5State& st = open_state(state_, "/");
  std::vector<unsigned char> image;
  {
    QuietErrors quiet;
    const herr_t flushed = H5Fflush(st.file, H5F_SCOPE_LOCAL);
    const ssize_t size = flushed < 0 ? -1 : H5Fget_file_image(st.file, nullptr, 0);
    if (size >= 0) image.resize(static_cast<std::size_t>(size));
    const bool imaged = size >= 0 && H5Fget_file_image(st.file, image.data(), image.size()) == size;
    const std::string error = imaged ? "" : hdf5_innermost_error();
    H5Fclose(st.file);
    st.file = H5I_INVALID_HID;
    if (!imaged) {
      abandon(st);
      throw Hdf5Error("ebla::Hdf5Writer: " + in_quotes(st.path) + ": cannot finish the file (" + error +
                      "); nothing was written");
    }
  }
  // the image to the temporary file, then to the disk, then onto the target
  const std::string failed = write_all(st.fd, image);
  const int fd = st.fd;
  st.fd = -1;
  const bool closed = ::close(fd) == 0;
  if (!failed.empty() || !closed) {
    const std::string why = !failed.empty() ? failed : std::string("close: ") + std::strerror(errno);
    abandon(st);
    throw Hdf5Error("ebla::Hdf5Writer: cannot write " + in_quotes(st.temporary) + " (" +
                    std::to_string(image.size()) + " bytes for " + in_quotes(st.path) + "): " + why +
                    "; nothing was written");
  }
  if (std::rename(st.temporary.c_str(), st.path.c_str()) != 0) {
    const int err = errno;
    abandon(st);
    throw Hdf5Error("ebla::Hdf5Writer: cannot rename " + in_quotes(st.temporary) + " to " + in_quotes(st.path) +
                    ": " + std::strerror(err) + "; nothing was written");
  }
  st.pending.release();
  st.committed = true;
}

bool Hdf5Writer::committed() const { return state_ && state_->committed; }

const std::string& Hdf5Writer::path() const {
  static const std::string none;
  return state_ ? state_->path : none;
}

const std::string& Hdf5Writer::temporary_path() const {
  static const std::string none;
  return state_ ? state_->temporary : none;
}

namespace detail {

struct Hdf5QuietErrors::Saved {
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
};

Hdf5QuietErrors::Hdf5QuietErrors() : saved_(std::make_unique<Saved>()) {
  H5Eget_auto2(H5E_DEFAULT, &saved_->func, &saved_->data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Hdf5QuietErrors::~Hdf5QuietErrors() { H5Eset_auto2(H5E_DEFAULT, saved_->func, saved_->data); }

std::string hdf5_innermost_error() {
  std::string text;
  auto take_first = [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
    if (n == 0 && e->desc != nullptr) *static_cast<std::string*>(out) = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_first, &text);
  return text.empty() ? "unknown HDF5 error" : text;
}

}  // namespace detail

}  // namespace ebla

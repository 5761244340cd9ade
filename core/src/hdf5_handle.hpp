// An HDF5 identifier that closes itself: the one handle type of ebla's HDF5 sources (the
// result-file writer of core and the readers of solvers). Internal: included by .cpp files
// only, so that no HDF5 type appears in an installed header.
#pragma once

#include <hdf5.h>

namespace ebla::detail {

/// An HDF5 identifier closed by its own close function (H5Fclose, H5Dclose, ...) on scope
/// exit; a negative identifier (a failed call) is not closed.
class Hdf5Handle {
public:
  using Closer = herr_t (*)(hid_t);
  Hdf5Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Handle(Hdf5Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(Hdf5Handle&&) = delete;
  hid_t get() const { return id_; }

private:
  hid_t id_;
  Closer close_;
};

}  // namespace ebla::detail

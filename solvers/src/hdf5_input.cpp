// HDF5 input (see io.hpp): a CSR matrix and vectors in the documented layout, read with
// the HDF5 C API; every message names the file and the dataset.
#include <ebla/solvers/io.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/hdf5.hpp>

#include "hdf5_handle.hpp"

#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace ebla {

namespace {

static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "row offsets are read as 64-bit integers");
static_assert(sizeof(int) == sizeof(std::int32_t), "column indices are read as 32-bit integers");

using RowMap = CsrMatrix::row_map_type::non_const_type;
using Entries = CsrMatrix::index_type::non_const_type;
using Values = CsrMatrix::values_type::non_const_type;

using QuietErrors = detail::Hdf5QuietErrors;  // (core/hdf5.hpp)
using detail::hdf5_innermost_error;

using Id = detail::Hdf5Handle;  // (core/src/hdf5_handle.hpp)

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The file being read and the function reading it, named in every message.
struct Source {
  std::string path;
  const char* function;

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw_invalid(function, path + ": " + object + ": " + what);
  }
  [[noreturn]] void fail_hdf5(const std::string& object, const std::string& what) const {
    const std::string hdf5 = hdf5_innermost_error();
    fail(object, what + " (" + hdf5 + ")");
  }
};

Id open_file(const Source& src) {
  std::error_code ec;
  if (!std::filesystem::exists(src.path, ec)) throw_invalid(src.function, src.path + ": no such file");
  // HDF5 seeks in its file: a directory, a FIFO or a device is refused before H5Fopen (which
  // would wait forever on a FIFO that no process writes to)
  if (!std::filesystem::is_regular_file(src.path, ec))
    throw_invalid(src.function, src.path + ": not a regular file (an HDF5 file must be one)");
  const hid_t f = H5Fopen(src.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw_invalid(src.function, src.path + ": cannot open as an HDF5 file (" + hdf5_innermost_error() + ")");
  return Id(f, H5Fclose);
}

std::string absolute(const std::string& name) { return !name.empty() && name[0] == '/' ? name : "/" + name; }

// Whether every link on the way to `path` exists (H5Lexists checks only the last one).
bool exists(hid_t file, const std::string& path) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (prefix.size() > 1 && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
  }
}

std::string type_name(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_FLOAT: return "float" + bits;
    case H5T_STRING: return "string";
    default: return "a non-numeric type";
  }
}

// Accepted element types of a dataset.
enum class Kind { float64, int32, int64, uint64 };

bool is(hid_t type, Kind k) {
  const std::size_t size = H5Tget_size(type);
  switch (k) {
    case Kind::float64: return H5Tget_class(type) == H5T_FLOAT && size == 8;
    case Kind::int32: return H5Tget_class(type) == H5T_INTEGER && size == 4 && H5Tget_sign(type) == H5T_SGN_2;
    case Kind::int64: return H5Tget_class(type) == H5T_INTEGER && size == 8 && H5Tget_sign(type) == H5T_SGN_2;
    case Kind::uint64: return H5Tget_class(type) == H5T_INTEGER && size == 8 && H5Tget_sign(type) == H5T_SGN_NONE;
  }
  return false;
}

// An open one-dimensional dataset with one of the accepted element types.
struct Dataset {
  Id id;
  std::string name;
  std::size_t size;
  Kind kind;
};

Dataset open_dataset(const Source& src, hid_t file, const std::string& name, std::initializer_list<Kind> kinds,
                     const char* expected) {
  if (!exists(file, name)) src.fail(name, "missing dataset");
  Id set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (set.get() < 0) src.fail_hdf5(name, "cannot open as a dataset");
  const Id space(H5Dget_space(set.get()), H5Sclose);
  const Id type(H5Dget_type(set.get()), H5Tclose);
  if (space.get() < 0 || type.get() < 0) src.fail_hdf5(name, "cannot read the dataspace or type");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank != 1) src.fail(name, "rank " + std::to_string(rank) + ", expected 1");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space.get(), &size, nullptr);
  for (Kind k : kinds)
    if (is(type.get(), k)) return Dataset{std::move(set), name, static_cast<std::size_t>(size), k};
  src.fail(name, "type " + type_name(type.get()) + ", expected " + expected);
}

// The sizes a file declares, before they are allocated: a small file may declare any.
void check_fits(const Source& src, const std::string& where, const std::string& what, double bytes) {
  const auto available = static_cast<double>(detail::available_memory());
  if (bytes > available)
    src.fail(where, what + " needs about " + detail::memory_text(bytes) + " of memory, and " +
                        detail::memory_text(available) + " are available");
}

hid_t memory_type(Kind k) {
  switch (k) {
    case Kind::float64: return H5T_NATIVE_DOUBLE;
    case Kind::int32: return H5T_NATIVE_INT32;
    case Kind::int64: return H5T_NATIVE_INT64;
    case Kind::uint64: return H5T_NATIVE_UINT64;
  }
  return H5T_NATIVE_DOUBLE;
}

// Reads the whole dataset into `out` (size elements of the kind's memory type).
void read(const Source& src, const Dataset& d, void* out) {
  if (d.size == 0) return;  // HDF5 rejects a null buffer, and there is nothing to read
  if (H5Dread(d.id.get(), memory_type(d.kind), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    src.fail_hdf5(d.name, "cannot read");
}

void check_finite(const Source& src, const std::string& name, const double* v, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k)
    if (!std::isfinite(v[k])) src.fail(name, "element " + std::to_string(k) + " = " + str(v[k]) + " is not finite");
}

constexpr std::uint64_t int_max = static_cast<std::uint64_t>(std::numeric_limits<int>::max());

// The optional attribute "ncols" of the group, or `rows`.
int read_ncols(const Source& src, hid_t file, const std::string& group, int rows) {
  const std::string where = group + " attribute 'ncols'";
  const htri_t has = H5Aexists_by_name(file, group.c_str(), "ncols", H5P_DEFAULT);
  if (has < 0) src.fail_hdf5(group, "cannot look up attribute 'ncols'");
  if (has == 0) return rows;
  const Id attr(H5Aopen_by_name(file, group.c_str(), "ncols", H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (attr.get() < 0) src.fail_hdf5(where, "cannot open");
  const Id type(H5Aget_type(attr.get()), H5Tclose);
  const Id space(H5Aget_space(attr.get()), H5Sclose);
  if (!is(type.get(), Kind::int64)) src.fail(where, "type " + type_name(type.get()) + ", expected int64");
  if (H5Sget_simple_extent_npoints(space.get()) != 1) src.fail(where, "expected a single value");
  std::int64_t ncols = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, &ncols) < 0) src.fail_hdf5(where, "cannot read");
  if (ncols < 0 || static_cast<std::uint64_t>(ncols) > int_max)
    src.fail(where, "ncols = " + std::to_string(ncols) + " is outside [0, INT_MAX]");
  return static_cast<int>(ncols);
}

// Offsets: row_ptr[0] = 0, nondecreasing, row_ptr[n] = nnz; int64 offsets are not negative.
void check_offsets(const Source& src, const Dataset& d, const RowMap::HostMirror& ptr, std::size_t nnz) {
  const std::size_t n = d.size - 1;
  for (std::size_t i = 0; i <= n; ++i) {
    if (d.kind == Kind::int64 && ptr(i) > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))
      src.fail(d.name, "element " + std::to_string(i) + " = " + std::to_string(static_cast<std::int64_t>(ptr(i))) +
                           " is negative");
    if (i == 0 && ptr(0) != 0) src.fail(d.name, "element 0 = " + std::to_string(ptr(0)) + ", expected 0");
    if (i > 0 && ptr(i) < ptr(i - 1))
      src.fail(d.name, "element " + std::to_string(i) + " = " + std::to_string(ptr(i)) + " < element " +
                           std::to_string(i - 1) + " = " + std::to_string(ptr(i - 1)) +
                           ": offsets must be nondecreasing");
  }
  if (ptr(n) != nnz)
    src.fail(d.name, "the last offset is " + std::to_string(ptr(n)) + " but there are " + std::to_string(nnz) +
                         " column indices");
}

template <class T>
void check_columns(const Source& src, const std::string& name, const T* col, std::size_t nnz, int ncols) {
  for (std::size_t k = 0; k < nnz; ++k)
    if (col[k] < 0 || col[k] >= ncols)
      src.fail(name, "element " + std::to_string(k) + " = " + std::to_string(col[k]) + " is outside [0, " +
                         std::to_string(ncols) + ")");
}

Entries read_columns(const Source& src, const Dataset& d, int ncols) {
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla::hdf5 entries"), d.size);
  auto col = Kokkos::create_mirror_view(entries);
  if (d.kind == Kind::int32) {
    read(src, d, col.data());
    check_columns(src, d.name, col.data(), d.size, ncols);
  } else {
    std::vector<std::int64_t> wide(d.size);
    read(src, d, wide.data());
    check_columns(src, d.name, wide.data(), d.size, ncols);
    for (std::size_t k = 0; k < d.size; ++k) col(k) = static_cast<int>(wide[k]);
  }
  Kokkos::deep_copy(entries, col);
  return entries;
}

template <class View>
View read_values(const Source& src, const Dataset& d) {
  View values(Kokkos::ViewAllocateWithoutInitializing("ebla::hdf5 " + d.name), d.size);
  auto h = Kokkos::create_mirror_view(values);
  read(src, d, h.data());
  check_finite(src, d.name, h.data(), d.size);
  Kokkos::deep_copy(values, h);
  return values;
}

}  // namespace

CsrMatrix read_hdf5_matrix(const std::string& path, const std::string& group) {
  const Source src{path, "ebla::read_hdf5_matrix"};
  QuietErrors quiet;
  const Id file = open_file(src);
  const std::string g = absolute(group);
  if (!exists(file.get(), g)) src.fail(g, "missing group");
  const Dataset rp = open_dataset(src, file.get(), g + "/row_ptr", {Kind::uint64, Kind::int64}, "uint64 or int64");
  const Dataset ci = open_dataset(src, file.get(), g + "/col_idx", {Kind::int32, Kind::int64}, "int32 or int64");
  const Dataset va = open_dataset(src, file.get(), g + "/values", {Kind::float64}, "float64");
  if (rp.size == 0) src.fail(rp.name, "empty; expected n + 1 >= 1 offsets");
  if (rp.size - 1 > int_max) src.fail(rp.name, std::to_string(rp.size - 1) + " rows exceed what an int can index");
  if (va.size != ci.size)
    src.fail(va.name, std::to_string(va.size) + " elements but " + ci.name + " has " + std::to_string(ci.size));
  const int rows = static_cast<int>(rp.size - 1);
  const int ncols = read_ncols(src, file.get(), g, rows);
  // the CSR arrays and the widest buffer of the column indices, before any is allocated
  check_fits(src, g, "a matrix of " + std::to_string(rows) + " rows and " + std::to_string(va.size) + " entries",
             8.0 * static_cast<double>(rp.size) + 20.0 * static_cast<double>(ci.size));

  RowMap row_map(Kokkos::ViewAllocateWithoutInitializing("ebla::hdf5 row_map"), rp.size);
  auto ptr = Kokkos::create_mirror_view(row_map);
  // int64 offsets are read into the size_t buffer as int64 and checked for sign there
  read(src, rp, ptr.data());
  check_offsets(src, rp, ptr, ci.size);
  Kokkos::deep_copy(row_map, ptr);
  const Entries entries = read_columns(src, ci, ncols);
  const auto values = read_values<Values>(src, va);
  return CsrMatrix("ebla::hdf5", rows, ncols, ci.size, values, row_map, entries);
}

Vector read_hdf5_vector(const std::string& path, const std::string& dataset, bool optional) {
  const Source src{path, "ebla::read_hdf5_vector"};
  QuietErrors quiet;
  const Id file = open_file(src);
  const std::string name = absolute(dataset);
  if (optional && !exists(file.get(), name)) return Vector();
  const Dataset d = open_dataset(src, file.get(), name, {Kind::float64}, "float64");
  check_fits(src, name, "a vector of " + std::to_string(d.size) + " rows", 8.0 * static_cast<double>(d.size));
  return read_values<Vector>(src, d);
}

}  // namespace ebla

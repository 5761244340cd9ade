// What the parts of the Python module share: NumPy arrays as Kokkos views of host memory,
// std::vectors as NumPy arrays, and the registration functions of each part.
#pragma once

#include <ebla/core/error.hpp>

#include <Kokkos_Core.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ebla::python {

namespace py = pybind11;

// The views below are read and written by kernels on the default execution space; the module
// wraps NumPy's memory (host memory) in them, so that space must reach the host.
static_assert(Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace, Kokkos::HostSpace>::accessible,
              "the Python module needs a default execution space that reads host memory");

/// A C-contiguous float64 NumPy array (the Python layer, ebla/__init__.py, makes every input
/// one, copying only where the caller's array is not already).
using DoubleArray = py::array_t<double, py::array::c_style>;
using FloatArray = py::array_t<float, py::array::c_style>;

/// The array's memory as an unmanaged rank-1 view (no copy).
using HostInput = Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
inline HostInput as_view(const DoubleArray& a) { return HostInput(a.data(), static_cast<std::size_t>(a.size())); }

/// A NumPy copy of a vector.
template <class T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

/// A NumPy copy of a rank-1 Kokkos view of host memory.
template <class View>
py::array_t<double> vector_to_numpy(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  py::array_t<double> a(static_cast<py::ssize_t>(h.extent(0)));
  for (std::size_t i = 0; i < h.extent(0); ++i) a.mutable_data()[i] = h(i);
  return a;
}

/// Throws InvalidArgument "function: what" unless `ok` (checks before any C++ kernel runs).
inline void require(bool ok, const char* function, const std::string& what) {
  if (!ok) throw_invalid(function, what);
}

/// f(), an InvalidArgument it throws prefixed by the Python argument it is about:
/// "function: argument: <message>" (an unknown name, say).
template <class F>
auto for_argument(const char* function, const char* argument, F&& f) {
  return under_option(std::string(function) + ": " + argument, std::forward<F>(f));
}

void register_formats(py::module_& m);
void register_qdot(py::module_& m);
/// Releases the Kokkos Views of every stored vector Python still holds (before Kokkos::finalize).
void release_stored_vectors();
void register_gemm(py::module_& m);
void register_solvers(py::module_& m);

}  // namespace ebla::python

// The extension module ebla._ebla: Kokkos's lifetime, ebla's exceptions as ValueError, and
// the parts (formats.cpp, qdot.cpp, gemm.cpp, solvers.cpp). The Python layer
// (python/ebla/__init__.py) checks and converts the arguments and wraps the results.
#include "common.hpp"

#include <ebla/core/memory.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace {

namespace py = pybind11;

// Whether this module initialised Kokkos (then it finalises it at exit), and whether it did so.
bool kokkos_owned = false;

// Kokkos::finalize at interpreter exit (atexit, which runs before modules are torn down).
// The results handed to Python are NumPy arrays that own their memory, never Kokkos views,
// except the stored vectors of ebla.qdot_store, whose views are released first; so no Kokkos
// allocation outlives this call.
void finalize_kokkos() {
  if (kokkos_owned && Kokkos::is_initialized()) {
    ebla::python::release_stored_vectors();
    Kokkos::finalize();
  }
  kokkos_owned = false;
}

}  // namespace

PYBIND11_MODULE(_ebla, m) {
  m.doc() = "ebla's C++ library (error-bounded linear algebra) for the Python package ebla";

  // ebla::InvalidArgument names the function and the value: it becomes a ValueError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ebla::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  if (!Kokkos::is_initialized()) {
    Kokkos::initialize();
    kokkos_owned = true;
    py::module_::import("atexit").attr("register")(py::cpp_function(&finalize_kokkos));
  }
  m.def("kokkos_owned", [] { return kokkos_owned; },
        "Whether ebla initialised Kokkos on import (and finalises it at exit).");
  m.def("execution_space", [] { return std::string(Kokkos::DefaultExecutionSpace::name()); },
        "The name of Kokkos's default execution space.");
  m.def("concurrency", [] { return static_cast<int>(Kokkos::DefaultExecutionSpace().concurrency()); },
        "The number of threads of Kokkos's default execution space.");

  m.def("check_memory", [](const std::string& function, const std::string& what, double bytes) {
    if (!(bytes <= static_cast<double>(PTRDIFF_MAX)))
      ebla::throw_invalid(function, what + " is more than this machine's memory can hold");
    ebla::detail::check_memory(function, what, bytes);
  }, py::arg("function"), py::arg("what"), py::arg("bytes"),
        "Raises ValueError 'function: what needs about X of memory, and Y are available' if `bytes` "
        "(an estimate) is more than the process may allocate (ebla::detail::check_memory).");

  ebla::python::register_formats(m);
  ebla::python::register_qdot(m);
  ebla::python::register_gemm(m);
  ebla::python::register_solvers(m);
}

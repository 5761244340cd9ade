// Formats and rounding: the catalogue, one format's parameters, and round_to over arrays.
#include "common.hpp"

#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/quantize.hpp>

#include <cmath>

namespace ebla::python {

namespace {

py::dict format_dict(const std::string& name, const Format& f) {
  py::dict d;
  d["name"] = name;
  d["t"] = f.t;
  d["emin"] = f.emin;
  d["emax"] = f.emax;
  d["subnormals"] = f.subnormals;
  d["specials"] = std::string(to_string(f.specials));
  d["overflow"] = std::string(to_string(f.overflow));
  d["u"] = f.u();
  d["fmin"] = f.fmin();
  d["fmax"] = f.fmax();
  d["gmin"] = f.gmin();
  d["smallest_positive"] = f.smallest_positive();
  d["bits"] = encoding_bits(f);
  return d;
}

// y = round_to(x, f, mode) elementwise by ebla::quantize; stochastic rounding draws element
// i's number from the counter-based generator of seed `seed` (kernels/quantize.hpp).
DoubleArray round_seeded(const DoubleArray& x, const std::string& format, const std::string& mode,
                         std::uint64_t seed) {
  const Format f = for_argument("ebla.round", "format", [&] { return format_by_name(format); });
  const Rounding r = for_argument("ebla.round", "mode", [&] { return rounding_by_name(mode); });
  DoubleArray y(x.size());
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out(
      y.mutable_data(), static_cast<std::size_t>(y.size()));
  const auto in = as_view(x);
  {
    py::gil_scoped_release release;
    quantize(in, out, f, r, seed);
  }
  return y;
}

// y_i = round_to(x_i, f, mode, random_i): stochastic rounding with the caller's numbers.
DoubleArray round_with(const DoubleArray& x, const std::string& format, const std::string& mode,
                       const DoubleArray& random) {
  const char* function = "ebla.round";
  const Format f = for_argument(function, "format", [&] { return format_by_name(format); });
  const Rounding r = for_argument(function, "mode", [&] { return rounding_by_name(mode); });
  const std::size_t n = static_cast<std::size_t>(x.size());
  require(static_cast<std::size_t>(random.size()) == n, function,
          "the random numbers are " + std::to_string(random.size()) + ", not one per element (" +
              std::to_string(n) + ")");
  const double* u = random.data();
  for (std::size_t i = 0; i < n; ++i)
    if (!(u[i] >= 0 && u[i] < 1)) throw_invalid(function, "random number " + std::to_string(u[i]) + " is not in [0, 1)");
  DoubleArray y(x.size());
  const double* in = x.data();
  double* out = y.mutable_data();
  {
    py::gil_scoped_release release;
    const RoundingConstants c = rounding_constants(f);
    dispatch_rounding(r, [&](auto m) {
      for (std::size_t i = 0; i < n; ++i) out[i] = round_to<decltype(m)::value>(in[i], c, u[i]);
    });
  }
  return y;
}

}  // namespace

void register_formats(py::module_& m) {
  m.def("format_names", [] {
    std::vector<std::string> names;
    for (const auto& nf : format_catalogue()) names.push_back(nf.name);
    return names;
  }, "The names of the format catalogue, widest first (seed 001, Table 2.1).");
  m.def("format_info", [](const std::string& name) {
    const Format f = for_argument("ebla.format_info", "name", [&] { return format_by_name(name); });
    return format_dict(format_name(f), f);
  }, py::arg("name"), "The parameters of a format given by name or custom spec, as a dict.");
  m.def("rounding_name", [](const std::string& mode) {
    return std::string(to_string(for_argument("ebla.round", "mode", [&] { return rounding_by_name(mode); })));
  },
        py::arg("mode"), "The canonical name of a rounding mode.");
  m.def("round_seeded", &round_seeded, py::arg("x"), py::arg("format"), py::arg("mode"), py::arg("seed"),
        "round_to over a contiguous float64 array (ebla::quantize); stochastic numbers from `seed`.");
  m.def("round_with", &round_with, py::arg("x"), py::arg("format"), py::arg("mode"), py::arg("random"),
        "round_to over a contiguous float64 array with one number in [0, 1) per element.");
}

}  // namespace ebla::python

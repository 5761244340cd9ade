// Mixed-precision GEMM (kernels/gemm.hpp): one configuration, or the cheapest one that
// gemm_select certifies for a tolerance.
#include "common.hpp"

#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_profile.hpp>
#include <ebla/core/bits.hpp>
#include <ebla/core/format.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <cstdint>
#include <optional>

namespace ebla::python {

namespace {

// A NumPy copy of a host matrix, or None for an empty one (a bound not computed).
py::object matrix_to_numpy(const HostMatrix& M) {
  if (M.extent(0) * M.extent(1) == 0 && M.data() == nullptr) return py::none();
  py::array_t<double> a({static_cast<py::ssize_t>(M.extent(0)), static_cast<py::ssize_t>(M.extent(1))});
  double* out = a.mutable_data();
  for (std::size_t i = 0; i < M.extent(0); ++i)
    for (std::size_t j = 0; j < M.extent(1); ++j) out[i * M.extent(1) + j] = M(i, j);
  return std::move(a);
}

ConstHostMatrix as_matrix(const DoubleArray& a, const char* name) {
  require(a.ndim() == 2, "ebla.gemm", std::string(name) + " has " + std::to_string(a.ndim()) + " dimensions, not 2");
  return ConstHostMatrix(a.data(), static_cast<std::size_t>(a.shape(0)), static_cast<std::size_t>(a.shape(1)));
}

py::dict config_dict(const GemmConfig& c) {
  py::dict d;
  d["input"] = format_name(c.input);
  d["words"] = c.words;
  d["scaling"] = c.scaling;
  d["subnormals"] = c.subnormals;
  d["engine"] = std::string(to_string(c.engine));
  d["description"] = describe(c);
  return d;
}

py::dict result_dict(const GemmResult& r) {
  py::dict d;
  d["C"] = matrix_to_numpy(r.C);
  d["normwise_bound"] = r.normwise_bound;
  d["norm_a"] = r.norm_a;
  d["norm_b"] = r.norm_b;
  d["bound"] = matrix_to_numpy(r.bound);
  d["probable_bound"] = matrix_to_numpy(r.probable_bound);
  d["paper_normwise"] = r.paper.normwise;
  d["theta"] = r.theta;
  d["config"] = config_dict(r.config);
  d["exact"] = matrix_to_numpy(r.exact);
  d["observed_normwise"] = r.observed_normwise;
  d["observed_max_ratio"] = r.observed_max_ratio;
  d["seconds"] = r.split_seconds + r.product_seconds + r.bound_seconds;
  return d;
}

// Where a selection's throughputs came from (gemm_profile.hpp: GemmCosts), as a dict.
py::dict costs_dict(const GemmCosts& c) {
  py::dict d;
  d["profile"] = c.path.empty() ? py::object(py::none()) : py::object(py::str(c.path));
  d["read"] = c.read;
  d["age_seconds"] = c.read ? py::object(py::int_(c.age)) : py::object(py::none());
  d["measured"] = c.measured;
  d["noisy"] = c.noisy;
  d["stored"] = c.stored;
  d["warnings"] = c.warnings;
  return d;
}

py::dict gemm_call(const DoubleArray& A, const DoubleArray& B, std::optional<double> tolerance,
                   const std::string& input, int words, const std::string& engine, const std::string& unit,
                   bool scaling, bool subnormals, double failure, bool componentwise, bool reference,
                   const std::string& profile) {
  const ConstHostMatrix a = as_matrix(A, "A"), b = as_matrix(B, "B");
  // the names are checked even where a tolerance chooses the configuration instead
  const char* function = "ebla.gemm";
  GemmConfig c;
  c.input = for_argument(function, "input", [&] { return format_by_name(input); });
  c.words = words;
  c.engine = for_argument(function, "engine", [&] { return gemm_engine_by_name(engine); });
  c.unit = for_argument(function, "unit", [&] { return matrix_unit_by_name(unit); });
  c.scaling = scaling;
  c.subnormals = subnormals;
  c.failure = failure;
  c.componentwise = componentwise;
  c.reference = reference;
  py::dict d;
  if (tolerance) {
    GemmOptions o;
    o.tolerance = *tolerance;
    o.scaling = scaling;
    o.subnormals = subnormals;
    o.failure = failure;
    o.componentwise = componentwise;
    GemmPlan plan;
    GemmResult r;
    GemmCosts costs;
    {
      py::gil_scoped_release release;
      // the throughputs: the profile's where it serves, else measured now (and stored there)
      costs = gemm_costs(profile);
      o.cost = costs.model;
      plan = gemm_select(a, b, o);
      plan.config.componentwise = componentwise;
      plan.config.reference = reference;
      r = gemm(a, b, plan);
    }
    d = result_dict(r);
    d["meets_tolerance"] = plan.meets_tolerance;
    d["relative_bound"] = plan.relative_bound;
    d["tolerance"] = plan.tolerance;
    py::list candidates;
    for (const GemmCandidateReport& c : plan.candidates) {
      py::dict cd = config_dict(c.config);
      cd["relative_bound"] = c.relative_bound;
      cd["seconds"] = c.seconds;
      candidates.append(cd);
    }
    d["candidates"] = candidates;
    d["throughputs"] = costs_dict(costs);
    return d;
  }
  GemmResult r;
  {
    py::gil_scoped_release release;
    r = gemm(a, b, c);
  }
  d = result_dict(r);
  d["meets_tolerance"] = py::none();
  d["relative_bound"] = r.normwise_bound / (r.norm_a * r.norm_b);
  d["tolerance"] = py::none();
  d["candidates"] = py::list();
  d["throughputs"] = py::none();
  return d;
}

// D[r] = c_r + sum_i A_ri B_ri through the unit for every row r (ebla::unit_dot_rows).
py::array_t<double> mma_call(const std::string& unit_name, const DoubleArray& A, const DoubleArray& B,
                             const DoubleArray& C) {
  const char* function = "ebla.mma";
  const MatrixUnit unit = for_argument(function, "unit", [&] { return matrix_unit_by_name(unit_name); });
  require(A.ndim() == 2 && B.ndim() == 2 && C.ndim() == 1, function, "A and B must be 2-D, C 1-D");
  const auto rows = static_cast<std::size_t>(A.shape(0)), k = static_cast<std::size_t>(A.shape(1));
  require(static_cast<std::size_t>(B.shape(0)) == rows && static_cast<std::size_t>(B.shape(1)) == k &&
              static_cast<std::size_t>(C.shape(0)) == rows,
          function, "A is " + std::to_string(rows) + " x " + std::to_string(k) + ", B " +
                        std::to_string(B.shape(0)) + " x " + std::to_string(B.shape(1)) + ", C has " +
                        std::to_string(C.shape(0)) + " elements; need rows x k, rows x k and rows");
  py::array_t<double> D(static_cast<py::ssize_t>(rows));
  double* d = D.mutable_data();
  {
    py::gil_scoped_release release;
    unit_dot_rows(unit, A.data(), B.data(), C.data(), d, rows, k);
  }
  return D;
}

// The bit patterns of values of a unit's accumulation format: ebla::encode for formats of at
// most 16 bits, the IEEE encodings of binary32 and binary64; and the width of the patterns.
std::pair<py::array_t<std::uint64_t>, int> result_bits(const std::string& unit_name, const DoubleArray& D) {
  const char* function = "ebla.mma";
  const Format f = for_argument(function, "unit", [&] { return matrix_unit_by_name(unit_name); }).accumulation;
  const int width = encoding_bits(f);
  require(f == formats::binary32() || f == formats::binary64() || (width > 0 && width <= 16), function,
          "the accumulation format " + format_name(f) + " has no bit patterns here");
  py::array_t<std::uint64_t> bits(D.size());
  std::uint64_t* out = bits.mutable_data();
  const double* d = D.data();
  for (py::ssize_t i = 0; i < D.size(); ++i)
    out[i] = f == formats::binary64()   ? bit_cast<std::uint64_t>(d[i])
             : f == formats::binary32() ? bit_cast<std::uint32_t>(static_cast<float>(d[i]))
                                        : encode(d[i], f);
  return {bits, f == formats::binary64() ? 64 : f == formats::binary32() ? 32 : width};
}

}  // namespace

void register_gemm(py::module_& m) {
  m.def("mma", &mma_call, py::arg("unit"), py::arg("A"), py::arg("B"), py::arg("C"),
        "ebla::unit_dot_rows: c_r + A_r . B_r through a unit of the catalogue for every row r.");
  m.def("mma_bits", &result_bits, py::arg("unit"), py::arg("D"),
        "The bit patterns of results of a unit (values of its accumulation format) and their width.");
  m.def("gemm", &gemm_call, py::arg("A"), py::arg("B"), py::arg("tolerance"), py::arg("input"), py::arg("words"),
        py::arg("engine"), py::arg("unit"), py::arg("scaling"), py::arg("subnormals"), py::arg("failure"),
        py::arg("componentwise"), py::arg("reference"), py::arg("profile"),
        "ebla::gemm on C-contiguous float64 matrices (ebla::gemm_select first if a tolerance is given, with "
        "the throughputs of the profile file `profile`, or measured now where it is \"\").");
  m.def("default_gemm_profile_path", &default_gemm_profile_path,
        "Where ebla keeps its GEMM throughput profile ($EBLA_GEMM_PROFILE, else $XDG_CACHE_HOME/ebla/gemm-profile, "
        "else ~/.cache/ebla/gemm-profile; \"\" if none is set).");
  m.def("exact_gemm", [](const DoubleArray& A, const DoubleArray& B) {
    const ConstHostMatrix a = as_matrix(A, "A"), b = as_matrix(B, "B");
    require(a.extent(1) == b.extent(0), "ebla.exact_gemm",
            "A has " + std::to_string(a.extent(1)) + " columns but B has " + std::to_string(b.extent(0)) + " rows");
    HostMatrix C;
    {
      py::gil_scoped_release release;
      C = exact_gemm(a, b);
    }
    return matrix_to_numpy(C);
  }, py::arg("A"), py::arg("B"), "A B with every entry correctly rounded to float64.");
  m.def("matrix_unit_names", [] {
    std::vector<std::string> names;
    for (const auto& entry : matrix_unit_catalogue()) names.push_back(entry.name);
    return names;
  }, "The matrix-multiply units of the catalogue (kernels/matrix_unit.hpp).");
}

}  // namespace ebla::python

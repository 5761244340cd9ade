// qdot: the one-call form and its two phases (select: a plan; compute: a result under it),
// on float64 or float32 vectors.
#include "common.hpp"

#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_stored.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

namespace ebla::python {

namespace {

QdotOptions make_options(double tolerance, const std::string& policy, const std::string& ladder, bool reuse_plan,
                         int plan_margin, bool perforate_all, const char* function) {
  QdotOptions o;
  o.tolerance = tolerance;
  o.policy = for_argument(function, "policy", [&] { return qdot_policy_by_name(policy); });
  if (!ladder.empty()) o.ladder = for_argument(function, "ladder", [&] { return qdot_ladder_by_names(ladder); });
  o.reuse_plan = reuse_plan;
  o.plan_margin = plan_margin;
  o.perforate_all = perforate_all;
  return o;
}

template <class T>
void check_lengths(const py::array_t<T, py::array::c_style>& x, const py::array_t<T, py::array::c_style>& y,
                   const char* function) {
  require(x.size() == y.size(), function,
          "x has " + std::to_string(x.size()) + " elements but y has " + std::to_string(y.size()));
}

// The ladder's rung names, for the precision mix of a result.
std::vector<std::string> rung_names(const std::vector<QdotLevel>& ladder) {
  std::vector<std::string> names;
  for (const QdotLevel& l : ladder) names.push_back(l.perforate ? "perforate" : format_name(l.format));
  return names;
}

py::dict result_dict(const QdotResult& r, const std::vector<QdotLevel>& ladder) {
  py::dict d;
  d["value"] = r.value;
  d["bound"] = r.bound;
  d["quantization_bound"] = r.quantization_bound;
  d["accumulation_bound"] = r.accumulation_bound;
  d["abs_sum"] = r.abs_sum;
  d["levels"] = rung_names(ladder);
  d["count_per_level"] = to_numpy(std::vector<std::int64_t>(r.stats.count_per_level.begin(),
                                                            r.stats.count_per_level.end()));
  d["zeros"] = r.stats.zeros;
  d["outside_plan"] = r.stats.outside_plan;
  d["bins"] = r.stats.bins;
  d["e_min"] = r.stats.e_min;
  d["e_max"] = r.stats.e_max;
  d["nonfinite"] = r.stats.nonfinite;
  d["early_termination"] = r.stats.early_termination;
  d["kept_top_bin"] = r.stats.kept_top_bin;
  d["passes"] = r.stats.passes;
  d["select_seconds"] = r.stats.select_seconds;
  d["compute_seconds"] = r.stats.compute_seconds;
  return d;
}

template <class T>
py::dict qdot_call(const py::array_t<T, py::array::c_style>& x, const py::array_t<T, py::array::c_style>& y,
                   double tolerance, const std::string& policy, const std::string& ladder, bool reuse_plan,
                   int plan_margin, bool perforate_all) {
  check_lengths(x, y, "ebla.qdot");
  const QdotOptions o = make_options(tolerance, policy, ladder, reuse_plan, plan_margin, perforate_all, "ebla.qdot");
  QdotResult r;
  {
    py::gil_scoped_release release;
    r = qdot(x.data(), y.data(), static_cast<std::size_t>(x.size()), o);
  }
  // the ladder as resolved (the default depends on the input's precision)
  const std::vector<QdotLevel> resolved =
      o.ladder.empty() ? qdot_select(x.data(), y.data(), 0, o).ladder : o.ladder;
  return result_dict(r, resolved);
}

template <class T>
QdotPlan select_call(const py::array_t<T, py::array::c_style>& x, const py::array_t<T, py::array::c_style>& y,
                     double tolerance, const std::string& policy, const std::string& ladder, bool perforate_all) {
  check_lengths(x, y, "ebla.qdot_select");
  const QdotOptions o =
      make_options(tolerance, policy, ladder, false, QdotOptions::automatic_margin, perforate_all, "ebla.qdot_select");
  py::gil_scoped_release release;
  return qdot_select(x.data(), y.data(), static_cast<std::size_t>(x.size()), o);
}

template <class T>
py::dict compute_call(const QdotPlan& plan, const py::array_t<T, py::array::c_style>& x,
                      const py::array_t<T, py::array::c_style>& y) {
  check_lengths(x, y, "ebla.qdot_compute");
  QdotResult r;
  {
    py::gil_scoped_release release;
    r = qdot_compute(x.data(), y.data(), static_cast<std::size_t>(x.size()), plan);
  }
  return result_dict(r, plan.ladder);
}

// The stored vectors Python holds: their Kokkos Views must go before Kokkos::finalize, which
// runs at exit while Python may still hold them (release_stored_vectors).
std::vector<std::weak_ptr<QdotStored>>& live_stored() {
  static std::vector<std::weak_ptr<QdotStored>> live;
  return live;
}

std::shared_ptr<QdotStored> store_call(const py::array_t<double, py::array::c_style>& x, double tolerance,
                                       const std::string& ladder, bool perforate_all) {
  const QdotOptions o = make_options(tolerance, "budget", ladder, false, QdotOptions::automatic_margin, perforate_all,
                                     "ebla.qdot_store");
  std::shared_ptr<QdotStored> s;
  {
    py::gil_scoped_release release;
    s = std::make_shared<QdotStored>(qdot_store(x.data(), static_cast<std::size_t>(x.size()), o));
  }
  auto& live = live_stored();  // under the GIL
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
  live.push_back(s);
  return s;
}

py::dict stored_dot_call(const QdotStored& s, const py::array_t<double, py::array::c_style>& y) {
  require(static_cast<std::size_t>(y.size()) == s.n, "ebla.QdotStored.dot",
          "y has " + std::to_string(y.size()) + " elements but the stored x has " + std::to_string(s.n));
  QdotResult r;
  {
    py::gil_scoped_release release;
    r = qdot(s, y.data(), s.n);
  }
  r.stats.select_seconds = s.store_seconds;
  return result_dict(r, s.plan.ladder);
}

}  // namespace

void release_stored_vectors() {
  for (const auto& w : live_stored())
    if (const auto s = w.lock()) *s = QdotStored{};  // its Views released; it now holds no vector
  live_stored().clear();
}

void register_qdot(py::module_& m) {
  py::class_<QdotStored, std::shared_ptr<QdotStored>>(m, "QdotStoredVector", "x kept in the formats its exponent bins allow (kernels/qdot_stored.hpp).")
      .def_readonly("n", &QdotStored::n)
      .def_readonly("plan", &QdotStored::plan)
      .def_readonly("l1", &QdotStored::l1)
      .def_readonly("error_l1", &QdotStored::error_l1)
      .def_readonly("zeros", &QdotStored::zeros)
      .def_readonly("store_seconds", &QdotStored::store_seconds)
      .def_property_readonly("bytes", &QdotStored::bytes)
      .def_property_readonly("tiles", &QdotStored::tiles)
      .def_property_readonly("count_per_level", [](const QdotStored& s) {
        return to_numpy(std::vector<std::int64_t>(s.count_per_level.begin(), s.count_per_level.end()));
      })
      .def_property_readonly("tiles_per_level", [](const QdotStored& s) {
        return to_numpy(std::vector<std::int64_t>(s.tiles_per_level.begin(), s.tiles_per_level.end()));
      })
      .def_property_readonly("levels", [](const QdotStored& s) { return rung_names(s.plan.ladder); })
      .def("values", [](const QdotStored& s) { return to_numpy(qdot_stored_values(s)); })
      .def("dot", &stored_dot_call, py::arg("y"))
      .def("__str__", &QdotStored::to_string);
  m.def("qdot_store_f64", &store_call, py::arg("x"), py::arg("tolerance"), py::arg("ladder"), py::arg("perforate_all"),
        "ebla::qdot_store on a contiguous float64 vector.");

  py::class_<QdotPlan>(m, "QdotPlan",
                       "The precisions qdot_select chose for each exponent bin (seed 002, Algorithm 3.2): "
                       "pass it to qdot_compute with vectors of the same length and dtype.")
      .def_readonly("n", &QdotPlan::n, "Length of the vectors the plan was selected for.")
      .def_readonly("input_t", &QdotPlan::input_t, "Precision of the input in bits (53 float64, 24 float32).")
      .def_property_readonly("policy", [](const QdotPlan& p) { return std::string(to_string(p.policy)); },
                             "Selection policy, 'budget' or 'paper'.")
      .def_readonly("tolerance", &QdotPlan::tolerance, "The tolerance of the selection.")
      .def_property_readonly("ladder", [](const QdotPlan& p) { return rung_names(p.ladder); },
                             "The rungs of the ladder, most precise first.")
      .def_readonly("e_min", &QdotPlan::e_min, "Exponent of the lowest bin.")
      .def_readonly("e_max", &QdotPlan::e_max, "Exponent of the highest bin (below e_min: no bin).")
      .def_property_readonly("level", [](const QdotPlan& p) { return to_numpy(p.level); },
                             "Ladder index of bin e_min + j, for each j.")
      .def_property_readonly("count", [](const QdotPlan& p) { return to_numpy(p.count); },
                             "Components in bin e_min + j.")
      .def_readonly("nonzero", &QdotPlan::nonzero, "Components with a nonzero product.")
      .def_readonly("nonfinite", &QdotPlan::nonfinite, "NaN or Inf seen in the inputs.")
      .def_readonly("early_termination", &QdotPlan::early_termination,
                    "Paper policy: Theorem 3.6 kept every bin at the input precision.")
      .def_readonly("kept_top_bin", &QdotPlan::kept_top_bin,
                    "The tolerance would have perforated every product; the top bin was kept.")
      .def_readonly("budget_used", &QdotPlan::budget_used, "Budget policy: fraction of the budget spent.")
      .def_property_readonly("bins", &QdotPlan::bins, "Number of nonempty bins.")
      .def_property_readonly("count_per_level",
                             [](const QdotPlan& p) {
                               const auto c = p.count_per_level();
                               return to_numpy(std::vector<std::int64_t>(c.begin(), c.end()));
                             },
                             "Components per rung of the ladder.")
      .def("__str__", &QdotPlan::to_string)
      .def("__repr__", [](const QdotPlan& p) {
        return "<ebla.QdotPlan n=" + std::to_string(p.n) + " bins=" + std::to_string(p.bins()) + " policy=" +
               to_string(p.policy) + ">";
      });

  m.def("qdot_f64", &qdot_call<double>, py::arg("x"), py::arg("y"), py::arg("tolerance"), py::arg("policy"),
        py::arg("ladder"), py::arg("reuse_plan"), py::arg("plan_margin"), py::arg("perforate_all"),
        "ebla::qdot on contiguous float64 vectors; a dict of the result.");
  m.def("qdot_f32", &qdot_call<float>, py::arg("x"), py::arg("y"), py::arg("tolerance"), py::arg("policy"),
        py::arg("ladder"), py::arg("reuse_plan"), py::arg("plan_margin"), py::arg("perforate_all"),
        "ebla::qdot on contiguous float32 vectors; a dict of the result.");
  m.def("qdot_select_f64", &select_call<double>, py::arg("x"), py::arg("y"), py::arg("tolerance"),
        py::arg("policy"), py::arg("ladder"), py::arg("perforate_all"), "ebla::qdot_select on float64 vectors.");
  m.def("qdot_select_f32", &select_call<float>, py::arg("x"), py::arg("y"), py::arg("tolerance"),
        py::arg("policy"), py::arg("ladder"), py::arg("perforate_all"), "ebla::qdot_select on float32 vectors.");
  m.def("qdot_compute_f64", &compute_call<double>, py::arg("plan"), py::arg("x"), py::arg("y"),
        "ebla::qdot_compute on float64 vectors; a dict of the result.");
  m.def("qdot_compute_f32", &compute_call<float>, py::arg("plan"), py::arg("x"), py::arg("y"),
        "ebla::qdot_compute on float32 vectors; a dict of the result.");
}

}  // namespace ebla::python

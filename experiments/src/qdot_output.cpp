// The HDF5 file of a qdot study: /<kind>/<dist>[/<policy>]/<series> (docs/qdot.md).
#include <ebla/experiments/qdot_study.hpp>

namespace ebla::experiments {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

void write_parameters(const Hdf5Object& g, const QdotStudy& study, const std::string& version) {
  const QdotStudySpec& s = study.spec;
  std::vector<std::string> dists, policies;
  for (QdotDist d : s.dists) dists.push_back(to_string(d));
  for (QdotPolicy p : s.policies) policies.push_back(to_string(p));
  g.attribute("experiment", to_string(s.kind));
  g.attribute("distributions", join(dists));
  g.attribute("distribution_definition", qdot_dist_definition);
  for (QdotDist d : s.dists) g.attribute(std::string("t_values_") + to_string(d), s.t_for(d));
  g.attribute("sizes", s.sizes);
  g.attribute("tolerances", s.tolerances);
  g.attribute("samples", s.samples);
  g.attribute("seed", s.seed);
  g.attribute("policy", join(policies));
  g.attribute("ladder", study.ladder());
  g.attribute("input", s.input());
  g.attribute("ebla_version", version);
  g.attribute("reference", "exact dot product (integer superaccumulator, rounded once); relerr_double_dot is "
                           "relative to the plain double dot product (KokkosBlas::dot), as in the seed");
  if (s.timed())
    g.attribute("timing", s.reps > 0 ? "best of " + std::to_string(s.reps) + " calls"
                                     : std::string("best of max(3, min(1000, 2e6/n)) calls"));
}

using SampleOf = const Sample& (*)(const QdotRow&);

// mean/min/max per row, and every sample as a rows x samples matrix.
void write_sample(const Hdf5Group& g, const std::string& name, const std::vector<const QdotRow*>& rows, SampleOf of,
                  int samples) {
  std::vector<double> mean, min, max, all;
  for (const QdotRow* r : rows) {
    const Sample& s = of(*r);
    mean.push_back(s.mean());
    min.push_back(s.min());
    max.push_back(s.max());
    all.insert(all.end(), s.values().begin(), s.values().end());
  }
  g.dataset(name + "_mean", mean);
  g.dataset(name + "_min", min);
  g.dataset(name + "_max", max);
  g.dataset(name + "_samples", all, rows.size(), static_cast<std::size_t>(samples));
}

void write_rows(const Hdf5Group& g, const QdotStudy& study, const std::vector<const QdotRow*>& rows) {
  std::vector<double> t, tol, fraction;
  std::vector<std::int64_t> n;
  for (const QdotRow* r : rows) {
    t.push_back(r->point.t);
    n.push_back(r->point.n);
    tol.push_back(r->tolerance);
    for (const auto& f : r->fraction) fraction.push_back(f.mean());
  }
  g.dataset("t", t);
  g.dataset("n", n);
  g.dataset("tolerance", tol);
  g.dataset("level_fraction_mean", fraction, rows.size(), study.levels.size()).attribute("levels", study.ladder());
  struct Series {
    const char* name;
    SampleOf of;
    bool timed;  // measured by the timed studies only
  };
  const Series series[] = {
      {"relerr", [](const QdotRow& r) -> const Sample& { return r.relerr; }, false},
      {"relerr_double_dot", [](const QdotRow& r) -> const Sample& { return r.relerr_dot; }, false},
      {"bound_relative", [](const QdotRow& r) -> const Sample& { return r.bound_rel; }, false},
      {"gap", [](const QdotRow& r) -> const Sample& { return r.gap; }, false},
      {"bins", [](const QdotRow& r) -> const Sample& { return r.bins; }, false},
      {"select_seconds", [](const QdotRow& r) -> const Sample& { return r.select_s; }, true},
      {"compute_seconds", [](const QdotRow& r) -> const Sample& { return r.compute_s; }, true},
      {"dot_seconds", [](const QdotRow& r) -> const Sample& { return r.dot_s; }, true},
      {"speedup", [](const QdotRow& r) -> const Sample& { return r.speedup; }, true},
      {"efficiency", [](const QdotRow& r) -> const Sample& { return r.efficiency; }, true}};
  for (const Series& s : series)
    if (!s.timed || study.spec.timed()) write_sample(g, s.name, rows, s.of, study.spec.samples);
}

}  // namespace

void write_qdot_study(const Hdf5Writer& out, const QdotStudy& study, const std::string& version) {
  const QdotStudySpec& s = study.spec;
  const Hdf5Group root = out.root();
  root.attribute("ebla_version", version).attribute("creator", "ebla qdot");
  const Hdf5Group g = root.group(to_string(s.kind));
  write_parameters(g, study, version);
  for (QdotDist d : s.dists) {
    const Hdf5Group dg = g.group(to_string(d));
    dg.attribute("t_values", s.t_for(d));
    for (QdotPolicy p : s.policies) {
      std::vector<const QdotRow*> selected;
      for (const QdotRow& r : study.rows)
        if (r.point.dist == d && r.policy == p) selected.push_back(&r);
      write_rows(s.kind == QdotStudyKind::compare_policies ? dg.group(to_string(p)) : dg, study, selected);
    }
  }
}

}  // namespace ebla::experiments

// The HDF5 groups of the GEMM studies: one run, one selection, the narrow-range experiment and
// the tensor-core experiment (docs/gemm.md and docs/gemm-experiments.md list their contents).
#include <ebla/experiments/gemm_study.hpp>

#include <ebla/kernels/matrix_unit.hpp>

#include <algorithm>

namespace ebla::experiments {

namespace {

std::vector<double> values_of(const HostMatrix& X) { return std::vector<double>(X.data(), X.data() + X.size()); }

std::string unit_label(const std::string& unit_name, const GemmConfig& g) {
  return g.engine == GemmEngine::emulated ? unit_name : std::string("-");
}

// candidate_00, candidate_01, ...
std::string candidate_name(std::size_t i) { return (i < 10 ? "candidate_0" : "candidate_") + std::to_string(i); }

// The datasets of one config of the narrow-range experiment, one value per k.
void write_narrow_case(const Hdf5Group& cg, const std::vector<NarrowPoint>& points) {
  std::vector<double> error, certified, paper, abs_error, bound, theta, seconds;
  for (const NarrowPoint& p : points) {
    error.push_back(p.error);
    certified.push_back(p.certified);
    paper.push_back(p.paper);
    abs_error.push_back(p.abs_error);
    bound.push_back(p.bound);
    theta.push_back(p.theta);
    seconds.push_back(p.seconds);
  }
  cg.dataset("error", error).attribute("meaning", "||C - AB||_inf / (||A||_inf ||B||_inf)");
  cg.dataset("certified", certified).attribute("meaning", "certified normwise bound / (||A||_inf ||B||_inf)");
  cg.dataset("paper", paper).attribute("meaning", "Mary & Mikaitis Theorem 3.1 (p = 1) or 4.1 / (||A||_inf ||B||_inf)");
  cg.dataset("abs_error", abs_error).attribute("meaning", "||C - AB||_inf");
  cg.dataset("normwise_bound", bound).attribute("meaning", "certified bound on ||C - AB||_inf");
  cg.dataset("theta", theta).attribute("meaning", "theta of Mary & Mikaitis (3.2)");
  cg.dataset("seconds", seconds).attribute("meaning", "time of ebla::gemm");
}

}  // namespace

void write_gemm_run(const Hdf5Group& g, const GemmData& data, const std::string& unit_name, const GemmConfig& asked,
                    const GemmResult& r, const Hdf5Stamp& stamp) {
  stamp(g);
  const GemmConfig& s = r.config;
  g.attribute("description", gemm_config_text(asked, unit_name))
      .attribute("m", data.m)
      .attribute("k", data.k)
      .attribute("n", data.n)
      .attribute("distribution", distribution_text(data.distribution, data.range))
      .attribute("given", format_name(data.given))
      .attribute("input", format_name(asked.input))
      .attribute("input_as_run", format_name(s.input))
      .attribute("words", s.words)
      .attribute("engine", to_string(s.engine))
      .attribute("unit", unit_label(unit_name, s))
      .attribute("unit_parameters", s.engine == GemmEngine::emulated ? to_string(s.unit) : std::string("-"))
      .attribute("scaling", static_cast<std::int64_t>(s.scaling))
      .attribute("subnormals", static_cast<std::int64_t>(s.subnormals))
      .attribute("failure", s.failure)
      .attribute("theta", r.theta)
      .attribute("norm_a", r.norm_a)
      .attribute("norm_b", r.norm_b)
      .attribute("normwise_bound", r.normwise_bound)
      .attribute("relative_bound", r.normwise_bound / (r.norm_a * r.norm_b))
      .attribute("paper_normwise", r.paper.normwise)
      .attribute("paper_relative", r.paper.normwise / (r.norm_a * r.norm_b))
      .attribute("lambda", r.lambda)
      .attribute("model_T", r.model.T)
      .attribute("model_delta", r.model.delta)
      .attribute("model_depth", r.model.depth)
      .attribute("model_steps", r.model.steps)
      .attribute("model_G", r.model.G)
      .attribute("split_seconds", r.split_seconds)
      .attribute("product_seconds", r.product_seconds)
      .attribute("bound_seconds", r.bound_seconds)
      .attribute("observed_normwise", r.observed_normwise)
      .attribute("observed_max_ratio", r.observed_max_ratio);
  const std::size_t m = r.C.extent(0), n = r.C.extent(1);
  g.dataset("C", values_of(r.C), m, n);
  if (r.bound.size() > 0) {
    g.dataset("bound", values_of(r.bound), m, n).attribute("meaning", "|C - AB| <= bound, entrywise, certified");
    g.dataset("probable_bound", values_of(r.probable_bound), m, n)
        .attribute("meaning", "|C - AB| <= probable_bound with probability >= 1 - failure per entry");
  }
  if (r.exact.size() > 0) g.dataset("exact", values_of(r.exact), m, n).attribute("meaning", "AB correctly rounded");
}

void write_gemm_selection(const Hdf5Group& g, const GemmData& data, const GemmOptions& options,
                          const GemmPlan& plan, double select_seconds, const Hdf5Stamp& stamp) {
  stamp(g);
  g.attribute("tolerance", options.tolerance)
      .attribute("m", data.m)
      .attribute("k", data.k)
      .attribute("n", data.n)
      .attribute("distribution", distribution_text(data.distribution, data.range))
      .attribute("given", format_name(data.given))
      .attribute("scaling", static_cast<std::int64_t>(options.scaling))
      .attribute("subnormals", static_cast<std::int64_t>(options.subnormals))
      .attribute("failure", options.failure)
      .attribute("meets_tolerance", static_cast<std::int64_t>(plan.meets_tolerance))
      .attribute("choice", describe(plan.config))
      .attribute("choice_relative_bound", plan.relative_bound)
      .attribute("select_seconds", select_seconds);
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const GemmCandidateReport& rep = plan.candidates[i];
    g.group(candidate_name(i))
        .attribute("description", describe(rep.config))
        .attribute("input", format_name(rep.config.input))
        .attribute("words", rep.config.words)
        .attribute("engine", to_string(rep.config.engine))
        .attribute("relative_bound", rep.relative_bound)
        .attribute("modelled_seconds", rep.seconds)
        .attribute("meets", static_cast<std::int64_t>(rep.relative_bound <= options.tolerance));
  }
}

void write_narrow_range(const Hdf5Group& root, const NarrowRangeSpec& spec, const NarrowRangeResult& result,
                        const Hdf5Stamp& stamp) {
  const Hdf5Group g = root.group("narrow_range");
  stamp(g);
  g.attribute("experiment", "Mary & Mikaitis, section 5, Figs. 5.1 and 5.2: narrow range against unbounded range")
      .attribute("distribution", distribution_text(GemmDistribution::logscale, spec.range))
      .attribute("range", spec.range)
      .attribute("m", spec.m)
      .attribute("n", spec.n)
      .attribute("k_list", spec.k_list)
      .attribute("threads", spec.threads)
      .attribute("error", "||C - AB||_inf / (||A||_inf ||B||_inf), AB exact (Mary & Mikaitis (5.1))")
      .attribute("unit", "FMA chain in the accumulation format: block 1, exact products, nearest");
  for (const NarrowFigure& f : result.figures) {
    const Hdf5Group fg = g.group(f.figure == "5.1" ? "fig5_1" : "fig5_2");
    stamp(fg);
    fg.attribute("figure", f.figure)
        .attribute("accumulation", format_name(f.cases.front().accumulation))
        .attribute("k_list", spec.k_list)
        .attribute("seconds", f.seconds);
    for (std::size_t i = 0; i < f.cases.size(); ++i) {
      const NarrowCase& nc = f.cases[i];
      const GemmConfig cfg = nc.config();
      const std::vector<NarrowPoint>& points = f.points[i];
      const auto violations = std::count_if(points.begin(), points.end(), [](const NarrowPoint& p) { return p.violation; });
      const Hdf5Group cg = fg.group(nc.key());
      stamp(cg);
      cg.attribute("figure", f.figure)
          .attribute("input", format_name(nc.input))
          .attribute("accumulation", format_name(nc.accumulation))
          .attribute("input_as_run", format_name(cfg.input))
          .attribute("accumulation_as_run", format_name(cfg.unit.accumulation))
          .attribute("words", nc.words)
          .attribute("subnormals", static_cast<std::int64_t>(nc.subnormals))
          .attribute("range", nc.unbounded ? "unbounded" : "narrow")
          .attribute("range_l", spec.range)
          .attribute("m", spec.m)
          .attribute("n", spec.n)
          .attribute("k_list", spec.k_list)
          .attribute("description", format_name(cfg.input) + " x" + std::to_string(nc.words) + " on an FMA chain in " +
                                        format_name(cfg.unit.accumulation) + (nc.subnormals ? "" : ", no subnormals"))
          .attribute("unit_parameters", to_string(cfg.unit))
          .attribute("violations", static_cast<std::int64_t>(violations));
      cg.dataset("k", spec.k_list);
      write_narrow_case(cg, points);
    }
  }
}

void write_tensor_core(const Hdf5Group& root, const TensorCoreSpec& spec, const std::string& unit_name,
                       const TensorCoreResult& t, const Hdf5Stamp& stamp) {
  const Hdf5Group g = root.group("tensor_core");
  const GemmResult& r = t.gemm;
  stamp(g);
  g.attribute("experiment", "Bhola & Duraisamy, section 4.2, Fig. 6: GEMM on tensor cores")
      .attribute("m", spec.data.m)
      .attribute("k", spec.data.k)
      .attribute("n", spec.data.n)
      .attribute("distribution", "U(-1, 1)")
      .attribute("given", format_name(spec.data.given))
      .attribute("input", format_name(r.config.input))
      .attribute("unit", unit_name)
      .attribute("unit_parameters", to_string(r.config.unit))
      .attribute("description", gemm_config_text(r.config, unit_name))
      .attribute("scaling", static_cast<std::int64_t>(0))
      .attribute("failure", spec.gemm.failure)
      .attribute("lambda", r.lambda)
      .attribute("vibea_lambda", r.paper.vibea_lambda)
      .attribute("vibea_lambda_matrix", r.paper.vibea_lambda_matrix)
      .attribute("inputs_exact", static_cast<std::int64_t>(r.paper.inputs_exact))
      .attribute("unbiased", static_cast<std::int64_t>(r.model.unbiased))
      .attribute("violations", t.violations)
      .attribute("zero_entries", t.zero)
      .attribute("above_probable", t.above_probable)
      .attribute("above_dbea", t.above_dbea)
      .attribute("above_vibea", t.above_vibea)
      .attribute("above_vibea_matrix", t.above_vibea_matrix)
      .attribute("gemm_seconds", t.gemm_seconds)
      .attribute("exact_seconds", t.exact_seconds);
  g.dataset("error", t.error.values()).attribute("meaning", "|C - AB| / |AB| per entry with AB != 0 (row-major)");
  g.dataset("certified", t.certified.values()).attribute("meaning", "certified bound / |AB|");
  g.dataset("probable", t.probable.values()).attribute("meaning", "probable bound / |AB|");
  const char* det = r.paper.inputs_exact ? "Bhola & Duraisamy Theorem 3.7 / |AB|" : "Bhola & Duraisamy Theorem 3.8 / |AB|";
  const char* prob = r.paper.inputs_exact ? "Bhola & Duraisamy Theorem 3.9" : "Bhola & Duraisamy Theorem 3.10";
  g.dataset("dbea", t.dbea.values()).attribute("meaning", det);
  g.dataset("vibea", t.vibea.values())
      .attribute("meaning", std::string(prob) + " / |AB|, failing with probability <= failure per entry");
  g.dataset("vibea_matrix", t.vibea_matrix.values())
      .attribute("meaning", std::string(prob) + " / |AB|, failing with probability <= failure for the whole product");
  g.dataset("C", values_of(r.C), spec.data.m, spec.data.n);
  g.dataset("exact", values_of(t.exact), spec.data.m, spec.data.n).attribute("meaning", "AB correctly rounded");
}

}  // namespace ebla::experiments

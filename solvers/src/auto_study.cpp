// The study of --qdot-tol auto (see auto_study.hpp).
#include <ebla/solvers/auto_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/solvers/result_file.hpp>
#include <ebla/solvers/sweep.hpp>

#include <cstdio>

namespace ebla {

std::string auto_set_matrix(const std::string& dir, const std::string& name, const std::string& what) {
  const std::string path = dir + "/" + name + ".mtx";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) throw_invalid(what, "cannot open '" + path + "' (the matrices of data/matrices)");
  std::fclose(f);
  return path;
}

std::vector<AutoCase<CgOptions>> cg_auto_set(const std::string& matrix_dir, const CgOptions& base,
                                             const AutoSetNames& names) {
  CgOptions o = base;
  o.tolerance = 1e-8;
  o.norm = Norm::relative;
  ProblemSpec blank;
  blank.name_field = names.name_field;
  std::vector<AutoCase<CgOptions>> cases;
  for (const char* name : {"1138_bus", "bcsstk13", "gr_30_30"}) {
    ProblemSpec m = blank;
    m.source = ProblemSource::matrix;
    m.matrix = auto_set_matrix(matrix_dir, name, names.matrix_dir);
    cases.push_back({std::string("HB/") + name, m, o});
    cases.back().solver.jacobi = true;  // Jacobi, whatever the base's preconditioner
    cases.back().solver.pc = PcKind::jacobi;
  }
  ProblemSpec h = blank;
  h.nx = h.ny = h.nz = 30;
  cases.push_back({"HPCCG 30^3", h, o});
  ProblemSpec l = blank;
  l.source = ProblemSource::laplacian;
  l.n = 10000;
  l.degree = 10;
  l.shift = 1e-3;
  cases.push_back({"Laplacian n = 1e4, shift 1e-3", l, o});
  return cases;
}

std::vector<AutoCase<PowerOptions>> power_auto_set(const std::string& matrix_dir, const PowerOptions& base,
                                                   const AutoSetNames& names) {
  ProblemSpec seed_laplacian;
  seed_laplacian.name_field = names.name_field;
  seed_laplacian.source = ProblemSource::laplacian;
  seed_laplacian.n = 10000;
  seed_laplacian.degree = 10;
  ProblemSpec laplacian = seed_laplacian;
  laplacian.degree = 8;
  laplacian.seed = 3;
  ProblemSpec hpccg;
  hpccg.name_field = names.name_field;
  hpccg.nx = hpccg.ny = hpccg.nz = 20;
  ProblemSpec matrix = hpccg;
  matrix.source = ProblemSource::matrix;
  matrix.matrix = auto_set_matrix(matrix_dir, "1138_bus", names.matrix_dir);
  const auto options = [&](double tol, int max_iterations) {
    PowerOptions o = base;
    o.tolerance = tol;
    o.max_iterations = max_iterations;
    return o;
  };
  return {{"Laplacian n = 1e4, degree 10, seed 1", seed_laplacian, options(1e-6, 300)},
          {"Laplacian n = 1e4, degree 8, seed 3", laplacian, options(1e-8, 1000)},
          {"HPCCG 20^3", hpccg, options(1e-8, 5000)},
          {"HB/1138_bus", matrix, options(1e-6, 5000)}};
}

void run_auto_sequence(AutoReport& r, const DotSpec& dots, ProblemUse use, const AutoRun& run, const Hdf5Group* out) {
  run("exact", DotPolicy::exact(), 0, "exact");
  for (double tol : dots.sweep) run(tolerance_text(tol), dots.at(tol), tol, sweep_group_name(tol));
  r.events = run("auto", dots.automatic(use), 0, "auto");
  r.judge();
  if (out != nullptr) write_auto_summary(*out, r, dots.sweep);
}

}  // namespace ebla

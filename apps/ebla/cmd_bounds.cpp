// ebla bounds: the error constants of a product of n roundings in a format.
#include "commands.hpp"

#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

struct BoundsOptions {
  std::string format = "binary16";
  std::vector<double> n = {10, 100, 1000, 10000, 100000};
  double failure = 1e-6;
};

int run_bounds(const BoundsOptions& o) {
  const Format f = format_by_name(o.format);
  if (!(o.failure > 0 && o.failure < 1))
    throw_invalid("ebla bounds --failure", "probability " + std::to_string(o.failure) + " is outside (0, 1)");
  for (double n : o.n)  // every n checked before the table starts
    if (!(n >= 1) || n != std::floor(n))
      throw_invalid("ebla bounds --n", std::to_string(n) + " is not a positive integer");
  const double u = f.u();
  std::printf("format %s, u = %.6e; probabilistic bounds fail with probability <= %.1e\n",
              format_name(f).c_str(), u, o.failure);
  std::printf("%10s %14s %14s %10s %14s %10s\n", "n", "gamma_n", "gamma~_n (HM)", "lambda",
              "gamma~_n (VI)", "lambda");
  for (double n : o.n) {
    const double l_hm = bounds::hm_lambda(o.failure, u);
    const double l_vi = bounds::vibea_lambda(o.failure, u, n);
    std::printf("%10.0f %14.6e %14.6e %10.4f %14.6e %10.4f\n", n, bounds::gamma(n, u),
                bounds::gamma_tilde(n, u, l_hm), l_hm, bounds::gamma_tilde(n, u, l_vi), l_vi);
  }
  std::printf("gamma_n = nu/(1-nu) (Lemma 2.1 of Bhola & Duraisamy); gamma~_n(lambda) = exp(lambda sqrt(n) u"
              " + n u^2/(1-u)) - 1,\nwith lambda from Higham & Mary 2019 (HM) or from the"
              " variance-informed p_b of Bhola & Duraisamy Lemma 2.2 (VI).\n");
  return 0;
}

}  // namespace

Command add_bounds(CLI::App& app) {
  auto o = std::make_shared<BoundsOptions>();
  app.add_option("--format,-f", o->format, "Format whose unit roundoff u is used")->capture_default_str();
  app.add_option("--n", o->n, "Numbers of roundings")->capture_default_str();
  app.add_option("--failure", o->failure, "Failure probability of the probabilistic bounds")
      ->capture_default_str();
  return [o] { return run_bounds(*o); };
}

}  // namespace ebla::cli

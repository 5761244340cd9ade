// The qdot experiments as a library: the seeded data of seed 002, section 4.1 (reproducible,
// with the documented distributions), the studies' rows (sizes, statistics, the certified
// bound above the observed error on every sample) and the HDF5 file of a study.
#include <ebla/core/exact_sum.hpp>
#include <ebla/experiments/qdot_study.hpp>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace ebla::experiments;

TEST(QdotData, SeedsAreReproducibleAndDependOnEveryParameter) {
  const std::uint64_t s = qdot_data_seed(1, QdotDist::B, 9, 1000, 0);
  EXPECT_EQ(s, qdot_data_seed(1, QdotDist::B, 9, 1000, 0));
  EXPECT_NE(s, qdot_data_seed(2, QdotDist::B, 9, 1000, 0));
  EXPECT_NE(s, qdot_data_seed(1, QdotDist::A, 9, 1000, 0));
  EXPECT_NE(s, qdot_data_seed(1, QdotDist::B, 9.5, 1000, 0));
  EXPECT_NE(s, qdot_data_seed(1, QdotDist::B, 9, 1001, 0));
  EXPECT_NE(s, qdot_data_seed(1, QdotDist::B, 9, 1000, 1));

  const auto a = qdot_data<double>(QdotDist::B, 9, 1000, s), b = qdot_data<double>(QdotDist::B, 9, 1000, s);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.n(), 1000u);
  EXPECT_NE(a.x, a.y);  // x and y are drawn one after the other
  EXPECT_NE(a.x, qdot_data<double>(QdotDist::B, 9, 1000, s + 1).x);
  // float data: the same draws, rounded to float
  const auto f = qdot_data<float>(QdotDist::B, 9, 1000, s);
  for (std::size_t i = 0; i < a.n(); ++i) ASSERT_EQ(f.x[i], static_cast<float>(a.x[i]));
  EXPECT_TRUE(qdot_data<double>(QdotDist::A, 9, 0, s).x.empty());
}

/// The exponents p of s 2^p, s in [0.5, 1), of x and y together.
std::vector<int> exponents(const QdotData<double>& d) {
  std::vector<int> p;
  for (const auto* v : {&d.x, &d.y})
    for (double e : *v) {
      int q = 0;
      const double s = std::frexp(e, &q);  // e = s 2^q, s in [0.5, 1)
      EXPECT_GE(s, 0.5);
      EXPECT_LT(s, 1.0);
      p.push_back(q);
    }
  return p;
}

TEST(QdotData, DistributionAIsUniformOnTheIntegersOfTheInterval) {
  const double t = 9;  // p in {-4, ..., 4}
  const auto d = qdot_data<double>(QdotDist::A, t, 20000, 5);
  std::map<int, int> count;
  for (int p : exponents(d)) ++count[p];
  ASSERT_EQ(count.size(), 9u);
  EXPECT_EQ(count.begin()->first, -4);
  EXPECT_EQ(count.rbegin()->first, 4);
  for (const auto& [p, c] : count) EXPECT_NEAR(c, 40000 / 9.0, 300) << "p = " << p;  // ~6.5 sd
}

TEST(QdotData, DistributionBHasExponentsOfStandardDeviationHalfT) {
  const double t = 12;
  const auto d = qdot_data<double>(QdotDist::B, t, 20000, 5);
  double sum = 0, squares = 0;
  const std::vector<int> p = exponents(d);
  for (int q : p) {
    sum += q;
    squares += static_cast<double>(q) * q;
  }
  const double mean = sum / p.size(), variance = squares / p.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(std::sqrt(variance), t / 2, 0.1);  // rounding adds 1/12 to the variance
}

TEST(QdotStudy, DefaultsAreTheSeedsParameters) {
  const QdotStudySpec t = qdot_study_defaults(QdotStudyKind::tightness);
  EXPECT_EQ(t.t_for(QdotDist::A).size(), 19u);  // 10, 15, ..., 100
  EXPECT_EQ(t.t_for(QdotDist::A).back(), 100);
  EXPECT_EQ(t.t_for(QdotDist::B).size(), 15u);  // 2, 4, ..., 30
  EXPECT_EQ(t.tolerances, std::vector<double>{1e-16});
  EXPECT_EQ(t.samples, 5);
  EXPECT_FALSE(t.timed());
  EXPECT_EQ(t.reps_for(100), 0);
  const QdotStudySpec r = qdot_study_defaults(QdotStudyKind::run);
  EXPECT_EQ(r.sizes, std::vector<std::int64_t>{1000000});
  EXPECT_EQ(r.t_for(QdotDist::B), std::vector<double>{9});
  EXPECT_EQ(r.reps_for(1000000), 3);
  EXPECT_EQ(r.reps_for(100), 1000);
  EXPECT_EQ(qdot_study_defaults(QdotStudyKind::compare_policies).policies.size(), 2u);
  EXPECT_EQ(qdot_study_defaults(QdotStudyKind::speedup).tolerances.size(), 15u);
}

TEST(QdotStudy, TightnessBoundIsAboveTheErrorOnEverySample) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::tightness);
  s.t_given = {10, 40};
  s.sizes = {100, 1000};
  s.samples = 3;
  const QdotStudy study = run_qdot_study(s);
  ASSERT_EQ(study.rows.size(), 2u * 2 * 2);  // dists x t x n (one tolerance, one policy)
  EXPECT_EQ(study.levels, (std::vector<std::string>{"binary64", "binary32", "binary16", "perforate"}));
  for (const QdotRow& r : study.rows) {
    ASSERT_EQ(r.relerr.size(), 3u);
    EXPECT_TRUE(r.select_s.empty());  // not timed
    ASSERT_EQ(r.fraction.size(), 4u);
    double total = 0;
    for (const Sample& f : r.fraction) total += f.mean();
    EXPECT_NEAR(total, 1.0, 1e-12);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_GE(r.bound_rel.values()[k], r.relerr.values()[k]);
      EXPECT_EQ(r.gap.values()[k], r.bound_rel.values()[k] - r.relerr.values()[k]);
    }
  }
  for (QdotDist d : s.dists) {
    const auto summary = qdot_tightness(study, d, 1e-16);
    ASSERT_EQ(summary.size(), 2u);
    for (const QdotTightness& k : summary) {
      EXPECT_EQ(k.gap.size(), 2u * 3);  // every t, every sample
      EXPECT_EQ(k.violations, 0u);
      EXPECT_GE(k.gap.min(), 0.0);
    }
  }
}

TEST(QdotStudy, EffectivenessErrorStaysUnderTheTolerance) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::effectiveness);
  s.dists = {QdotDist::B};
  s.t_given = {9};
  s.sizes = {2000};
  s.tolerances = {1e-12, 1e-8, 1e-4};
  s.samples = 2;
  const QdotStudy study = run_qdot_study(s);
  ASSERT_EQ(study.rows.size(), 3u);
  ASSERT_EQ(qdot_point_blocks(study.rows), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 3}}));
  for (const QdotRow& r : study.rows) {
    // budget contract, positive data (|x|^T|y| = x^T y): relerr <= tol + u_d + accumulation
    EXPECT_LE(r.relerr.max(), r.tolerance + 0x1p-52) << r.tolerance;
    for (std::size_t k = 0; k < r.relerr.size(); ++k) EXPECT_LE(r.relerr.values()[k], r.bound_rel.values()[k]);
  }
  // a coarser tolerance leaves fewer components in binary64
  EXPECT_GT(study.rows[0].fraction[0].mean(), study.rows[2].fraction[0].mean());
}

TEST(QdotStudy, ComparePoliciesAlternatesThePoliciesOnTheSameData) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::compare_policies);
  s.t_given = {9};
  s.sizes = {500};
  s.tolerances = {1e-10, 1e-6};
  s.samples = 1;
  const QdotStudy study = run_qdot_study(s);
  ASSERT_EQ(study.rows.size(), 4u);
  for (std::size_t r = 0; r < 4; ++r) EXPECT_EQ(study.rows[r].policy, s.policies[r % 2]);
  EXPECT_EQ(study.rows[0].relerr_dot.size(), 1u);
}

TEST(QdotStudy, OneRunIsTheFirstSampleOfTheSweeps) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::run);
  s.sizes = {3000};
  s.reps = 3;
  const QdotStudy study = run_qdot_study(s);
  const QdotSingle& r = study.single;
  const auto data = qdot_data<double>(QdotDist::B, 9, 3000, qdot_data_seed(1, QdotDist::B, 9, 3000, 0));
  EXPECT_EQ(r.exact, ebla::exact_dot(data.x.data(), data.y.data(), data.n()));
  EXPECT_EQ(r.relerr, ebla::dot_relative_error(data.x.data(), data.y.data(), data.n(), r.result.value));
  EXPECT_EQ(r.dot_relerr, ebla::dot_relative_error(data.x.data(), data.y.data(), data.n(), r.dot));
  EXPECT_LE(r.relerr, r.bound_rel);
  EXPECT_EQ(r.reps, 3);
  EXPECT_GT(r.compute_seconds, 0.0);
  EXPECT_EQ(r.speedup, r.dot_seconds / r.compute_seconds);
  ASSERT_EQ(r.fraction.size(), study.levels.size());
  std::size_t total = 0;
  for (std::size_t c : r.result.stats.count_per_level) total += c;
  EXPECT_EQ(total, 3000u);
  ASSERT_EQ(study.rows.size(), 1u);
  EXPECT_EQ(study.rows[0].relerr.values(), std::vector<double>{r.relerr});
  EXPECT_EQ(study.rows[0].speedup.size(), 1u);

  // the effectiveness sweep at the same (dist, t, n, tolerance) sees the same vectors
  QdotStudySpec e = qdot_study_defaults(QdotStudyKind::effectiveness);
  e.dists = {QdotDist::B};
  e.t_given = {9};
  e.sizes = {3000};
  e.tolerances = {1e-8};
  e.samples = 1;
  EXPECT_EQ(run_qdot_study(e).rows[0].relerr.values(), std::vector<double>{r.relerr});
}

TEST(QdotStudy, BadOptionsAreRefusedBeforeAnyWork) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::effectiveness);
  s.tolerances = {-1.0};
  EXPECT_THROW(qdot_study_levels(s), ebla::InvalidArgument);
  EXPECT_THROW(qdot_dist_by_name("C"), ebla::InvalidArgument);
  EXPECT_EQ(qdot_dist_by_name("a"), QdotDist::A);
}

TEST(QdotStudy, WritesItsHdf5File) {
  QdotStudySpec s = qdot_study_defaults(QdotStudyKind::speedup);
  s.dists = {QdotDist::A};
  s.t_given = {5};
  s.sizes = {1000};
  s.tolerances = {1e-8, 1e-4};
  s.samples = 2;
  s.reps = 3;
  const QdotStudy study = run_qdot_study(s);
  const std::string path = "test_qdot_study_" + std::to_string(getpid()) + ".h5";
  {
    ebla::Hdf5Writer out(path);
    write_qdot_study(out, study, "0.0.0");
    out.commit();
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* name : {"/speedup", "/speedup/A", "/speedup/A/relerr_samples", "/speedup/A/efficiency_mean",
                           "/speedup/A/level_fraction_mean"})
    EXPECT_GT(H5Lexists(f, name, H5P_DEFAULT), 0) << name;
  const hid_t d = H5Dopen2(f, "/speedup/A/relerr_samples", H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  hsize_t dims[2] = {0, 0};
  EXPECT_EQ(H5Sget_simple_extent_ndims(space), 2);
  H5Sget_simple_extent_dims(space, dims, nullptr);
  EXPECT_EQ(dims[0], 2u);  // rows: the tolerances
  EXPECT_EQ(dims[1], 2u);  // samples
  std::vector<double> values(4);
  H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  EXPECT_EQ(values[0], study.rows[0].relerr.values()[0]);
  EXPECT_EQ(values[3], study.rows[1].relerr.values()[1]);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  std::remove(path.c_str());
}

}  // namespace

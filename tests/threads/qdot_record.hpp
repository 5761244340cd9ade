// The bits of a qdot plan and result that the thread-count tests compare.
#pragma once

#include "digest.hpp"

#include <ebla/kernels/qdot.hpp>

namespace ebla_threads {

inline void record(Digest& d, const ebla::QdotPlan& p) {
  d.add(p.e_min);
  d.add(p.e_max);
  d.add(p.level);
  d.add(p.count);
  d.add(p.nonzero);
  d.add(p.budget_used);
}

inline void record(Digest& d, const ebla::QdotResult& r) {
  d.add(r.value);
  d.add(r.bound);
  d.add(r.quantization_bound);
  d.add(r.accumulation_bound);
  d.add(r.abs_sum);
  d.add(r.stats.count_per_level);
  d.add(r.stats.zeros);
  d.add(r.stats.outside_plan);
}

}  // namespace ebla_threads

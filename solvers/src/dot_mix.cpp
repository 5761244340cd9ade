#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/solvers/dot_mix.hpp>

namespace ebla {

std::vector<double> rung_bytes(const std::vector<std::string>& rungs) {
  std::vector<double> bytes;
  for (const std::string& name : rungs) {
    if (name == "perforate") {
      bytes.push_back(0);
      continue;
    }
    const int bits = encoding_bits(format_by_name(name));  // throws for an unknown name
    if (bits <= 0) throw_invalid("ebla::rung_bytes", "format '" + name + "' has no standard encoding");
    bytes.push_back(bits / 8.0);
  }
  return bytes;
}

DotMixCounter::DotMixCounter(const std::vector<std::string>& rungs) : width_(rung_bytes(rungs)) {
  if (width_.empty()) throw_invalid("ebla::DotMixCounter", "no rungs");
}

void DotMixCounter::add(const DotRecord& d) {
  double below = 0, bytes = d.zero_fraction * width_[0];  // zero products: read at the first rung
  for (std::size_t l = 0; l < d.fraction.size() && l < width_.size(); ++l) {
    if (l > 0) below += d.fraction[l];
    bytes += d.fraction[l] * width_[l];
  }
  ++calls_;
  below_ += below;
  bytes_ += bytes / width_[0];
}

DotMix DotMixCounter::mix() const {
  if (calls_ == 0) return {};
  return {calls_, below_ / calls_, bytes_ / calls_};
}

namespace {

// The ok run of `fixed` with the largest share among those `qualifies` accepts (-1: none).
template <class Pred>
int best_where(const std::vector<PolicyOutcome>& fixed, Pred qualifies) {
  int best = -1;
  for (std::size_t i = 0; i < fixed.size(); ++i)
    if (fixed[i].ok && qualifies(fixed[i]) && (best < 0 || fixed[i].below > fixed[best].below))
      best = static_cast<int>(i);
  return best;
}

}  // namespace

AutoVerdict judge_automatic(const PolicyOutcome& exact, const std::vector<PolicyOutcome>& fixed,
                            const PolicyOutcome& automatic, double slack) {
  AutoVerdict v;
  v.iteration_ratio = exact.iterations > 0 ? static_cast<double>(automatic.iterations) / exact.iterations
                                           : (automatic.iterations == 0 ? 1.0 : 0.0);
  v.iterations_met = automatic.ok && exact.ok && v.iteration_ratio <= slack;
  v.same_count = best_where(fixed, [&](const PolicyOutcome& f) { return f.iterations == exact.iterations; });
  v.within = best_where(fixed, [&](const PolicyOutcome& f) { return f.iterations <= automatic.iterations; });
  v.share_met = v.same_count < 0 || automatic.below >= fixed[v.same_count].below;
  return v;
}

}  // namespace ebla

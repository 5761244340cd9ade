// How a long study tells its caller how far it is: a callback in the study's spec, called
// with the steps done, the steps in all and a few words on the latest step. Studies never
// print; a null callback is never called.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace ebla::experiments {

/// done of total steps finished; `step` names the step that finished or the one starting.
using Progress = std::function<void(std::size_t done, std::size_t total, const std::string& step)>;

/// Calls `progress` if it is set.
inline void report(const Progress& progress, std::size_t done, std::size_t total, const std::string& step) {
  if (progress) progress(done, total, step);
}

}  // namespace ebla::experiments

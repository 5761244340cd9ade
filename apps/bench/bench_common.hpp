// What the benchmark programs share: the medians of the repetitions, kept as they are
// printed, and a default number of repetitions.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

/// The console reporter, keeping the median real time of every benchmark by name:
/// "function" or "function/args".
class MedianReporter : public benchmark::ConsoleReporter {
public:
  std::map<std::string, double> median;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs)
      if (run.aggregate_name == "median")
        median[run.run_name.function_name + (run.run_name.args.empty() ? "" : "/" + run.run_name.args)] =
            run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
};

/// benchmark::Initialize on args (argv, less what the program took for itself), with
/// --benchmark_repetitions=<repetitions> and --benchmark_enable_random_interleaving=true
/// appended unless args set them (interleaved repetitions: a slow spell of a shared machine
/// falls on the baseline and the kernel alike, not on one of them); returns the count of
/// arguments left in args.
inline int initialize_benchmarks(std::vector<char*>& args, int repetitions) {
  static std::string option;
  static std::string interleave = "--benchmark_enable_random_interleaving=true";
  auto given = [&](const char* name) {
    for (std::size_t i = 1; i < args.size(); ++i)
      if (std::string(args[i]).rfind(name, 0) == 0) return true;
    return false;
  };
  option = "--benchmark_repetitions=" + std::to_string(repetitions);
  if (!given("--benchmark_repetitions")) args.push_back(option.data());
  if (!given("--benchmark_enable_random_interleaving")) args.push_back(interleave.data());
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  return count;
}

// Runs every registered case and prints "name bytes digest", after a line naming the host
// execution space and its thread count (which run_threads.cmake checks against the request).
#include "digest.hpp"

#include <ebla/core/parallel.hpp>

#include <Kokkos_Core.hpp>

#include <cinttypes>
#include <cstdio>
#include <exception>

namespace ebla_threads {
std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}
}  // namespace ebla_threads

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    std::printf("host %s threads %d\n", Kokkos::DefaultHostExecutionSpace::name(), ebla::detail::host_threads());
    for (const auto& c : ebla_threads::cases()) {
      try {
        ebla_threads::Digest d;
        c.run(d);
        if (d.size() == 0) {
          std::printf("%s recorded nothing\n", c.name.c_str());
          status = 1;
          continue;
        }
        std::printf("%s %zu %016" PRIx64 "\n", c.name.c_str(), d.size(), d.hash());
      } catch (const std::exception& e) {
        std::printf("%s threw: %s\n", c.name.c_str(), e.what());
        status = 1;
      }
    }
  }
  Kokkos::finalize();
  return status;
}

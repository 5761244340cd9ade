// Kokkos for the length of one command, on the thread count of --kokkos-num-threads.
#include "commands.hpp"

#include <Kokkos_Core.hpp>

namespace ebla::cli {

namespace {
int requested_threads = 0;  // 0: Kokkos's own choice
}  // namespace

void set_kokkos_threads(int threads) { requested_threads = threads; }

KokkosSession::KokkosSession() {
  if (Kokkos::is_initialized()) return;
  // Kokkos reads its environment variables (KOKKOS_NUM_THREADS; OpenMP's OMP_NUM_THREADS)
  // in both calls below; a thread count given here takes precedence over them.
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings settings;
  if (requested_threads > 0) settings.set_num_threads(requested_threads);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments arguments;
  if (requested_threads > 0) arguments.num_threads = requested_threads;
  Kokkos::initialize(arguments);
#endif
  owner_ = true;
}

KokkosSession::~KokkosSession() {
  if (owner_ && Kokkos::is_initialized()) Kokkos::finalize();
}

}  // namespace ebla::cli

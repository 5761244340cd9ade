// What the preconditioners (preconditioner.hpp) share when they are built: A's arrays on
// the host, host vectors copied to the device, a split matrix built on the host and its
// triangular sweep, and a number written in full.
#pragma once

#include <ebla/solvers/preconditioner.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace ebla::detail {

// A's arrays on the host.
struct HostRows {
  Kokkos::View<const std::size_t*, Kokkos::HostSpace> ptr;
  Kokkos::View<const int*, Kokkos::HostSpace> col;
  Kokkos::View<const double*, Kokkos::HostSpace> val;
};

inline HostRows host_rows(const CsrMatrix& A) {
  return {Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map),
          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries),
          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values)};
}

// A host vector in a new View of the default memory space.
template <class T>
Kokkos::View<T*> device_copy(const std::vector<T>& v, const std::string& label) {
  Kokkos::View<T*> d(label, v.size());
  Kokkos::deep_copy(d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  return d;
}

// SplitRows on the host, built row by row: push a row's entries into lower or upper, then
// end_row() (the upper part may also be filled by end_rows_by_column).
struct HostSplit {
  std::vector<std::size_t> lower_ptr{0}, upper_ptr{0};
  std::vector<int> lower_col, upper_col;
  std::vector<double> lower_val, upper_val, diagonal;
  void end_row() {
    lower_ptr.push_back(lower_col.size());
    upper_ptr.push_back(upper_col.size());
  }
};

// The split's arrays copied to the device, labelled "<name> lower_ptr" and so on.
SplitRows to_device(const HostSplit& s, const std::string& name);

// Entries a group must hold, on average, for each thread of a team that sweeps it: below, a
// thread's share of a group costs less than the barrier that ends the group (measured on a
// two-core host: IC(0) on HB/bcsstk16, 210 entries a level, 0.057 s on two threads against
// 0.016 s on one; SGS on HB/1138_bus, 400 entries a colour, 0.014 s against 0.008 s; SGS on
// HB/bcsstk16, 5,600 entries a colour, 0.022 s against 0.033 s).
constexpr std::size_t entries_per_team_thread = 2048;

// row(k) for k = start[g] .. start[g + 1] - 1, group after group (g increasing, or decreasing
// when `backward`): the rows of a group run at once, a group only after the one before it has
// finished. On the host, one kernel: a team walks the groups, shares each group's rows
// (TeamThreadRange) and meets at a barrier before the next, so that a sweep over many small
// groups (IC(0)'s levels, SGS's colours) pays one launch instead of one per group; the team
// has every thread of the execution space, or fewer where the groups hold too few of the
// sweep's `entries` to keep them busy (entries_per_team_thread); a team that would have one
// thread is the calling thread, with no kernel to start and join. On a device, one
// parallel_for per group. Each row does the same operations whoever runs it, so the results
// are the same bits for any thread count.
template <class Row>
void grouped_rows(const char* label, const std::vector<std::size_t>& start, bool backward, std::size_t entries,
                  const Row& row) {
  using exec = Kokkos::DefaultExecutionSpace;
  const std::size_t groups = start.empty() ? 0 : start.size() - 1;
  if (groups == 0) return;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, exec::memory_space>::accessible) {
    using Team = Kokkos::TeamPolicy<exec>;
    const std::size_t* first = start.data();
    const auto walk = KOKKOS_LAMBDA(const typename Team::member_type& team) {
      for (std::size_t step = 0; step < groups; ++step) {
        const std::size_t g = backward ? groups - 1 - step : step;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first[g], first[g + 1]), [&](const std::size_t k) { row(k); });
        team.team_barrier();
      }
    };
    const std::size_t busy = std::max<std::size_t>(1, entries / groups / entries_per_team_thread);
    if (busy == 1) {  // a team of one thread: the groups in order on the calling thread
      for (std::size_t step = 0; step < groups; ++step) {
        const std::size_t g = backward ? groups - 1 - step : step;
        for (std::size_t k = start[g]; k < start[g + 1]; ++k) row(k);
      }
      return;
    }
    const int threads = static_cast<int>(std::min<std::size_t>(
        busy, std::min(exec().concurrency(), Team(1, 1).team_size_max(walk, Kokkos::ParallelForTag()))));
    Kokkos::parallel_for(label, Team(1, threads), walk);
  } else {
    for (std::size_t step = 0; step < groups; ++step) {
      const std::size_t g = backward ? groups - 1 - step : step;
      Kokkos::parallel_for(label, Kokkos::RangePolicy<exec>(start[g], start[g + 1]), row);
    }
  }
}

// z_i = (in_i - sum_(e in row i of ptr) val_e z_(col_e)) / d_i for the rows of order, group by
// group (start[g] .. start[g + 1] - 1 of order, g increasing: grouped_rows), its rows
// independent, each row's sum in stored order. in may be z.
void triangular_sweep(const char* label, const std::vector<std::size_t>& start, const Kokkos::View<int*>& order,
                      const Kokkos::View<std::size_t*>& ptr, const Kokkos::View<int*>& col,
                      const Kokkos::View<double*>& val, const Kokkos::View<double*>& d, ConstVector in, Vector z);

// Throws InvalidArgument naming `function` unless r and z have the preconditioner's n entries.
void check_apply_sizes(const char* function, ConstVector r, Vector z, std::size_t n);

// All 17 significant digits.
inline std::string number_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

// Six significant digits.
inline std::string short_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

}  // namespace ebla::detail

// The thread-count test: each case computes results on fixed inputs and records their bits;
// the program prints one digest per case, and run_threads.cmake runs it on 1, 2 and 3 host
// threads and requires the same lines every time (results bitwise independent of the
// thread count).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace ebla_threads {

/// The bits of a case's results: FNV-1a over everything added, plus a count of bytes.
class Digest {
 public:
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) hash_ = (hash_ ^ b[i]) * 0x100000001b3ull;
    size_ += n;
  }
  template <class T>
  void add(const T& v) {
    bytes(&v, sizeof v);
  }
  template <class T>
  void add(const std::vector<T>& v) {
    add(v.size());
    if (!v.empty()) bytes(v.data(), v.size() * sizeof(T));
  }
  template <class T>
  void add(const T* p, std::size_t n) {
    add(n);
    bytes(p, n * sizeof(T));
  }
  std::uint64_t hash() const { return hash_; }
  std::size_t size() const { return size_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
  std::size_t size_ = 0;
};

struct Case {
  std::string name;
  std::function<void(Digest&)> run;
};

std::vector<Case>& cases();

/// Registers a case at static initialisation: static Register r("name", [](Digest& d) {...});
struct Register {
  Register(std::string name, std::function<void(Digest&)> run) { cases().push_back({std::move(name), std::move(run)}); }
};

}  // namespace ebla_threads

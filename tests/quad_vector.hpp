// A growable array of __float128 for the tests' host references, in place of
// std::vector<__float128>. Where nvcc compiles a test (Kokkos' CUDA backend), every source is
// compiled for the device too, and std::vector<__float128> instantiates
// std::initializer_list<__float128>, whose constexpr members nvcc takes for device functions:
// there is no 128-bit floating point on the device, and the source does not compile. This
// array has no initializer-list constructor; it lives in host memory only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>

namespace ebla_test {

class QuadVector {
public:
  __extension__ typedef __float128 value_type;

  QuadVector() = default;
  explicit QuadVector(std::size_t n, value_type value = 0) : data_(new value_type[n]), size_(n), capacity_(n) {
    std::fill(begin(), end(), value);
  }
  QuadVector(const QuadVector& o) : QuadVector(o.size_) { std::copy(o.begin(), o.end(), begin()); }
  QuadVector(QuadVector&&) noexcept = default;
  QuadVector& operator=(QuadVector o) noexcept {  // copy or move, then swap
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  value_type& operator[](std::size_t i) { return data_[i]; }
  const value_type& operator[](std::size_t i) const { return data_[i]; }
  value_type* begin() { return data_.get(); }
  value_type* end() { return data_.get() + size_; }
  const value_type* begin() const { return data_.get(); }
  const value_type* end() const { return data_.get() + size_; }
  const value_type& back() const { return data_[size_ - 1]; }

  void push_back(value_type x) {
    if (size_ == capacity_) {  // double the capacity, keeping the elements
      QuadVector grown(std::max<std::size_t>(1, 2 * capacity_));
      std::copy(begin(), end(), grown.begin());
      data_ = std::move(grown.data_);
      capacity_ = grown.capacity_;
    }
    data_[size_++] = x;
  }

private:
  std::unique_ptr<value_type[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// A dense rows x cols matrix of __float128 in one QuadVector, row by row: a[i][j]. (A
// std::vector of QuadVector would instantiate std::initializer_list<QuadVector>, which nvcc
// refuses for the same reason.)
class QuadMatrix {
public:
  using value_type = QuadVector::value_type;

  QuadMatrix() = default;
  QuadMatrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), v_(rows * cols) {}

  std::size_t size() const { return rows_; }  // the number of rows
  value_type* operator[](std::size_t i) { return v_.begin() + i * cols_; }
  const value_type* operator[](std::size_t i) const { return v_.begin() + i * cols_; }
  void swap_rows(std::size_t i, std::size_t j) { std::swap_ranges((*this)[i], (*this)[i] + cols_, (*this)[j]); }

private:
  std::size_t rows_ = 0, cols_ = 0;
  QuadVector v_;
};

}  // namespace ebla_test

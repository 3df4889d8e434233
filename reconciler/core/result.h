#pragma once
// Errors as values. A Result<T> holds either a T or an Error whose kind tells the
// reconcile loop what to do next (retry, wait, freeze, report, give up).

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rg::core {

enum class ErrorKind {
  kTransient,     // retry with backoff: network down, 5xx, timeouts
  kInvalidInput,  // bad spec or request: report, freeze, no retry until the input changes
  kConflict,      // the world disagrees with us (duplicate id with another spec, push race)
  kNotFound,      // the thing asked for does not exist
  kUnauthorized,  // missing or wrong credentials
  kFatal,         // nothing sensible to do
};

std::string_view ErrorKindName(ErrorKind kind);

class Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  static Error Transient(std::string m) { return {ErrorKind::kTransient, std::move(m)}; }
  static Error InvalidInput(std::string m) { return {ErrorKind::kInvalidInput, std::move(m)}; }
  static Error Conflict(std::string m) { return {ErrorKind::kConflict, std::move(m)}; }
  static Error NotFound(std::string m) { return {ErrorKind::kNotFound, std::move(m)}; }
  static Error Unauthorized(std::string m) { return {ErrorKind::kUnauthorized, std::move(m)}; }
  static Error Fatal(std::string m) { return {ErrorKind::kFatal, std::move(m)}; }

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  bool IsTransient() const { return kind_ == ErrorKind::kTransient; }
  bool IsNotFound() const { return kind_ == ErrorKind::kNotFound; }
  bool IsConflict() const { return kind_ == ErrorKind::kConflict; }
  bool IsUnauthorized() const { return kind_ == ErrorKind::kUnauthorized; }
  bool IsInvalidInput() const { return kind_ == ErrorKind::kInvalidInput; }

  // "<kind>: <message>", for logs and CLI output.
  std::string ToString() const;

 private:
  ErrorKind kind_;
  std::string message_;
};

// Shaped like std::expected<T, Error>; g++ 12 only ships <expected> with -std=c++2b.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : data_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !ok()
  const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error)
      : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  // REQUIRES: !ok()
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorKind::kFatal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status OkStatus() { return {}; }

}  // namespace rg::core

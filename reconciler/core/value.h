#pragma once
// A small JSON-shaped value: what a YAML document resolves to, what the canonical
// hash is computed over, and what a rendered submission body is. Objects keep their
// keys sorted (std::map), which is exactly the order canonical JSON needs.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace rg::core {

class Value {
 public:
  using Array = std::vector<Value>;
  using Object = std::map<std::string, Value, std::less<>>;

  Value() : data_(nullptr) {}
  Value(std::nullptr_t) : data_(nullptr) {}         // NOLINT(google-explicit-constructor)
  Value(bool b) : data_(b) {}                       // NOLINT(google-explicit-constructor)
  Value(int v) : data_(static_cast<int64_t>(v)) {}  // NOLINT(google-explicit-constructor)
  Value(int64_t v) : data_(v) {}                    // NOLINT(google-explicit-constructor)
  Value(double v) : data_(v) {}                     // NOLINT(google-explicit-constructor)
  Value(const char* s) : data_(std::string(s)) {}   // NOLINT(google-explicit-constructor)
  Value(std::string s) : data_(std::move(s)) {}     // NOLINT(google-explicit-constructor)
  Value(Array a) : data_(std::move(a)) {}           // NOLINT(google-explicit-constructor)
  Value(Object o) : data_(std::move(o)) {}          // NOLINT(google-explicit-constructor)

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }
  bool is_double() const { return std::holds_alternative<double>(data_); }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_array() const { return std::holds_alternative<Array>(data_); }
  bool is_object() const { return std::holds_alternative<Object>(data_); }

  // REQUIRES: the matching is_*() is true.
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_double() const {
    return is_int() ? static_cast<double>(as_int()) : std::get<double>(data_);
  }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const Array& as_array() const { return std::get<Array>(data_); }
  Array& as_array() { return std::get<Array>(data_); }
  const Object& as_object() const { return std::get<Object>(data_); }
  Object& as_object() { return std::get<Object>(data_); }

  // Object access. operator[] turns a null value into an empty object first.
  Value& operator[](const std::string& key);
  // Returns nullptr when this is not an object or has no such key.
  const Value* Find(std::string_view key) const;

  friend bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> data_;
};

// Compact JSON with sorted keys and no whitespace: the canonical form that is hashed.
// Doubles are written in their shortest round-trip form; strings are escaped per RFC 8259
// (control characters as \u00XX, everything else, UTF-8 included, as is).
std::string ToCanonicalJson(const Value& value);

// The same JSON, indented by two spaces, for people and for programs reading a command's
// output: DEL, the C1 controls and the bidi and line controls (escape.h) are \u escapes too, and
// a byte that is not valid UTF-8 is U+FFFD, so the output is valid JSON and shows nothing raw.
std::string ToPrettyJson(const Value& value);

}  // namespace rg::core

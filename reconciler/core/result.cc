#include "reconciler/core/result.h"

namespace rg::core {

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kTransient:
      return "transient";
    case ErrorKind::kInvalidInput:
      return "invalid";
    case ErrorKind::kConflict:
      return "conflict";
    case ErrorKind::kNotFound:
      return "not_found";
    case ErrorKind::kUnauthorized:
      return "unauthorized";
    case ErrorKind::kFatal:
      return "fatal";
  }
  return "unknown";
}

std::string Error::ToString() const {
  std::string out(ErrorKindName(kind_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace rg::core

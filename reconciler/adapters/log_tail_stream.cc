#include "reconciler/adapters/log_tail_stream.h"

#include <cstdint>
#include <utility>

namespace rg::adapters::ray_http {

// A byte-at-a-time reader of one flat JSON object. Only the value of "logs" is decoded and
// kept; the other strings are read to their end and dropped.
class LogTailStream::Impl {
 public:
  explicit Impl(size_t max_bytes) : max_(max_bytes) {}

  void Begin() { *this = Impl(max_); }

  void Write(std::string_view bytes) {
    for (const char c : bytes) {
      if (!error_.empty()) return;
      Step(c);
    }
  }

  core::Result<std::string> Finish(size_t* total_bytes) {
    if (error_.empty() && state_ != State::kEnd) error_ = "the answer ends early";
    if (!error_.empty()) return core::Error::Fatal("logs: " + error_);
    if (tail_.size() > max_) tail_.erase(0, tail_.size() - max_);
    *total_bytes = total_;
    return std::move(tail_);
  }

 private:
  enum class State {
    kStart,        // before '{'
    kBeforeKey,    // after '{' or ','
    kKey,          // in a key
    kAfterKey,     // before ':'
    kBeforeValue,  // after ':'
    kString,       // in a string value
    kScalar,       // in a number, true, false or null
    kAfterValue,   // before ',' or '}'
    kEnd,          // after '}'
  };

  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool IsScalarChar(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
           c == 'E';
  }
  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  void Fail(std::string why) { error_ = std::move(why); }

  void Step(char c) {
    switch (state_) {
      case State::kStart:
        if (c == '{') {
          state_ = State::kBeforeKey;
        } else if (!IsSpace(c)) {
          Fail("the answer is not a JSON object");
        }
        return;
      case State::kBeforeKey:
        if (c == '"') {
          key_.clear();
          in_logs_ = false;
          state_ = State::kKey;
        } else if (c == '}') {
          state_ = State::kEnd;
        } else if (!IsSpace(c)) {
          Fail("a key was expected in the answer");
        }
        return;
      case State::kKey:
        StepKey(c);
        return;
      case State::kAfterKey:
        if (c == ':') {
          state_ = State::kBeforeValue;
        } else if (!IsSpace(c)) {
          Fail("':' was expected in the answer");
        }
        return;
      case State::kBeforeValue:
        StepBeforeValue(c);
        return;
      case State::kString:
        StepString(c);
        return;
      case State::kScalar:
        if (IsScalarChar(c)) return;
        state_ = State::kAfterValue;
        StepAfterValue(c);
        return;
      case State::kAfterValue:
        StepAfterValue(c);
        return;
      case State::kEnd:
        if (!IsSpace(c)) Fail("text follows the answer's object");
        return;
    }
  }

  void StepKey(char c) {
    // Keys are plain ASCII words ("logs"); one with escapes is not "logs" and is skipped.
    if (key_escape_) {
      key_escape_ = false;
      key_ += '\\';  // never "logs"
    } else if (c == '\\') {
      key_escape_ = true;
    } else if (c == '"') {
      state_ = State::kAfterKey;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      Fail("a raw control character in a key of the answer");
    } else if (key_.size() < 16) {
      key_ += c;
    }
  }

  void StepBeforeValue(char c) {
    if (IsSpace(c)) return;
    if (c == '"') {
      in_logs_ = key_ == "logs";
      escape_ = 0;
      state_ = State::kString;
    } else if (c == '{' || c == '[') {
      Fail("a nested value in the answer");
    } else if (IsScalarChar(c)) {
      state_ = State::kScalar;
    } else {
      Fail("a value was expected in the answer");
    }
  }

  void StepAfterValue(char c) {
    if (c == ',') {
      state_ = State::kBeforeKey;
    } else if (c == '}') {
      state_ = State::kEnd;
    } else if (!IsSpace(c)) {
      Fail("',' or '}' was expected in the answer");
    }
  }

  // In a string: `escape_` is 0 outside an escape, 1 after '\', 2 to 5 inside "\uXXXX" (the
  // digits read so far in `unit_`).
  void StepString(char c) {
    if (escape_ == 0) {
      if (c == '"') {
        FlushSurrogate();
        state_ = State::kAfterValue;
      } else if (c == '\\') {
        escape_ = 1;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        Fail("a raw control character in a string of the answer");
      } else {
        FlushSurrogate();
        Emit(c);
      }
      return;
    }
    if (escape_ == 1) {
      StepEscape(c);
      return;
    }
    const int digit = HexValue(c);
    if (digit < 0) {
      Fail("a \\u escape without four hex digits in the answer");
      return;
    }
    unit_ = unit_ * 16 + static_cast<uint32_t>(digit);
    if (++escape_ == 6) {
      escape_ = 0;
      CodeUnit(unit_);
    }
  }

  void StepEscape(char c) {
    escape_ = 0;
    char out = 0;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out = c;
        break;
      case 'b':
        out = '\b';
        break;
      case 'f':
        out = '\f';
        break;
      case 'n':
        out = '\n';
        break;
      case 'r':
        out = '\r';
        break;
      case 't':
        out = '\t';
        break;
      case 'u':
        escape_ = 2;
        unit_ = 0;
        return;
      default:
        Fail("an unknown escape in a string of the answer");
        return;
    }
    FlushSurrogate();
    Emit(out);
  }

  // One UTF-16 code unit of a \u escape: a high surrogate waits for its low one.
  void CodeUnit(uint32_t unit) {
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      FlushSurrogate();
      high_ = unit;
      return;
    }
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
      if (high_ == 0) {
        CodePoint(0xFFFD);  // a lone low surrogate
        return;
      }
      CodePoint(0x10000 + ((high_ - 0xD800) << 10) + (unit - 0xDC00));
      high_ = 0;
      return;
    }
    FlushSurrogate();
    CodePoint(unit);
  }

  // A high surrogate not followed by a low one stands for U+FFFD.
  void FlushSurrogate() {
    if (high_ == 0) return;
    high_ = 0;
    CodePoint(0xFFFD);
  }

  void CodePoint(uint32_t cp) {
    if (cp < 0x80) {
      Emit(static_cast<char>(cp));
    } else if (cp < 0x800) {
      Emit(static_cast<char>(0xC0 | (cp >> 6)));
      Emit(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      Emit(static_cast<char>(0xE0 | (cp >> 12)));
      Emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      Emit(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      Emit(static_cast<char>(0xF0 | (cp >> 18)));
      Emit(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      Emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      Emit(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // A decoded byte of a string: kept when it is the log's, and only the last max_ of them
  // (the front is dropped once twice max_ have gathered: each byte moves at most once).
  void Emit(char c) {
    if (!in_logs_) return;
    ++total_;
    tail_ += c;
    if (tail_.size() >= 2 * max_ + 1) tail_.erase(0, tail_.size() - max_);
  }

  size_t max_;
  State state_ = State::kStart;
  std::string key_;
  bool key_escape_ = false;
  bool in_logs_ = false;
  int escape_ = 0;
  uint32_t unit_ = 0;
  uint32_t high_ = 0;  // a high surrogate waiting for its low one
  std::string tail_;
  size_t total_ = 0;
  std::string error_;
};

LogTailStream::LogTailStream(size_t max_bytes) : impl_(std::make_unique<Impl>(max_bytes)) {}
LogTailStream::~LogTailStream() = default;
void LogTailStream::Begin() { impl_->Begin(); }
void LogTailStream::Write(std::string_view bytes) { impl_->Write(bytes); }
core::Result<std::string> LogTailStream::Finish(size_t* total_bytes) {
  return impl_->Finish(total_bytes);
}

}  // namespace rg::adapters::ray_http

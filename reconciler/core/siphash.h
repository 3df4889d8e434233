#pragma once
// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit hash, fast and, for a key the
// input's author does not know, collision-resistant. The daemon digests Ray's job list with a
// key drawn at start-up to tell that nothing changed since its last pass: a message written
// into a job cannot be crafted to hide a change.

#include <array>
#include <cstdint>
#include <string_view>

namespace rg::core {

class SipHasher {
 public:
  using Key = std::array<uint64_t, 2>;
  explicit SipHasher(Key key);

  // Appends raw bytes; Update("ab") then Update("c") equals Update("abc").
  void Update(std::string_view bytes);
  // Appends a length and then the bytes, so that field boundaries count: ("ab", "c") and
  // ("a", "bc") digest differently.
  void Field(std::string_view bytes);
  void Field(uint64_t value);
  uint64_t Finish() const;

 private:
  void Compress(uint64_t m);
  std::array<uint64_t, 4> v_{};
  uint64_t tail_ = 0;    // the bytes of an unfinished word, little-endian
  uint64_t length_ = 0;  // bytes appended
};

uint64_t SipHash24(SipHasher::Key key, std::string_view bytes);

}  // namespace rg::core

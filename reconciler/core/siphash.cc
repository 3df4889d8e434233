#include "reconciler/core/siphash.h"

#include <bit>

namespace rg::core {
namespace {

void Round(std::array<uint64_t, 4>& v) {
  v[0] += v[1];
  v[1] = std::rotl(v[1], 13);
  v[1] ^= v[0];
  v[0] = std::rotl(v[0], 32);
  v[2] += v[3];
  v[3] = std::rotl(v[3], 16);
  v[3] ^= v[2];
  v[0] += v[3];
  v[3] = std::rotl(v[3], 21);
  v[3] ^= v[0];
  v[2] += v[1];
  v[1] = std::rotl(v[1], 17);
  v[1] ^= v[2];
  v[2] = std::rotl(v[2], 32);
}

}  // namespace

SipHasher::SipHasher(Key key) {
  v_[0] = key[0] ^ 0x736f6d6570736575ULL;
  v_[1] = key[1] ^ 0x646f72616e646f6dULL;
  v_[2] = key[0] ^ 0x6c7967656e657261ULL;
  v_[3] = key[1] ^ 0x7465646279746573ULL;
}

void SipHasher::Compress(uint64_t m) {
  v_[3] ^= m;
  Round(v_);
  Round(v_);
  v_[0] ^= m;
}

void SipHasher::Update(std::string_view bytes) {
  size_t i = 0;
  // Complete the unfinished word byte by byte, then take whole words.
  while (i < bytes.size() && length_ % 8 != 0) {
    tail_ |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * (length_ % 8));
    ++length_;
    ++i;
    if (length_ % 8 == 0) {
      Compress(tail_);
      tail_ = 0;
    }
  }
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word = 0;
    for (size_t k = 0; k < 8; ++k) {
      word |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i + k])) << (8 * k);
    }
    Compress(word);
    length_ += 8;
  }
  for (; i < bytes.size(); ++i) {
    tail_ |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * (length_ % 8));
    ++length_;
  }
}

void SipHasher::Field(std::string_view bytes) {
  Field(static_cast<uint64_t>(bytes.size()));
  Update(bytes);
}

void SipHasher::Field(uint64_t value) {
  std::array<char, 8> le{};
  for (size_t i = 0; i < le.size(); ++i) le[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  Update(std::string_view(le.data(), le.size()));
}

uint64_t SipHasher::Finish() const {
  SipHasher h = *this;
  const uint64_t last = h.tail_ | ((h.length_ & 0xFF) << 56);
  h.Compress(last);
  h.v_[2] ^= 0xFF;
  for (int i = 0; i < 4; ++i) Round(h.v_);
  return h.v_[0] ^ h.v_[1] ^ h.v_[2] ^ h.v_[3];
}

uint64_t SipHash24(SipHasher::Key key, std::string_view bytes) {
  SipHasher h(key);
  h.Update(bytes);
  return h.Finish();
}

}  // namespace rg::core

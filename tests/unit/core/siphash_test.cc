#include "reconciler/core/siphash.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <catch2/catch.hpp>
#include <random>
#include <string>

namespace rg::core {
namespace {

constexpr SipHasher::Key kPaperKey = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

std::string Counting(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += static_cast<char>(i);
  return out;
}

// OpenSSL's SipHash-2-4 with the same key, for the differential check.
uint64_t OpenSslSipHash(const SipHasher::Key& key, const std::string& message) {
  std::array<unsigned char, 16> raw{};
  for (size_t i = 0; i < 8; ++i) {
    raw[i] = static_cast<unsigned char>(key[0] >> (8 * i));
    raw[8 + i] = static_cast<unsigned char>(key[1] >> (8 * i));
  }
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
  REQUIRE(mac != nullptr);
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  size_t size = 8;
  std::array<OSSL_PARAM, 2> params = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                                      OSSL_PARAM_construct_end()};
  REQUIRE(EVP_MAC_init(ctx, raw.data(), raw.size(), params.data()) == 1);
  REQUIRE(EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(message.data()),
                         message.size()) == 1);
  std::array<unsigned char, 8> out{};
  size_t written = 0;
  REQUIRE(EVP_MAC_final(ctx, out.data(), &written, out.size()) == 1);
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value |= static_cast<uint64_t>(out[i]) << (8 * i);
  return value;
}

TEST_CASE("SipHash-2-4 gives the paper's test vectors") {
  CHECK(SipHash24(kPaperKey, Counting(15)) == 0xa129ca6149be45e5ULL);
  CHECK(SipHash24(kPaperKey, "") == 0x726fdb47dd0e0e31ULL);
  CHECK(SipHash24(kPaperKey, Counting(1)) == 0x74f839c593dc67fdULL);
}

TEST_CASE("SipHash-2-4 agrees with OpenSSL for every length and any split of the input") {
  std::mt19937_64 random(7);
  for (size_t n = 0; n < 70; ++n) {
    const SipHasher::Key key = {random(), random()};
    std::string message;
    for (size_t i = 0; i < n; ++i) message += static_cast<char>(random() & 0xFF);
    const uint64_t expected = OpenSslSipHash(key, message);
    CHECK(SipHash24(key, message) == expected);
    const size_t cut = n == 0 ? 0 : random() % n;
    SipHasher split(key);
    split.Update(std::string_view(message).substr(0, cut));
    split.Update(std::string_view(message).substr(cut));
    CHECK(split.Finish() == expected);
  }
}

TEST_CASE("fields keep their boundaries and the key matters") {
  auto fields = [](SipHasher::Key key, std::string_view a, std::string_view b) {
    SipHasher h(key);
    h.Field(a);
    h.Field(b);
    return h.Finish();
  };
  CHECK(fields(kPaperKey, "ab", "c") != fields(kPaperKey, "a", "bc"));
  CHECK(fields(kPaperKey, "ab", "c") == fields(kPaperKey, "ab", "c"));
  CHECK(fields(kPaperKey, "ab", "c") != fields({1, 2}, "ab", "c"));
}

}  // namespace
}  // namespace rg::core

#include <openssl/evp.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "reconciler/core/identity.h"

namespace {

std::string OpenSslSha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

// Deterministic, varied bytes (all 256 values occur) without a random source.
std::string PatternBytes(size_t size, uint32_t seed) {
  std::string out(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    out[i] = static_cast<char>(x & 0xff);
  }
  return out;
}

}  // namespace

TEST_CASE("SHA-256 of the empty string is the FIPS 180-4 value") {
  CHECK(rg::core::Sha256Hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(rg::core::Sha256Hex("") == OpenSslSha256Hex(""));
}

TEST_CASE("SHA-256 matches OpenSSL for every length from 0 to 200 bytes") {
  for (size_t size = 0; size <= 200; ++size) {
    std::string data = PatternBytes(size, static_cast<uint32_t>(size));
    INFO("size " << size);
    CHECK(rg::core::Sha256Hex(data) == OpenSslSha256Hex(data));
  }
}

TEST_CASE("SHA-256 matches OpenSSL around the padding boundaries") {
  for (size_t size : {55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 127u, 128u, 129u}) {
    for (char fill : {'\0', 'a', '\xff'}) {
      std::string data(size, fill);
      INFO("size " << size << " fill " << static_cast<int>(fill));
      CHECK(rg::core::Sha256Hex(data) == OpenSslSha256Hex(data));
    }
  }
}

TEST_CASE("SHA-256 matches OpenSSL on 1 MB of data") {
  std::string data = PatternBytes(1024 * 1024, 7);
  CHECK(rg::core::Sha256Hex(data) == OpenSslSha256Hex(data));
  data[512 * 1024] ^= 1;
  CHECK(rg::core::Sha256Hex(data) == OpenSslSha256Hex(data));
}

TEST_CASE("SHA-256 output is 64 lowercase hex digits") {
  std::string hex = rg::core::Sha256Hex("abc");
  CHECK(hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
}

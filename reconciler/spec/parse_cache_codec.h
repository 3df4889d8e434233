#pragma once
// The binary form of parse results, for the persistent parse cache (adapters/parse_cache.h): a
// JobSpec file as loaded for the desired state, a parsed cluster file, a status record. The
// layout is fixed: little-endian fixed-width integers, strings as a 32-bit length and their
// bytes, doubles as their 64 bits, optionals and variants behind a one-byte tag, maps in key
// order. Encoding is deterministic and lossless (decoding gives back an equal value).
//
// Decoding treats its input as hostile, since it is read from disk: a truncated input, a tag
// or enum out of range, map keys out of order, a count larger than the bytes left, nesting
// deeper than a YAML document can be, or bytes left over are an error, never a crash, a read
// past the end or a large allocation.
//
// When a member is added to one of the encoded structs, a static_assert in
// parse_cache_codec.cc fails: encode and decode the member there, extend the round-trip test
// (tests/unit/spec/parse_cache_codec_test.cc) and bump kParseCacheFormatVersion.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/status_model.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::spec {

// Bumped whenever the encoding changes, or what the parsers produce for a given text does:
// files of another version are never read.
inline constexpr uint32_t kParseCacheFormatVersion = 12;

// Appends the fixed-width forms to a string.
class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v);
  void U64(uint64_t v);
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void F64(double v);
  void Bool(bool v) { U8(v ? 1 : 0); }
  void String(std::string_view s);
  // Raw bytes, no length.
  void Bytes(std::string_view s) { out_.append(s); }

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
};

// Reads the fixed-width forms from a byte range. Failure is sticky: once a read runs past the
// end (or the caller calls Fail), every later read returns zero or empty and ok() is false, so
// a decoder checks once at the end. Never reads outside the range.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  uint8_t U8();
  uint32_t U32();
  uint64_t U64();
  int64_t I64() { return static_cast<int64_t>(U64()); }
  double F64();
  bool Bool();  // 0 or 1; anything else fails
  std::string String() { return std::string(StringView()); }
  // Points into the input: valid as long as it is.
  std::string_view StringView();
  // A count of items each at least `min_item_bytes` long; fails when fewer bytes are left
  // than that many items need, so that no count can make a decoder allocate beyond its input.
  uint32_t Count(size_t min_item_bytes);
  // Exactly `n` raw bytes.
  std::string_view Bytes(size_t n);

  void Fail() { failed_ = true; }
  bool ok() const { return !failed_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  size_t position() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  // The next `n` bytes, or nullptr (and failed) when fewer are left.
  const char* Take(size_t n);

  std::string_view bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// The parts, for callers that put several in one record (the cache stores a file's text
// beside its parse result). Decode* leave `out` unspecified when the reader fails.
void EncodeTo(ByteWriter& w, const LoadedJobSpec& v);
void EncodeTo(ByteWriter& w, const Parsed<core::RayConfig>& v);
void EncodeTo(ByteWriter& w, const core::StatusRecord& v);
void DecodeFrom(ByteReader& r, LoadedJobSpec& out);
void DecodeFrom(ByteReader& r, Parsed<core::RayConfig>& out);
void DecodeFrom(ByteReader& r, core::StatusRecord& out);

// Whole encodings. Decode* fail with kInvalidInput (naming the byte where the input went
// wrong) on anything but exactly one encoded value.
std::string EncodeLoadedJobSpec(const LoadedJobSpec& v);
std::string EncodeParsedRayConfig(const Parsed<core::RayConfig>& v);
std::string EncodeStatusRecord(const core::StatusRecord& v);
core::Result<LoadedJobSpec> DecodeLoadedJobSpec(std::string_view bytes);
core::Result<Parsed<core::RayConfig>> DecodeParsedRayConfig(std::string_view bytes);
core::Result<core::StatusRecord> DecodeStatusRecord(std::string_view bytes);

// XXH64 (seed 0) of `bytes`: the cache file's checksum. Fast (several GB/s) and good at
// catching torn writes and flipped bits; not a defence against someone forging a file.
uint64_t Hash64(std::string_view bytes);

// The same over bytes given in pieces: Final() after Update(a), Update(b) is Hash64(a + b).
class Hasher64 {
 public:
  Hasher64();
  void Update(std::string_view bytes);
  uint64_t Final() const;

 private:
  void Stripe(const char* p);  // one 32-byte stripe into the four lanes

  std::array<uint64_t, 4> lanes_;
  std::array<char, 32> pending_{};  // the start of a stripe not yet whole
  size_t pending_size_ = 0;
  uint64_t total_ = 0;
};

}  // namespace rg::spec

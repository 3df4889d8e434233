// The parse cache's binary codec on arbitrary bytes read as a cache entry (the first byte picks
// the kind: JobSpec file, cluster file, status record). Properties: nothing crashes, reads out
// of bounds or allocates beyond its input; and whatever decodes encodes to bytes that decode to
// the same encoding again (compared as bytes: a NaN is not equal to itself).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reconciler/spec/parse_cache_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

template <typename Decode, typename Encode>
void CheckRoundTrip(std::string_view bytes, Decode decode, Encode encode) {
  auto decoded = decode(bytes);
  if (!decoded.ok()) {
    RG_FUZZ_CHECK(decoded.error().IsInvalidInput());
    return;
  }
  const std::string encoded = encode(*decoded);
  auto again = decode(encoded);
  RG_FUZZ_CHECK(again.ok());
  RG_FUZZ_CHECK(encode(*again) == encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace spec = rg::spec;
  switch (data[0] % 3) {
    case 0:
      CheckRoundTrip(
          bytes, [](std::string_view b) { return spec::DecodeLoadedJobSpec(b); },
          [](const spec::LoadedJobSpec& v) { return spec::EncodeLoadedJobSpec(v); });
      break;
    case 1:
      CheckRoundTrip(
          bytes, [](std::string_view b) { return spec::DecodeParsedRayConfig(b); },
          [](const spec::Parsed<rg::core::RayConfig>& v) {
            return spec::EncodeParsedRayConfig(v);
          });
      break;
    default:
      CheckRoundTrip(
          bytes, [](std::string_view b) { return spec::DecodeStatusRecord(b); },
          [](const rg::core::StatusRecord& v) { return spec::EncodeStatusRecord(v); });
      break;
  }
  return 0;
}

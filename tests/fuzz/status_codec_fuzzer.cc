// The status codec on arbitrary bytes read as a status file. Properties: nothing crashes or
// trips a sanitizer; a file that decodes, encoded again, decodes to the same record; and the
// encoding of that record is a fixed point (encoding is deterministic, so an unchanged record
// never makes a commit).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "reconciler/spec/status_codec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "status/fuzz.yaml";

  const auto decoded = rg::spec::DecodeStatusYaml(text, path);
  if (!decoded.ok()) {
    RG_FUZZ_CHECK(decoded.error().IsInvalidInput());
    RG_FUZZ_CHECK(decoded.error().message().starts_with(path));
    return 0;
  }
  const std::string encoded = rg::spec::EncodeStatusYaml(*decoded);
  const auto again = rg::spec::DecodeStatusYaml(encoded, path);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n--- encoded:\n%s", again.error().message().c_str(), encoded.c_str());
  }
  RG_FUZZ_CHECK(again.ok());
  RG_FUZZ_CHECK(*again == *decoded);
  RG_FUZZ_CHECK(rg::spec::EncodeStatusYaml(*again) == encoded);
  return 0;
}

// A stand-in for libFuzzer's driver in builds without it (g++, the debug and asan presets):
// runs LLVMFuzzerTestOneInput once on every file named on the command line or found under a
// directory named there, so the seed corpora and every input a fuzzer once crashed on are
// replayed as ordinary tests.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> InputsUnder(const fs::path& root) {
  std::vector<fs::path> inputs;
  if (fs::is_regular_file(root)) {
    inputs.push_back(root);
  } else {
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path root(argv[i]);
    if (!fs::exists(root)) {
      std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 2;
    }
    for (const fs::path& input : InputsUnder(root)) {
      std::ifstream in(input, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      if (!in && !in.eof()) {
        std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
        return 2;
      }
      // Named first, so that the input a failed property aborts on is the last one shown.
      std::printf("replay: %s\n", input.c_str());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replay: %zu inputs, no property failed\n", replayed);
  return replayed > 0 ? 0 : 1;
}

// A stand-in for a program run by a shell command under test: appends each of its arguments
// (argv[1..]), each followed by a NUL byte, to the file named by $ARGV_PRINTER_OUT, so a test
// can see exactly which words the shell produced.
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const char* out_path = std::getenv("ARGV_PRINTER_OUT");
  if (out_path == nullptr) return 2;
  std::FILE* out = std::fopen(out_path, "ab");
  if (out == nullptr) return 3;
  for (int i = 1; i < argc; ++i) {
    std::fwrite(argv[i], 1, std::strlen(argv[i]) + 1, out);
  }
  return std::fclose(out) == 0 ? 0 : 4;
}

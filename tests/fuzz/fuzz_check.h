#pragma once
// Shared by the fuzz targets: a property that must hold for every input. A failed check prints
// what broke and aborts, which libFuzzer (and the corpus replay) reports as a crash with the
// input that caused it.

#include <cstdio>
#include <cstdlib>

#define RG_FUZZ_CHECK(condition)                                                                 \
  do {                                                                                           \
    if (!(condition)) {                                                                          \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)

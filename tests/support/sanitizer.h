#pragma once
// RG_UNDER_ASAN: this translation unit is built with AddressSanitizer, whichever compiler
// builds it. GCC defines __SANITIZE_ADDRESS__; clang, which builds the ASan preset, answers
// __has_feature(address_sanitizer) instead (docs/testing.md, "The ASan+UBSan stage").

#if defined(__SANITIZE_ADDRESS__)
#define RG_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_UNDER_ASAN 1
#endif
#endif

// The target that compiles the tests' precompiled header (tests/CMakeLists.txt, RG_TEST_PCH).

# The fuzz configuration (preset `fuzz`, option MEGASIM_FUZZ): every module the loaders use is
# compiled with libFuzzer's coverage instrumentation and ASan + UBSan, so a crash, an overflow or
# undefined behaviour anywhere under a loader stops the run; the targets in tests/fuzz/ link
# libFuzzer's main. MEGASIM_FUZZ_OK says whether this compiler can do that: when it cannot (GCC,
# or clang without Debian's libclang-rt-14-dev), nothing is instrumented and tests/fuzz/
# registers tests that report themselves skipped.
include(CheckCXXSourceCompiles)

set(MEGASIM_FUZZ_OK OFF)
set(MEGASIM_FUZZ_WHY "")
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(MEGASIM_FUZZ_WHY "the compiler is ${CMAKE_CXX_COMPILER_ID}, not clang (apt install clang)")
else()
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
  check_cxx_source_compiles([[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
  ]] MEGASIM_LIBFUZZER_LINKS)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(MEGASIM_LIBFUZZER_LINKS)
    set(MEGASIM_FUZZ_OK ON)
  else()
    set(MEGASIM_FUZZ_WHY "clang cannot link libFuzzer (apt install libclang-rt-14-dev)")
  endif()
endif()

if(MEGASIM_FUZZ_OK)
  # Debug without full debug info: asserts stay on (one firing on an input is a finding), and
  # line tables are all a sanitizer's stack trace needs. -O0: this build is part of `make test`,
  # and -O1 cost 30-40 % more compile time (about a minute on 2 cores) for inputs that run
  # roughly twice as fast, which the 3-second runs do not need.
  set(CMAKE_CXX_FLAGS_DEBUG "-gline-tables-only")
  add_compile_options(-O0 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
else()
  message(STATUS "megasim: fuzz targets not built: ${MEGASIM_FUZZ_WHY}")
endif()

// An nccl-tests log, as `megasim calibrate import-nccl-tests` reads it.
#include "calibrate/nccl_tests_import.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "nccl-tests.log", [](const std::filesystem::path& f) {
    megasim::calibrate::import_nccl_tests_file(f);
  });
}

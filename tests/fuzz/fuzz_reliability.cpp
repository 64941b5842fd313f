// A reliability preset (reliability/*.json) and the failure-rate file it names.
#include "io/reliability_loader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "reliability.json", [](const std::filesystem::path& f) {
    megasim::io::load_reliability_file(f);
  });
}

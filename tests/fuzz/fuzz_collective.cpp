// The collective constants of a device profile read on their own (the collective reader's
// file entry point, which load_device_profile() does not check first).
#include "io/collective_constants_reader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "device.json", [](const std::filesystem::path& f) {
    megasim::io::read_collective_constants(f);
  });
}

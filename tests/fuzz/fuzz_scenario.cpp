// A scenario, then everything it names checked together (io::load_inputs), as `simulate` does.
#include "io/inputs.h"
#include "io/scenario.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "scenario.json", [](const std::filesystem::path& f) {
    megasim::io::load_inputs(megasim::io::load_scenario(f));
  });
}

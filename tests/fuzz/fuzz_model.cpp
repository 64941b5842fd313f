// A model file (models/*.json).
#include "io/model_loader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "model.json", [](const std::filesystem::path& f) {
    megasim::io::load_model(f);
  });
}

// JSON syntax and the reader's bounds (depth, value count, string length, binary bytes).
#include "io/json_reader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "input.json", [](const std::filesystem::path& f) {
    megasim::io::parse_json_file(f);
  });
}

// The self-test's target: a loader with a planted bug, which the fuzz tests must catch. A JSON
// object whose "planted" is "bug!" makes it read one byte past a heap buffer. Its seed holds
// exactly that, so the test does not hang on the luck of the mutations: what it checks is the
// chain from the sanitizer's report to a failed test (exit 1, never CTest's skip code 77).
#include <memory>

#include "io/json_reader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "planted.json", [](const std::filesystem::path& f) {
    const megasim::io::Json doc = megasim::io::parse_json_file(f);
    if (!doc.is_object() || !doc.contains("planted") || !doc["planted"].is_string()) return;
    if (doc["planted"].get<std::string>() != "bug!") return;
    const auto buffer = std::make_unique<char[]>(4);
    volatile char past_the_end = buffer[4];  // the planted bug
    (void)past_the_end;
  });
}

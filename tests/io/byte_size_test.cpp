// --max-memory's sizes (io/byte_size.h): plain bytes, binary and decimal units, and refusals
// that name the option and the accepted forms.
#include <doctest/doctest.h>

#include <string>

#include "io/byte_size.h"
#include "input_error_of.h"

using megasim::io::parse_byte_size;
using megasim::test::input_error_of;

TEST_CASE("byte sizes: bytes, KiB..TiB, kB..TB") {
  CHECK(parse_byte_size("1073741824", "--max-memory").value() == 1073741824.0);
  CHECK(parse_byte_size("8GiB", "--max-memory").value() == 8.0 * 1073741824);
  CHECK(parse_byte_size("512MiB", "--max-memory").value() == 512.0 * 1048576);
  CHECK(parse_byte_size("1.5KiB", "--max-memory").value() == 1536.0);
  CHECK(parse_byte_size("2GB", "--max-memory").value() == 2e9);
  CHECK(parse_byte_size("1B", "--max-memory").value() == 1.0);
}

TEST_CASE("byte sizes: anything else is refused, naming the option") {
  for (const std::string bad : {"", "GiB", "8XB", "8 GiB", "-1", "0", "0.5", "1e9", "nan",
                                "inf", "2000000PB", "99999999999999999999999TiB"}) {
    const std::string e = input_error_of([&] { parse_byte_size(bad, "--max-memory"); });
    INFO("input: '", bad, "' message: ", e);
    CHECK(e.rfind("--max-memory " + bad + ": ", 0) == 0);
    CHECK(e.find("e.g. 8GiB") != std::string::npos);
  }
}

// InputError's message as the user sees it: what it quotes of the user's input cannot cut it
// short (NUL) or drive the terminal (ESC).
#include <doctest/doctest.h>

#include <string>

#include "engine/error.h"

TEST_CASE("an error message writes its control bytes as \\xNN and keeps newlines and tabs") {
  using namespace std::string_literals;
  const megasim::InputError e("data type 'flo\0at' and --cluster 'sel\x1b[31m'\n\tnext\x7f"s);
  CHECK(std::string(e.what()) ==
        "data type 'flo\\x00at' and --cluster 'sel\\x1b[31m'\n\tnext\\x7f");
  // UTF-8 passes as it is.
  CHECK(std::string(megasim::InputError("× µs").what()) == "× µs");
}

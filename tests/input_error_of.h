// Test helper: the message of the InputError a callable throws, "" when it throws none, so a
// test can check that an error names the key and the numbers that clash.
#pragma once

#include <string>

#include "engine/error.h"

namespace megasim::test {

template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace megasim::test

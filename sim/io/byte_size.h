// A size in bytes as a user writes it on the command line (--max-memory 8GiB): a positive
// number, plain bytes or with a unit, binary (KiB, MiB, GiB, TiB) or decimal (kB, MB, GB, TB).
#pragma once

#include <string>

#include "engine/units.h"

namespace megasim::io {

// Sizes above this (1 EiB) are refused: no machine has that much memory, and a count of bytes
// past it is a typo.
constexpr double kMaxByteSize = 1152921504606846976.0;

// The size `text` names; InputError naming `option` and the accepted forms otherwise.
Bytes parse_byte_size(const std::string& text, const std::string& option);

}  // namespace megasim::io

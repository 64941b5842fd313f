// Must not compile: megasim_engine does not link megasim_io, so "io/scenario.h" is not on
// this target's include path. tests/CMakeLists.txt runs this build and expects it to fail.
#include "io/scenario.h"
int layering_probe() { return 0; }

#include "workload/parallel_plan.h"

namespace megasim::workload {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* to_string(Optimizer o) { return o == Optimizer::kAdam ? "adam" : "lamb"; }

const char* to_string(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp16"; }

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::kGpipe: return "gpipe";
    case Schedule::kOneFOneB: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
    case Schedule::kZeroBubble: return "zero-bubble";
  }
  return "?";
}

}  // namespace megasim::workload

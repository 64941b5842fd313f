// The command line's value parsers, on the default scenario: each line of the input is one
// option's value, "--set PATH=VALUE" (applied to the scenario, then everything it names loaded
// and checked, as simulate does, with the work and memory bounds), "--vary PATH=V1,V2,..."
// (plan::parse_axis and the combination count, then each value set on the scenario as compare
// does), or "--max-memory SIZE" (io::parse_byte_size). A line with none of these prefixes is
// a --set value. Only InputError may come out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/error.h"
#include "io/byte_size.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "plan/compare.h"
#include "plan/work_bounds.h"

namespace {

const std::string kScenario = MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json";
// Values of an axis loaded at most: each load reads every file the scenario names.
constexpr std::size_t kMaxValuesLoaded = 3;

bool take(std::string& line, const std::string& prefix) {
  if (line.rfind(prefix, 0) != 0) return false;
  line.erase(0, prefix.size());
  return true;
}

void load_and_bound(const std::vector<std::string>& sets) {
  const megasim::io::Inputs in =
      megasim::io::load_inputs(megasim::io::load_scenario(kScenario, sets));
  megasim::plan::check_step_work(in, true, {});
  megasim::plan::check_step_memory(in, true, true, {});
}

void run(const std::string& text) {
  std::vector<std::string> sets, vary;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (take(line, "--max-memory ")) {
      megasim::io::parse_byte_size(line, "--max-memory");
    } else if (take(line, "--vary ")) {
      vary.push_back(line);
    } else {
      take(line, "--set ");
      sets.push_back(line);
    }
  }
  std::vector<megasim::plan::Axis> axes;
  for (const auto& v : vary) axes.push_back(megasim::plan::parse_axis(v));
  if (!axes.empty()) megasim::plan::count_combinations(axes);
  load_and_bound(sets);
  for (const auto& a : axes) {
    for (std::size_t i = 0; i < a.values.size() && i < kMaxValuesLoaded; ++i) {
      std::vector<std::string> variant = sets;
      variant.push_back(a.path + "=" + a.values[i]);
      try {
        load_and_bound(variant);
      } catch (const megasim::InputError&) {
        // compare lists a variant that cannot run with its reason.
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const megasim::InputError&) {
  }
  return 0;
}

// The inputs of a shipped scenario as `megasim search` loads them (no run level), for the
// search tests.
#pragma once

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include <utility>

#include "io/inputs.h"
#include "io/scenario.h"
#include "plan/search.h"

namespace megasim::test {

inline io::Inputs search_inputs(const std::string& scenario) {
  io::InputOptions o;
  o.run_level = false;
  return io::load_inputs(
      io::load_scenario(std::filesystem::path(MEGASIM_SOURCE_DIR) / scenario, {}), o);
}

// The one plan `o` leaves, estimated and simulated event by event: its step times in seconds,
// (analytic, event level).
inline std::pair<double, double> one_plan_step_times(const io::Inputs& in,
                                                     const plan::SearchOptions& o) {
  const plan::SearchResult r = plan::search(in, o);
  REQUIRE(r.ranked.size() == 1);
  REQUIRE(r.ranked[0].event);
  const double analytic = r.ranked[0].analytic.step_time.to_seconds();
  const double event = r.ranked[0].event->step_time.to_seconds();
  MESSAGE("analytic " << analytic << " s, event " << event << " s");
  return {analytic, event};
}

}  // namespace megasim::test

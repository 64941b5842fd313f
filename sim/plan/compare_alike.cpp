// compare's values_alike: the values of an axis that ran to the same step wherever they ran,
// and sets_not_run_in_all: its --set keys that changed nothing in every variant (plan/compare.h).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "plan/compare.h"

namespace megasim::plan {

namespace {
bool same_step(const Variant& a, const Variant& b) {
  if (!a.step || !b.step) return false;
  const step::StepPrediction& x = *a.step;
  const step::StepPrediction& y = *b.step;
  return x.step_time == y.step_time && x.mfu == y.mfu && x.hfu == y.hfu &&
         x.tokens_per_step == y.tokens_per_step && x.events == y.events &&
         peak_memory_gib(x) == peak_memory_gib(y) && a.device_memory == b.device_memory;
}

// The variants by the values of every axis but one: (the others' values) → (its value →
// variant). Twins are looked up, not searched: 4,096 variants are compared in milliseconds.
using Twins = std::map<std::string, std::map<std::string, std::size_t>>;
Twins twins_across(const std::vector<Variant>& variants, std::size_t axis) {
  Twins twins;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    std::string others;
    for (std::size_t k = 0; k < variants[i].set.size(); ++k) {
      if (k != axis) others.append(variants[i].set[k].second).push_back('\0');
    }
    twins[others][variants[i].set[axis].second] = i;
  }
  return twins;
}

// Whether values `u` and `w` of the axis give the same step wherever one of them runs.
bool alike(const std::vector<Variant>& variants, const Twins& twins, const std::string& u,
           const std::string& w) {
  bool any = false;
  for (const auto& [others, by_value] : twins) {
    const auto a = by_value.find(u), b = by_value.find(w);
    if (a == by_value.end() || b == by_value.end()) continue;
    const Variant& x = variants[a->second];
    const Variant& y = variants[b->second];
    if (!x.step && !y.step) continue;
    if (!same_step(x, y)) return false;
    any = true;
  }
  return any;
}
}  // namespace

std::vector<std::string> values_alike(const std::vector<Variant>& variants) {
  std::vector<std::string> lines;
  if (variants.empty()) return lines;
  for (std::size_t axis = 0; axis < variants.front().set.size(); ++axis) {
    std::vector<std::string> values;  // in the order the axis lists them
    for (const Variant& v : variants) {
      const std::string& value = v.set[axis].second;
      if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
    }
    const Twins twins = twins_across(variants, axis);
    std::vector<bool> taken(values.size(), false);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (taken[i]) continue;
      std::string group = values[i];
      for (std::size_t j = i + 1; j < values.size(); ++j) {
        if (taken[j] || !alike(variants, twins, values[i], values[j])) continue;
        taken[j] = true;
        group += ", " + values[j];
      }
      if (group != values[i]) lines.push_back(variants.front().set[axis].first + "=" + group);
    }
  }
  return lines;
}

std::vector<std::string> sets_not_run_in_all(const std::vector<Variant>& variants) {
  const auto ran = std::find_if(variants.begin(), variants.end(),
                                [](const Variant& v) { return v.step.has_value(); });
  std::vector<std::string> out;
  if (ran == variants.end()) return out;
  for (const std::string& line : ran->sets_not_run) {
    const bool everywhere = std::all_of(variants.begin(), variants.end(), [&](const Variant& v) {
      return !v.step ||
             std::find(v.sets_not_run.begin(), v.sets_not_run.end(), line) != v.sets_not_run.end();
    });
    if (everywhere) out.push_back(line);
  }
  return out;
}

}  // namespace megasim::plan

// The megasim subcommands. Each add_* function registers one subcommand on the application
// with a callback that does its work; callbacks throw InputError for bad user input (exit 2)
// and let anything else escape as an internal error (exit 1). See main.cpp.
//
// QuietExit ends the command with `status` and prints nothing: a rank of an mpirun job whose
// refusal rank 0 has already said (cmd_search.cpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <system_error>

#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "engine/error.h"
#include "io/byte_size.h"
#include "plan/work_bounds.h"

namespace megasim::cli {

// The largest --max-events taken: far past any step or run that fits in memory.
constexpr std::int64_t kMaxEventsOption = 1'000'000'000'000'000;

struct QuietExit {
  int status;
};

// Runs a command on a scenario read with `sets` (--set): its bad-input error, wherever the check
// that found it runs, ends with a line naming them, since the file holds none of those values
// (errors named only the file until 2026-12-05, and a refusal of the run level, the memory model
// or a work bound said nothing of them). compare's variants say their values in their labels.
template <typename Command>
void naming_sets(const std::vector<std::string>& sets, Command command) {
  try {
    command();
  } catch (const InputError& e) {
    if (sets.empty()) throw;
    throw InputError(
        fmt::format("{}\n(the scenario read with --set {} in place of the file's values)", e.what(),
                    fmt::join(sets, " --set ")));
  }
}

// An option that must be above zero. CLI11's PositiveNumber says "Value 0 not in range
// 0.000000 to 1.797...e+308"; this says what is wanted.
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0.0;
        try {
          v = std::stod(text);
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return v > 0.0 ? std::string() : "must be above 0, found " + text;
      },
      "POSITIVE");
}

// A count option: digits only, from `least` to `most`, checked on the text before CLI11 converts
// it (its "Could not convert: --top = 99999999999999" for a value past the type, and a value
// past 2^63 taken as the largest one, silently).
inline CLI::Validator whole_number(std::int64_t least, std::int64_t most) {
  return CLI::Validator(
      [least, most](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size() && v >= least && v <= most)
          return {};
        return "'" + text + "' is not a whole number from " + std::to_string(least) + " to " +
               std::to_string(most);
      },
      // Shown after the option's type ("--trials INT:INT" read as a range until 2026-12-05).
      "in [" + std::to_string(least) + ", " + std::to_string(most) + "]");
}

// Says on stderr each --set whose key starts with one of `prefixes` (the run level's keys
// where a command prices none of it: compare's step, search's failure-free objectives), that
// it changes nothing there (each was taken without a word until 2026-12-07, a planner's
// trial). `why` follows the key.
inline void note_sets_unpriced(const std::vector<std::string>& sets,
                               const std::vector<std::string>& prefixes, const char* why) {
  for (const std::string& set : sets) {
    for (const std::string& prefix : prefixes) {
      if (set.rfind(prefix, 0) != 0) continue;
      std::fprintf(stderr, "megasim: warning: --set %s: %s, so it changes nothing here\n",
                   set.c_str(), why);
      break;
    }
  }
}

// The step's work bounds (plan/work_bounds.h) as simulate and compare take them: --max-events,
// and --max-memory, read when the command runs (before the work, so a bad one costs nothing).
struct WorkLimitOptions {
  std::int64_t max_events = plan::kDefaultMaxEvents;
  std::string max_memory;  // as given
  plan::WorkLimits limits() const {
    return {max_events, max_memory.empty() ? plan::kDefaultMaxMemory
                                           : io::parse_byte_size(max_memory, "--max-memory")};
  }
};
// Registers both on `cmd`: `refused` names what each refuses ("a step or run"), `note` follows
// the default in --max-events's help.
inline void add_work_limit_options(CLI::App* cmd, WorkLimitOptions& o, const std::string& refused,
                                   const std::string& note) {
  cmd->add_option(
         "--max-events", o.max_events,
         "Refuse " + refused +
             " whose work, counted from the plan before it runs "
             "(pipeline passes, a lower bound on the events; a run's checkpoints and expected "
             "failures, an estimate), passes this (default 20000000" +
             note + ")")
      ->check(whole_number(1, kMaxEventsOption));
  cmd->add_option("--max-memory", o.max_memory,
                  "Refuse " + refused +
                      " whose memory, estimated from the plan before the "
                      "work, passes this many bytes (8GiB, 512MiB, 1073741824; default 8GiB)");
}

// Every option of `app` and its subcommands that takes a value refuses an empty one ("--name
// ''" was taken as not given, the default used without a word), but the output files', which
// io::OutputFiles refuses itself with what to give instead.
void refuse_empty_values(CLI::App& app);

// The exit status of a command's failure: 2 for bad input (InputError), 1 for anything else.
int exit_status(const std::exception& e);
// Says it on stderr as main() does ("megasim: error: ..." or "megasim: internal error: ...";
// with a rank >= 0, "(rank N)" after the kind) and returns exit_status(e).
int report_error(const std::exception& e, int rank = -1);

void add_simulate_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_collective_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_search_command(CLI::App& app);

}  // namespace megasim::cli

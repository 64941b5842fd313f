// How a command's failure reaches the user (cli/commands.h): one paragraph on stderr and the
// exit status, the same for main() and for the ranks of an mpirun search.
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "engine/error.h"

namespace megasim::cli {

int exit_status(const std::exception& e) {
  return dynamic_cast<const InputError*>(&e) != nullptr ? 2 : 1;
}

int report_error(const std::exception& e, int rank) {
  const int status = exit_status(e);
  const char* kind = status == 2 ? "error" : "internal error";
  if (rank >= 0) {
    std::fprintf(stderr, "megasim: %s (rank %d): %s\n", kind, rank, e.what());
  } else {
    std::fprintf(stderr, "megasim: %s: %s\n", kind, e.what());
  }
  return status;
}

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& text) -> std::string {
        return text.empty() ? "empty value; give one, or leave the option out" : std::string();
      },
      "");
  for (CLI::Option* o : app.get_options()) {
    if (o->get_expected_min() == 0) continue;  // a flag
    bool output = false;
    for (const auto& name : o->get_lnames())
      output = output || name == "output" || name == "trace" || name == "html";
    if (!output) o->check(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    refuse_empty_values(*sub);
}

}  // namespace megasim::cli

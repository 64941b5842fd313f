// megasim: the command-line front end. Exit status: 0 success, 2 bad user input (one
// paragraph on stderr), 1 internal error.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "engine/error.h"

#ifndef MEGASIM_VERSION
#define MEGASIM_VERSION "unknown"
#endif

namespace {

// A descriptor among 0-2 that the caller closed (`>&-`) would be the next file megasim opens:
// search's --results file took descriptor 1 and the text report went into it (a trial,
// 2026-12-07). Each closed one is held by /dev/null opened for reading, so writes to standard
// output or error still fail as they would on a closed descriptor and nothing else lands there.
// Upward from 0, so the open takes the closed descriptor itself: every lower one is open by
// then.
void hold_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) (void)::open("/dev/null", O_RDONLY);
  }
}

int run(int argc, char** argv) {
  CLI::App app{"megasim: discrete-event simulator of GPU training clusters with real-kernel "
               "calibration"};
  app.set_version_flag("--version", "megasim " MEGASIM_VERSION);
  app.require_subcommand(1);
  megasim::cli::add_simulate_command(app);
  megasim::cli::add_inspect_command(app);
  megasim::cli::add_collective_command(app);
  megasim::cli::add_calibrate_command(app);
  megasim::cli::add_validate_command(app);
  megasim::cli::add_compare_command(app);
  megasim::cli::add_search_command(app);
  megasim::cli::refuse_empty_values(app);
  // A first word that names no subcommand is said so (CLI11 said only "A subcommand is
  // required" for `megasim simulat`).
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "megasim: error: '%s' is not a subcommand; the subcommands are %s\n",
                   megasim::printable(argv[1]).c_str(), names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const megasim::cli::QuietExit& e) {
    return e.status;
  } catch (const CLI::Success& e) {
    // --help and --version print on standard output: a full disk or closed pipe there is a
    // failed write as any report's (exit 0 with nothing written until 2026-12-06).
    const int status = app.exit(e);
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "megasim: error: standard output: write failed (%s)\n",
                   std::strerror(errno));
      return 2;
    }
    return status;
  } catch (const CLI::ParseError& e) {
    // Bad arguments are bad input like any other: the same prefix and status, and the control
    // bytes of what they quote written as InputError writes them (raw until 2026-12-05).
    std::fprintf(stderr, "megasim: error: %s\nRun with --help for more information.\n",
                 megasim::printable(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    return megasim::cli::report_error(e);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  hold_standard_descriptors();
  // A refusal while the app is built, before the parse, is bad input as any other (validate's
  // defaults under $MEGASIM_DATA_DIR were read there until a review of 2026-12-07).
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    return megasim::cli::report_error(e);
  }
}

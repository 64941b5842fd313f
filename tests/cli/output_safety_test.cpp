// Outputs never clobber what a command read, never replace a device or directory, and appear
// all together or not at all (io/output.h); stdout writes are checked; a name never finds a
// stray file of the working directory (io/resolve.h). Each case below failed before the fix.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.h"

namespace fs = std::filesystem;
using megasim::test::fresh_dir;
using megasim::test::read_all;
using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {
const std::string kScenario = std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json";

// A shell's status shows megasim ended at a write by `sig`: its death by the signal (128 + sig
// from the shell, or the signal itself where the shell ran megasim in its place), or, where the
// runner ignores the signal (an ignored signal stays ignored in the child), exit 2 with the
// write's own error (`error`) on stderr. Not a refusal before the write, which an empty output
// folder and a non-zero status alone would also show (a review, 2026-12-05).
bool ended_at_write_by(int status, int sig, const std::string& stderr_text, const char* error) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == sig;
  if (!WIFEXITED(status)) return false;
  return WEXITSTATUS(status) == 128 + sig ||
         (WEXITSTATUS(status) == 2 && stderr_text.find(error) != std::string::npos);
}
}  // namespace

TEST_CASE("-o naming an input is refused and the input is untouched") {
  const fs::path d = fresh_dir("input");
  const fs::path scenario = d / "s.json";
  fs::copy_file(kScenario, scenario);
  const std::string before = read_all(scenario);
  const auto r = run_megasim("simulate " + shell_quote(scenario.string()) + " -o " +
                             shell_quote(scenario.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is an input of this command") != std::string::npos);
  CHECK(read_all(scenario) == before);
  fs::remove_all(d);
}

TEST_CASE("all or nothing: a failing -o leaves no --trace behind") {
  const fs::path d = fresh_dir("atomic");
  const auto r = run_megasim("simulate " + shell_quote(kScenario) + " --trace " +
                             shell_quote((d / "t.json").string()) + " -o " +
                             shell_quote((d / "nodir" / "x.json").string()));
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(fs::is_empty(d));
  fs::remove_all(d);
}

TEST_CASE("-o equal to --trace, a device, a directory or empty is refused, - is stdout") {
  const fs::path d = fresh_dir("targets");
  const std::string same = shell_quote((d / "a.json").string());
  auto r = run_megasim("simulate " + shell_quote(kScenario) + " --trace " + same + " -o " + same);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("named by both --trace and -o") != std::string::npos);
  r = run_megasim("simulate " + shell_quote(kScenario) + " -o /dev/full");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is a device or other special file") != std::string::npos);
  r = run_megasim("simulate " + shell_quote(kScenario) + " -o " + shell_quote(d.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is a directory") != std::string::npos);
  r = run_megasim("simulate " + shell_quote(kScenario) + " -o ''");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("-o: empty file name") != std::string::npos);
  CHECK(fs::is_empty(d));
  r = run_megasim("simulate " + shell_quote(kScenario) + " -o -");
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("{", 0) == 0);  // the JSON result, in place of the text report
  CHECK_FALSE(fs::exists("-"));
  fs::remove_all(d);
}

TEST_CASE("-o over a symbolic link replaces the file it points to and keeps the link") {
  const fs::path d = fresh_dir("link");
  std::ofstream(d / "real.json") << "old\n";
  fs::create_symlink(d / "real.json", d / "link.json");
  const auto r = run_megasim("simulate " + shell_quote(kScenario) + " -o " +
                             shell_quote((d / "link.json").string()));
  CHECK(r.exit_code == 0);
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(read_all(d / "real.json").rfind("{", 0) == 0);
  fs::remove_all(d);
}

TEST_CASE("a full stdout is an error") {
  const fs::path err = fresh_dir("full") / "err.txt";
  const int status = std::system((std::string(MEGASIM_BINARY) + " simulate " +
                                  shell_quote(kScenario) + " >/dev/full 2>" +
                                  shell_quote(err.string()))
                                     .c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(read_all(err).find("standard output: write failed") != std::string::npos);
  fs::remove_all(err.parent_path());
}

TEST_CASE("a full stdout leaves no output file and an existing one as it was") {
  // Until 2026-12-04 the files were renamed into place before the report was written.
  const fs::path d = fresh_dir("full_files");
  std::ofstream(d / "kept.json") << "KEEP\n";
  const std::string kept = shell_quote((d / "kept.json").string());
  const std::string fresh = shell_quote((d / "trace.json").string());
  const auto run = [&d](const std::string& args) {
    return std::system((std::string(MEGASIM_BINARY) + " " + args + " >/dev/full 2>" +
                        shell_quote((d / "err.txt").string()))
                           .c_str());
  };
  int status = run("simulate " + shell_quote(kScenario) + " -o " + kept + " --trace " + fresh);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(read_all(d / "err.txt").find("standard output: write failed") != std::string::npos);
  CHECK(read_all(d / "kept.json") == "KEEP\n");
  CHECK_FALSE(fs::exists(d / "trace.json"));
  status = run("calibrate shapes " + shell_quote(kScenario) + " -o " + kept);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(read_all(d / "kept.json") == "KEEP\n");
  // Nothing but the two files this test wrote: no temporary left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(d)) entries += e.is_regular_file() ? 1 : 0;
  CHECK(entries == 2);
  fs::remove_all(d);
}

TEST_CASE("one new file named two ways by two outputs is refused before the work") {
  // "x.json" and "./x.json" in the working directory: compared unequal until 2026-12-05, so the
  // step ran, both outputs went to one temporary and the second rename failed, leaving the
  // HTML page where -o asked for the report.
  const fs::path d = fresh_dir("spellings");
  const fs::path was = fs::current_path();
  fs::current_path(d);
  const auto r = run_megasim("simulate " + shell_quote(kScenario) + " -o x.json --html ./x.json");
  fs::current_path(was);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("named by both -o and --html") != std::string::npos);
  CHECK(r.out.empty());
  CHECK(fs::is_empty(d));
  fs::remove_all(d);
}

TEST_CASE("a stray preset in the working directory never replaces a built-in one") {
  const fs::path d = fresh_dir("stray");
  for (const char* name : {"a100-sxm4-80gb.json", "default.json", "megascale.json"}) {
    std::ofstream(d / name) << "{\"not\": \"a preset\"}\n";
  }
  const fs::path was = fs::current_path();
  fs::current_path(d);
  // The scenario's device, its power preset and its reliability presets, all by name.
  const auto r = run_megasim("simulate " + shell_quote(kScenario) +
                             " --set reliability.preset=default");
  fs::current_path(was);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  fs::remove_all(d);
}

TEST_CASE("a bad --device lists each place tried once") {
  const auto r = run_megasim("calibrate import-nccl-tests " + std::string(MEGASIM_SOURCE_DIR) +
                             "/tests/data/nccl-tests/h100-2node-all_reduce.log --device nope -o x");
  CHECK(r.exit_code == 2);
  // The built-in folder and the installed one; before, the working directory came twice.
  int places = 0;
  for (auto at = r.err.find("nope.json\n"); at != std::string::npos;
       at = r.err.find("nope.json\n", at + 1)) {
    ++places;
  }
  CHECK(places == 2);
  CHECK(r.err.find("give a path") != std::string::npos);
}

TEST_CASE("calibrate shapes prints the shapes, calibrate -o without a GPU says what to do") {
  auto r = run_megasim("calibrate shapes " + shell_quote(kScenario));
  CHECK(r.exit_code == 0);
  // The MegaScale 175B QKV projection on TP 8: 2048 x 4608 x 12288.
  CHECK(r.out.find("    2048     4608    12288") != std::string::npos);
  if (fs::exists("/proc/driver/nvidia/version") || fs::exists("/dev/nvidiactl"))
    return;  // a GPU machine measures instead
  const fs::path d = fresh_dir("gpu");
  r = run_megasim("calibrate -o " + shell_quote((d / "c.json").string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("needs an NVIDIA GPU with its driver") != std::string::npos);
  CHECK(r.err.find("import-nccl-tests") != std::string::npos);
  CHECK(r.err.find("calibrate/profiles/") != std::string::npos);
  CHECK(fs::is_empty(d));
  fs::remove_all(d);
}

namespace {
// Runs `args` with `option` naming the source tree's `file`, checks the refusal and that the
// file is untouched; restores it when the command wrote it anyway, so a failing run cannot
// leave a built-in preset broken.
void check_refused(const std::string& args, const std::string& option, const std::string& file) {
  const fs::path target = fs::path(MEGASIM_SOURCE_DIR) / file;
  const std::string before = read_all(target);
  const auto r = run_megasim(args + " " + option + " " + shell_quote(target.string()));
  const std::string after = read_all(target);
  if (after != before) std::ofstream(target, std::ios::binary | std::ios::trunc) << before;
  INFO(args, " ", option, " ", file, "\nstderr: ", r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("megasim: error: ", 0) == 0);
  CHECK(r.err.find("is an input of this command") != std::string::npos);
  CHECK(after == before);
}
}  // namespace

TEST_CASE("an output naming any file the command read, a preset found by name included, is "
          "refused") {
  const std::string simulate = "simulate " + shell_quote(kScenario);
  // The default scenario names its model, cluster and device, and by name the megascale
  // system, reliability and power presets; the reliability preset names its failure rates.
  check_refused(simulate, "-o", "systems/megascale.json");
  check_refused(simulate, "--trace", "reliability/megascale.json");
  check_refused(simulate, "--html", "reliability/failure-rates-llama3-405b.json");
  check_refused(simulate, "-o", "power/a100-sxm4-80gb.json");
  check_refused(simulate, "-o", "models/gpt-175b-megascale.json");
  check_refused(simulate, "--trace", "topologies/megascale-a100-12288.json");
  check_refused(simulate, "-o", "calibrate/profiles/a100-sxm4-80gb.json");
  check_refused(simulate, "-o", "validation/residuals.json");
  // compare reads each variant's files during the work: refused before anything is written.
  check_refused("compare " + shell_quote(kScenario) + " --vary plan.tp=4,8", "--html",
                "models/gpt-175b-megascale.json");
  check_refused("calibrate shapes " + shell_quote(kScenario), "-o", "systems/megascale.json");
  check_refused("validate", "--html", "models/korthikanti-22b.json");
  // import-nccl-tests reads the fabric the logs ran on (--cluster, here by name): it replaced
  // the topology with the calibration, exit 0, until 2026-12-05.
  check_refused("calibrate import-nccl-tests " +
                    shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                "/tests/data/nccl-tests/h100-2node-all_reduce.log") +
                    " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144",
                "-o", "topologies/dgx-h100-superpod-6144.json");
}

TEST_CASE("MEGASIM_DATA_DIR names a tree searched before the one megasim was built from") {
  // The device run copies the tree elsewhere; a name must still find its file there.
  const fs::path root = fresh_dir("data_root");
  fs::create_directories(root / "models");
  fs::copy_file(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json",
                root / "models" / "only-in-the-copy.json");
  const std::string args = "inspect " + kScenario + " --set model=only-in-the-copy";
  CHECK(run_megasim(args).exit_code == 2);  // not in the built tree
  ::setenv("MEGASIM_DATA_DIR", root.c_str(), 1);
  const auto found = run_megasim(args);
  // A copy without the validation residuals: simulate says it has no band, and why.
  const auto unbanded = run_megasim("simulate " + kScenario);
  ::unsetenv("MEGASIM_DATA_DIR");
  CHECK(found.exit_code == 0);
  INFO(found.err);
  CHECK(unbanded.exit_code == 0);
  CHECK(unbanded.out.find("error band           none: no validation residuals") !=
        std::string::npos);
}

TEST_CASE(
    "output: an interrupt while the output is written leaves no temporary file, and an "
    "ignored signal stays ignored") {
  // The temporary file megasim will write is made a FIFO first, so its open blocks (no reader)
  // until the test has sent SIGINT: the interrupt lands while the file is pending, every time.
  const fs::path dir = fresh_dir("interrupt");
  const fs::path out = dir / "a.json";
  int go[2];
  REQUIRE(::pipe(go) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char byte = 0;
    ::close(go[1]);
    if (::read(go[0], &byte, 1) != 1) ::_exit(99);
    ::signal(SIGHUP, SIG_IGN);  // as nohup leaves it: megasim must keep it ignored
    ::execl(MEGASIM_BINARY, MEGASIM_BINARY, "simulate", kScenario.c_str(), "-o", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(98);
  }
  ::close(go[0]);
  const fs::path pending = dir / ("a.json.tmp." + std::to_string(child) + ".0");
  REQUIRE(::mkfifo(pending.c_str(), 0600) == 0);
  REQUIRE(::write(go[1], "x", 1) == 1);
  ::close(go[1]);
  // Blocked in the FIFO's open: the kernel's wait for the other end.
  bool blocked = false;
  for (int i = 0; i < 6000 && !blocked; ++i) {
    blocked =
        read_all(fs::path("/proc") / std::to_string(child) / "wchan").find("wait_for_partner") !=
        std::string::npos;
    if (!blocked) ::usleep(10000);
  }
  CHECK(blocked);
  ::kill(child, SIGHUP);  // ignored by the caller's choice: still running
  ::usleep(200000);
  int early = 0;
  CHECK(::waitpid(child, &early, WNOHANG) == 0);
  ::kill(child, SIGINT);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK_FALSE(fs::exists(fs::symlink_status(pending)));
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

TEST_CASE("output: a trace past the file-size limit (ulimit -f) leaves no temporary file") {
  // SIGXFSZ ends the process as it writes the temporary file: megasim removes the file first,
  // as for an interrupt (it left t.json.tmp.PID behind).
  const fs::path dir = fresh_dir("xfsz");
  const fs::path err = fresh_dir("xfsz_err");
  const std::string cmd = "ulimit -f 64; " + std::string(MEGASIM_BINARY) + " simulate " +
                          shell_quote(kScenario) + " --trace " +
                          shell_quote((dir / "t.json").string()) + " >/dev/null 2>" +
                          shell_quote((err / "stderr").string());
  const int status = std::system(("sh -c " + shell_quote(cmd)).c_str());
  const std::string said = read_all(err / "stderr");
  CAPTURE(status);
  CAPTURE(said);
  CHECK(ended_at_write_by(status, SIGXFSZ, said, "File too large"));
  CHECK(fs::is_empty(dir));
  fs::remove_all(err);
  fs::remove_all(dir);
}

TEST_CASE("output: a reader of stdout that has gone leaves no temporary file") {
  // `megasim ... -o f | head -c 0`: the write to the closed pipe raises SIGPIPE, which ended the
  // process with f.tmp.PID beside f until 2026-12-05 (the step takes a second or so, so the
  // reader has gone before megasim prints).
  const fs::path dir = fresh_dir("pipe");
  // bash, for megasim's own status (PIPESTATUS): it must end at the write, not before it (the
  // folder was then empty too, and the check ran over nothing; a review, 2026-12-05).
  const fs::path err = fresh_dir("pipe_err");
  const std::string cmd = std::string(MEGASIM_BINARY) + " simulate " + shell_quote(kScenario) +
                          " -o " + shell_quote((dir / "o.json").string()) + " 2>" +
                          shell_quote((err / "stderr").string()) +
                          " | head -c 0; exit ${PIPESTATUS[0]}";
  const int status = std::system(("bash -c " + shell_quote(cmd)).c_str());
  const std::string said = read_all(err / "stderr");
  CAPTURE(status);
  CAPTURE(said);
  CHECK(ended_at_write_by(status, SIGPIPE, said, "Broken pipe"));
  fs::remove_all(err);
  // Neither the temporary file nor o.json: a command that failed leaves no file.
  for (const auto& e : fs::directory_iterator(dir)) FAIL_CHECK("left behind: " << e.path());
  fs::remove_all(dir);
}

TEST_CASE("an empty option value is refused, not taken as not given") {
  // Until 2026-12-04 `--max-memory ''` ran with the 8 GiB default and `--name ''` and
  // `--cluster ''` of import-nccl-tests were dropped without a word.
  const std::string log =
      std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/h100-2node-all_reduce.log";
  for (const std::string& args : {"simulate " + shell_quote(kScenario) + " --max-memory ''",
                                  "simulate " + shell_quote(kScenario) + " --set ''",
                                  "calibrate import-nccl-tests " + shell_quote(log) +
                                      " --device h100-sxm5-80gb -o x --name ''",
                                  "calibrate import-nccl-tests " + shell_quote(log) +
                                      " --device h100-sxm5-80gb -o x --cluster ''"}) {
    CAPTURE(args);
    const auto r = run_megasim(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(": empty value; give one, or leave the option out") != std::string::npos);
  }
  CHECK_FALSE(fs::exists("x"));
}

TEST_CASE("an argument's control bytes reach stderr written as \\xNN, not raw") {
  // CLI11's parse errors and an unknown subcommand printed them raw until 2026-12-05 (an ESC
  // could recolour or drive the user's terminal); InputError's messages already wrote \xNN.
  for (const std::string& args :
       {"simulate " + shell_quote(kScenario) + " --trials " + shell_quote("4\x1b[31m"),
        shell_quote("bo\x1bgus")}) {
    const auto r = run_megasim(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.err.find("\\x1b") != std::string::npos);
  }
}

TEST_CASE("a name's control bytes reach the text report written as \\xNN, not raw") {
  // A scenario's name with an ESC sequence and a carriage return recoloured the terminal and
  // overwrote the report's own line until 2026-12-07; --json escaped them already.
  const fs::path dir = fresh_dir("name_escape");
  std::string text = read_all(kScenario);
  const std::string name = "\"name\": \"megascale-175b-12288\"";
  REQUIRE(text.find(name) != std::string::npos);
  text.replace(text.find(name), name.size(), "\"name\": \"x\\u001b[31mred\\rfake\"");
  const fs::path scenario = dir / "escape.json";
  std::ofstream(scenario) << text;
  for (const char* command : {"simulate", "inspect"}) {
    const auto r = run_megasim(std::string(command) + " " + shell_quote(scenario.string()));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\r') == std::string::npos);
    CHECK(r.out.find("x\\x1b[31mred\\x0dfake") != std::string::npos);
  }
  fs::remove_all(dir);
}

// `megasim search`'s results file (--results): a search stopped half-way and resumed from it,
// a file another build wrote, a refused plan, and figures that disagree.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kSearch175b;
using megasim::test::kSearch22b;
using megasim::test::lines_of;
using megasim::test::read_all;
using megasim::test::run_megasim;
using megasim::test::shell_quote;
using megasim::test::temp_file;

namespace fs = std::filesystem;

TEST_CASE("cli: a search stopped half-way and resumed from --results prints what one run does") {
  // The plans simulated event by event: the top 8 and, if not among them, the scenario's own.
  const fs::path all = temp_file("all.jsonl");
  const auto fresh =
      run_megasim("search " + kSearch175b + " --top 8 --results " + shell_quote(all.string()));
  REQUIRE(fresh.exit_code == 0);
  const int simulated = lines_of(all);
  REQUIRE(simulated >= 8);
  const fs::path results = temp_file("results.jsonl");
  const std::string with =
      "search " + kSearch175b + " --top 8 --results " + shell_quote(results.string());
  auto stopped = run_megasim(with + " --stop-after 5");
  REQUIRE(stopped.exit_code == 0);
  CHECK(stopped.out.empty());
  CHECK(lines_of(results) == 5);
  // A stop keeps its plans in --results and prints no ranking: without the file, or with
  // --json's one object, it is refused (it exited 0 with nothing kept or printed until
  // 2026-12-07).
  const auto lost = run_megasim("search " + kSearch175b + " --top 8 --stop-after 5");
  CHECK(lost.exit_code == 2);
  CHECK(lost.err.find("--stop-after: needs --results") != std::string::npos);
  const auto json = run_megasim(with + " --stop-after 5 --json");
  CHECK(json.exit_code == 2);
  CHECK(json.err.find("--stop-after: prints no ranking, so no --json object") != std::string::npos);
  CHECK(lines_of(results) == 5);
  // A kill in the middle of a write leaves half a line: it is redone, not misread.
  const std::string text = read_all(results);
  std::ofstream(results, std::ios::trunc) << text.substr(0, text.size() - 40);
  auto resumed = run_megasim(with);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.out == fresh.out);
  // 4 whole lines kept (and the cut one): the cut plan and the never-done ones are appended.
  CHECK(lines_of(results) == 5 + (simulated - 4));
  // Run again: nothing left to simulate, nothing appended, same bytes; stderr says the figures
  // came from the file (a resumed search did not say so until 2026-12-05).
  auto again = run_megasim(with);
  CHECK(again.out == fresh.out);
  CHECK(fresh.err.find("read from --results") == std::string::npos);
  const auto said = fmt::format("{0} of the {0} ranked plans' event-level figures", simulated);
  CHECK(again.err.find(said + " were read from --results") != std::string::npos);
  CHECK(lines_of(results) == 5 + (simulated - 4));
  // Past --max-events, a plan read back is refused as one simulated is (until 2026-12-05 the
  // file's figures ranked it where a search without the file refused it).
  const std::string bound = " --max-events 4000";
  const auto bounded = run_megasim("search " + kSearch175b + " --top 8" + bound);
  CHECK(bounded.out.find("refused: more than --max-events 4000") != std::string::npos);
  const auto resumed_bounded = run_megasim(with + bound);
  CHECK(resumed_bounded.out == bounded.out);
  // Only the plans within the bound took their figures from the file (2026-12-05: the refused
  // ones were counted too).
  int refused = 0;
  for (std::size_t at = bounded.out.find("refused: more than"); at != std::string::npos;
       at = bounded.out.find("refused: more than", at + 1)) {
    ++refused;
  }
  REQUIRE(refused > 0);
  CHECK(resumed_bounded.err.find(fmt::format("{} of the {} ranked plans' event-level figures",
                                             simulated - refused, simulated)) != std::string::npos);
  // A line cut within its first bytes (a full disk) is redone like any cut line.
  const fs::path short_cut = temp_file("short-cut.jsonl");
  std::ofstream(short_cut) << read_all(all) << "{\"brea";
  const auto cut_run = run_megasim("search " + kSearch175b + " --top 8 --results " +
                                   shell_quote(short_cut.string()));
  CHECK(cut_run.exit_code == 0);
  CHECK(cut_run.out == fresh.out);
  // A file that is not a results file, or a line whose figures no simulation gives, is
  // refused before anything is appended.
  const fs::path other = temp_file("not-results.json");
  std::ofstream(other) << "{\n  \"name\": \"a model\"\n}\n";
  // The first line's `key` given `value`, in a file of its own.
  const auto edited = [&](const std::string& key, const std::string& value) {
    std::string text = read_all(all);
    const auto at = text.find("\"" + key + "\":") + key.size() + 3;
    text.replace(at, text.find(',', at) - at, value);
    const fs::path file = temp_file(key + ".jsonl");
    std::ofstream(file) << text;
    return file;
  };
  // A figure of another type is named with its key (in the JSON library's words, without the
  // key, until 2026-12-05), as a negative one is.
  for (const auto& [file, fragment] :
       {std::pair{other, ": not a line a search writes"},
        std::pair{edited("step_time_ns", "-5"), ":1: step_time_ns -5 is negative"},
        std::pair{edited("mfu", "\"high\""), ":1: mfu is string, not a number"}}) {
    const std::string before = read_all(file);
    const auto r =
        run_megasim("search " + kSearch175b + " --top 2 --results " + shell_quote(file.string()));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(read_all(file) == before);
  }
}

TEST_CASE("cli: a --results file another build of megasim wrote is not reused") {
  const fs::path results = temp_file("other-build.jsonl");
  const std::string args =
      " search " + kSearch175b + " --top 2 --results " + shell_quote(results.string());
  REQUIRE(run_megasim(args).exit_code == 0);
  const int simulated = lines_of(results);
  REQUIRE(simulated >= 2);
  // A copy of the binary with a byte more at its end: another build, as far as the file can
  // tell. It simulates every plan again; the first binary then finds its own lines.
  const fs::path copy = temp_file("megasim-copy");
  fs::copy_file(MEGASIM_BINARY, copy, fs::copy_options::overwrite_existing);
  std::ofstream(copy, std::ios::app | std::ios::binary) << '\0';
  fs::permissions(copy, fs::perms::owner_exec, fs::perm_options::add);
  const std::string other = shell_quote(copy.string()) + args + " >/dev/null 2>&1 </dev/null";
  CHECK(std::system(other.c_str()) == 0);
  CHECK(lines_of(results) == 2 * simulated);
  REQUIRE(run_megasim(args).exit_code == 0);
  CHECK(lines_of(results) == 2 * simulated);
}

TEST_CASE(
    "cli: a plan refused by --max-events is not written, and figures that disagree are refused") {
  const fs::path results = temp_file("bounded.jsonl");
  // Asynchronous pipeline sends, so that interleaving on two stages is in the space.
  const std::string args = "search " + kSearch22b + " --top 2 --set optimizations.pp_overlap=true" +
                           " --results " + shell_quote(results.string());
  // The two best plans (24 virtual stages) pass 100 pipeline passes: refused, and not written,
  // so the same file serves a search without the bound (until 2026-12-02 its zero line made
  // every later search on the file fail).
  const auto bounded = run_megasim(args + " --max-events 100");
  REQUIRE(bounded.exit_code == 0);
  CHECK(bounded.out.find("refused: more than --max-events 100") != std::string::npos);
  // Only the plans that ran are counted as simulated (the refused one named apart).
  CHECK(bounded.out.find("3 taken to the event level (the best by estimate and the scenario's "
                         "own plan): 1 simulated event by event, 2 refused by --max-events") !=
        std::string::npos);
  // A refused plan that is the scenario's own still says so, in the text and the JSON.
  const std::string s175 =
      shell_quote(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-175b-selective.json");
  // (Its 3,072 passes over the bound, plans of the top 20 under it: until 2026-12-05 a search
  // that ran no plan at all exited 0; it is refused now, below.)
  const auto own = run_megasim("search " + s175 + " --top 20 --max-events 3000");
  REQUIRE(own.exit_code == 0);
  CHECK(own.out.find("refused (*, the scenario's own plan): more than --max-events 3000") !=
        std::string::npos);
  const auto nothing = run_megasim("search " + s175 + " --top 1 --max-events 100");
  CHECK(nothing.exit_code == 2);
  CHECK(nothing.out.empty());
  CHECK(nothing.err.find("every plan taken to the event level (2) needs more pipeline passes "
                         "than --max-events 100 (the fewest: 3072)") != std::string::npos);
  const auto own_json = run_megasim("search " + s175 + " --top 20 --max-events 3000 --json");
  REQUIRE(own_json.exit_code == 0);
  bool marked = false;
  const auto own_doc = nlohmann::json::parse(own_json.out);
  for (const auto& row : own_doc["ranked"]) {
    if (row.contains("refused") && row["scenario_plan"] == true) marked = true;
  }
  CHECK(marked);
  const int written = lines_of(results);
  const auto unbounded = run_megasim(args);
  REQUIRE(unbounded.exit_code == 0);
  CHECK(unbounded.out.find("refused") == std::string::npos);
  CHECK(lines_of(results) == written + 2);
  // One figure edited, the others left: the line is not a simulation's.
  const std::string text = read_all(results);
  auto edited = [&](const std::string& key, const std::string& value) {
    std::string t = text;
    const auto at = t.find("\"" + key + "\":") + key.size() + 3;
    t.replace(at, t.find_first_of(",}", at) - at, value);
    const fs::path f = temp_file("edited-" + key + ".jsonl");
    std::ofstream(f) << t;
    return f;
  };
  // A line of eight parts, as a build before the power-cap term wrote (its fingerprint today's).
  std::string eight = text;
  const auto close = eight.find(']'), comma = eight.rfind(',', close);
  eight.erase(comma, close - comma);
  const fs::path old = temp_file("eight-parts.jsonl");
  std::ofstream(old) << eight;
  for (const auto& [file, fragment] :
       {std::pair{edited("step_time_ns", "500000000"), ":1: breakdown_ns sums to "},
        std::pair{edited("mfu", "0.9"), ":1: mfu 0.9 does not follow from tokens_per_s"},
        // --objective energy ranks by these (an edited line at 0 ranked first until 2026-12-05).
        std::pair{edited("gemm_ns", "0"), ":1: gemm_ns + memory_bound_ns + comm_ns + idle_ns"},
        std::pair{old, ":1: breakdown_ns does not hold 9 times"}}) {
    const std::string before = read_all(file);
    const auto r = run_megasim(args.substr(0, args.find(" --results")) + " --results " +
                               shell_quote(file.string()));
    CHECK(r.exit_code == 2);
    INFO(r.err);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(read_all(file) == before);
  }
}

TEST_CASE("cli: a --results line cut by a full file system is taken back") {
  // A file-size limit (ulimit -f, SIGXFSZ ignored) stands for a full disk: the write that
  // crosses it is cut short. Until 2026-12-06 the cut line stayed in the file for good.
  const fs::path results = temp_file("limited.jsonl");
  fs::remove(results);
  const std::string cmd = "trap '' XFSZ; ulimit -f 2; " + std::string(MEGASIM_BINARY) + " search " +
                          kSearch22b + " --top 8 --results " + shell_quote(results.string()) +
                          " >/dev/null 2>/dev/null";
  const int status = std::system(("sh -c " + shell_quote(cmd)).c_str());
  CHECK(status != 0);
  const std::string text = read_all(results);
  REQUIRE_FALSE(text.empty());
  CHECK(text.size() <= 1024);
  CHECK(text.back() == '\n');
  std::size_t start = 0, lines = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    CHECK(nlohmann::json::accept(text.substr(start, end - start)));
    start = end + 1;
    ++lines;
  }
  CHECK(lines >= 1);
  fs::remove(results);
}

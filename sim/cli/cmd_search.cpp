// `megasim search SCENARIO`: the best plans of the scenario's model on its cluster (or on
// --gpus), out of every plan of the space (plan/search.h). Under mpirun the plans are split
// over the ranks (cli/mpi_share.h) and rank 0 prints; the output is the same bytes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/mpi_share.h"
#include "engine/error.h"
#include "io/inputs.h"
#include "io/output.h"
#include "io/scenario.h"
#include "plan/compare.h"
#include "plan/evaluate.h"
#include "plan/results_file.h"
#include "plan/search.h"
#include "plan/work_bounds.h"
#include "reports/search_report.h"

namespace megasim::cli {
namespace {

struct SearchCliOptions {
  std::string scenario;
  std::vector<std::string> gpus, fix, vary, overrides;
  std::string objective = "step-time";
  int top = 50;
  bool json = false;
  std::optional<std::string> results;
  std::optional<std::int64_t> stop_after;
  std::int64_t max_events = plan::kDefaultMaxEvents;
};

// A progress bar on stderr, drawn only when stderr is a terminal, at most ten times a second.
class ProgressBar {
 public:
  explicit ProgressBar(bool on) : on_(on), start_(Clock::now()), last_(start_) {}
  void operator()(const char* stage, std::int64_t done, std::int64_t total) {
    if (!on_) return;
    const auto now = Clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    if (stage_ != stage) {
      stage_ = stage;
      stage_start_ = now;
    }
    last_ = now;
    const double s = std::chrono::duration<double>(now - stage_start_).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0.0;
    const double left = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
    std::fprintf(stderr, "\r%-11s [%s%s] %lld/%lld plans, %.0f plans/s, %.0f s left  ", stage,
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), ' ').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), rate, left);
    if (done == total) std::fputc('\n', stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  std::string stage_;
  Clock::time_point start_, last_, stage_start_;
};

// What a search needs before its ranks first talk: the inputs, the options and the results
// file. Every check of the user's input is made here (the search's options included:
// plan::check_search_options), on every rank alike.
struct PreparedSearch {
  io::Inputs inputs;
  plan::SearchOptions options;
  std::unique_ptr<plan::ResultsFile> results;
};

// A --set value the system overrides in every plan searched (plan.optimizer under LAMB) is
// refused, as simulate and compare refuse it (taken silently until 2026-12-05); where --fix or
// --vary runs the overriding switch off, those plans run it (each names its switches). Any
// optimizations axis waived the check for a while: --fix optimizations.lamb=true passed.
void check_sets_searched(const std::vector<std::string>& overrides,
                         const plan::SearchOptions& options, const io::Inputs& inputs) {
  std::vector<std::string> off;
  for (const plan::Axis& a : options.space.restrict) {
    if (std::any_of(a.values.begin(), a.values.end(),
                    [](const std::string& v) { return v == "false" || v == "0"; }))
      off.push_back(a.path);
  }
  plan::check_sets_run(overrides, inputs, off);
}

// The results file: read back to resume, appended to as plans finish; never an input, a
// folder, a device or one of this process's open files.
void check_results_file(const std::string& results, const io::FilesRead& read) {
  // Elsewhere "-" is standard output; the results file is read back to resume and appended
  // to beside the report, which needs a file.
  if (results == "-") {
    throw InputError(
        "--results -: the results file is read back to resume and appended to "
        "as plans finish, beside the report on standard output; give a file name");
  }
  // Appended to through a descriptor of its own while the report is written from the start of
  // standard output: the same file through /dev/stdout lost 13 of 21 lines (until
  // 2026-12-06).
  if (io::through_descriptor(results)) {
    throw InputError("--results " + results +
                     ": names a file this process has open (its standard input, output or "
                     "error, or one of its descriptors under /dev or /proc); give a file of "
                     "its own");
  }
  // The results file is appended to: never one the search reads.
  std::error_code ec;
  for (const auto& f : read.files()) {
    if (std::filesystem::equivalent(results, f, ec)) {
      throw InputError("--results " + results + ": is " + f.string() +
                       ", an input of this search; give a file of its own");
    }
  }
  if (std::filesystem::is_directory(results, ec)) {
    throw InputError("--results " + results + ": is a directory");
  }
  // Read before it is appended to: a device or a pipe (/dev/zero, a FIFO) would be read
  // without end.
  if (std::filesystem::exists(results, ec) && !std::filesystem::is_regular_file(results, ec)) {
    throw InputError("--results " + results + ": not a regular file");
  }
}

std::unique_ptr<PreparedSearch> prepare_search(const SearchCliOptions& o) {
  // Every file the search reads, recorded where it is read (io::FilesRead).
  io::FilesRead read;
  const io::Scenario scenario = io::load_scenario(o.scenario, o.overrides, nullptr, &read);
  io::InputOptions io_options;
  io_options.run_level = false;
  auto prepared = std::make_unique<PreparedSearch>();
  prepared->inputs = io::load_inputs(scenario, io_options, &read);

  plan::SearchOptions& options = prepared->options;
  for (const auto& g : o.gpus) {
    for (const auto n : plan::parse_gpus(g)) {
      if (n > prepared->inputs.cluster.gpus) {
        throw InputError(fmt::format("--gpus {}: {} GPUs, but cluster '{}' has {}", g, n,
                                     prepared->inputs.cluster.name, prepared->inputs.cluster.gpus));
      }
      if (std::find(options.space.gpus.begin(), options.space.gpus.end(), n) !=
          options.space.gpus.end()) {
        throw InputError(fmt::format("--gpus {}: {} GPUs given twice", g, n));
      }
      options.space.gpus.push_back(n);
    }
  }
  for (const auto& f : o.fix) {
    plan::Axis a = plan::parse_axis(f, "--fix");
    if (a.values.size() != 1)
      throw InputError("--fix " + f + ": one value; use --vary for several");
    options.space.restrict.push_back(std::move(a));
  }
  for (const auto& v : o.vary) options.space.restrict.push_back(plan::parse_axis(v));
  check_sets_searched(o.overrides, options, prepared->inputs);
  options.objective = plan::objective_from_string(o.objective);
  options.top_k = o.top;
  options.limits.max_events = o.max_events;
  options.stop_after = o.stop_after;
  // A stop keeps what it ran in --results and prints no ranking (--json's one object was
  // nothing, and a stop without --results kept nothing, until 2026-12-07).
  if (o.stop_after && !o.results)
    throw InputError("--stop-after: needs --results, where the plans it ran are kept to resume");
  if (o.stop_after && o.json)
    throw InputError("--stop-after: prints no ranking, so no --json object; leave out --json");
  plan::check_search_options(prepared->inputs, options);

  if (o.results) {
    check_results_file(*o.results, read);
    // The binary too: figures another build of megasim (another model) wrote are not reused.
    std::vector<std::filesystem::path> fingerprinted = read.files();
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) fingerprinted.push_back(self);
    const std::uint64_t fingerprint = plan::inputs_fingerprint(fingerprinted, o.overrides);
    options.done = plan::read_results(*o.results, fingerprint, prepared->inputs);
    prepared->results = std::make_unique<plan::ResultsFile>(*o.results, fingerprint);
    options.on_simulated = [file = prepared->results.get()](const plan::Candidate& c,
                                                            const plan::StepFigures& f) {
      file->append(c, f);
    };
  }
  return prepared;
}

// What the preset's framework does not run among the plans ranked, said once as simulate says
// it: the scenario's FP8, which every candidate keeps (its ZeRO stage and CP are not in the
// space, plan::to_normal_form), and the deepest pipeline ranked (fsdp's space keeps PP 1 unless
// --vary or --fix asks for more). Not said until 2026-12-07.
void warn_framework_lacks(const io::Inputs& in, const plan::SearchResult& r) {
  io::Inputs carried = in;
  plan::to_normal_form(carried.scenario.plan);
  carried.scenario.plan.pp = 1;
  for (const plan::RankedPlan& p : r.ranked)
    carried.scenario.plan.pp = std::max(carried.scenario.plan.pp, p.candidate.plan.pp);
  if (const std::string lacks = plan::framework_lacks(carried); !lacks.empty())
    std::fprintf(stderr, "megasim: warning: %s\n", lacks.c_str());
}

// What the run-level objectives take and leave: the energy objective prices the power
// preset's nodes and switches, as simulate does (no word of another device's preset until
// 2026-12-07, a planner's trial), and every one is failure-free, so a reliability key changes
// none of them.
void warn_run_level(const SearchCliOptions& o, const io::Inputs& in, const plan::SearchResult& r) {
  if (const std::string other =
          plan::power_preset_mismatch(in, r.objective == plan::Objective::kEnergy);
      !other.empty())
    std::fprintf(stderr, "megasim: warning: %s\n", other.c_str());
  note_sets_unpriced(o.overrides,
                     {"reliability.", "run.trials", "run.seed", "run.evaluation", "power.pue",
                      "power.usd_per_kwh", "power.grid_kg_co2_per_kwh"},
                     "search's run-level objectives are the steps alone, failure-free (no "
                     "evaluations, failures, planned stops, checkpoints, spares, PUE or energy "
                     "price: simulate prices them)");
}

void search_on(const MpiShare& mpi, const SearchCliOptions& o, PreparedSearch& prepared) {
  const plan::SearchOptions& options = prepared.options;
  plan::SearchShare share = mpi.share();
  ProgressBar bar(mpi.rank() == 0 && ::isatty(STDERR_FILENO) == 1);
  share.progress = [&bar](const char* stage, std::int64_t done, std::int64_t total) {
    bar(stage, done, total);
  };
  const plan::SearchResult r = plan::search(prepared.inputs, options, share);
  if (mpi.rank() != 0) return;
  if (r.space.size == 0 && !r.stopped) {
    // The restrictions contradict each other before any plan is formed: name them and the
    // rules (a space of 0 plans was reported as none of 0 feasible, 0 pruned by each cause).
    std::vector<std::string> given;
    for (const auto& f : o.fix) given.push_back("--fix " + f);
    for (const auto& v : o.vary) given.push_back("--vary " + v);
    if (!o.gpus.empty()) given.push_back("--gpus " + fmt::format("{}", fmt::join(o.gpus, ",")));
    throw InputError(fmt::format(
        "search: {} leave no plan to enumerate: sequence parallelism (sp=1) runs only at tp "
        "above 1, the distributed optimizer (dist_opt=1) only at dp above 1, dp must be the GPU "
        "count over tp × pp, DeepSpeed's pipeline engine runs vpp 1 only, and its "
        "BF16_Optimizer (bf16) takes dist_opt=1 alone at dp above 1; loosen one of "
        "them",
        given.empty() ? std::string("the scenario's GPU count and model")
                      : fmt::format("{}", fmt::join(given, " and "))));
  }
  if (r.analytic.empty() && !r.stopped) {
    // The constraints and the model leave nothing to rank: say why, as bad input.
    throw InputError(fmt::format(
        "search: none of the space's {} plan{} is feasible: {} pruned by cluster size (tp × pp "
        "must divide the GPU count), {} by heads (tp must divide heads, kv_heads and "
        "ffn_hidden), {} by divisibility (the layers, sequence and batch splits; vpp above 1 "
        "needs pp above 1), {} by memory; loosen --fix, --vary or --gpus{}",
        r.space.size, r.space.size == 1 ? "" : "s", r.space.pruned[0], r.space.pruned[1],
        r.space.pruned[2], r.space.pruned[3],
        // Loosening cannot help a model no pp divides evenly (Llama 3's 126 layers at PP 16:
        // the advice alone misled a trial, 2026-12-07).
        prepared.inputs.scenario.plan.layer_split.empty()
            ? ""
            : "; the scenario's uneven plan.layer_split is not searched (the space splits the "
              "layers evenly over pp): run that plan with simulate or compare"));
  }
  // Nothing ran: every plan taken to the event level is past --max-events. No ranking to give.
  if (!r.stopped && !r.ranked.empty() &&
      std::none_of(r.ranked.begin(), r.ranked.end(), [](const auto& p) { return p.event; })) {
    double least = std::numeric_limits<double>::infinity();
    for (const auto& p : r.ranked)
      least = std::min(least, plan::plan_passes(p.candidate.plan, false));
    // The estimate still ranks them: its best, so that the refusal loses nothing it found.
    const plan::RankedPlan& best = r.analytic.front();
    throw InputError(fmt::format(
        "search: every plan taken to the event level ({}) needs more pipeline passes than "
        "--max-events {} (the fewest: {:.0f}); raise --max-events. The best by estimate: {}, "
        "{:.6g} s a step, MFU {:.4f}",
        r.ranked.size(), o.max_events, least, best.candidate.key,
        best.analytic.step_time.to_seconds(), best.analytic.mfu));
  }
  if (r.stopped) {
    std::fprintf(stderr,
                 "megasim: search stopped after --stop-after %lld event-level plans; run it "
                 "again with the same --results to finish\n",
                 static_cast<long long>(*o.stop_after));
    return;
  }
  // The ranking is the one a single run prints; which of its figures a past run left in the
  // results file is said apart, on stderr (a resumed search did not say it, 2026-12-05).
  if (r.from_results > 0) {
    std::fprintf(stderr,
                 "megasim: %zu of the %zu ranked plans' event-level figures were read from "
                 "--results %s, not simulated again\n",
                 r.from_results, r.ranked.size(), o.results ? o.results->c_str() : "");
  }
  warn_framework_lacks(prepared.inputs, r);
  warn_run_level(o, prepared.inputs, r);
  io::write_stdout(o.json ? reports::search_json(r) : reports::search_text(r));
}

void run_search(const SearchCliOptions& o) {
  MpiShare mpi;  // one process unless launched by mpirun
  std::unique_ptr<PreparedSearch> prepared;
  std::exception_ptr refused;
  try {
    prepared = prepare_search(o);
  } catch (const std::exception&) {
    refused = std::current_exception();
  }
  // Bad input refused by every rank alike is said once, by rank 0, as one process says it; the
  // other ranks wait until it is said (mpirun ends the job once a rank exits non-zero), then
  // end with the same status and say nothing.
  if (mpi.count(refused != nullptr) == mpi.size()) {
    if (mpi.size() == 1) std::rethrow_exception(refused);
    int status = 1;
    try {
      std::rethrow_exception(refused);
    } catch (const std::exception& e) {
      status = mpi.rank() == 0 ? report_error(e) : exit_status(e);
    }
    mpi.count(false);
    throw QuietExit{status};
  }
  try {
    if (refused) std::rethrow_exception(refused);
    search_on(mpi, o, *prepared);
  } catch (const std::exception& e) {
    // One rank failing alone would leave the others waiting in a gather: say why, then take
    // the job down with the status main() would give.
    if (mpi.size() > 1) mpi.abort(report_error(e, mpi.rank()));
    throw;
  }
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto opts = std::make_shared<SearchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "search",
      "The best parallelism plans of a scenario's model on its cluster, out of every plan "
      "that fits");
  cmd->add_option("scenario", opts->scenario, "Scenario file")->required();
  cmd->add_option("--gpus", opts->gpus,
                  "GPU counts: N, N1,N2 or FIRST:LAST:STEP (default: the scenario plan's)");
  cmd->add_option("--fix", opts->fix, "KEY=V: hold an axis at one value; repeatable");
  cmd->add_option("--vary", opts->vary, "KEY=V1,V2,...: the values an axis may take; repeatable");
  cmd->add_option("--set", opts->overrides, "Override a scenario key; repeatable");
  cmd->add_option("--objective", opts->objective,
                  "step-time (default), mfu, time-to-train, cost or energy");
  cmd->add_option(
         "--top", opts->top,
         fmt::format("Plans re-simulated event by event (default 50; beside them the scenario's "
                     "own and, with several --gpus, each count without a plan among them: its "
                     "best and those within {:g} % of it, of at most {} shapes)",
                     plan::kCountSlack * 100.0, plan::kCountShapes))
      ->check(whole_number(1, 1'000'000));
  cmd->add_option("--results", opts->results,
                  "Append each simulated plan to this JSON Lines file; plans in it are skipped");
  cmd->add_option("--max-events", opts->max_events,
                  "Largest event-level step simulated, in pipeline passes (default 20000000)")
      ->check(whole_number(1, kMaxEventsOption));
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  // Stop after N event-level simulations, as a kill would (a test of resuming, or a search
  // cut into pieces of a known length).
  cmd->add_option("--stop-after", opts->stop_after,
                  "Stop after N event-level plans, as a kill would, keeping them in --results "
                  "for a later run to resume; a search it stops prints no ranking (needs "
                  "--results; refuses --json)")
      ->check(whole_number(1, 1'000'000));
  cmd->callback([opts] { naming_sets(opts->overrides, [&] { run_search(*opts); }); });
}

}  // namespace megasim::cli

#include "plan/results_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "io/json_reader.h"
#include "io/output.h"
#include "step/workload_assembly.h"
#include "workload/flops.h"

namespace megasim::plan {
namespace {

// Every part of a step's breakdown is carried here: a new part must be added below too.
static_assert(
    sizeof(step::Breakdown) == 9 * sizeof(Time),
    "step::Breakdown changed: carry the new part in the results file (times(), read_results)");

std::string hex(std::uint64_t h) {
  return fmt::format("{:016x}", h);
}

nlohmann::json times(const step::Breakdown& b) {
  return {b.compute.ns(),   b.tp_exposed.ns(), b.pp_exposed.ns(),  b.dp_exposed.ns(), b.bubble.ns(),
          b.optimizer.ns(), b.other.ns(),      b.slowest_gpu.ns(), b.power_cap.ns()};
}

}  // namespace

std::uint64_t inputs_fingerprint(const std::vector<std::filesystem::path>& files,
                                 const std::vector<std::string>& overrides) {
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    all += s.str();
    all += '\0';
  }
  for (const auto& o : overrides) all += o + '\0';
  return fnv1a(all);
}

namespace {

// How every line this file writes begins (nlohmann::json orders an object's keys): a line that
// does not parse but begins so was cut short by a kill; any other is not a results file's.
constexpr std::string_view kLineStart = R"({"breakdown_ns":[)";

// A line's figures, or an InputError naming what no simulation writes.
StepFigures figures_of(const nlohmann::json& j, const std::string& at) {
  const auto ns = [&](const char* key) {
    const auto v = j.at(key).get<std::int64_t>();
    if (v < 0) throw InputError(fmt::format("{}: {} {} is negative", at, key, v));
    return Time::from_ns(v);
  };
  const auto positive = [&](const char* key, double hi) {
    const auto v = j.at(key).get<double>();
    if (!(v > 0.0 && v <= hi)) {
      throw InputError(fmt::format("{}: {} {} is out of range; expected (0, {}]", at, key, v, hi));
    }
    return v;
  };
  StepFigures f;
  f.step_time = ns("step_time_ns");
  if (f.step_time <= Time::zero()) throw InputError(at + ": step_time_ns is not positive");
  const auto b = j.at("breakdown_ns").get<std::vector<std::int64_t>>();
  // Nine parts. A line of a build before the power-cap term (2026-12-04) holds eight; its
  // fingerprint, which names the binary, normally skips it, as another build's figures are.
  if (b.size() != 9) {
    throw InputError(at +
                     ": breakdown_ns does not hold 9 times (a file of a megasim before "
                     "2026-12-04's power-cap term holds 8: give a new file)");
  }
  if (std::any_of(b.begin(), b.end(), [](std::int64_t v) { return v < 0; })) {
    throw InputError(at + ": breakdown_ns holds a negative time");
  }
  f.breakdown = {Time::from_ns(b[0]), Time::from_ns(b[1]), Time::from_ns(b[2]),
                 Time::from_ns(b[3]), Time::from_ns(b[4]), Time::from_ns(b[5]),
                 Time::from_ns(b[6]), Time::from_ns(b[7]), Time::from_ns(b[8])};
  f.tokens_per_s = positive("tokens_per_s", 1e15);
  f.mfu = positive("mfu", 1.0);
  f.gemm_time = ns("gemm_ns");
  f.memory_bound_time = ns("memory_bound_ns");
  f.comm_time = ns("comm_ns");
  f.idle_time = ns("idle_ns");
  return f;
}

// What a simulation of `in` writes on every line: the batch's tokens, and the model FLOPs a
// token over the peak a GPU (so that MFU = that × tokens/s ÷ GPUs).
struct Expected {
  double tokens_per_step = 0.0;
  // One per FLOP count a searched system can have: the scenario's, and with its sliding window
  // switched (a search may vary optimizations.sliding_window, which changes the model's FLOPs).
  std::vector<double> flops_per_token_over_peak;
};

// A line whose figures contradict each other (one edited by hand, one of another model) is not
// a simulation's: refused, naming the numbers that clash.
void check_agreement(const StepFigures& f, const std::string& key, const Expected& e,
                     const std::string& at) {
  const std::int64_t sum = f.breakdown.sum().ns();
  if (std::llabs(sum - f.step_time.ns()) > 8) {
    throw InputError(fmt::format("{}: breakdown_ns sums to {} ns, step_time_ns is {}", at, sum,
                                 f.step_time.ns()));
  }
  // The step's time by activity (what --objective energy prices): its parts are the step's
  // too. An edited line with them at 0 ranked first at 1.4 MWh until 2026-12-05.
  // In double: four times from a file may pass the clock's range together.
  const double activities =
      static_cast<double>(f.gemm_time.ns()) + static_cast<double>(f.memory_bound_time.ns()) +
      static_cast<double>(f.comm_time.ns()) + static_cast<double>(f.idle_time.ns());
  if (std::fabs(activities - static_cast<double>(f.step_time.ns())) > 8.0) {
    throw InputError(fmt::format(
        "{}: gemm_ns + memory_bound_ns + comm_ns + idle_ns sum to {:.0f} ns, step_time_ns is {}",
        at, activities, f.step_time.ns()));
  }
  const double tokens = f.tokens_per_s * f.step_time.to_seconds();
  if (std::fabs(tokens / e.tokens_per_step - 1.0) > 1e-6) {
    throw InputError(
        fmt::format("{}: tokens_per_s {} x step_time_ns {} is {:.6g} tokens a step; "
                    "this search's batch is {:.6g}",
                    at, f.tokens_per_s, f.step_time.ns(), tokens, e.tokens_per_step));
  }
  long long gpus = 0;
  if (std::sscanf(key.c_str(), "gpus=%lld ", &gpus) != 1 || gpus < 1) {
    throw InputError(at + ": its plan key does not begin with the GPU count (gpus=N)");
  }
  const double per_gpu = f.tokens_per_s / static_cast<double>(gpus);
  const auto follows = [&](double k) { return std::fabs(f.mfu / (k * per_gpu) - 1.0) <= 1e-6; };
  if (std::none_of(e.flops_per_token_over_peak.begin(), e.flops_per_token_over_peak.end(),
                   follows)) {
    throw InputError(fmt::format(
        "{}: mfu {} does not follow from tokens_per_s {} on {} GPUs "
        "(this search's model gives {:.6g})",
        at, f.mfu, f.tokens_per_s, gpus, e.flops_per_token_over_peak.front() * per_gpu));
  }
}

// Each key a result line holds, of the JSON type the search writes: else an InputError naming
// the key (until 2026-12-05 the JSON library's own message, "type must be number, but is
// string", without the key).
void check_line_keys(const nlohmann::json& j, const std::string& at) {
  using Json = nlohmann::json;
  const auto text = [](const Json& v) { return v.is_string(); };
  const auto whole = [](const Json& v) { return v.is_number_integer(); };
  const auto number = [](const Json& v) { return v.is_number(); };
  const auto wholes = [](const Json& v) {
    return v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_number_integer(); });
  };
  const std::tuple<const char*, bool (*)(const Json&), const char*> keys[] = {
      {"key", text, "a string"},
      {"step_time_ns", whole, "an integer"},
      {"breakdown_ns", wholes, "an array of integers"},
      {"tokens_per_s", number, "a number"},
      {"mfu", number, "a number"},
      {"gemm_ns", whole, "an integer"},
      {"memory_bound_ns", whole, "an integer"},
      {"comm_ns", whole, "an integer"},
      {"idle_ns", whole, "an integer"}};
  for (const auto& [key, is, what] : keys) {
    if (!j.contains(key)) throw InputError(fmt::format("{}: a result line without {}", at, key));
    if (!is(j.at(key))) {
      throw InputError(fmt::format("{}: {} is {}, not {}", at, key, j.at(key).type_name(), what));
    }
  }
}

// A line an earlier build wrote for a plan refused by --max-events: every figure zero.
bool refusal_line(const nlohmann::json& j) {
  const auto b = j.at("breakdown_ns").get<std::vector<std::int64_t>>();
  return j.at("step_time_ns").get<std::int64_t>() == 0 &&
         std::all_of(b.begin(), b.end(), [](std::int64_t v) { return v == 0; }) &&
         j.at("tokens_per_s").get<double>() == 0.0 && j.at("mfu").get<double>() == 0.0;
}

}  // namespace

FigureMap read_results(const std::filesystem::path& path, std::uint64_t fingerprint,
                       const io::Inputs& inputs) {
  Expected expected;
  expected.tokens_per_step = static_cast<double>(inputs.scenario.plan.global_batch) *
                             static_cast<double>(inputs.model.seq);
  const double peak =
      inputs.device.peak_for(workload::mfu_peak_dtype(inputs.scenario.plan)).value();
  step::SystemOptions switched = inputs.system;
  switched.sliding_window = !switched.sliding_window;
  const step::SystemOptions* systems[] = {&inputs.system, &switched};
  for (const step::SystemOptions* s : systems) {
    if (s->sliding_window && s->attention_window <= 0) continue;  // no window size to switch on
    expected.flops_per_token_over_peak.push_back(step::mfu_flops_per_token(inputs.model, *s) /
                                                 peak);
  }
  FigureMap out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // A file there that cannot be read is not an empty one: read as none, every plan was
    // simulated again and appended twice (a trial, 2026-12-07).
    // The reason from open(2), whose errno is promised: a failed ifstream need not set it
    // (the refusal read "Success" where it did not).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const int error = fd < 0 ? errno : 0;
    if (fd >= 0) ::close(fd);
    std::error_code ec;
    if (std::filesystem::exists(path, ec) || (ec && error != ENOENT)) {
      throw InputError(fmt::format(
          "--results {}: cannot be read ({}); give a file megasim may read and append to",
          path.string(), error != 0 ? std::strerror(error) : "the stream failed to open it"));
    }
    return out;
  }
  std::string line;
  const std::string file = "--results " + path.string();
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const std::string at = fmt::format("{}:{}", file, n);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      // Cut short by a kill or a full disk, before or after its first bytes: redone.
      const std::string_view head(line.data(), std::min(line.size(), kLineStart.size()));
      if (kLineStart.substr(0, head.size()) == head) continue;
      throw InputError(at +
                       ": not a line a search writes; give a new file or one an earlier "
                       "search wrote (the file is appended to, never replaced)");
    }
    try {
      if (!j.is_object() || !j.contains("inputs") || !j.contains("hash")) {
        throw InputError(at +
                         ": not a line a search writes; give a new file or one an earlier "
                         "search wrote (the file is appended to, never replaced)");
      }
      if (!j.at("inputs").is_string() || !j.at("hash").is_string()) {
        throw InputError(at + ": inputs and hash are not strings");
      }
      if (j.at("inputs").get<std::string>() != hex(fingerprint)) continue;  // another search's
      check_line_keys(j, at);
      const std::string key = j.at("key").get<std::string>();
      const std::uint64_t hash = std::stoull(j.at("hash").get<std::string>(), nullptr, 16);
      if (fnv1a(key) != hash) throw InputError(at + ": its hash is not its plan key's");
      if (refusal_line(j)) continue;  // redone
      const StepFigures f = figures_of(j, at);
      check_agreement(f, key, expected, at);
      out[hash] = f;
    } catch (const nlohmann::json::exception& e) {
      throw InputError(
          fmt::format("{}: a result line with a missing or mistyped figure ({})", at, e.what()));
    } catch (const std::logic_error&) {  // std::stoull on a hash that is not hexadecimal
      throw InputError(at + ": its hash is not a hexadecimal number");
    }
  }
  return out;
}

ResultsFile::ResultsFile(const std::filesystem::path& path, std::uint64_t fingerprint)
    : path_(path), fingerprint_(fingerprint) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    created_ = true;
  } else if (errno == EEXIST) {
    // There already, or a link (O_EXCL does not follow one): opened as before, created if a
    // dangling link's target is missing.
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (fd_ < 0) {
    const int error = errno;
    // Said as the other outputs say it ("No such file or directory" alone until 2026-12-05).
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
    std::error_code ec;
    if (error == ENOENT && !std::filesystem::exists(folder, ec)) {
      throw InputError(fmt::format(
          "--results {}: folder {} does not exist; --results writes into an existing folder",
          path.string(), folder.string()));
    }
    throw InputError(fmt::format("--results {}: {}", path.string(), std::strerror(error)));
  }
  if (created_) io::remove_if_empty_on_interrupt(path_, fd_);
  // A line cut short by a kill is ended, so that the next line starts on its own.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (in && in.tellg() > 0) {
    in.seekg(-1, std::ios::end);
    if (in.get() != '\n' && ::write(fd_, "\n", 1) != 1) {
      throw InputError(
          fmt::format("--results {}: write failed: {}", path.string(), std::strerror(errno)));
    }
  }
}

ResultsFile::~ResultsFile() {
  // Removed only when it is still empty: under mpirun every rank appends to the one file, and
  // the rank that created it may have written nothing of its own (its share refused, or done).
  // Every rank has written before the gather that ends the search.
  struct stat st {};
  const bool empty = fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_size == 0;
  if (created_) io::keep_on_interrupt(path_);
  if (fd_ >= 0) ::close(fd_);
  if (created_ && empty) ::unlink(path_.c_str());
}

void ResultsFile::append(const Candidate& c, const StepFigures& f) {
  const nlohmann::json j = {{"inputs", hex(fingerprint_)},
                            {"hash", hex(c.hash)},
                            {"key", c.key},
                            {"step_time_ns", f.step_time.ns()},
                            {"breakdown_ns", times(f.breakdown)},
                            {"tokens_per_s", f.tokens_per_s},
                            {"mfu", f.mfu},
                            {"gemm_ns", f.gemm_time.ns()},
                            {"memory_bound_ns", f.memory_bound_time.ns()},
                            {"comm_ns", f.comm_time.ns()},
                            {"idle_ns", f.idle_time.ns()}};
  const std::string line = io::json_file_text(j, -1);
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    // A line cut by a full disk is taken back where nothing was appended after it, so the file
    // stays whole JSON Lines for any reader (it kept the cut line until 2026-12-06).
    const int error = errno;
    struct stat st {};
    const off_t end = n > 0 ? ::lseek(fd_, 0, SEEK_CUR) : -1;
    if (end >= n && ::fstat(fd_, &st) == 0 && st.st_size == end) {
      (void)!::ftruncate(fd_, end - n);
    }
    errno = error;
    throw InputError(fmt::format("--results {}: write failed: {}", path_.string(),
                                 n < 0 ? std::strerror(errno) : "short write"));
  }
}

}  // namespace megasim::plan

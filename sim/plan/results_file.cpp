#include "plan/results_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace megasim::plan {
namespace {

// Every part of a step's breakdown is carried here: a new part must be added below too.
static_assert(
    sizeof(step::Breakdown) == 8 * sizeof(Time),
    "step::Breakdown changed: carry the new part in the results file (times(), read_results)");

std::string hex(std::uint64_t h) {
  return fmt::format("{:016x}", h);
}

nlohmann::json times(const step::Breakdown& b) {
  return {b.compute.ns(), b.tp_exposed.ns(), b.pp_exposed.ns(), b.dp_exposed.ns(),
          b.bubble.ns(),  b.optimizer.ns(),  b.other.ns(),      b.slowest_gpu.ns()};
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

FigureMap read_results(const std::filesystem::path& path, std::uint64_t fingerprint) {
  FigureMap out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.at("inputs").get<std::string>() != hex(fingerprint)) continue;
      StepFigures f;
      f.step_time = Time::from_ns(j.at("step_time_ns").get<std::int64_t>());
      const auto b = j.at("breakdown_ns").get<std::vector<std::int64_t>>();
      if (b.size() != 8) continue;
      f.breakdown = {Time::from_ns(b[0]), Time::from_ns(b[1]), Time::from_ns(b[2]),
                     Time::from_ns(b[3]), Time::from_ns(b[4]), Time::from_ns(b[5]),
                     Time::from_ns(b[6]), Time::from_ns(b[7])};
      f.tokens_per_s = j.at("tokens_per_s").get<double>();
      f.mfu = j.at("mfu").get<double>();
      f.gemm_time = Time::from_ns(j.at("gemm_ns").get<std::int64_t>());
      f.memory_bound_time = Time::from_ns(j.at("memory_bound_ns").get<std::int64_t>());
      f.comm_time = Time::from_ns(j.at("comm_ns").get<std::int64_t>());
      f.idle_time = Time::from_ns(j.at("idle_ns").get<std::int64_t>());
      const std::string key = j.at("key").get<std::string>();
      const std::uint64_t hash = std::stoull(j.at("hash").get<std::string>(), nullptr, 16);
      if (fnv1a(key) != hash) continue;
      out[hash] = f;
    } catch (const std::exception&) {
      // A line cut short by a kill (or otherwise unreadable): its plan is simulated again.
    }
  }
  return out;
}

ResultsFile::ResultsFile(const std::filesystem::path& path, std::uint64_t fingerprint)
    : path_(path), fingerprint_(fingerprint) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw InputError(fmt::format("--results {}: {}", path.string(), std::strerror(errno)));
  }
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
  if (fd_ >= 0) ::close(fd_);
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
  const std::string line = j.dump() + "\n";
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    throw InputError(fmt::format("--results {}: write failed: {}", path_.string(),
                                 n < 0 ? std::strerror(errno) : "short write"));
  }
}

}  // namespace megasim::plan

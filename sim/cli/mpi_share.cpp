#include "cli/mpi_share.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/error.h"

#ifdef MEGASIM_HAVE_MPI
#include <mpi.h>
#endif

namespace megasim::cli {
namespace {

// Every part of a step's breakdown is carried here: a new part must be added below too.
static_assert(sizeof(step::Breakdown) == 9 * sizeof(Time),
              "step::Breakdown changed: carry the new part in the MPI gather (Packed)");

// The ranks OpenMPI's launcher started, or 1 outside mpirun.
int launched_size() {
  const char* s = std::getenv("OMPI_COMM_WORLD_SIZE");
  return s ? std::max(1, std::atoi(s)) : 1;
}

#ifdef MEGASIM_HAVE_MPI
// One plan's figures on the wire: plain numbers, the same layout on every rank of one build.
struct Packed {
  std::uint64_t hash;
  std::int64_t ns[14];  // step, 9 breakdown parts, gemm, memory-bound, comm, idle
  double tokens_per_s, mfu;
};

std::vector<Packed> pack(const plan::FigureMap& m) {
  std::vector<Packed> out;
  for (const auto& [hash, f] : m) {
    const auto& b = f.breakdown;
    out.push_back(
        {hash,
         {f.step_time.ns(), b.compute.ns(), b.tp_exposed.ns(), b.pp_exposed.ns(), b.dp_exposed.ns(),
          b.bubble.ns(), b.optimizer.ns(), b.other.ns(), b.slowest_gpu.ns(), b.power_cap.ns(),
          f.gemm_time.ns(), f.memory_bound_time.ns(), f.comm_time.ns(), f.idle_time.ns()},
         f.tokens_per_s,
         f.mfu});
  }
  return out;
}

plan::FigureMap all_gather(const plan::FigureMap& mine) {
  const std::vector<Packed> local = pack(mine);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bytes = static_cast<int>(local.size() * sizeof(Packed));
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < size; ++i) {
    offsets[static_cast<std::size_t>(i)] = total;
    total += counts[static_cast<std::size_t>(i)];
  }
  std::vector<Packed> all(static_cast<std::size_t>(total) / sizeof(Packed));
  MPI_Allgatherv(local.data(), bytes, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE,
                 MPI_COMM_WORLD);
  plan::FigureMap out;
  for (const Packed& p : all) {
    plan::StepFigures f;
    const auto t = [&p](int i) { return Time::from_ns(p.ns[i]); };
    f.step_time = t(0);
    f.breakdown = {t(1), t(2), t(3), t(4), t(5), t(6), t(7), t(8), t(9)};
    f.gemm_time = t(10);
    f.memory_bound_time = t(11);
    f.comm_time = t(12);
    f.idle_time = t(13);
    f.tokens_per_s = p.tokens_per_s;
    f.mfu = p.mfu;
    out[p.hash] = f;
  }
  return out;
}
#endif

}  // namespace

MpiShare::MpiShare() {
  const int launched = launched_size();
  if (launched == 1) return;
#ifdef MEGASIM_HAVE_MPI
  MPI_Init(nullptr, nullptr);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
  throw InputError("launched by mpirun with " + std::to_string(launched) +
                   " ranks, but this megasim was built without MPI (install libopenmpi-dev and "
                   "rebuild)");
#endif
}

MpiShare::~MpiShare() {
#ifdef MEGASIM_HAVE_MPI
  if (initialised_) MPI_Finalize();
#endif
}

int MpiShare::count(bool flag) const {
  int n = flag ? 1 : 0;
#ifdef MEGASIM_HAVE_MPI
  if (initialised_) {
    int sum = 0;
    MPI_Allreduce(&n, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    n = sum;
  }
#endif
  return n;
}

void MpiShare::abort(int status) const {
#ifdef MEGASIM_HAVE_MPI
  if (initialised_) MPI_Abort(MPI_COMM_WORLD, status);
#else
  (void)status;
#endif
}

plan::SearchShare MpiShare::share() const {
  plan::SearchShare s;
  s.rank = rank_;
  s.size = size_;
#ifdef MEGASIM_HAVE_MPI
  if (initialised_) s.gather = all_gather;
#endif
  return s;
}

}  // namespace megasim::cli

// NcclModel's choice of algorithm and protocol: NCCL's least predicted time over the algorithms
// the operation and the node allow (ncclTopoGetAlgoInfo), forced values kept. The time it ranks
// by is NCCL's estimate, without the pipeline fill the model's timing adds (nccl_pipeline.cpp)
// and without the scales a calibration fitted to logs.
#include <algorithm>
#include <string>

#include "collective/nccl_model.h"
#include "engine/error.h"

namespace megasim::collective {
namespace {

bool is_nvls(CollAlgorithm a) {
  return a == CollAlgorithm::kNvls || a == CollAlgorithm::kNvlsTree;
}

// Algorithms that run only the Simple protocol.
bool simple_only(CollAlgorithm a) { return is_nvls(a) || a == CollAlgorithm::kPat; }

// Throws InputError for a forced algorithm or protocol the call cannot run.
void check_forced(const NcclModel& model, const CollectiveCall& call, const CommShape& shape) {
  if (call.algorithm == CollAlgorithm::kTree && call.op != CollectiveOp::kAllReduce)
    throw InputError(std::string("--algo tree: NCCL has a tree only for all_reduce, not ") +
                     op_name(call.op));
  if (!simple_only(call.algorithm)) return;
  const std::string why = call.algorithm == CollAlgorithm::kPat
                              ? model.pat_unusable_reason(call, shape)
                              : model.nvls_unusable_reason(call, shape, call.algorithm);
  if (!why.empty())
    throw InputError(std::string("--algo ") + to_string(call.algorithm) + ": " + why);
  if (call.protocol != CollProtocol::kAuto && call.protocol != CollProtocol::kSimple)
    throw InputError(std::string("--algo ") + to_string(call.algorithm) + " --proto " +
                     to_string(call.protocol) + ": " +
                     (call.algorithm == CollAlgorithm::kPat ? "PAT" : "NVLink SHARP") +
                     " runs only with the simple protocol");
}

}  // namespace

std::shared_ptr<const hw::CollectiveConstants> NcclModel::unscaled_copy(
    const hw::CollectiveConstants& constants) {
  if (constants.scale.neutral()) return nullptr;
  auto unscaled = std::make_shared<hw::CollectiveConstants>(constants);
  unscaled->scale = hw::CollectiveScale{};
  return unscaled;
}

std::vector<std::pair<CollAlgorithm, CollProtocol>> NcclModel::candidates(
    const CollectiveCall& call, const CommShape& shape) const {
  if (call.op == CollectiveOp::kAllToAll || call.op == CollectiveOp::kSendRecv) {
    if (call.algorithm != CollAlgorithm::kAuto && call.algorithm != CollAlgorithm::kDirect)
      throw InputError(std::string("--algo ") + to_string(call.algorithm) + ": " +
                       op_name(call.op) +
                       " runs as point-to-point sends, not as a ring, tree or NVLS");
    if (call.protocol != CollProtocol::kAuto && call.protocol != CollProtocol::kSimple)
      throw InputError(std::string("--proto ") + to_string(call.protocol) + ": " +
                       op_name(call.op) +
                       " runs as point-to-point sends, which megasim prices with the simple "
                       "protocol only");
    return {{CollAlgorithm::kDirect, CollProtocol::kSimple}};
  }
  // NCCL chooses by its own estimate: the profile's constants, not the scales fitted to logs
  // (it does not know them), so a calibration moves the time of what NCCL runs, not the pick.
  if (!constants_.scale.neutral()) {
    if (!unscaled_) unscaled_ = unscaled_copy(constants_);
    return NcclModel(topology_, *unscaled_).candidates(call, shape);
  }
  check_forced(*this, call, shape);
  std::vector<CollAlgorithm> algos;
  if (call.algorithm != CollAlgorithm::kAuto) {
    algos = {call.algorithm};
  } else {
    algos = {CollAlgorithm::kRing};
    if (call.op == CollectiveOp::kAllReduce) algos.push_back(CollAlgorithm::kTree);
    for (CollAlgorithm a : {CollAlgorithm::kNvls, CollAlgorithm::kNvlsTree})
      if (nvls_usable(call, shape, a)) algos.push_back(a);
    if (pat_usable(call, shape)) algos.push_back(CollAlgorithm::kPat);
  }
  struct Option {
    CollAlgorithm algorithm;
    CollProtocol protocol;
    Time time;
  };
  std::vector<Option> options;
  for (CollAlgorithm a : algos) {
    std::vector<CollProtocol> protos = {CollProtocol::kLL, CollProtocol::kLL128,
                                        CollProtocol::kSimple};
    if (simple_only(a)) protos = {CollProtocol::kSimple};
    if (call.protocol != CollProtocol::kAuto) {
      if (std::find(protos.begin(), protos.end(), call.protocol) == protos.end()) continue;
      protos = {call.protocol};
    }
    Option best{a, protos.front(), Time::max()};
    for (CollProtocol p : protos) {
      // NCCL ranks by its own estimate (ncclTopoGetAlgoTime), which has no pipeline fill and
      // slows the tree by its correction, where megasim's time may not (choice_only).
      const ModelCost c = cost(call, shape, a, p);
      Time estimate = c.time - c.pipeline_fill;
      if (a == CollAlgorithm::kTree) {
        const double k =
            choice_tree_correction(p, call.bytes.value()) / tree_correction(p, call.bytes.value());
        estimate = c.latency + Time::from_seconds((estimate - c.latency).to_seconds() / k);
      }
      if (c.applicable && estimate < best.time) best = {a, p, estimate};
    }
    if (best.time < Time::max()) options.push_back(best);
  }
  if (options.empty())
    return {{algos.front(),
             call.protocol == CollProtocol::kAuto ? CollProtocol::kSimple : call.protocol}};
  // Fastest first; equal times keep the order built above (ring, tree, NVLS, NVLSTree, PAT).
  // NCCL's own loop keeps the first of its enum (tree before ring) on an exact tie; exact ties
  // of estimates in floating point do not arise on the sizes megasim prices.
  std::stable_sort(options.begin(), options.end(),
                   [](const Option& x, const Option& y) { return x.time < y.time; });
  std::vector<std::pair<CollAlgorithm, CollProtocol>> out;
  for (const Option& o : options) out.emplace_back(o.algorithm, o.protocol);
  return out;
}

std::pair<CollAlgorithm, CollProtocol> NcclModel::choose(const CollectiveCall& call,
                                                         const CommShape& shape) const {
  return candidates(call, shape).front();
}

}  // namespace megasim::collective

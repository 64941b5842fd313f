// How the training system runs a plan: Megatron-LM's placement of communication or
// MegaScale's, and each optimisation of MegaScale's Table 3 (NSDI'24) as its own switch.
// A preset (systems/NAME.json, loaded by io::load_system_preset) gives every switch and the
// system's own constants; a scenario's `optimizations` section overrides switches.
//
// kSwitches is the one list of the switches: the scenario and preset readers, the writers, the
// schema test and the reports all walk it, so a new switch is added here and nowhere else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/time.h"

namespace megasim::step {

enum class AttentionKernel { kUnfused, kFlashV1, kFlashV2 };
const char* to_string(AttentionKernel k);

struct SystemOptions {
  std::string preset = "megatron-lm";
  bool parallel_block = false;       // attention and MLP in parallel: one AG/RS per layer
  bool sliding_window = false;       // attention restricted to `attention_window` keys
  std::int64_t attention_window = 0; // tokens; used when sliding_window is on
  bool tp_overlap = false;           // forward TP collectives fused into adjacent GEMMs
  bool pp_overlap = false;           // PP send/recv on their own stream
  bool dp_overlap = false;           // per-chunk reduce-scatter, prefetched all-gather
  bool efficient_operators = false;  // FlashAttention-2 (whatever `attention` says)
  bool misc = false;                 // asynchronous data pipeline (see StepRequest)
  bool lamb = false;                 // LAMB optimizer step instead of Adam
  AttentionKernel attention = AttentionKernel::kFlashV1;  // without efficient_operators
  // Without tp_overlap: whether the backward pass's TP collectives still overlap dgrad/wgrad
  // (Megatron-LM issues them asynchronously) or sit on the critical path.
  bool backward_tp_overlap = false;
  // Host-side cost of each blocking point-to-point exchange (Megatron-LM synchronises the
  // device after batch_isend_irecv), paid once per exchange when !pp_overlap.
  Time blocking_p2p_overhead;
  // With dp_overlap: overlap bucket by bucket (the workload's DP buckets, Megatron's sizes)
  // rather than chunk by chunk (MegaScale). A chunk's reduce-scatter then goes out bucket by
  // bucket as its last backward pass produces them, and its all-gather comes in bucket by
  // bucket while its first forward pass runs (Megatron-Core's --overlap-grad-reduce and
  // --overlap-param-gather).
  bool dp_bucket_overlap = false;
  // Each micro-batch's weight gradients added into the accumulation buffer by a pass of their
  // own (Megatron-LM before gradient-accumulation fusion, February 2022: main_grad.add_ in the
  // backward hook; PyTorch DDP's AccumulateGrad), rather than by the weight-gradient GEMM.
  bool grad_accumulation_pass = false;
  // Without sequence parallelism, how a stage's output crosses to the next with tp > 1:
  // Megatron-LM's scatter-gather (Narayanan et al. SC'21 §4.1; on by default from February
  // 2021 until the pipeline moved into Megatron-Core, 3c92fa93, March 2023): each TP rank sends
  // a 1/tp slice and the receiver all-gathers it over TP before its pass; else every TP rank
  // sends the whole tensor (Megatron-Core's p2p). DeepSpeed's PipelineEngine partitions its own
  // (pipe_engine.partitioned_transfers).
  bool scatter_gather_transfers = true;
  // With scatter_gather_transfers: the receiver's gather a list-form all_gather into per-rank
  // views (Megatron-LM before 37181ef4, February 2022), which PyTorch's NCCL backend fills by
  // copying the whole tensor out of its flat buffer after the collective: a copy of the
  // whole received tensor on the critical path. Else _all_gather_base, straight into it.
  bool scatter_gather_list_copy = false;
  // With bf16 and no plan.fp32_gradients written: gradients kept and reduced in fp32
  // (Megatron-LM's rule, --accumulate-allreduce-grads-in-fp32), or in bf16 (DeepSpeed's ZeRO
  // optimizers: DeepSpeedEngine.communication_data_type is bf16 with bf16), where its
  // BF16_Optimizer's flat fp32 gradients do not run (io::Inputs resolves the plan's).
  bool bf16_gradients_in_fp32 = true;
  // Gradients kept in 16 bits (plan.fp32_gradients false): the optimizer's fp32 copy of each
  // shard is made at the optimizer step and freed before the next forward (Megatron's
  // optimizers' _copy_model_grads_to_main_grads and zero_grad(set_to_none); DeepSpeed's ZeRO
  // optimizers), so it is not held at the activations' peak; else it is held from the
  // backward on (FSDP casts each reduced gradient to the fp32 parameter's dtype).
  bool main_gradient_at_step = false;
  // Plan features the preset's framework does not run (its `not_in_framework`): a plan with
  // one runs as a what-if on the preset's other mechanisms, and says so (plan::framework_lacks).
  struct NotInFramework {
    bool zero2 = false, zero3 = false, cp = false, fp8 = false, pp = false;
    std::string source;
  } not_in_framework;
  // Context parallelism (plan.cp): whether a layer's K/V exchange runs beside its attention
  // (Transformer Engine's ring of send/recv, AttnFuncWithCPAndKVP2P, pipelined over the cp
  // ring steps) or before it, exposed (an all-gather first, as Llama 3 and Transformer
  // Engine's AttnFuncWithCPAndKVAllGather do).
  bool cp_overlap = false;
  // With tp_overlap, how the overlapped pairs are cut (Transformer Engine's userbuffers,
  // --tp-comm-overlap; its defaults in transformer_engine/pytorch/module/base.py,
  // initialize_ub). Off: each pair runs whole, the GEMM slowed by the profile's interference
  // (MegaScale's fused kernels). On, by Op::tp_feeds_gemm and the pass:
  // - ring_exchange (an all-gather feeding its GEMM): the GEMM runs as tp pieces, one per
  //   rank's chunk as it arrives, the exchange on the copy engines beside it;
  // - pipeline (the forward's reduce-scatter of a GEMM's output): pipeline_splits pieces, each
  //   piece's reduce-scatter beside the next piece, on pipeline_comm_sms SMs the GEMM cannot use;
  // - bulk (the backward's re-gather and gradient reduce-scatter beside an unrelated GEMM):
  //   the collective on bulk_comm_sms SMs, the GEMM whole on the rest.
  struct TpDecomposition {
    bool enabled = false;
    int pipeline_splits = 4;
    int pipeline_comm_sms = 16;
    int bulk_comm_sms = 16;
  } tp_decomposition;
  // Sharded data parallelism (plan.zero3: ZeRO-3, FSDP full shard) as the framework runs it.
  // Inside a pass each layer's parameters are all-gathered before its compute and its gradients
  // reduce-scattered after its backward, on the DP communicator (sharded_pass.h):
  struct Sharding {
    // One collective per parameter tensor (DeepSpeed's ZeRO-3 of 2021), or per layer.
    bool per_tensor = false;
    // The unit fetched at a time: each sub-module (norm, QKV, attention output, fc1, fc2: the
    // nn.Modules DeepSpeed's ZeRO-3 of 2021 hooks) just before its compute, or the layer.
    bool per_sub_module = false;
    // Units whose gathers are issued ahead of the compute that needs them: 0 = every
    // collective in line with compute (no overlap), 1 = the next unit's gather runs beside
    // this unit's compute.
    int prefetch_layers = 0;
    // One gradient reduce-scatter in flight, the host waiting for it before it issues the next
    // (and so before it queues more backward compute).
    bool blocking_reduce = false;
    // The fetch of gathered parameters synchronises the device (DeepSpeed ZeRO-3's
    // torch.cuda.synchronize() in _synchronize_communication): the compute it precedes waits
    // for every reduce-scatter issued before it (step/sharded_pass.h).
    bool fetch_waits_device = false;
    // Gradients reduced in buckets of at most this many elements (DeepSpeed's
    // reduce_bucket_size), tensor by tensor within a bucket, the host's loop for the next
    // tensor beside the previous one's collective (step/sharded_pass.h). 0: each layer's
    // reduce-scatters as one, their host work first.
    std::int64_t reduce_bucket_elements = 0;
    // DeepSpeed's contiguous_gradients path (needs a bucket size): each gradient no larger
    // than the bucket is copied into the reduce buffer on the compute stream as the backward
    // produces it, and before each bucket's reduce-scatters the whole buffer (the bucket size,
    // however full) and any larger gradient reduced alone are divided by the DP size on the
    // reduction stream (stage3.py's average_tensor).
    bool contiguous_gradients = false;
    // With full recompute: gather again for the backward after the recompute released them.
    bool regather_after_recompute = false;
    // DeepSpeed's stage3_max_reuse_distance (elements): a sub-module reused within it after the
    // recompute's forward stays gathered for its backward (workload::GeneratorOptions).
    std::int64_t max_reuse_distance = 0;
    // A shard group of one rank (plan.dp 1, or a shard_group of 1) runs unsharded: PyTorch
    // FSDP clamps FULL_SHARD and HYBRID_SHARD to NO_SHARD when its process group holds one
    // rank (_init_utils.py, "FSDP is switching to use NO_SHARD"), so no gathered copy sits
    // beside the shard (memory). DeepSpeed's stage 3 keeps its partition and gathers into a
    // buffer of its own at one rank too, so its preset leaves this off.
    bool no_shard_at_one_rank = false;
    // ZeRO-2 (plan.zero2) as PyTorch FSDP's SHARD_GRAD_OP runs it: the parameters, sharded
    // after every backward pass, are gathered again layer by layer before every forward pass
    // (workload::GeneratorOptions::zero2_reshard_after_backward); else once a step, after the
    // optimizer, as DeepSpeed's ZeRO-2 and a distributed optimizer do.
    bool zero2_reshard_after_backward = false;
    // The collectives go through torch.distributed's list-form all_gather and reduce_scatter
    // (PyTorch 1.8's ProcessGroupNCCL): the flat buffer NCCL works on is copied out to (or in
    // from) each of the DP group's per-rank tensors, one copy_ each, on the collective's stream.
    bool per_rank_copies = false;
    // Each all-gather's output buffer is allocated with torch.zeros (DeepSpeed 2021's
    // _allgather_param): a fill kernel writing the whole gathered tensor before the collective.
    bool zeroed_gather_buffer = false;
    // Host time to issue one all-gather (the framework's Python before the call and the
    // library's launch path), during which the host queues nothing else (sharded_pass.h), as
    // measured on a DP group of `gather_host_ranks`: the per-rank part of those ranks
    // (host_per_rank) is in it.
    Time gather_host;
    int gather_host_ranks = 0;
    // Host work per rank of the DP group, for each collective: the per-rank tensors of
    // torch.distributed's list-form calls, each built and issued one at a time on the host
    // thread that also queues the compute. Each op's host time is measured; how many of each a
    // rank takes is read in the code (systems/deepspeed.json). The framework's Python runs
    // before the call; the library's loop runs after the collective is launched for an
    // all-gather (ProcessGroupNCCL copies out of the flat buffer) and before it for a
    // reduce-scatter (copies into it).
    struct HostPerRank {
      Time python_op;      // a tensor op called from Python (a view: narrow, view)
      Time dispatched_op;  // an op called from C++ through the dispatcher (select, copy_)
      Time memcpy;         // a device-to-device cudaMemcpyAsync submitted by copy_
      struct Ops {
        int python = 0;      // framework: before the call
        int dispatched = 0;  // library
        int memcpys = 0;     // library
      };
      Ops gather, scatter;
      Time framework(const Ops& o) const { return python_op * o.python; }
      Time library(const Ops& o) const { return dispatched_op * o.dispatched + memcpy * o.memcpys; }
      Time per_rank(const Ops& o) const { return framework(o) + library(o); }
    } host_per_rank;
    // gather_host less the per-rank work of the `gather_host_ranks` it was measured on: the part
    // that does not grow with the group (io::load_system_file checks it is not negative).
    Time gather_fixed_host() const {
      return gather_host - host_per_rank.per_rank(host_per_rank.gather) * gather_host_ranks;
    }
    // Per tensor: tensors under this many elements stay gathered (DeepSpeed's
    // stage3_param_persistence_threshold); no pass gathers them again. 0: none.
    std::int64_t persistence_threshold = 0;
  } sharding;
  // DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py, 2021-22): what it does on
  // the compute stream beyond the 1F1B exchanges themselves (workload/pipe_engine_ops.h).
  struct PipelineEngine {
    // The preset runs its pipeline through DeepSpeed's PipelineEngine, whose only training
    // schedule is TrainSchedule, a 1F1B (deepspeed/runtime/pipe/schedule.py): no interleaved,
    // GPipe or zero-bubble plan (io::load_inputs refuses them, search never builds them).
    bool present = false;
    // With tp > 1 the activation and its gradient cross stages as PartitionedTensors: each TP
    // rank sends a 1/tp slice, and PartitionedTensor.full() rebuilds the whole tensor (zero
    // fill, list-form TP all-gather, per-rank copies, clone) for the receiver's forward and,
    // twice, for the sender's backward; the slices are cloned on the way.
    bool partitioned_transfers = false;
    // bf16 runs through the engine's BF16_Optimizer: after each micro-batch's backward every
    // bf16 gradient is cast to fp32 and added to the fp32 gradient (update_hp_grads), and the
    // step's fp32 gradients are cast to bf16, all-reduced over DP and cast back
    // (_bf16_reduce_grads), the norm read from every fp32 gradient.
    bool bf16_optimizer = false;
  } pipe_engine;

  AttentionKernel attention_kernel() const {
    return efficient_operators ? AttentionKernel::kFlashV2 : attention;
  }
};

// One optimisation switch: its key in scenarios and presets, the field it sets, and its tag in
// the text report's "system" line ("" for a switch the line does not show).
struct Switch {
  const char* key;
  bool SystemOptions::*field;
  const char* tag;
};

inline constexpr std::array<Switch, 8> kSwitches{{
    {"parallel_block", &SystemOptions::parallel_block, "+parallel-block"},
    {"sliding_window", &SystemOptions::sliding_window, "+window"},
    {"tp_overlap", &SystemOptions::tp_overlap, "+tp-overlap"},
    {"pp_overlap", &SystemOptions::pp_overlap, "+pp-overlap"},
    {"dp_overlap", &SystemOptions::dp_overlap, "+dp-overlap"},
    {"efficient_operators", &SystemOptions::efficient_operators, "+fused-attention"},
    {"misc", &SystemOptions::misc, ""},
    {"lamb", &SystemOptions::lamb, "+lamb"},
}};

// What a scenario's `optimizations` section changes in its preset; unset fields keep the
// preset's value.
struct SystemOverrides {
  std::array<std::optional<bool>, kSwitches.size()> switches;  // in kSwitches' order
  std::optional<std::int64_t> attention_window;                // tokens
  std::optional<AttentionKernel> attention;
  // DeepSpeed's BF16_Optimizer (pipe_engine.bf16_optimizer): the engine takes it for bf16 at
  // ZeRO stage 0 only; bf16 at ZeRO stage 1 goes through its ZeRO optimizer as fp16 does.
  std::optional<bool> bf16_optimizer;
  // Whether context parallelism's K/V exchanges run beside the attention (the preset's
  // context_parallel.overlap: Transformer Engine's P2P ring) or block before it (Llama 3's
  // all-gather of K and V, exposed on the critical path: The Llama 3 Herd of Models, 3.3.2).
  std::optional<bool> cp_overlap;
  // With dp_overlap: bucket by bucket (the preset's dp_bucket_overlap), e.g. PyTorch's
  // DistributedDataParallel under Megatron-LM's --DDP-impl torch, or chunk by chunk.
  std::optional<bool> dp_bucket_overlap;
  // Without tp_overlap: whether the backward pass's TP collectives overlap dgrad/wgrad (the
  // preset's backward_tp_overlap), for a run of another version of the same framework.
  std::optional<bool> backward_tp_overlap;
  // Whether each micro-batch's weight gradients take a pass of their own (the preset's
  // grad_accumulation_pass), for code before gradient-accumulation fusion.
  std::optional<bool> grad_accumulation_pass;
  // When 16-bit gradients' fp32 copy exists (the preset's fp32_main_gradient): made at the
  // optimizer step, or held from the backward on (Megatron-LM before 4fd6432d, July 2021, whose
  // zero_grad left it set into the next step).
  std::optional<bool> main_gradient_at_step;
  // Whether scatter-gather's receiver copies the gathered tensor out of a flat buffer (the
  // preset's scatter_gather_transfers.list_copy), for Megatron-LM before February 2022.
  std::optional<bool> scatter_gather_list_copy;
};

// The preset with the overrides applied, against the model it runs: a model's own parallel
// block or window (`model_window` tokens, 0 for none) is on unless the scenario switches it off
// (`optimizations.parallel_block` / `sliding_window` false: the model run without it), and the
// window's size falls back to the model's. Whether a sliding window has a size is the caller's
// check (io::load_inputs), which can name the scenario.
SystemOptions apply_overrides(SystemOptions preset, const SystemOverrides& overrides,
                              bool model_parallel_block, std::int64_t model_window);

// Parses "unfused" | "flash-v1" | "flash-v2"; nullopt for anything else.
std::optional<AttentionKernel> attention_kernel_from_string(const std::string& name);
// Every name attention_kernel_from_string takes: a preset's or scenario's choices.
std::vector<std::string> attention_kernel_names();

// When 16-bit gradients' fp32 copy exists (SystemOptions::main_gradient_at_step), as a preset's
// `fp32_main_gradient.held`, a scenario's `optimizations.fp32_main_gradient` and simulate's
// `system.fp32_main_gradient` spell it: "optimizer-step" (true) or "from-backward" (false).
const char* main_gradient_name(bool at_step);
// Parses one of main_gradient_names(); nullopt for anything else.
std::optional<bool> main_gradient_at_step_from_string(const std::string& name);
std::vector<std::string> main_gradient_names();

}  // namespace megasim::step

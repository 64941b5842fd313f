// One pass (forward or backward of one micro-batch of one model chunk) under sharded data
// parallelism (ZeRO-3, FSDP full shard): its compute interleaved with the per-layer parameter
// all-gathers and gradient reduce-scatters on the DP communicator, timed as the framework
// overlaps them.
//
// The pass is a sequence of segments in program order: compute (a run of kernels and TP
// collectives, already priced), gather (a layer's all-gathers, one after another) and scatter
// (a layer's reduce-scatters). Three resources: the compute stream, the host that issues work,
// and the GPU's DP communication, one collective at a time (a gather and a reduce-scatter in
// flight together share the same NICs, so they are run one after the other in issue order,
// which keeps the bytes per second the network can carry).
//   - A gather is issued `prefetch` compute segments ahead of the one that needs it: with 1,
//     when the host starts the previous layer's compute; with 0, in line (after the previous
//     compute ends: no overlap).
//   - A compute segment starts when the previous one has ended and its layer's gather is in.
//   - A scatter is issued when the compute before it (its layer's backward) has ended. With
//     `blocking_reduce` the host waits for the previous scatter before it issues the next, so
//     the compute after it cannot start before then; with prefetch 0 every scatter is in line.
//   - A gather segment may carry host time: the host issuing its collectives (the framework's
//     Python and the library's launch path, measured per call). The host is busy meanwhile, so
//     neither that gather nor compute it has not queued yet starts before it is done; with
//     prefetch the next unit's gathers are issued before the current compute is queued (as
//     DeepSpeed's pre-forward hook does), so their host time delays that compute.
//   - A gather may also carry host time after its launch (`host_tail`: the library's loop
//     over the DP group's per-rank copies, issued one by one while the collective runs). The
//     host is busy meanwhile as before; the gather is in once both the collective and that
//     loop are done.
//   - A scatter may carry host time (`host`: the per-rank views and copies into the flat
//     buffer, before it starts). The host does it once the scatter is issued, so the compute
//     it has not queued yet waits for it, with or without a blocking reduce.
//   - With a reduce bucket size (DeepSpeed's reduce_bucket_size) a scatter segment is timed
//     tensor by tensor: its tensors, in program order, fill buckets (a tensor that would take
//     a non-empty bucket past the size opens the next; each segment opens one). At a bucket's
//     start, with `blocking_reduce`, the host waits for the previous bucket's collectives
//     (reduce_ipg_grads' reduction_stream.synchronize()); then for each tensor the host runs
//     its loop and its collective starts once both that loop and the DP line are done, so the
//     next tensor's loop runs beside it (_reduce_scatter_gradient launches and returns).
//     Without a bucket size the segment is one issue: all its host time, then its collectives.
//     With DeepSpeed's contiguous_gradients each tensor's copy into the reduce buffer is
//     compute-stream time before the segment is issued (it delays the compute after it, as
//     DP time), and a bucket's division runs on the DP line as the bucket starts (the host
//     queues it and goes on to the first tensor's loop).
//   - With `fetch_waits_device` the fetch of a unit whose parameters are gathered waits for
//     the whole device before the host goes on (DeepSpeed's _synchronize_communication ends in
//     torch.cuda.synchronize(), which waits for every stream, the reduction stream's
//     reduce-scatters included): that unit's compute starts only once every scatter issued
//     before it has ended, so a layer's reduce-scatter does not run beside the next unit's
//     compute.
//   - The pass ends when its compute and every collective it issued have ended.
//   - Compute runs `interference` times slower while the DP line is busy (a collective, or the
//     per-rank copies, fills and reduce-buffer divisions on it): the device profile's
//     compute/communication interference, as the executor applies it beside PP and DP streams.
//     Only the segment's kernels are slowed: its `shielded` part (TP/CP exchanges, TP-paired
//     GEMMs already slowed) is not, the segment taken as an even mix of the two. The slowed
//     time is compute's (ShardedPassTime::compute), not DP's.
// Collective prices are each one alone on the DP communicator (step/pricing.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"

namespace megasim::step {

// What the DP line does for a pass, for the trace.
enum class DpWork { kAllGather, kAllReduce, kReduceScatter, kBufferCopies, kBufferDivide };

struct ShardedSegment {
  enum class Kind { kCompute, kGather, kScatter };
  Kind kind = Kind::kCompute;
  Time time;
  Time host;       // host time to issue the collectives, before they start
  Time host_tail;  // gathers: host time after the launch, beside the collective
  // Scatters: the segment's tensors one by one, in program order (time and host above are
  // their sums), for a framework that reduces them in buckets (`reduce_bucket_elements`).
  struct Tensor {
    Time time;  // its collective
    Time host;  // its host work, before the launch
    std::int64_t elements = 0;
    // The device copies into the flat buffer (on the DP line) that the last `loop` of the host
    // work issues one by one: they start as the loop starts, or when the line is free.
    Time loop;
    Time copies;
    // DeepSpeed's contiguous_gradients: the copy of this gradient into the reduce buffer, on
    // the compute stream as the backward produces it, and the division the bucket it opens
    // runs on the DP line at its start, before its first tensor's collective.
    Time stream_copy;
    Time divide;
    Bytes bytes = Bytes(0);  // its collective's, for the trace
  };
  std::vector<Tensor> tensors;
  // Compute segments: the part of `time` the DP line does not slow (exposed TP or CP
  // exchanges, and GEMMs paired with a TP collective, already slowed in their pricing).
  Time shielded = Time::zero();
  // Gathers and scatters, for the trace (ShardedTimeline): the first collective's kind (a
  // gather segment may hold all-reduces: FP8's amax) and layer (-1: none), and their sizes
  // (nccl-tests' size a rank: an all-gather's output, a reduce-scatter's input).
  DpWork work = DpWork::kAllGather;
  int layer = -1;
  Bytes bytes = Bytes(0);
};

struct ShardedPassTime {
  Time total;       // the pass, start to end
  Time compute;     // the compute segments' sum, slowed where the DP line ran beside them
  Time dp_exposed;  // total − compute: the pass waiting for DP collectives
  // Collective, host-issue and reduce-buffer (copies, divisions) time that did not hold the
  // pass: beside compute, or a collective beside the host's loop issuing the next (so it may
  // exceed `compute`).
  Time dp_hidden;
};

// Where a pass's work lay, from the pass's start, as sharded_pass_time timed it (for the
// trace): its compute, in order, the DP line's busy spans, and the host's work issuing them.
// Spans that touch are merged when they are alike (compute with compute, host work with host
// work; the same kind of DP work for the same layer).
struct ShardedTimeline {
  struct DpSpan {
    DpWork work = DpWork::kAllGather;
    Time start, end;
    int layer = -1;  // the layer of its first collective (-1: none, or embedding and logits)
    Bytes bytes;     // its collectives' sizes (nccl-tests' size a rank)
    int calls = 0;   // the collectives or kernels merged into it
  };
  Time total;
  std::vector<std::pair<Time, Time>> compute;
  std::vector<DpSpan> dp;
  std::vector<std::pair<Time, Time>> host;  // the host issuing the collectives
};

// reduce_bucket_elements: 0 = each scatter segment reduced as one (its host time, then its
// collectives); above 0 = its tensors reduced bucket by bucket as described above.
// interference: compute's slowdown beside the DP line (1 = none). fetch_waits_device: as
// above. timeline: where to keep the pass's spans (none kept when null).
ShardedPassTime sharded_pass_time(const std::vector<ShardedSegment>& segments, int prefetch,
                                  bool blocking_reduce, std::int64_t reduce_bucket_elements = 0,
                                  double interference = 1.0, bool fetch_waits_device = false,
                                  ShardedTimeline* timeline = nullptr);

}  // namespace megasim::step

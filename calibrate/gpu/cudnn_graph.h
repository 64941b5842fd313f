// A cuDNN operation graph built directly on the graph (backend) API, cudnn_graph.h: 4-d
// tensors, pointwise, matmul, reduction and reshape operations, planned through cuDNN's
// heuristics (mode A, then FALLBACK; the first engine configuration whose execution plan
// finalises wins) and run with one bound variant pack. It is what cudnn_frontend does for a
// graph, without the frontend, which this project does not depend on.
//
// Every cuDNN call's status is checked: a failure throws GpuError naming the call, the
// attribute where there is one, cuDNN's status string and its last error message. Descriptors
// are owned and destroyed with the graph. Tensors are named by unique ids, 1, 2, … in creation
// order; the variant pack binds device pointers to the ids of the non-virtual tensors, and the
// graph adds the host addresses of its by-value scalars itself. One thread, one graph.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cudnn.h>

#include "calibrate/gpu/gpu_common.h"

namespace megasim::gpu {

void check_cudnn(cudnnStatus_t s, const char* what);

// A backend attribute with its name, for error messages.
struct CudnnAttribute {
  cudnnBackendAttributeName_t id;
  const char* name;
};
#define MEGASIM_CUDNN_ATTR(a) ::megasim::gpu::CudnnAttribute{(a), #a}

// Owns one backend descriptor.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  BackendDescriptor(BackendDescriptor&& other) noexcept;
  BackendDescriptor& operator=(BackendDescriptor&&) = delete;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor();

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(CudnnAttribute a, cudnnBackendAttributeType_t type, std::int64_t count,
           const void* values);
  void set_descriptor(CudnnAttribute a, const BackendDescriptor& value);
  void finalize(const char* what);

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::array<std::int64_t, 4>;

// A tensor of the graph: its unique id and layout.
struct GraphTensor {
  std::int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  Dims dims{};
  Dims strides{};
};

// Strides of a packed tensor of `dims`, the last dimension contiguous.
Dims packed_strides(const Dims& dims);

class CudnnGraph {
 public:
  CudnnGraph() = default;
  CudnnGraph(const CudnnGraph&) = delete;
  CudnnGraph& operator=(const CudnnGraph&) = delete;

  // A tensor in device memory, bound by pointer at bind().
  GraphTensor io(cudnnDataType_t type, const Dims& dims, const Dims& strides);
  // An intermediate the engine keeps to itself.
  GraphTensor intermediate(cudnnDataType_t type, const Dims& dims, const Dims& strides);
  GraphTensor intermediate_like(const GraphTensor& t, cudnnDataType_t type);
  // A float passed by value; the graph keeps the host copy the variant pack points at.
  GraphTensor scalar(float value);

  // y = mode(x), mode(x, b) or mode(x, b, t), computed in `math`; `axis` where the mode (or
  // the pattern an engine matches) names one.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                 const GraphTensor& y);
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                 const GraphTensor& b, const GraphTensor& y,
                 std::optional<std::int64_t> axis = std::nullopt);
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                 const GraphTensor& b, const GraphTensor& t, const GraphTensor& y);
  // y = the index of each element of x along `axis` (CUDNN_POINTWISE_GEN_INDEX).
  void gen_index(std::int64_t axis, const GraphTensor& x, const GraphTensor& y);
  // c = a · b over the last two dimensions, batched over the first two, fp32 accumulation.
  void matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c);
  // y = x reduced with `op` over the dimensions where y has extent 1, in fp32.
  void reduction(cudnnReduceTensorOp_t op, const GraphTensor& x, const GraphTensor& y);
  // y = x in y's dimensions and strides (a transposed view of the same elements).
  void reshape(const GraphTensor& x, const GraphTensor& y);

  // Finalises the graph and an execution plan for it. Throws GpuError when no engine
  // configuration of either heuristics mode makes a plan.
  void plan(cudnnHandle_t handle);
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  std::int64_t engine_index() const { return engine_index_; }  // cuDNN's global engine index

  // Binds every io tensor's device pointer (uid → pointer) and the workspace.
  void bind(const std::vector<std::pair<std::int64_t, void*>>& pointers, void* workspace);
  // Enqueues one run on the handle's stream.
  void execute(cudnnHandle_t handle) const;

 private:
  GraphTensor add_tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides,
                         bool is_virtual, bool by_value);
  const BackendDescriptor& descriptor(const GraphTensor& t) const;
  void pointwise_op(cudnnPointwiseMode_t mode, cudnnDataType_t math,
                    std::optional<std::int64_t> axis, const GraphTensor& x, const GraphTensor* b,
                    const GraphTensor* t, const GraphTensor& y);
  bool try_plan(cudnnHandle_t handle, cudnnBackendHeurMode_t mode, std::string& failures);

  std::vector<BackendDescriptor> tensors_;     // tensor uid u at index u − 1
  std::vector<BackendDescriptor> operations_;  // in graph order
  std::vector<BackendDescriptor> parts_;       // descriptors the operations refer to
  std::vector<std::int64_t> io_uids_;
  std::deque<std::pair<std::int64_t, float>> scalars_;  // stable addresses for the pack
  std::optional<BackendDescriptor> graph_;
  std::vector<BackendDescriptor> heuristics_;  // each mode's query
  std::vector<BackendDescriptor> configs_;     // the engine configurations they returned
  std::optional<BackendDescriptor> plan_;
  std::optional<BackendDescriptor> variant_pack_;
  std::int64_t workspace_bytes_ = 0;
  std::int64_t engine_index_ = -1;
};

}  // namespace megasim::gpu

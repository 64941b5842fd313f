#include "calibrate/gpu/cudnn_graph.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace megasim::gpu {
namespace {

// Pointer alignment the engines may assume for every tensor, in bytes: cudaMalloc gives 256,
// and 16 is what tensor-core engines need (cudnn_frontend's default too).
constexpr std::int64_t kTensorAlignment = 16;

std::string last_cudnn_error() {
  char message[1024] = {};
  cudnnGetLastErrorString(message, sizeof message);
  return message;
}

std::string status_text(cudnnStatus_t s) {
  const std::string detail = last_cudnn_error();
  return detail.empty() ? cudnnGetErrorString(s)
                        : fmt::format("{} ({})", cudnnGetErrorString(s), detail);
}

}  // namespace

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw GpuError(fmt::format("{}: {}", what, status_text(s)));
}

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  check_cudnn(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
}

BackendDescriptor::BackendDescriptor(BackendDescriptor&& other) noexcept : d_(other.d_) {
  other.d_ = nullptr;
}

BackendDescriptor::~BackendDescriptor() {
  // A destructor cannot report; destroying a descriptor cuDNN created does not fail.
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
}

void BackendDescriptor::set(CudnnAttribute a, cudnnBackendAttributeType_t type, std::int64_t count,
                            const void* values) {
  const cudnnStatus_t s = cudnnBackendSetAttribute(d_, a.id, type, count, values);
  if (s != CUDNN_STATUS_SUCCESS) {
    throw GpuError(fmt::format("cudnnBackendSetAttribute({}): {}", a.name, status_text(s)));
  }
}

void BackendDescriptor::set_descriptor(CudnnAttribute a, const BackendDescriptor& value) {
  const cudnnBackendDescriptor_t raw = value.get();
  set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void BackendDescriptor::finalize(const char* what) {
  const cudnnStatus_t s = cudnnBackendFinalize(d_);
  if (s != CUDNN_STATUS_SUCCESS) {
    throw GpuError(fmt::format("cudnnBackendFinalize({}): {}", what, status_text(s)));
  }
}

Dims packed_strides(const Dims& dims) {
  Dims s{};
  std::int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    s[static_cast<std::size_t>(i)] = stride;
    stride *= dims[static_cast<std::size_t>(i)];
  }
  return s;
}

GraphTensor CudnnGraph::add_tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                   bool is_virtual, bool by_value) {
  const GraphTensor t{static_cast<std::int64_t>(tensors_.size()) + 1, type, dims, strides};
  BackendDescriptor& d = tensors_.emplace_back(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), CUDNN_TYPE_DATA_TYPE, 1, &type);
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), CUDNN_TYPE_INT64, 4, dims.data());
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_STRIDES), CUDNN_TYPE_INT64, 4, strides.data());
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), CUDNN_TYPE_INT64, 1, &t.uid);
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), CUDNN_TYPE_INT64, 1,
        &kTensorAlignment);
  d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL), CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) {
    d.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE), CUDNN_TYPE_BOOLEAN, 1, &by_value);
  }
  d.finalize("tensor");
  return t;
}

GraphTensor CudnnGraph::io(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
  const GraphTensor t = add_tensor(type, dims, strides, false, false);
  io_uids_.push_back(t.uid);
  return t;
}

GraphTensor CudnnGraph::intermediate(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
  return add_tensor(type, dims, strides, true, false);
}

GraphTensor CudnnGraph::intermediate_like(const GraphTensor& t, cudnnDataType_t type) {
  return intermediate(type, t.dims, t.strides);
}

GraphTensor CudnnGraph::scalar(float value) {
  const Dims one{1, 1, 1, 1};
  const GraphTensor t = add_tensor(CUDNN_DATA_FLOAT, one, one, false, true);
  scalars_.emplace_back(t.uid, value);
  return t;
}

const BackendDescriptor& CudnnGraph::descriptor(const GraphTensor& t) const {
  return tensors_.at(static_cast<std::size_t>(t.uid - 1));
}

void CudnnGraph::pointwise_op(cudnnPointwiseMode_t mode, cudnnDataType_t math,
                              std::optional<std::int64_t> axis, const GraphTensor& x,
                              const GraphTensor* b, const GraphTensor* t, const GraphTensor& y) {
  BackendDescriptor& pw = parts_.emplace_back(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_MODE), CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  pw.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), CUDNN_TYPE_DATA_TYPE, 1, &math);
  if (axis) pw.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_AXIS), CUDNN_TYPE_INT64, 1, &*axis);
  pw.finalize("pointwise");
  BackendDescriptor& op = operations_.emplace_back(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), pw);
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), descriptor(x));
  if (b != nullptr) {
    op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), descriptor(*b));
  }
  if (t != nullptr) {
    op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_TDESC), descriptor(*t));
  }
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), descriptor(y));
  op.finalize("pointwise operation");
}

void CudnnGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                           const GraphTensor& y) {
  pointwise_op(mode, math, std::nullopt, x, nullptr, nullptr, y);
}

void CudnnGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                           const GraphTensor& b, const GraphTensor& y,
                           std::optional<std::int64_t> axis) {
  pointwise_op(mode, math, axis, x, &b, nullptr, y);
}

void CudnnGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const GraphTensor& x,
                           const GraphTensor& b, const GraphTensor& t, const GraphTensor& y) {
  pointwise_op(mode, math, std::nullopt, x, &b, &t, y);
}

void CudnnGraph::gen_index(std::int64_t axis, const GraphTensor& x, const GraphTensor& y) {
  pointwise_op(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, axis, x, nullptr, nullptr, y);
}

void CudnnGraph::matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c) {
  BackendDescriptor& mm = parts_.emplace_back(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t accumulate = CUDNN_DATA_FLOAT;
  mm.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_MATMUL_COMP_TYPE), CUDNN_TYPE_DATA_TYPE, 1, &accumulate);
  mm.finalize("matmul");
  BackendDescriptor& op = operations_.emplace_back(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_MATMUL_ADESC), descriptor(a));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_MATMUL_BDESC), descriptor(b));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_MATMUL_CDESC), descriptor(c));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_MATMUL_DESC), mm);
  op.finalize("matmul operation");
}

void CudnnGraph::reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x,
                           const GraphTensor& y) {
  BackendDescriptor& r = parts_.emplace_back(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t accumulate = CUDNN_DATA_FLOAT;
  r.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR), CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
        &reduce);
  r.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE), CUDNN_TYPE_DATA_TYPE, 1, &accumulate);
  r.finalize("reduction");
  BackendDescriptor& op = operations_.emplace_back(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_XDESC), descriptor(x));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_YDESC), descriptor(y));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_DESC), r);
  op.finalize("reduction operation");
}

void CudnnGraph::reshape(const GraphTensor& x, const GraphTensor& y) {
  BackendDescriptor& op = operations_.emplace_back(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_XDESC), descriptor(x));
  op.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_YDESC), descriptor(y));
  op.finalize("reshape operation");
}

bool CudnnGraph::try_plan(cudnnHandle_t handle, cudnnBackendHeurMode_t mode,
                          std::string& failures) {
  const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "A" : "FALLBACK";
  BackendDescriptor& heur = heuristics_.emplace_back(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), *graph_);
  heur.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE), CUDNN_TYPE_HEUR_MODE, 1, &mode);
  const cudnnStatus_t heur_status = cudnnBackendFinalize(heur.get());
  if (heur_status != CUDNN_STATUS_SUCCESS) {
    failures += fmt::format("; heuristics {}: {}", mode_name, status_text(heur_status));
    return false;
  }
  std::int64_t count = 0;
  check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS count)");
  const std::size_t first = configs_.size();
  std::vector<cudnnBackendDescriptor_t> configs;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(configs_.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
  }
  std::int64_t returned = 0;
  check_cudnn(
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, configs.data()),
      "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)");
  if (returned == 0) {
    failures += fmt::format("; heuristics {}: no engine configuration", mode_name);
    return false;
  }
  // The configurations come best first; the first that makes a plan is the one cuDNN runs.
  std::string last;
  for (std::int64_t i = 0; i < returned; ++i) {
    const BackendDescriptor& config = configs_[first + static_cast<std::size_t>(i)];
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    // Deprecated in cuDNN 9 in favour of device-property descriptors, still honoured, and
    // what cudnn_frontend sets.
    plan.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), CUDNN_TYPE_HANDLE, 1, &handle);
    plan.set_descriptor(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), config);
    const cudnnStatus_t s = cudnnBackendFinalize(plan.get());
    if (s != CUDNN_STATUS_SUCCESS) {
      last = status_text(s);
      continue;
    }
    std::int64_t n = 0;
    check_cudnn(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                         CUDNN_TYPE_INT64, 1, &n, &workspace_bytes_),
                "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)");
    BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t engine_raw = engine.get();
    check_cudnn(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine_raw),
                "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE)");
    check_cudnn(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                         CUDNN_TYPE_INT64, 1, &n, &engine_index_),
                "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_GLOBAL_INDEX)");
    plan_.emplace(std::move(plan));
    return true;
  }
  failures += fmt::format("; heuristics {}: {} configurations, none finalised (last: {})",
                          mode_name, returned, last);
  return false;
}

void CudnnGraph::plan(cudnnHandle_t handle) {
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const auto& op : operations_) ops.push_back(op.get());
  graph_.emplace(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph_->set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS), CUDNN_TYPE_BACKEND_DESCRIPTOR,
              static_cast<std::int64_t>(ops.size()), ops.data());
  // Deprecated in cuDNN 9 like the plan's handle, still honoured, what cudnn_frontend sets.
  graph_->set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), CUDNN_TYPE_HANDLE, 1, &handle);
  graph_->finalize("operation graph");
  std::string failures;
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (try_plan(handle, mode, failures)) return;
  }
  throw GpuError("cuDNN has no engine for this graph" + failures);
}

void CudnnGraph::bind(const std::vector<std::pair<std::int64_t, void*>>& pointers,
                      void* workspace) {
  std::vector<std::int64_t> uids;
  std::vector<void*> data;
  for (const std::int64_t uid : io_uids_) {
    const auto it = std::find_if(pointers.begin(), pointers.end(),
                                 [&](const auto& p) { return p.first == uid; });
    if (it == pointers.end()) throw GpuError(fmt::format("no device pointer for tensor {}", uid));
    uids.push_back(uid);
    data.push_back(it->second);
  }
  for (auto& [uid, value] : scalars_) {
    uids.push_back(uid);
    data.push_back(&value);
  }
  BackendDescriptor& pack = variant_pack_.emplace(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), CUDNN_TYPE_INT64,
           static_cast<std::int64_t>(uids.size()), uids.data());
  pack.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR,
           static_cast<std::int64_t>(data.size()), data.data());
  pack.set(MEGASIM_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1,
           &workspace);
  pack.finalize("variant pack");
}

void CudnnGraph::execute(cudnnHandle_t handle) const {
  if (!plan_ || !variant_pack_) throw GpuError("cuDNN graph executed before plan() and bind()");
  check_cudnn(cudnnBackendExecute(handle, plan_->get(), variant_pack_->get()),
              "cudnnBackendExecute");
}

}  // namespace megasim::gpu

#include "devices/cuda/cuda_graph_replay.h"

#include <string>

#include "devices/cuda/cuda_check.h"

namespace depengine::detail {
namespace {

// The nodes' records, destroyed with this unless handed on.
struct Records {
  explicit Records(std::size_t n) : graphs(n, nullptr) {}
  ~Records() {
    for (cudaGraph_t g : graphs) {
      if (g) cudaGraphDestroy(g);
    }
  }
  Records(const Records&) = delete;
  Records& operator=(const Records&) = delete;
  std::vector<cudaGraph_t> graphs;  // null: the node runs through its function
};

std::string where(const RunContext& ctx, const char* call) {
  return std::string(call) + " for the graph replay '" + std::string(ctx.name) + "'";
}

}  // namespace

CudaGraphReplay::~CudaGraphReplay() { clear(); }

void CudaGraphReplay::clear() {
  clear_steps();
  kept_ = false;
}

void CudaGraphReplay::clear_steps() {
  for (const Step& step : steps_) {
    // An exec still running on the GPU is freed once it completes.
    if (step.exec) cudaGraphExecDestroy(step.exec);
  }
  steps_.clear();
}

void CudaGraphReplay::replay(const StreamGraph& graph, const RunContext& ctx, CaptureStream& capture) {
  if (!kept_) {
    clear();
    std::lock_guard lock(capture.mutex);
    kept_ = record(graph, ctx, capture.handle);
  }
  run_steps(graph, ctx);
  if (!kept_) clear();
}

bool CudaGraphReplay::record(const StreamGraph& graph, const RunContext& ctx, cudaStream_t capture_stream) {
  const std::uint32_t n = graph.size();
  Records records(n);
  bool failed = false, refused = false;
  RunContext on_capture = ctx;
  on_capture.stream = capture_stream;
  for (std::uint32_t i = 0; i < n; ++i) {
    // Thread-local mode: calls this thread may not make while it records
    // fail (and spoil only this record); other threads' are unaffected.
    check_cuda(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal),
               where(ctx, "cudaStreamBeginCapture"));
    const std::exception_ptr thrown = graph.invoke(i, on_capture);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(capture_stream, &status);
    cudaGraph_t record = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(capture_stream, &record);
    cudaGetLastError();  // a call refused while recording is the record's failure, not the replay's
    if (!thrown && ended == cudaSuccess && status == cudaStreamCaptureStatusActive && record) {
      records.graphs[i] = record;
      continue;
    }
    if (record) cudaGraphDestroy(record);
    // Either way the node runs through its function at its turn; one that
    // failed on its own reports its failure there.
    (status == cudaStreamCaptureStatusActive ? failed : refused) = true;
  }
  ++recordings_;

  // A record CUDA will not take into a piece (one with allocation nodes) or
  // a piece it cannot instantiate leaves its nodes to their functions.
  for (;;) {
    const Range rejected = build_pieces(graph, records.graphs);
    if (rejected.first == rejected.end) break;
    for (std::uint32_t k = rejected.first; k < rejected.end; ++k) {
      cudaGraphDestroy(records.graphs[k]);
      records.graphs[k] = nullptr;
    }
    refused = true;
  }
  return !failed && (!refused || recordings_ >= kRecordings);
}

CudaGraphReplay::Range CudaGraphReplay::build_pieces(const StreamGraph& graph,
                                                     const std::vector<cudaGraph_t>& records) {
  clear_steps();
  const auto n = static_cast<std::uint32_t>(records.size());
  std::vector<cudaGraphNode_t> nodes(n, nullptr);
  std::vector<cudaGraphNode_t> deps;
  for (std::uint32_t first = 0; first < n;) {
    if (!records[first]) {
      steps_.push_back({.exec = nullptr, .first = first, .end = first + 1});
      ++first;
      continue;
    }
    std::uint32_t end = first;
    while (end < n && records[end]) ++end;
    cudaGraph_t piece = nullptr;
    if (cudaGraphCreate(&piece, 0) != cudaSuccess) return {first, end};
    for (std::uint32_t k = first; k < end; ++k) {
      // Predecessors in earlier pieces are ordered by the stream.
      deps.clear();
      for (const std::uint32_t p : graph.predecessors(k)) {
        if (p >= first) deps.push_back(nodes[p]);
      }
      std::size_t size = 0;
      cudaError_t added = cudaGraphGetNodes(records[k], nullptr, &size);
      // A node that enqueued nothing still carries its edges.
      if (added == cudaSuccess) {
        added = size == 0 ? cudaGraphAddEmptyNode(&nodes[k], piece, deps.data(), deps.size())
                          : cudaGraphAddChildGraphNode(&nodes[k], piece, deps.data(), deps.size(), records[k]);
      }
      if (added != cudaSuccess) {
        cudaGetLastError();
        cudaGraphDestroy(piece);
        return {k, k + 1};
      }
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, piece, 0);
    cudaGraphDestroy(piece);
    if (made != cudaSuccess) {
      cudaGetLastError();
      return {first, end};
    }
    steps_.push_back({.exec = exec, .first = first, .end = end});
    first = end;
  }
  return {n, n};
}

void CudaGraphReplay::run_steps(const StreamGraph& graph, const RunContext& ctx) {
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  for (const Step& step : steps_) {
    if (step.exec) {
      check_cuda(cudaGraphLaunch(step.exec, stream), where(ctx, "cudaGraphLaunch"));
      continue;
    }
    graph.run(step.first, ctx);
    if (graph.failed()) {
      // The rest one by one: the nodes its failure reaches are skipped.
      for (std::uint32_t k = step.end; k < graph.size(); ++k) graph.run(k, ctx);
      return;
    }
  }
}

}  // namespace depengine::detail

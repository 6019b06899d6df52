#pragma once
// CudaGraphReplay: the replays of one captured graph (graph.h) whose nodes
// all sit on one GPU, as CUDA graphs. It lives in the graph's
// StreamGraph::device_state.
//
// The first replay records each node on a private stream
// (cudaStreamBeginCapture; the node's function runs once and its kernels and
// copies are recorded, not run) and joins the records as child graphs, with
// the graph's dependencies as edges, so that independent nodes run at once
// as they would on several streams. Later replays launch the record
// (cudaGraphLaunch) and call no recorded node's function.
//
// A node whose record CUDA refuses (its function makes a call CUDA cannot
// capture: a synchronisation, an allocation such as a first cuBLAS handle on
// this thread) runs through its function at its turn, on the replay's
// stream, so its function is called twice then. The graph is recorded again
// at the next replay, up to kRecordings times; after that, such nodes run
// through their functions at every replay and split the others into pieces:
// one CUDA graph each, launched in recorded order.
//
// A node whose function throws while it is recorded runs through its
// function at its turn (which reports its failure), and the graph is
// recorded again at the next replay. Once a node run so far failed, the
// rest run one by one through their functions, skipping those it reaches.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "depengine/executor.h"

namespace depengine::detail {

/// A stream of a GPU's executor that only records, one recording at a time.
struct CaptureStream {
  std::mutex mutex;
  cudaStream_t handle = nullptr;
};

class CudaGraphReplay {
 public:
  CudaGraphReplay() = default;
  ~CudaGraphReplay();
  CudaGraphReplay(const CudaGraphReplay&) = delete;
  CudaGraphReplay& operator=(const CudaGraphReplay&) = delete;

  /// One replay of `graph` (begun, with no failed input) on `ctx.stream`,
  /// recorded first on `capture` if it has no record to launch. Throws
  /// std::runtime_error for a CUDA call that failed.
  void replay(const StreamGraph& graph, const RunContext& ctx, CaptureStream& capture);

 private:
  // A run of recorded nodes [first, end) launched as one CUDA graph, or one
  // node run through its function (exec null, end = first + 1).
  struct Step {
    cudaGraphExec_t exec = nullptr;
    std::uint32_t first = 0;
    std::uint32_t end = 0;
  };

  struct Range {
    std::uint32_t first = 0;
    std::uint32_t end = 0;
  };

  /// Records every node; returns whether the steps may serve later replays.
  bool record(const StreamGraph& graph, const RunContext& ctx, cudaStream_t capture_stream);
  /// The steps from the nodes' records (null: through its function); the
  /// nodes CUDA would not build into a piece, or none (an empty range).
  Range build_pieces(const StreamGraph& graph, const std::vector<cudaGraph_t>& records);
  void run_steps(const StreamGraph& graph, const RunContext& ctx);
  void clear();
  void clear_steps();

  static constexpr int kRecordings = 4;

  std::vector<Step> steps_;
  bool kept_ = false;
  int recordings_ = 0;
};

}  // namespace depengine::detail

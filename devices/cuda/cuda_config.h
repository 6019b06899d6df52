#pragma once
// CudaConfig: how many streams a CUDA device gets, from the environment.
//
//   DEPENGINE_CUDA_COMPUTE_STREAMS   compute streams at normal priority (1-32, default 2)
//   DEPENGINE_CUDA_PRIORITY_STREAMS  compute streams at the GPU's highest priority, for
//                                    operations pushed with priority > 0 (0-8, default 1)
//
//   DEPENGINE_CUDA_GRAPHS            1 (default): a graph replay whose ops all sit on one
//                                    GPU launches CUDA graphs (docs/graphs.md); 0: it calls
//                                    the ops' functions at every replay
//
// Copy streams (host-to-device, device-to-host, device-to-device) always
// come in addition, one each.

namespace depengine::detail {

struct CudaConfig {
  int compute_streams = 2;
  int priority_streams = 1;
  bool graphs = true;
};

/// Reads the variables above; throws std::invalid_argument for a bad value.
CudaConfig cuda_config_from_environment();

}  // namespace depengine::detail

#include "devices/cuda/cuda_config.h"

#include "sync/environment.h"

namespace depengine::detail {
CudaConfig cuda_config_from_environment() {
  CudaConfig config;
  config.compute_streams =
      static_cast<int>(integer_from_environment("DEPENGINE_CUDA_COMPUTE_STREAMS", config.compute_streams, 1, 32));
  config.priority_streams =
      static_cast<int>(integer_from_environment("DEPENGINE_CUDA_PRIORITY_STREAMS", config.priority_streams, 0, 8));
  config.graphs = integer_from_environment("DEPENGINE_CUDA_GRAPHS", config.graphs ? 1 : 0, 0, 1) != 0;
  return config;
}

}  // namespace depengine::detail

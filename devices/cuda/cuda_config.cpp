#include "devices/cuda/cuda_config.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace depengine::detail {
namespace {

int read_count(const char* name, int fallback, int min, int max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < min || value > max) {
    throw std::invalid_argument(std::string("depengine: ") + name + " must be a number from " +
                                std::to_string(min) + " to " + std::to_string(max) + ", not '" + text + "'");
  }
  return static_cast<int>(value);
}

}  // namespace

CudaConfig cuda_config_from_environment() {
  CudaConfig config;
  config.compute_streams = read_count("DEPENGINE_CUDA_COMPUTE_STREAMS", config.compute_streams, 1, 32);
  config.priority_streams = read_count("DEPENGINE_CUDA_PRIORITY_STREAMS", config.priority_streams, 0, 8);
  return config;
}

}  // namespace depengine::detail

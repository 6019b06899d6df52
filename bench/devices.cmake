# Device benchmarks: the emulated device everywhere (so CI runs the harness),
# the CUDA device where it is built (scripts/gpu-check.sh runs it on a GPU).
find_package(benchmark REQUIRED)

add_executable(device_emulated_bench device_emulated_bench.cpp)
target_link_libraries(device_emulated_bench PRIVATE depengine benchmark::benchmark)
target_include_directories(device_emulated_bench PRIVATE ${PROJECT_SOURCE_DIR})

if(DEPENGINE_CUDA_ENABLED)
  add_executable(device_cuda_bench device_cuda_bench.cpp)
  target_link_libraries(device_cuda_bench PRIVATE depengine depengine_cuda_sample_kernels benchmark::benchmark)
endif()

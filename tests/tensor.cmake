# Tests of the tensor layer and the ops (CPU and emulated device; the CUDA
# tests skip without a GPU).
depengine_add_test(tensor_tests
  tensor_test.cpp
  tensor_memory_test.cpp
  ops_test.cpp
  ops_errors_test.cpp
  ops_cuda_test.cpp
  ops_blas_threads_test.cpp
  ops_buffer_cache_test.cpp
  graph_tensor_test.cpp
)
# The BLAS-threads test asks OpenBLAS for its thread count.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
target_link_libraries(tensor_tests PRIVATE PkgConfig::OPENBLAS)
if(DEPENGINE_BUILD_EXAMPLES)
  depengine_add_test(tensor_mlp_tests tensor_mlp_test.cpp)
  target_link_libraries(tensor_mlp_tests PRIVATE depengine_mlp)
endif()

# Tensor ops through the engine versus the same math called directly.
find_package(benchmark REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
add_executable(tensor_bench tensor_bench.cpp)
target_link_libraries(tensor_bench PRIVATE depengine benchmark::benchmark PkgConfig::OPENBLAS)
# The direct loops are aligned like the ops' kernels (ops/CMakeLists.txt):
# placed by chance, the plain axpy loop ran at half the kernel's speed.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(tensor_bench PRIVATE -falign-loops=64)
endif()

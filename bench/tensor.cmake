# Tensor ops through the engine versus the same math called directly.
find_package(benchmark REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
add_executable(tensor_bench tensor_bench.cpp)
target_link_libraries(tensor_bench PRIVATE depengine benchmark::benchmark PkgConfig::OPENBLAS)

# Profiler benchmark: what recording costs per operation.
find_package(benchmark REQUIRED)

add_executable(profiler_bench profiler_bench.cpp)
target_link_libraries(profiler_bench PRIVATE depengine benchmark::benchmark)

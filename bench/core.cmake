# Core micro-benchmarks: the engine against its peers on the same graphs.
find_package(benchmark REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)

add_executable(core_bench core_bench.cpp)
target_include_directories(core_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(core_bench PRIVATE depengine benchmark::benchmark TBB::tbb OpenMP::OpenMP_CXX)

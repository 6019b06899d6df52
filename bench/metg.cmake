# metg: Task Bench's minimum effective task granularity, depengine against
# oneTBB's flow graph and OpenMP tasks (docs/performance.md, "METG").
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
add_executable(metg metg.cpp)
target_include_directories(metg PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(metg PRIVATE depengine TBB::tbb OpenMP::OpenMP_CXX CLI11::CLI11 nlohmann_json::nlohmann_json)

# depbench: the sync-against-async harness (built by default). The scenarios
# and the report writers are a library, so that the tests can run them too.
# training_step runs the MLP example's loop (depengine_mlp, from examples/,
# which CMake adds after bench/: names resolve at generation), data_parallel
# its data-parallel version (depengine_data_parallel).
if(NOT DEPENGINE_BUILD_EXAMPLES)
  message(STATUS "depbench: not built (its training_step needs DEPENGINE_BUILD_EXAMPLES=ON)")
  return()
endif()
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

add_library(depbench_core STATIC
  depbench/capacity.cpp
  depbench/cli.cpp
  depbench/harness.cpp
  depbench/html_report.cpp
  depbench/ideal.cpp
  depbench/json_output.cpp
  depbench/kernels.cpp
  depbench/progress.cpp
  depbench/run_engine.cpp
  depbench/svg_charts.cpp
  depbench/table.cpp
  depbench/scenarios/all_scenarios.cpp
  depbench/scenarios/auto_parallel.cpp
  depbench/scenarios/data_parallel.cpp
  depbench/scenarios/data_loading.cpp
  depbench/scenarios/frontend_backend.cpp
  depbench/scenarios/gradient_sync.cpp
  depbench/scenarios/hybridize.cpp
  depbench/scenarios/overlap_copy_compute.cpp
  depbench/scenarios/roofline.cpp
  depbench/scenarios/training_step.cpp
)
target_include_directories(depbench_core PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(depbench_core
  PUBLIC depengine nlohmann_json::nlohmann_json
  PRIVATE CLI11::CLI11 PkgConfig::OPENBLAS depengine_mlp depengine_data_parallel)
target_compile_options(depbench_core PRIVATE -Wall -Wextra)
# Only to tell a build without CUDA from a machine without a GPU in
# --device cuda's error; the scenarios reach the GPU through depengine's ops.
if(DEPENGINE_CUDA_ENABLED)
  target_compile_definitions(depbench_core PRIVATE DEPBENCH_CUDA_BUILT)
endif()

add_executable(depbench depbench/main.cpp)
target_link_libraries(depbench PRIVATE depbench_core)
target_compile_options(depbench PRIVATE -Wall -Wextra)

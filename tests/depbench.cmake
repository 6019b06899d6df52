# Tests of the profiler and of depbench.
find_package(nlohmann_json 3 REQUIRED)
find_package(LibXml2 REQUIRED)

depengine_add_test(profiler_tests profiler_test.cpp)
target_link_libraries(profiler_tests PRIVATE nlohmann_json::nlohmann_json)

# depbench is defined later (bench/ comes after tests/): CMake resolves the names at generation.
# Built with DEPENGINE_PROFILER_HOOKS=OFF too: the tests then check what
# depbench does without a profiler (no trace, no timeline, no ideal speedup
# for training_step).
if(DEPENGINE_BUILD_BENCH AND DEPENGINE_BUILD_EXAMPLES)
  depengine_add_test(depbench_scenario_tests depbench_scenarios_test.cpp)
  target_link_libraries(depbench_scenario_tests PRIVATE depbench_core)

  # Runs the depbench program itself.
  depengine_add_test(depbench_cli_tests depbench_cli_test.cpp)
  target_link_libraries(depbench_cli_tests PRIVATE nlohmann_json::nlohmann_json LibXml2::LibXml2)
  target_compile_definitions(depbench_cli_tests PRIVATE DEPBENCH_PATH="$<TARGET_FILE:depbench>")
  add_dependencies(depbench_cli_tests depbench)
endif()

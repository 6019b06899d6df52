# Tests of the profiler and of depbench.
find_package(nlohmann_json 3 REQUIRED)

depengine_add_test(profiler_tests profiler_test.cpp)
target_link_libraries(profiler_tests PRIVATE nlohmann_json::nlohmann_json)

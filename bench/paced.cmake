# paced_chain: a frontend that works between its pushes and blocks once per
# epoch (docs/performance.md, "depbench and the emulated device").
find_package(CLI11 REQUIRED)
add_executable(paced_chain paced_chain.cpp)
target_include_directories(paced_chain PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(paced_chain PRIVATE depengine CLI11::CLI11)

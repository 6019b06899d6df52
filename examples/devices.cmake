# Device examples, run by ctest.
add_executable(example_emulated_device emulated_device.cpp)
target_link_libraries(example_emulated_device PRIVATE depengine)
add_test(NAME example_emulated_device COMMAND example_emulated_device)

# The README's program: built and run by the tests.
add_executable(quickstart quickstart.cpp)
target_link_libraries(quickstart PRIVATE depengine)
if(DEPENGINE_BUILD_TESTS)
  add_test(NAME example_quickstart COMMAND quickstart)
  set_tests_properties(example_quickstart PROPERTIES PASS_REGULAR_EXPRESSION "c = 3.75")
endif()

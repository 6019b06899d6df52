# The README's program: built and run by the tests.
add_executable(quickstart quickstart.cpp)
target_link_libraries(quickstart PRIVATE depengine)
if(DEPENGINE_BUILD_TESTS)
  add_test(NAME example_quickstart COMMAND quickstart)
  set_tests_properties(example_quickstart PROPERTIES PASS_REGULAR_EXPRESSION "c = 3.75")
endif()

# The README's graph lines.
add_executable(graph_quickstart graph_quickstart.cpp)
target_link_libraries(graph_quickstart PRIVATE depengine)
if(DEPENGINE_BUILD_TESTS)
  add_test(NAME example_graph_quickstart COMMAND graph_quickstart)
  set_tests_properties(example_graph_quickstart PROPERTIES PASS_REGULAR_EXPRESSION "w = 0.125")
endif()

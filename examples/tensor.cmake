# The MLP example. Its training loop is a small library, so that depbench's
# training_step scenario runs the same code.
find_package(ZLIB REQUIRED)
add_library(depengine_mlp STATIC mlp.cpp)
target_include_directories(depengine_mlp PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(depengine_mlp PUBLIC depengine PRIVATE ZLIB::ZLIB)

add_executable(mlp_train mlp_train.cpp)
target_link_libraries(mlp_train PRIVATE depengine_mlp)

if(DEPENGINE_BUILD_TESTS)
  # A few epochs: the example exits 1 if the loss does not fall.
  add_test(NAME example.mlp_train.cpu COMMAND mlp_train --epochs 3 --device cpu)
  add_test(NAME example.mlp_train.emulated COMMAND mlp_train --epochs 2 --device emulated)
  set_tests_properties(example.mlp_train.cpu example.mlp_train.emulated PROPERTIES TIMEOUT 120)
endif()

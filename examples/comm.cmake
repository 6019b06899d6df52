# The MLP trained data-parallel over local devices and MPI processes.
add_library(depengine_data_parallel STATIC data_parallel.cpp)
target_include_directories(depengine_data_parallel PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(depengine_data_parallel PUBLIC depengine_mlp depengine_comm)

add_executable(data_parallel_mlp data_parallel_mlp.cpp)
target_link_libraries(data_parallel_mlp PRIVATE depengine_data_parallel)

if(DEPENGINE_BUILD_TESTS)
  add_test(NAME example.data_parallel_mlp.emulated4 COMMAND data_parallel_mlp --devices emulated:4 --epochs 20 --check)
  set_tests_properties(example.data_parallel_mlp.emulated4 PROPERTIES TIMEOUT 300)
  if(DEPENGINE_MPI_ENABLED)
    depengine_add_mpi_test(example.data_parallel_mlp.mpi2 NP 2 TIMEOUT 300 COMM_TIMEOUT 120
                           COMMAND data_parallel_mlp --devices emulated:2 --epochs 20 --check)
    # The gradients through the KVStore: synchronous (within 1% of one
    # model's accuracy) and asynchronous (within 2%).
    foreach(kvstore dist_sync dist_async)
      depengine_add_mpi_test(example.data_parallel_mlp.mpi2.${kvstore} NP 2 TIMEOUT 300 COMM_TIMEOUT 120
        COMMAND data_parallel_mlp --devices emulated:2 --epochs 20 --kvstore ${kvstore} --check)
    endforeach()
  endif()
  add_test(NAME example.data_parallel_mlp.emulated4.kvstore_device
           COMMAND data_parallel_mlp --devices emulated:4 --epochs 20 --kvstore device --check)
  set_tests_properties(example.data_parallel_mlp.emulated4.kvstore_device PROPERTIES TIMEOUT 300)
endif()

# The README's data-parallel lines.
add_executable(comm_quickstart comm_quickstart.cpp)
target_link_libraries(comm_quickstart PRIVATE depengine_comm)
if(DEPENGINE_BUILD_TESTS)
  add_test(NAME example.comm_quickstart COMMAND comm_quickstart)
  if(DEPENGINE_MPI_ENABLED)
    depengine_add_mpi_test(example.comm_quickstart.mpi2 NP 2 TIMEOUT 120 COMM_TIMEOUT 60 COMMAND comm_quickstart)
  endif()
endif()

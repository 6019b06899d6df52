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
    add_test(NAME example.data_parallel_mlp.mpi2
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np 2 $<TARGET_FILE:data_parallel_mlp>
                     --devices emulated:2 --epochs 20 --check)
    set_tests_properties(example.data_parallel_mlp.mpi2 PROPERTIES TIMEOUT 300 PROCESSORS 2
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl=self,vader;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/support/lsan-mpi.supp:fast_unwind_on_malloc=0;DEPENGINE_COMM_TIMEOUT=120")
    # The gradients through the KVStore: synchronous (within 1% of one
    # model's accuracy) and asynchronous (within 2%).
    foreach(kvstore dist_sync dist_async)
      add_test(NAME example.data_parallel_mlp.mpi2.${kvstore}
               COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np 2 $<TARGET_FILE:data_parallel_mlp>
                       --devices emulated:2 --epochs 20 --kvstore ${kvstore} --check)
      set_tests_properties(example.data_parallel_mlp.mpi2.${kvstore} PROPERTIES TIMEOUT 300 PROCESSORS 2
        ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl=self,vader;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/support/lsan-mpi.supp:fast_unwind_on_malloc=0;DEPENGINE_COMM_TIMEOUT=120")
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
    add_test(NAME example.comm_quickstart.mpi2 COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np 2 $<TARGET_FILE:comm_quickstart>)
    set_tests_properties(example.comm_quickstart.mpi2 PROPERTIES TIMEOUT 120 PROCESSORS 2
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl=self,vader;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/support/lsan-mpi.supp:fast_unwind_on_malloc=0;DEPENGINE_COMM_TIMEOUT=60")
  endif()
endif()

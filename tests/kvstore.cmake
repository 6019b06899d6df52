# The KVStore: one-process tests, and the dist types under mpirun (2 and 3
# processes, co-located and dedicated servers), with a server that dies and
# workers that die.
depengine_add_test(kvstore_tests kvstore_test.cpp)
target_link_libraries(kvstore_tests PRIVATE depengine_comm)

add_executable(kvstore_mpi_tests kvstore_mpi_test.cpp)
target_link_libraries(kvstore_mpi_tests PRIVATE depengine_comm GTest::gtest_main)
target_include_directories(kvstore_mpi_tests PRIVATE ${PROJECT_SOURCE_DIR})
if(DEPENGINE_BUILD_EXAMPLES)
  # The data-parallel MLP through the store against its allreduce path.
  target_link_libraries(kvstore_mpi_tests PRIVATE depengine_data_parallel)
  target_compile_definitions(kvstore_mpi_tests PRIVATE DEPENGINE_TEST_DATA_PARALLEL=1)
endif()
add_executable(kvstore_fault_server kvstore_fault_server.cpp)
target_link_libraries(kvstore_fault_server PRIVATE depengine_comm)
add_executable(kvstore_fault_worker kvstore_fault_worker.cpp)
target_link_libraries(kvstore_fault_worker PRIVATE depengine_comm)

if(DEPENGINE_MPI_ENABLED)
  # The environment of comm.cmake: root allowed, shared memory only, Open
  # MPI's exit-time leaks suppressed under AddressSanitizer.
  set(_kv_mpi_env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
                  "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/support/lsan-mpi.supp:fast_unwind_on_malloc=0")
  foreach(np 2 3)
    add_test(NAME kvstore_mpi.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np ${np} $<TARGET_FILE:kvstore_mpi_tests>)
    set_tests_properties(kvstore_mpi.np${np} PROPERTIES ENVIRONMENT "${_kv_mpi_env};DEPENGINE_COMM_TIMEOUT=60"
                         TIMEOUT 300 PROCESSORS 2)
  endforeach()
  # The server dies: the worker must get the timeout error; mpirun must not
  # end the job when the server goes, so that the worker lives to see it.
  add_test(NAME kvstore_mpi.server_killed
           COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --mca orte_abort_on_non_zero_status 0 -np 2
                   $<TARGET_FILE:kvstore_fault_server>)
  set_tests_properties(kvstore_mpi.server_killed PROPERTIES
    ENVIRONMENT "${_kv_mpi_env};DEPENGINE_COMM_TIMEOUT=3"
    PASS_REGULAR_EXPRESSION "kvstore_fault_server: the worker got the timeout error"
    TIMEOUT 120 PROCESSORS 2)
  # The workers die (both, or one while the other finishes): the dedicated
  # server must stop with their error within the timeout; ctest's TIMEOUT
  # bounds it, and mpirun ends the job (the killed workers make it fail, so
  # the server's own line is what passes).
  # With both gone the server names whichever went silent first (or both).
  set(_kv_silent_all "[0-9, ]+")
  set(_kv_silent_one "0")
  foreach(dead all one)
    add_test(NAME kvstore_mpi.workers_killed_${dead}
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --mca orte_abort_on_non_zero_status 0 -np 3
                     $<TARGET_FILE:kvstore_fault_worker> ${dead})
    set_tests_properties(kvstore_mpi.workers_killed_${dead} PROPERTIES
      ENVIRONMENT "${_kv_mpi_env};DEPENGINE_COMM_TIMEOUT=3"
      PASS_REGULAR_EXPRESSION "kvstore_fault_worker: the server stopped: [^\n]*worker process[(]es[)] ${_kv_silent_${dead}} neither finished nor sent anything"
      TIMEOUT 60 PROCESSORS 2)
  endforeach()
endif()

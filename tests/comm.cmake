# Collectives: one-process tests on emulated devices, and the multi-process
# suite under mpirun (2 and 3 processes), with its fault programs.
depengine_add_test(comm_tests comm_test.cpp)
target_link_libraries(comm_tests PRIVATE depengine_comm)

if(DEPENGINE_BUILD_EXAMPLES)
  depengine_add_test(comm_data_parallel_tests comm_data_parallel_test.cpp)
  target_link_libraries(comm_data_parallel_tests PRIVATE depengine_data_parallel)
endif()

add_executable(comm_mpi_tests comm_mpi_test.cpp)
target_link_libraries(comm_mpi_tests PRIVATE depengine_comm GTest::gtest_main)
target_include_directories(comm_mpi_tests PRIVATE ${PROJECT_SOURCE_DIR})
add_executable(comm_fault_peer comm_fault_peer.cpp)
target_link_libraries(comm_fault_peer PRIVATE depengine_comm)

if(DEPENGINE_MPI_ENABLED)
  # As root, Open MPI wants both variables; shared memory keeps it off the
  # network. Under AddressSanitizer, what Open MPI leaks at exit is
  # suppressed (only there does LSAN_OPTIONS mean anything).
  set(_mpi_env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
               "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/support/lsan-mpi.supp:fast_unwind_on_malloc=0")
  foreach(np 2 3)
    add_test(NAME comm_mpi.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np ${np} $<TARGET_FILE:comm_mpi_tests>)
    set_tests_properties(comm_mpi.np${np} PROPERTIES ENVIRONMENT "${_mpi_env};DEPENGINE_COMM_TIMEOUT=60"
                         TIMEOUT 300 PROCESSORS 2)
  endforeach()
  # A peer that dies (SIGKILL) or hangs: process 0 must get the timeout error.
  # mpirun is told not to kill the job when a process dies, so that process 0
  # lives to see it; the test passes on process 0's report.
  foreach(mode killed hung)
    add_test(NAME comm_mpi.peer_${mode}
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --mca orte_abort_on_non_zero_status 0 -np 2
                     $<TARGET_FILE:comm_fault_peer> ${mode})
    set_tests_properties(comm_mpi.peer_${mode} PROPERTIES
      ENVIRONMENT "${_mpi_env};DEPENGINE_COMM_TIMEOUT=3"
      PASS_REGULAR_EXPRESSION "comm_fault_peer: process 0 got the timeout error"
      TIMEOUT 120 PROCESSORS 2)
  endforeach()
endif()

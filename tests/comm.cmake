# Collectives: one-process tests on emulated devices, and the multi-process
# suite under mpirun (2 and 3 processes), with its fault programs.
depengine_add_test(comm_tests comm_test.cpp)
target_link_libraries(comm_tests PRIVATE depengine_comm)
depengine_add_test(comm_nccl_tests comm_nccl_test.cpp)
target_link_libraries(comm_nccl_tests PRIVATE depengine_comm)

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
  foreach(np 2 3)
    depengine_add_mpi_test(comm_mpi.np${np} NP ${np} TIMEOUT 300 COMM_TIMEOUT 60 COMMAND comm_mpi_tests)
  endforeach()
  # A peer that dies (SIGKILL) or hangs: process 0 must get the timeout error;
  # the test passes on process 0's report.
  foreach(mode killed hung)
    depengine_add_mpi_test(comm_mpi.peer_${mode} NP 2 TIMEOUT 120 COMM_TIMEOUT 3 PEERS_MAY_DIE
                           PASS "comm_fault_peer: process 0 got the timeout error"
                           COMMAND comm_fault_peer ${mode})
  endforeach()
endif()

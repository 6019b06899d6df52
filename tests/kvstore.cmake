# The KVStore: one-process tests, and the dist types under mpirun (2 and 3
# processes, co-located and dedicated servers), with a server that dies,
# workers that die, and a co-located worker that dies.
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
add_executable(kvstore_fault_worker kvstore_fault_worker.cpp)
target_link_libraries(kvstore_fault_worker PRIVATE depengine_comm)
foreach(program kvstore_fault_server kvstore_fault_peer)
  add_executable(${program} ${program}.cpp)
  target_link_libraries(${program} PRIVATE depengine_comm)
  target_include_directories(${program} PRIVATE ${PROJECT_SOURCE_DIR})
endforeach()

if(DEPENGINE_MPI_ENABLED)
  foreach(np 2 3)
    depengine_add_mpi_test(kvstore_mpi.np${np} NP ${np} TIMEOUT 300 COMM_TIMEOUT 60 COMMAND kvstore_mpi_tests)
  endforeach()
  # The server dies: the worker must get the timeout error.
  depengine_add_mpi_test(kvstore_mpi.server_killed NP 2 TIMEOUT 120 COMM_TIMEOUT 3 PEERS_MAY_DIE
                         PASS "kvstore_fault_server: the worker got the timeout error"
                         COMMAND kvstore_fault_server)
  # A co-located worker dies while the other's push waits in its own
  # shard's round: the survivor must get the timeout error.
  depengine_add_mpi_test(kvstore_mpi.peer_killed NP 2 TIMEOUT 120 COMM_TIMEOUT 3 PEERS_MAY_DIE
                         PASS "kvstore_fault_peer: the worker got the timeout error"
                         COMMAND kvstore_fault_peer)
  # The workers die (both, or one while the other finishes): the dedicated
  # server must stop with their error within the timeout (the killed workers
  # make mpirun fail, so the server's own line is what passes). With both
  # gone the server names whichever went silent first (or both).
  set(_kv_silent_all "[0-9, ]+")
  set(_kv_silent_one "0")
  foreach(dead all one)
    depengine_add_mpi_test(kvstore_mpi.workers_killed_${dead} NP 3 TIMEOUT 60 COMM_TIMEOUT 3 PEERS_MAY_DIE
      PASS "kvstore_fault_worker: the server stopped: [^\n]*worker process[(]es[)] ${_kv_silent_${dead}} neither finished nor sent anything"
      COMMAND kvstore_fault_worker ${dead})
  endforeach()
endif()

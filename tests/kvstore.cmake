# The KVStore: one-process tests, and the dist types under mpirun (2 and 3
# processes, co-located and dedicated servers), with a server that dies.
depengine_add_test(kvstore_tests kvstore_test.cpp)
target_link_libraries(kvstore_tests PRIVATE depengine_comm)

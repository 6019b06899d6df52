# The KVStore's push+pull against the Communicator's allreduce and raw MPI
# (run it under mpirun; see docs/distributed.md).
if(DEPENGINE_MPI_ENABLED)
  find_package(MPI REQUIRED COMPONENTS C)
  add_executable(kvstore_bench kvstore_bench.cpp)
  target_include_directories(kvstore_bench PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(kvstore_bench PRIVATE depengine_comm MPI::MPI_C)
  target_compile_definitions(kvstore_bench PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
endif()

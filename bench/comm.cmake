# Allreduce through the Communicator against raw MPI_Allreduce (run it under
# mpirun; see docs/distributed.md).
if(DEPENGINE_MPI_ENABLED)
  # MPI's imported target is scoped to the folder that found it (comm/).
  find_package(MPI REQUIRED COMPONENTS C)
  add_executable(comm_bench comm_bench.cpp)
  target_include_directories(comm_bench PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(comm_bench PRIVATE depengine_comm MPI::MPI_C)
  target_compile_definitions(comm_bench PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
endif()

# Device tests: the emulated device everywhere, the CUDA device where built
# (its tests skip themselves on machines without a GPU).
depengine_add_test(device_emulated_tests
  device_batch_thread_test.cpp
  device_emulated_test.cpp
  device_emulated_random_test.cpp
  device_placement_test.cpp
  device_cpu_worker_placement_test.cpp
  device_cpu_worker_mailboxes_test.cpp
  device_cpu_kept_ops_test.cpp
  device_cpu_parked_workers_test.cpp
  device_cpu_late_starts_test.cpp
  device_cpu_worker_clocks_test.cpp
)
if(DEPENGINE_CUDA_ENABLED)
  depengine_add_test(device_cuda_tests device_cuda_test.cpp device_cuda_graph_test.cpp)
  target_link_libraries(device_cuda_tests PRIVATE depengine_cuda_sample_kernels CUDA::cudart)
endif()

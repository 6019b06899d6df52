# The waiting policy and the other synchronisation tools (sync/).
depengine_add_test(sync_tests sync_spin_wait_test.cpp sync_progress_watch_test.cpp sync_environment_test.cpp
                   sync_machine_load_test.cpp sync_wait_signal_test.cpp sync_short_slice_test.cpp)

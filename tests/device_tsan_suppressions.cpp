// ThreadSanitizer suppressions for the device tests, read by TSan at start-up
// (unused in other builds). oneTBB is not instrumented: work handed to the
// CPU executor's arena (task_arena::enqueue) reaches a TBB worker through
// libtbb's own atomics, which TSan cannot see, so the enqueued task and the
// executor state it reads look unsynchronized. The proper fix is TSan
// annotations in devices/cpu/ or an instrumented oneTBB; these lines only
// cover that hand-off.

extern "C" const char* __tsan_default_suppressions() {
  return "race:tbb::detail::d1::enqueue_task\n"
         "race:depengine::detail::CpuExecutor::worker_loop\n"
         "race:depengine::detail::ReadyQueue::pop_heap\n";
}

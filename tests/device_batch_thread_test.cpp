// BatchThread, the host thread behind the emulated streams and the CUDA
// completion watchers: order, draining on stop, several producers, and the
// bounded idle spin.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "devices/streams/batch_thread.h"

namespace depengine::detail {
namespace {

struct Count {
  std::atomic<int>* handled;
  void operator()(int&) const { handled->fetch_add(1); }
};

// Whether `count` reached `n` within 10 s.
bool reaches(const std::atomic<int>& count, int n) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count.load() < n) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

struct Item {
  int producer;
  int sequence;
};

struct Record {
  std::vector<Item>* seen;  // written by the BatchThread's thread only
  void operator()(Item& item) const { seen->push_back(item); }
};

TEST(BatchThread, HandlesEachProducersItemsInOrderAndDrainsOnStop) {
  for (const auto spin : {std::chrono::nanoseconds{0}, std::chrono::nanoseconds{std::chrono::microseconds{50}}}) {
    std::vector<Item> seen;
    constexpr int kProducers = 4, kItems = 5000;
    {
      BatchThread<Item, Record> thread(Record{&seen}, spin);
      std::vector<std::thread> producers;
      for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&thread, p] {
          for (int i = 0; i < kItems; ++i) {
            thread.enqueue({p, i});
            if (i % 500 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // let it go idle
          }
        });
      }
      for (std::thread& t : producers) t.join();
      thread.stop();  // everything queued is handled before stop returns
      ASSERT_EQ(seen.size(), std::size_t{kProducers} * kItems);
      thread.stop();  // idempotent
    }
    std::vector<int> next(kProducers, 0);
    for (const Item& item : seen) {
      ASSERT_EQ(item.sequence, next[item.producer]) << "producer " << item.producer;
      ++next[item.producer];
    }
  }
}

TEST(BatchThread, DestructionHandlesWhatIsStillQueued) {
  std::atomic<int> handled{0};
  {
    BatchThread<int, Count> thread(Count{&handled}, std::chrono::microseconds{50});
    for (int i = 0; i < 1000; ++i) thread.enqueue(i);
  }
  EXPECT_EQ(handled.load(), 1000);
}

// An item queued while the thread spins, and one queued after it went to
// sleep: both are handled (the spin only saves the wake-up).
TEST(BatchThread, ItemsQueuedWhileSpinningOrSleepingAreHandled) {
  std::atomic<int> handled{0};
  BatchThread<int, Count> thread(Count{&handled}, std::chrono::milliseconds{20});
  thread.enqueue(1);
  ASSERT_TRUE(reaches(handled, 1));
  thread.enqueue(2);  // within the 20 ms spin, most likely
  ASSERT_TRUE(reaches(handled, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the spin: asleep
  thread.enqueue(3);
  ASSERT_TRUE(reaches(handled, 3));
  thread.stop();
  EXPECT_EQ(handled.load(), 3);
}

}  // namespace
}  // namespace depengine::detail

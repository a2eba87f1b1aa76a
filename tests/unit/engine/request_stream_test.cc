// RequestStream: order, the listener (told after every push, at once when outputs already wait), try_next.
#include "engine/request_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace pagoda {
namespace {

RequestOutput output(int32_t n, bool finished = false) {
  RequestOutput o;
  o.num_output_tokens = n;
  o.new_tokens = {n};
  o.finished = finished;
  return o;
}

TEST(RequestStreamTest, TryNextNeverBlocksAndKeepsOrder) {
  RequestStream s;
  EXPECT_FALSE(s.try_next().has_value());
  s.push(output(1));
  s.push(output(2, true));
  EXPECT_EQ(s.try_next()->num_output_tokens, 1);
  EXPECT_EQ(s.try_next()->num_output_tokens, 2);
  EXPECT_FALSE(s.try_next().has_value());
  EXPECT_TRUE(s.finished());
}

TEST(RequestStreamTest, ListenerIsToldOfEveryPushAndOfWhatAlreadyWaits) {
  RequestStream s;
  s.push(output(1));
  std::atomic<int> calls{0};
  s.set_listener([&] { ++calls; });
  EXPECT_EQ(calls.load(), 1);  // one output was waiting
  s.push(output(2));
  s.push(output(3, true));
  EXPECT_EQ(calls.load(), 3);
  s.set_listener(nullptr);
  s.push(output(4));
  EXPECT_EQ(calls.load(), 3);
}

TEST(RequestStreamTest, AListenerMayPopFromAnotherThread) {
  RequestStream s;
  std::atomic<int> popped{0};
  std::atomic<bool> done{false};
  s.set_listener([&] {});
  std::thread consumer([&] {
    for (;;) {
      if (s.try_next()) {
        ++popped;
      } else if (done) {
        break;
      }
    }
  });
  for (int i = 0; i < 1000; ++i) s.push(output(i));
  done = true;
  consumer.join();
  while (s.try_next()) ++popped;
  EXPECT_EQ(popped.load(), 1000);
}

}  // namespace
}  // namespace pagoda

// PacedStreamReader: every output in order whatever their pace; it polls while they come faster than its period
// and blocks again once they come slower.
#include "engine/paced_stream_reader.h"

#include <gtest/gtest.h>

#include <thread>

namespace pagoda {
namespace {

RequestOutput counted_output(int32_t n, bool finished = false) {
  RequestOutput o;
  o.num_output_tokens = n;
  o.finished = finished;
  return o;
}

TEST(PacedStreamReaderTest, ReadsABurstThenSlowOutputsInOrderPollingOnlyWhileTheyComeFast) {
  RequestStream stream;
  PacedStreamReader reader(stream, std::chrono::milliseconds(1));
  // A burst already waiting: each comes at once, so the reader polls.
  for (int32_t i = 1; i <= 5; ++i) stream.push(counted_output(i));
  for (int32_t i = 1; i <= 5; ++i) EXPECT_EQ(reader.next().num_output_tokens, i);
  EXPECT_TRUE(reader.polling());
  // Then outputs 30 ms apart, from another thread: far slower than the period, so the reader blocks for them.
  std::thread producer([&] {
    for (int32_t i = 6; i <= 9; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      stream.push(counted_output(i, i == 9));
    }
  });
  for (int32_t i = 6; i <= 9; ++i) {
    const RequestOutput out = reader.next();
    EXPECT_EQ(out.num_output_tokens, i);
    EXPECT_EQ(out.finished, i == 9);
    EXPECT_FALSE(reader.polling());
  }
  producer.join();
  EXPECT_FALSE(stream.try_next().has_value());
}

TEST(PacedStreamReaderTest, AFastProducerOnAnotherThreadLosesNothing) {
  RequestStream stream;
  PacedStreamReader reader(stream, std::chrono::milliseconds(1));
  constexpr int32_t kOutputs = 20000;
  std::thread producer([&] {
    for (int32_t i = 1; i <= kOutputs; ++i) stream.push(counted_output(i, i == kOutputs));
  });
  for (int32_t i = 1; i <= kOutputs; ++i) ASSERT_EQ(reader.next().num_output_tokens, i);
  producer.join();
  EXPECT_TRUE(stream.finished());
}

}  // namespace
}  // namespace pagoda

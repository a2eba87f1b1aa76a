// ModelSet's lifecycle with a fake loader and an injected clock: one load under concurrent requests, LRU eviction
// at max_loaded, keep-alive expiry (the set's and a request's), load failures; and the router's reading of a body's
// model fields.
#include "server/model_set.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "server/model_router.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;

struct FakeLoader {
  std::atomic<int> loads{0};
  std::atomic<int> unloads{0};
  std::chrono::milliseconds delay{0};
  std::atomic<bool> fail{false};
  int64_t extra_bytes = 0;  // a loaded model's bytes beyond its file (its KV pool)

  ModelSet::Loader loader() {
    return [this](const ModelSpec& spec) -> Result<std::shared_ptr<ServedModel>> {
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      ++loads;
      if (fail) return make_error("cannot read " + spec.source);
      auto m = std::make_shared<ServedModel>();
      m->bytes = spec.file_bytes + extra_bytes;
      m->files = std::shared_ptr<void>(new int(0), [this](void* p) {
        delete static_cast<int*>(p);
        ++unloads;
      });
      return m;
    };
  }
};

struct ManualClock {
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point(1000s);
  ModelSet::Clock clock() {
    return [this] { return now; };
  }
};

std::vector<ModelSpec> three_specs() { return {{"a", "a.gguf", 1}, {"b", "b.gguf", 2}, {"c", "c.gguf", 3}}; }

// Acquires model `index` and waits for the answer.
Result<std::shared_ptr<ModelSet::Lease>> acquire(ModelSet& set, size_t index,
                                                 std::optional<std::chrono::milliseconds> keep_alive = std::nullopt) {
  std::promise<Result<std::shared_ptr<ModelSet::Lease>>> promise;
  auto future = promise.get_future();
  // Moved on, so that the lease lives only in the answer (the loading thread keeps no copy past the call).
  set.acquire(index, keep_alive,
              [&promise](Result<std::shared_ptr<ModelSet::Lease>> r) { promise.set_value(std::move(r)); });
  return future.get();
}

bool wait_for(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

std::vector<size_t> loaded_indices(const ModelSet& set) {
  std::vector<size_t> out;
  for (const ModelSet::Loaded& l : set.loaded()) out.push_back(l.index);
  return out;
}

TEST(ModelSetTest, ConcurrentFirstRequestsShareOneLoad) {
  FakeLoader fake;
  fake.delay = 100ms;
  ModelSet set(three_specs(), fake.loader(), {});
  std::vector<std::thread> threads;
  std::atomic<int> leased{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto lease = acquire(set, 1);
      if (lease.ok() && (*lease)->spec().name == "b") ++leased;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(leased.load(), 8);
  EXPECT_EQ(fake.loads.load(), 1);
  EXPECT_EQ(loaded_indices(set), std::vector<size_t>{1});
}

TEST(ModelSetTest, LoadedModelIsLeasedAtOnceOnTheCallersThread) {
  FakeLoader fake;
  ModelSet set(three_specs(), fake.loader(), {});
  ASSERT_TRUE(set.load_now(0).ok());
  bool answered = false;
  set.acquire(0, std::nullopt, [&](Result<std::shared_ptr<ModelSet::Lease>> r) { answered = r.ok(); });
  EXPECT_TRUE(answered);
  EXPECT_EQ(fake.loads.load(), 1);
}

TEST(ModelSetTest, EvictsTheLeastRecentlyUsedIdleModelAtMaxLoaded) {
  FakeLoader fake;
  ManualClock clock;
  ModelSetOptions options;
  options.max_loaded = 2;
  options.keep_alive = -1ms;
  ModelSet set(three_specs(), fake.loader(), options, clock.clock());
  ASSERT_TRUE(acquire(set, 0).ok());  // the lease ends at once: a is idle, last used at t
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 1).ok());
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 0).ok());  // a used again: b is now the least recently used
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 2).ok());
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(fake.loads.load(), 3);
  EXPECT_EQ(fake.unloads.load(), 1);
}

// --models-memory: a model about to load counts its file's bytes; idle models go, least recently used first,
// until it fits.
TEST(ModelSetTest, EvictsIdleModelsToStayWithinTheByteBudget) {
  FakeLoader fake;
  ManualClock clock;
  ModelSetOptions options;
  options.max_bytes = 5;
  options.keep_alive = -1ms;
  ModelSet set(three_specs(), fake.loader(), options, clock.clock());  // files of 1, 2 and 3 bytes
  ASSERT_TRUE(acquire(set, 0).ok());
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 1).ok());
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 2).ok());  // 1 + 2 + 3 > 5: a (the least recently used) goes, 2 + 3 fits
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(fake.unloads.load(), 1);
}

// Once loaded, a model's own bytes (its KV pool too) count: others idle go after the load.
TEST(ModelSetTest, ALoadedModelsKvPoolCountsAgainstTheByteBudget) {
  FakeLoader fake;
  fake.extra_bytes = 10;
  ManualClock clock;
  ModelSetOptions options;
  options.max_bytes = 15;
  options.keep_alive = -1ms;
  ModelSet set(three_specs(), fake.loader(), options, clock.clock());
  ASSERT_TRUE(acquire(set, 0).ok());  // 11 bytes loaded
  clock.now += 1s;
  ASSERT_TRUE(acquire(set, 1).ok());  // its file fits beside a (11 + 2); loaded it takes 12: a goes
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{1}));
  EXPECT_TRUE(wait_for([&] { return fake.unloads.load() == 1; }));
}

TEST(ModelSetTest, RefusesALoadBeyondTheByteBudgetWhileTheOthersAreBusy) {
  FakeLoader fake;
  ModelSetOptions options;
  options.max_bytes = 4;
  ModelSet set(three_specs(), fake.loader(), options);
  auto b = acquire(set, 1);  // 2 bytes, held
  ASSERT_TRUE(b.ok());
  auto c = acquire(set, 2);  // 2 + 3 > 4 and b is busy
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.error().find("--models-memory"), std::string::npos) << c.error();
  b = make_error("released");
  EXPECT_TRUE(acquire(set, 2).ok());
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{2}));
}

TEST(ModelSetTest, RefusesALoadWhenEveryLoadedModelIsBusy) {
  FakeLoader fake;
  ModelSetOptions options;
  options.max_loaded = 2;
  ModelSet set(three_specs(), fake.loader(), options);
  auto a = acquire(set, 0);
  auto b = acquire(set, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = acquire(set, 2);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.error().find("--models-max"), std::string::npos) << c.error();
  a = make_error("released");  // a's lease ends: it may go
  EXPECT_TRUE(acquire(set, 2).ok());
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{1, 2}));
}

TEST(ModelSetTest, UnloadsAModelIdlePastItsKeepAlive) {
  FakeLoader fake;
  ManualClock clock;
  ModelSetOptions options;
  options.keep_alive = 5s;
  ModelSet set(three_specs(), fake.loader(), options, clock.clock());
  {
    auto lease = acquire(set, 0);
    ASSERT_TRUE(lease.ok());
    clock.now += 10s;  // in use: no expiry, however long
    set.expire();
    EXPECT_EQ(loaded_indices(set), std::vector<size_t>{0});
  }  // released at t + 10 s
  ASSERT_EQ(set.loaded().size(), 1u);
  ASSERT_TRUE(set.loaded()[0].expires_at.has_value());
  clock.now += 4s;
  set.expire();
  EXPECT_EQ(loaded_indices(set), std::vector<size_t>{0});
  clock.now += 1s;
  set.expire();
  EXPECT_TRUE(set.loaded().empty());
  EXPECT_TRUE(wait_for([&] { return fake.unloads.load() == 1; }));
  // A later request loads it again.
  EXPECT_TRUE(acquire(set, 0).ok());
  EXPECT_EQ(fake.loads.load(), 2);
}

TEST(ModelSetTest, ARequestsKeepAliveBecomesItsModels) {
  FakeLoader fake;
  ManualClock clock;
  ModelSetOptions options;
  options.keep_alive = 5min;
  ModelSet set(three_specs(), fake.loader(), options, clock.clock());
  ASSERT_TRUE(acquire(set, 0, 0ms).ok());   // Ollama's keep_alive 0: unloaded once the request ends
  ASSERT_TRUE(acquire(set, 1, -1ms).ok());  // negative: for the server's life
  ASSERT_TRUE(acquire(set, 2).ok());        // the set's 5 minutes
  set.expire();
  EXPECT_EQ(loaded_indices(set), (std::vector<size_t>{1, 2}));
  clock.now += 1h;
  set.expire();
  EXPECT_EQ(loaded_indices(set), std::vector<size_t>{1});
  ASSERT_EQ(set.loaded().size(), 1u);
  EXPECT_FALSE(set.loaded()[0].expires_at.has_value());
}

TEST(ModelSetTest, AFailedLoadAnswersEveryWaiterAndIsRetried) {
  FakeLoader fake;
  fake.fail = true;
  fake.delay = 50ms;
  ModelSet set(three_specs(), fake.loader(), {});
  std::promise<Status> first, second;
  set.acquire(1, std::nullopt, [&](Result<std::shared_ptr<ModelSet::Lease>> r) { first.set_value(r.status()); });
  set.acquire(1, std::nullopt, [&](Result<std::shared_ptr<ModelSet::Lease>> r) { second.set_value(r.status()); });
  const Status s1 = first.get_future().get();
  const Status s2 = second.get_future().get();
  EXPECT_FALSE(s1.ok());
  EXPECT_NE(s1.message().find("cannot read b.gguf"), std::string::npos) << s1.message();
  EXPECT_FALSE(s2.ok());
  EXPECT_EQ(fake.loads.load(), 1);
  fake.fail = false;
  EXPECT_TRUE(acquire(set, 1).ok());
  EXPECT_EQ(fake.loads.load(), 2);
}

TEST(ModelSetTest, RefusesLoadsOnceStopped) {
  FakeLoader fake;
  ModelSet set(three_specs(), fake.loader(), {});
  set.stop_loading();
  auto r = acquire(set, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.loads.load(), 0);
}

TEST(ModelSetTest, FindsByNameAndOllamasLatestTag) {
  FakeLoader fake;
  ModelSet set(three_specs(), fake.loader(), {});
  EXPECT_EQ(set.find("b", false), std::optional<size_t>(1));
  EXPECT_EQ(set.find("b:latest", true), std::optional<size_t>(1));
  EXPECT_EQ(set.find("b:latest", false), std::nullopt);
  EXPECT_EQ(set.find("d", true), std::nullopt);
}

TEST(RequestModelFieldsTest, ReadsTopLevelModelAndKeepAliveOnly) {
  RequestModelFields f = read_request_model_fields(
      R"({"messages":[{"model":"inner"}],"model":"b","keep_alive":"1s","options":{"model":"x"}})");
  ASSERT_TRUE(f.model.has_value());
  EXPECT_EQ(*f.model, "b");
  ASSERT_TRUE(f.keep_alive.has_value());
  EXPECT_EQ(*f.keep_alive, 1000ms);
  f = read_request_model_fields(R"({"name":"c","keep_alive":-1})");
  EXPECT_EQ(f.model.value_or(""), "c");  // Ollama's older /api/show spelling
  EXPECT_EQ(f.keep_alive, std::optional<std::chrono::milliseconds>(-1ms));
  f = read_request_model_fields(R"({"model":7})");
  EXPECT_FALSE(f.model.has_value());
  f = read_request_model_fields(R"(["model","b"])");
  EXPECT_FALSE(f.model.has_value());
  f = read_request_model_fields(R"({"model":"b", broken)");
  EXPECT_FALSE(f.model.has_value());
  f = read_request_model_fields(R"({"keep_alive":"soon","model":"a"})");
  EXPECT_EQ(f.model.value_or(""), "a");
  EXPECT_FALSE(f.keep_alive.has_value());
}

}  // namespace
}  // namespace pagoda::server

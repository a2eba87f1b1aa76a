// ModelSet: loading on first use, leases, keep-alive expiry and LRU eviction of the models a server serves.
#include "server/model_set.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/ollama_protocol.h"

namespace pagoda::server {
namespace {

// Loads (and the releases of unloaded models) waiting for the loading thread; beyond it a request gets 503.
constexpr size_t kMaxQueuedLoads = 256;

// A loader's exception is its load's error: every request waiting for the load gets an answer.
Result<std::shared_ptr<ServedModel>> call_loader(const ModelSet::Loader& loader, const ModelSpec& spec) {
  try {
    return loader(spec);
  } catch (const std::exception& e) {
    return make_error(fmt::format("loading model '{}': {}", spec.name, e.what()));
  }
}

}  // namespace

ModelSet::Lease::~Lease() { set_->release(index_); }

const ModelSpec& ModelSet::Lease::spec() const { return set_->specs_[index_]; }

ModelSet::ModelSet(std::vector<ModelSpec> specs, Loader loader, ModelSetOptions options, Clock clock)
    : specs_(std::move(specs)),
      loader_(std::move(loader)),
      options_(options),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      entries_(specs_.size()),
      loading_thread_(std::make_unique<RequestWorkers>(1, kMaxQueuedLoads)) {}

ModelSet::~ModelSet() {
  stop_loading();
  loading_thread_.reset();  // a load in progress ends; queued ones see stopped_ and refuse
  std::vector<std::shared_ptr<ServedModel>> models;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& e : entries_) models.push_back(std::move(e.model));
  }
  models.clear();  // engines stopped and joined here, outside the lock
}

std::optional<size_t> ModelSet::find(std::string_view name, bool ollama) const {
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].name == name) return i;
  if (ollama)
    for (size_t i = 0; i < specs_.size(); ++i)
      if (ollama_model_matches(name, specs_[i].name)) return i;
  return std::nullopt;
}

bool ModelSet::busy(const Entry& e) const { return e.leases > 0 || (e.model && e.model->api && !e.model->api->idle()); }

std::chrono::milliseconds ModelSet::keep_alive_of(const Entry& e) const {
  return e.keep_alive.value_or(options_.keep_alive);
}

void ModelSet::acquire(size_t index, std::optional<std::chrono::milliseconds> keep_alive, Ready ready) {
  std::shared_ptr<Lease> lease;
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping = stopped_;
    Entry& e = entries_[index];
    if (keep_alive) e.keep_alive = keep_alive;
    if (e.model) {
      ++e.leases;
      lease.reset(new Lease(this, index, e.model));
    } else if (!stopping) {
      e.waiters.push_back(std::move(ready));
      if (e.loading) return;  // the load in progress answers it
      e.loading = true;
      if (loading_thread_->try_post([this, index] { load(index); })) return;
      e.loading = false;
      ready = std::move(e.waiters.back());
      e.waiters.pop_back();
    }
  }
  if (lease) return ready(std::move(lease));
  ready(make_error(stopping ? "the server is shutting down" : "the server is busy loading models; retry later",
                   StatusCode::kUnavailable));
}

Status ModelSet::load_now(size_t index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_[index].model) return Status::ok_status();
    ++num_loads_;
  }
  Result<std::shared_ptr<ServedModel>> model = call_loader(loader_, specs_[index]);
  if (!model.ok()) return model.status();
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[index].model = std::move(*model);
  entries_[index].last_used = clock_();
  return Status::ok_status();
}

int64_t ModelSet::bytes_of(size_t index) const {
  const ServedModel& m = *entries_[index].model;
  return m.bytes > 0 ? m.bytes : specs_[index].file_bytes;
}

int64_t ModelSet::loaded_bytes() const {
  int64_t total = 0;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].model) total += bytes_of(i);
  return total;
}

std::optional<std::string> ModelSet::make_room(size_t keep, bool loading, int64_t incoming_bytes,
                                               std::vector<std::shared_ptr<ServedModel>>* evicted) {
  int32_t num_loaded = 0;
  for (const Entry& e : entries_) num_loaded += e.model ? 1 : 0;
  int64_t bytes = loaded_bytes();
  auto too_many = [&] { return loading && options_.max_loaded > 0 && num_loaded >= options_.max_loaded; };
  auto too_big = [&] { return options_.max_bytes > 0 && bytes + incoming_bytes > options_.max_bytes; };
  while (too_many() || too_big()) {
    const std::string limit =
        too_many() ? fmt::format("--models-max {}", options_.max_loaded)
                   : fmt::format("--models-memory {:.2f} GiB", double(options_.max_bytes) / double(int64_t(1) << 30));
    Entry* lru = nullptr;
    for (size_t i = 0; i < entries_.size(); ++i) {
      Entry& e = entries_[i];
      if (i == keep || !e.model || busy(e)) continue;
      if (lru == nullptr || e.last_used < lru->last_used) lru = &e;
    }
    if (lru == nullptr) return limit;
    const size_t lru_index = size_t(lru - entries_.data());
    if (options_.note)
      options_.note(fmt::format("unloading model '{}' {} '{}' ({})", specs_[lru_index].name,
                                loading ? "to load" : "to make room for", specs_[keep].name, limit));
    bytes -= bytes_of(lru_index);
    evicted->push_back(std::move(lru->model));
    lru->model = nullptr;
    lru->keep_alive.reset();
    --num_loaded;
  }
  return std::nullopt;
}

void ModelSet::load(size_t index) {
  std::vector<std::shared_ptr<ServedModel>> evicted;
  Status refused = Status::ok_status();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_)
      refused = make_error("the server is shutting down", StatusCode::kUnavailable);
    else if (const std::optional<std::string> limit = make_room(index, true, specs_[index].file_bytes, &evicted))
      refused = make_error(fmt::format("loading model '{}' would exceed {} and every other loaded model is serving "
                                       "requests; retry later",
                                       specs_[index].name, *limit),
                           StatusCode::kUnavailable);
    else
      ++num_loads_;
  }
  evicted.clear();  // their engines stopped and joined before the new model takes their memory
  Result<std::shared_ptr<ServedModel>> model =
      refused.ok() ? call_loader(loader_, specs_[index]) : Result<std::shared_ptr<ServedModel>>(refused);
  std::vector<Ready> waiters;
  std::vector<std::shared_ptr<Lease>> leases;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[index];
    e.loading = false;
    waiters = std::move(e.waiters);
    e.waiters.clear();
    if (model.ok()) {
      e.model = *model;
      e.last_used = clock_();
      // Loaded, its KV pool counts too: other idle models may have to go after all (busy ones stay; the note says).
      if (std::optional<std::string> limit = make_room(index, false, 0, &evicted); limit && options_.note)
        options_.note(fmt::format("model '{}' loaded beyond {}: the other loaded models are serving requests",
                                  specs_[index].name, *limit));
      for (size_t i = 0; i < waiters.size(); ++i) {
        ++e.leases;
        leases.emplace_back(new Lease(this, index, e.model));
      }
    }
  }
  for (size_t i = 0; i < waiters.size(); ++i) {
    if (model.ok())
      waiters[i](std::move(leases[i]));
    else
      waiters[i](model.status());
  }
}

void ModelSet::release(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[index];
  --e.leases;
  e.last_used = clock_();
}

void ModelSet::expire() {
  std::vector<std::shared_ptr<ServedModel>> unloaded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = clock_();
    for (Entry& e : entries_) {
      if (!e.model) continue;
      if (busy(e)) {
        e.last_used = now;  // the keep-alive counts from the end of the last request
        continue;
      }
      const std::chrono::milliseconds keep_alive = keep_alive_of(e);
      if (keep_alive.count() < 0 || now - e.last_used < keep_alive) continue;
      if (options_.note)
        options_.note(fmt::format("unloading model '{}': idle for its keep-alive of {:.3g} s",
                                  specs_[&e - entries_.data()].name, double(keep_alive.count()) / 1e3));
      unloaded.push_back(std::move(e.model));
      e.model = nullptr;
      e.keep_alive.reset();
    }
  }
  // Joining an engine's threads takes a moment: done on the loading thread rather than the caller's (an I/O thread).
  for (std::shared_ptr<ServedModel>& m : unloaded) {
    auto holder = std::make_shared<std::shared_ptr<ServedModel>>(std::move(m));
    if (!loading_thread_->try_post([holder] { holder->reset(); })) holder->reset();
  }
}

void ModelSet::stop_loading() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
}

std::vector<ModelSet::Loaded> ModelSet::loaded() const {
  std::vector<Loaded> out;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_();
  const auto system_now = std::chrono::system_clock::now();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (!e.model) continue;
    Loaded l;
    l.index = i;
    l.model = e.model;
    const std::chrono::milliseconds keep_alive = keep_alive_of(e);
    if (keep_alive.count() >= 0) {
      const auto from = busy(e) ? now : e.last_used;
      l.expires_at =
          system_now + std::chrono::duration_cast<std::chrono::system_clock::duration>(from + keep_alive - now);
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::shared_ptr<ServedModel> ModelSet::loaded_model(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_[index].model;
}

bool ModelSet::is_loading() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& e : entries_)
    if (e.loading) return true;
  return false;
}

int64_t ModelSet::num_loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_loads_;
}

}  // namespace pagoda::server

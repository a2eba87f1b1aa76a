// ModelSet: the models a server may serve (name -> how to load it) and the ones loaded now, each with its engine
// and ApiServer (ServedModel), its leases and its keep-alive. Loads on first use, on its own loading thread (requests
// for loaded models keep flowing; requests for a model being loaded wait for that one load), unloads a model idle
// past its keep-alive, and the least recently used idle ones when --models-max or --models-memory would be exceeded.
// How a model is loaded is the caller's (a Loader: the CLI's, or a test's fake); the set knows no files. Thread-safe.
#pragma once

#include <pagoda/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/api_server.h"
#include "server/request_workers.h"

namespace pagoda::server {

// One model loaded for serving: its files (the model and tokenizer, owned by whoever loaded them), the engine
// over them and the ApiServer over the engine. Released engine first (its thread joined), as serve's own shutdown
// does, then the server, then the files.
struct ServedModel {
  std::shared_ptr<void> files;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<ApiServer> api;
  int64_t bytes = 0;  // its weights' file and its KV and state pools: what --models-memory counts
  ~ServedModel() {
    engine.reset();
    api.reset();
    files.reset();
  }
};

// A model the server may serve: its name in the API and what its loader loads.
struct ModelSpec {
  std::string name;
  std::string source;      // a model file's path (listed by /v1/models as `root`... and in logs)
  int64_t file_bytes = 0;  // listed by /api/tags before the model is loaded
};

struct ModelSetOptions {
  // How long a model stays loaded after its last request ended; negative: for the server's life. Ollama's
  // keep_alive on a request replaces it for that model.
  std::chrono::milliseconds keep_alive{std::chrono::minutes(5)};
  int32_t max_loaded = 0;  // models loaded at once at most (--models-max); 0: no limit
  // What the loaded models' bytes (ServedModel::bytes) may add up to (--models-memory); a model about to load counts
  // its file's bytes, and once loaded its own. 0: no limit.
  int64_t max_bytes = 0;
  std::function<void(const std::string&)> note;  // told of each unload (the server's log), when set
};

class ModelSet {
 public:
  using Loader = std::function<Result<std::shared_ptr<ServedModel>>(const ModelSpec&)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // A model held by one request while it is handed to its ApiServer; the model is not unloaded while a lease or
  // its ApiServer's work (ApiServer::idle) lasts, and its keep-alive counts from the end of both.
  class Lease {
   public:
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    ServedModel& model() const { return *model_; }
    const ModelSpec& spec() const;

   private:
    friend class ModelSet;
    Lease(ModelSet* set, size_t index, std::shared_ptr<ServedModel> model)
        : set_(set), index_(index), model_(std::move(model)) {}
    ModelSet* set_;
    size_t index_;
    std::shared_ptr<ServedModel> model_;
  };
  // Called once with a lease, or with why the model could not be had: kUnavailable (shutting down, or every
  // loaded model busy at --models-max), else the load's error.
  using Ready = std::function<void(Result<std::shared_ptr<Lease>>)>;

  // `specs`: at least one, names distinct; the first is the default model of requests that name none.
  ModelSet(std::vector<ModelSpec> specs, Loader loader, ModelSetOptions options, Clock clock = {});
  ~ModelSet();  // waits for a load in progress, then unloads every model
  ModelSet(const ModelSet&) = delete;
  ModelSet& operator=(const ModelSet&) = delete;

  const std::vector<ModelSpec>& specs() const { return specs_; }
  const ModelSetOptions& options() const { return options_; }
  // The model a request's name means: the same name, or (`ollama`) it with Ollama's default tag ":latest".
  std::optional<size_t> find(std::string_view name, bool ollama) const;

  // `ready` gets a lease on model `index`, at once (on this thread) when it is loaded, else once the loading
  // thread has loaded it. `keep_alive`: a request's own (Ollama's keep_alive), from now on the model's.
  void acquire(size_t index, std::optional<std::chrono::milliseconds> keep_alive, Ready ready);
  // Loads model `index` on this thread (start-up's default model) unless it is loaded.
  Status load_now(size_t index);
  // Unloads the models idle past their keep-alive (their release runs on the loading thread). Periodic.
  void expire();
  // Refuses loads from now on (shutdown); loaded models stay until the set goes.
  void stop_loading();

  struct Loaded {
    size_t index = 0;
    std::shared_ptr<ServedModel> model;
    // When it will be unloaded if no request comes (system clock); nullopt: never.
    std::optional<std::chrono::system_clock::time_point> expires_at;
  };
  std::vector<Loaded> loaded() const;
  // A model loaded now (without a lease: for reading its facts), or null.
  std::shared_ptr<ServedModel> loaded_model(size_t index) const;
  bool is_loading() const;
  int64_t num_loads() const;  // loads done since the start (failed ones included)

 private:
  struct Entry {
    std::shared_ptr<ServedModel> model;  // null: not loaded
    bool loading = false;
    std::vector<Ready> waiters;  // requests waiting for the load in progress
    int32_t leases = 0;
    std::chrono::steady_clock::time_point last_used{};
    std::optional<std::chrono::milliseconds> keep_alive;  // a request's; else the set's
  };
  void release(size_t index);
  void load(size_t index);  // on the loading thread
  bool busy(const Entry& e) const;
  std::chrono::milliseconds keep_alive_of(const Entry& e) const;
  // Detaches the least recently used idle models but `keep` while --models-max or --models-memory would be exceeded
  // with `incoming_bytes` more (and, when `loading`, one more model); mutex_ held. Returns why there is no room
  // (every other loaded model busy), or nullopt.
  std::optional<std::string> make_room(size_t keep, bool loading, int64_t incoming_bytes,
                                       std::vector<std::shared_ptr<ServedModel>>* evicted);
  int64_t loaded_bytes() const;  // mutex_ held
  // A loaded model's bytes: its own (ServedModel::bytes), or its file's where its loader set none; mutex_ held.
  int64_t bytes_of(size_t index) const;

  const std::vector<ModelSpec> specs_;
  const Loader loader_;
  const ModelSetOptions options_;
  const Clock clock_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  bool stopped_ = false;
  int64_t num_loads_ = 0;
  // Last: destroyed first, so no load runs while the entries go.
  std::unique_ptr<RequestWorkers> loading_thread_;
};

}  // namespace pagoda::server

// The engine-to-consumer channel.
#include "engine/request_stream.h"

namespace pagoda {

void RequestStream::push(RequestOutput output) {
  std::shared_ptr<const std::function<void()>> listener;
  bool finished = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished = output.finished;
    if (finished) finished_ = true;
    outputs_.push_back(std::move(output));
    listener = listener_;
  }
  ready_.notify_all();
  if (finished) done_.notify_all();
  if (listener) (*listener)();
}

std::optional<RequestOutput> RequestStream::try_next() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (outputs_.empty()) return std::nullopt;
  RequestOutput out = std::move(outputs_.front());
  outputs_.pop_front();
  return out;
}

void RequestStream::set_listener(std::function<void()> listener) {
  std::shared_ptr<const std::function<void()>> installed;
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (listener) installed = std::make_shared<const std::function<void()>>(std::move(listener));
    listener_ = installed;
    waiting = !outputs_.empty();
  }
  if (installed && waiting) (*installed)();
}

std::optional<RequestOutput> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !outputs_.empty(); })) return std::nullopt;
  RequestOutput out = std::move(outputs_.front());
  outputs_.pop_front();
  return out;
}

RequestOutput RequestStream::wait_all() {
  // One wake-up at the end, not one per output: a consumer that only wants the result steals no time from the
  // engine's threads while it runs.
  std::deque<RequestOutput> outputs;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return finished_; });
    outputs.swap(outputs_);
  }
  RequestOutput all;
  for (RequestOutput& out : outputs) {
    all.request_id = out.request_id;
    all.new_tokens.insert(all.new_tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
    all.logprobs.insert(all.logprobs.end(), std::make_move_iterator(out.logprobs.begin()),
                        std::make_move_iterator(out.logprobs.end()));
    all.logits.insert(all.logits.end(), out.logits.begin(), out.logits.end());
    if (!out.prompt_logits.empty()) all.prompt_logits = std::move(out.prompt_logits);
    if (!out.prompt_logprobs.empty()) all.prompt_logprobs = std::move(out.prompt_logprobs);
    if (!out.embedding.empty()) all.embedding = std::move(out.embedding);
    all.text += out.text;
    all.num_prompt_tokens = out.num_prompt_tokens;
    all.num_cached_tokens = out.num_cached_tokens;
    all.num_output_tokens = out.num_output_tokens;
    if (out.finished) {
      all.finished = true;
      all.finish_reason = out.finish_reason;
      all.stop_string = std::move(out.stop_string);
      all.timing = std::move(out.timing);
    }
  }
  return all;
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

}  // namespace pagoda

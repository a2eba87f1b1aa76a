// CompletionJob: from engine events to OpenAI responses.
#include "server/completion_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "core/check.h"

namespace pagoda::server {

namespace {

// Where a reasoning model's constrained answer begins, in its tokenizer's tokens: after the close of its reasoning
// (</think> as one token; harmony's final header between control tokens). None where the model could spell the
// close otherwise (a </think> of several text tokens), or could not open its reasoning under the grammar: the
// grammar then holds from the first token, as for any model.
std::optional<ReasoningGate> answer_gate(ReasoningSyntax syntax, bool opens_reasoning, const Tokenizer& tokenizer) {
  const ReasoningBounds bounds = reasoning_bounds(syntax);
  if (bounds.close.empty()) return std::nullopt;
  ReasoningGate gate;
  gate.end = tokenizer.encode(bounds.close, /*add_bos=*/false, /*parse_special=*/true);
  const bool close_is_tokens = syntax == ReasoningSyntax::kThinkTags
                                   ? gate.end.size() == 1
                                   : gate.end.size() >= 2 && tokenizer.is_control(gate.end.front()) &&
                                         tokenizer.is_control(gate.end.back());
  if (!close_is_tokens) return std::nullopt;
  if (!opens_reasoning && !bounds.open.empty()) {
    const std::vector<TokenId> open = tokenizer.encode(bounds.open, /*add_bos=*/false, /*parse_special=*/true);
    if (open.size() != 1) return std::nullopt;
    gate.start = open[0];
  }
  return gate;
}

}  // namespace

CompletionJob::CompletionJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, CompletionParams params,
                             std::unique_ptr<ResponseWriter> writer, std::function<void()> on_done)
    : ctx_(std::move(ctx)),
      exchange_(std::move(exchange)),
      params_(std::move(params)),
      writer_(std::move(writer)),
      on_done_(std::move(on_done)) {
  start_us_ = ctx_.engine->now_us();
}

Result<std::vector<RequestHandle>> CompletionJob::submit_each(const GenerateRequest& req, int32_t n) {
  std::vector<RequestHandle> handles;
  for (int32_t i = 0; i < n; ++i) {
    Result<RequestHandle> h = ctx_.engine->submit(req);
    if (!h.ok()) {
      for (const RequestHandle& earlier : handles) ctx_.engine->cancel(earlier.id);
      return h.status();
    }
    handles.push_back(*h);
  }
  return handles;
}

bool CompletionJob::start(std::vector<JobPrompt> prompts, std::shared_ptr<const grammar::CompiledGrammar> constraint) {
  // A forced call's output is the grammar's JSON, no reasoning; harmony's calls are its channel parser's.
  const bool forced_call = params_.tools.active() && params_.tools.choice != ToolChoice::kAuto;
  // Another constraint (a response format) is the answer's: a reasoning model reasons first, free.
  const bool gate_answer = params_.chat && constraint && !forced_call && ctx_.reasoning_syntax != ReasoningSyntax::kNone;
  for (size_t p = 0; p < prompts.size(); ++p) {
    echo_texts_.push_back(prompts[p].echo_text);
    if (prompt_alternatives() >= 0) prompt_tokens_.push_back(prompts[p].tokens);
    GenerateRequest req;
    req.prompt = prompts[p].tokens;
    req.prompt_logprobs = prompt_alternatives();
    req.prefill_only = params_.echo_only;  // the prompt (and its logprobs) alone: nothing sampled
    if (!req.prefill_only) {
      req.sampling = params_.sampling;
      req.sampling.logprobs = params_.logprobs;
    }
    req.grammar = constraint;
    if (gate_answer)
      req.reasoning_gate = answer_gate(ctx_.reasoning_syntax, prompts[p].opens_reasoning, *ctx_.tokenizer);
    const bool gated = req.reasoning_gate.has_value();
    // n choices of one prompt: its prefill is shared, and choice i of a seeded request draws with seed + i. A
    // prefill-only request has no samples to fork: each choice is its own.
    Result<std::vector<RequestHandle>> handles =
        req.prefill_only ? submit_each(req, params_.n) : ctx_.engine->submit_samples(std::move(req), params_.n);
    for (size_t i = 0; i < size_t(params_.n); ++i) {
      const Result<RequestHandle> handle = handles.ok() ? Result<RequestHandle>((*handles)[i]) : handles.status();
      if (!handle.ok()) {
        for (Choice& c : choices_) ctx_.engine->cancel(c.handle.id);
        choices_.clear();
        const ApiError e = api_error_from_status(handle.status());
        ctx_.metrics->record_http_request(e.http_status);
        RequestLogEntry entry;
        entry.path = exchange_->request().path;
        entry.status = e.http_status;
        entry.e2e_ms = double(ctx_.engine->now_us() - start_us_) / 1e3;
        entry.finish = "error: " + e.message;
        ctx_.log->write(entry);
        exchange_->respond(writer_->error_response(e));
        return false;
      }
      Choice c;
      c.index = int32_t(choices_.size());
      c.prompt_idx = int32_t(p);
      c.handle = *handle;
      c.num_prompt_tokens = int32_t(prompts[p].tokens.size());
      c.prev_token = prompts[p].tokens.empty() ? -1 : prompts[p].tokens.back();
      // Under an output constraint without a gate, an opened reasoning is one only if the output closes it: a
      // schema's JSON that never does is the answer.
      if (params_.chat && ctx_.reasoning_syntax != ReasoningSyntax::kNone && !forced_call)
        c.reasoning_parser.emplace(ctx_.reasoning_syntax, prompts[p].opens_reasoning, params_.tools.active(),
                                   params_.constraint.has_value() && !gated);
      if (params_.chat && params_.tools.active()) {
        if (params_.tools.choice == ToolChoice::kAuto && ctx_.reasoning_syntax != ReasoningSyntax::kHarmony)
          c.tool_parser.emplace(ctx_.tool_call_format);
        if (params_.tools.choice == ToolChoice::kRequired) c.tool_parser.emplace(ToolCallFormat::kJsonArray);
      }
      choices_.push_back(std::move(c));
    }
  }
  std::weak_ptr<CompletionJob> weak = weak_from_this();
  exchange_->set_on_close([weak] {
    if (auto job = weak.lock()) job->client_gone();
  });
  if (params_.stream) {
    exchange_->set_cut_message(writer_->cut_message());
    exchange_->start_stream(200, writer_->stream_content_type());
    stream_started_ = true;
    const std::string open = writer_->stream_open(prompts.empty() ? 0 : int32_t(prompts[0].tokens.size()));
    if (!open.empty()) exchange_->send(open);
  }
  // The listener runs on the engine's thread: it only posts the work onto this job's strand.
  for (Choice& c : choices_) {
    c.handle.stream->set_listener([weak] {
      if (auto job = weak.lock()) job->exchange_->post([job] { job->drain(); });
    });
  }
  return true;
}

void CompletionJob::drain() {
  try {
    drain_events();
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void CompletionJob::fail(const std::string& what) {
  if (completed_) return;
  ApiError e;
  e.http_status = 500;
  e.type = "server_error";
  e.message = "internal server error; the server logged the cause";
  ctx_.log->message(fmt::format("internal error in {}: {}", writer_->id(), what));
  // Every choice ends now: complete() below answers with the error whatever the choices' finish reasons.
  cancel_running();
  for (Choice& c : choices_) {
    if (!c.done) ++num_done_;
    c.done = true;
    c.finish_reason = FinishReason::kAbort;
  }
  error_ = std::move(e);
  failed_ = true;
  complete();
}

void CompletionJob::drain_events() {
  for (Choice& c : choices_) {
    if (c.done) continue;
    while (std::optional<RequestOutput> out = c.handle.stream->try_next()) {
      handle_output(c, *out);
      if (c.done) break;
    }
  }
  if (!completed_ && num_done_ == int32_t(choices_.size())) complete();
}

std::vector<TokenLogprobInfo> CompletionJob::logprob_infos(Choice& c, const std::vector<TokenLogprobs>& lps) {
  std::vector<TokenLogprobInfo> infos;
  for (const TokenLogprobs& lp : lps) {
    TokenLogprobInfo info;
    info.token = ctx_.tokenizer->token_bytes(lp.token, c.prev_token);
    info.id = lp.token;
    info.logprob = lp.logprob;
    for (const auto& [tok, val] : lp.top)
      info.top.push_back({ctx_.tokenizer->token_bytes(tok, c.prev_token), val, tok});
    info.text_offset = c.text_offsets.next(info.token);
    c.prev_token = lp.token;
    infos.push_back(std::move(info));
  }
  return infos;
}

void CompletionJob::score_prompt(Choice& c, const std::vector<TokenLogprobs>& prompt_lps,
                                 std::vector<TokenLogprobInfo>* infos) {
  c.prompt_scored = true;
  const std::vector<TokenId>& prompt = prompt_tokens_[size_t(c.prompt_idx)];
  // The engine gives one entry per prompt token after the first; anything else is an engine bug, which must cost
  // this choice (a 500), not the server (PAGODA_CHECK aborts).
  if (prompt_lps.size() + 1 != prompt.size())
    throw std::logic_error(
        fmt::format("{} prompt logprobs for a prompt of {} tokens", prompt_lps.size(), prompt.size()));
  const Tokenizer& tok = *ctx_.tokenizer;
  if (params_.echo && params_.logprobs >= 0) {
    // The echoed text's tokens: the first has no logprob (OpenAI's nulls); each next one its own and the
    // alternatives at its position. The output's tokens continue the offsets after them.
    TokenId prev = -1;
    for (size_t i = 0; i < prompt.size(); ++i) {
      TokenLogprobInfo info;
      info.token = tok.token_bytes(prompt[i], prev);
      if (i > 0) {
        const TokenLogprobs& lp = prompt_lps[i - 1];
        info.logprob = lp.logprob;
        for (size_t k = 0; k < lp.top.size() && int32_t(k) < params_.logprobs; ++k)
          info.top.push_back({tok.token_bytes(lp.top[k].first, prev), lp.top[k].second, lp.top[k].first});
      }
      info.text_offset = c.text_offsets.next(info.token);
      prev = prompt[i];
      infos->push_back(std::move(info));
    }
  }
  if (params_.prompt_logprobs >= 0) {
    PromptLogprobs positions(prompt.size());  // the first stays empty: null
    for (size_t i = 1; i < prompt.size(); ++i) {
      const TokenLogprobs& lp = prompt_lps[i - 1];
      const TokenId prev = prompt[i - 1];
      std::vector<PromptLogprob>& at = positions[i];
      // The prompt's token first, then the most likely ones (itself not twice), as vLLM lists them.
      at.push_back({prompt[i], lp.logprob, lp.rank, tok.token_bytes(prompt[i], prev)});
      for (size_t k = 0; k < lp.top.size() && int32_t(k) < params_.prompt_logprobs; ++k)
        if (lp.top[k].first != prompt[i])
          at.push_back({lp.top[k].first, lp.top[k].second, int32_t(k) + 1, tok.token_bytes(lp.top[k].first, prev)});
    }
    c.prompt_logprobs = std::move(positions);
  }
}

void CompletionJob::handle_output(Choice& c, RequestOutput& out) {
  c.num_cached_tokens = out.num_cached_tokens;
  c.num_output_tokens = out.num_output_tokens;
  std::vector<TokenLogprobInfo> infos;
  // The prompt's scores come with the first output token, or a prefill-only request's one event (not an abort's).
  const bool scores_come = !out.new_tokens.empty() ||
                           (params_.echo_only && out.finished && out.finish_reason != FinishReason::kAbort);
  if (!c.prompt_scored && prompt_alternatives() >= 0 && scores_come) score_prompt(c, out.prompt_logprobs, &infos);
  if (params_.logprobs >= 0)
    for (TokenLogprobInfo& i : logprob_infos(c, out.logprobs)) infos.push_back(std::move(i));
  if (out.finished) {
    c.done = true;
    ++num_done_;
    const bool aborted = out.finish_reason == FinishReason::kAbort;
    // The engine ended it because its grammar cannot go on: the request's own constraint is to blame, a 400 (an
    // error event once the stream has started); the other choices stop with it.
    if (aborted && !out.grammar_error.empty() && !error_ && !client_gone_) {
      expire(ApiError{400, out.grammar_error, "invalid_request_error", {}, std::string("grammar_cannot_continue")});
    }
    c.finish_reason = params_.echo_only && !aborted ? FinishReason::kLength : out.finish_reason;
    c.stop_string = out.stop_string;
    if (out.timing) {
      if (out.timing->first_token_us >= 0) c.ttft_ms = out.timing->ttft_s() * 1e3;
      // As the response says it: an echo of the prompt alone generated nothing and ended by length.
      ctx_.metrics->record_finished(*out.timing, c.finish_reason, out.num_prompt_tokens, out.num_output_tokens);
    }
  }
  const bool aborted = out.finished && out.finish_reason == FinishReason::kAbort;
  // The reasoning first: what the rest (tool calls, content) reads is the answer.
  ReasoningPieces split;
  if (c.reasoning_parser) {
    const bool was_reasoning = c.reasoning_parser->in_reasoning();
    split = c.reasoning_parser->push(out.text);
    if (out.finished) {
      ReasoningPieces tail = c.reasoning_parser->finish();
      split.reasoning += tail.reasoning;
      split.content += tail.content;
      for (ToolCall& call : tail.calls) split.calls.push_back(std::move(call));
    }
    if (was_reasoning || !split.reasoning.empty()) c.num_reasoning_tokens += int32_t(out.new_tokens.size());
    c.saw_reasoning = c.saw_reasoning || !split.reasoning.empty();
    out.text = std::move(split.content);
  }
  if (!params_.stream) {
    if (!c.sent_first && params_.echo) c.text = echo_texts_[size_t(c.prompt_idx)];
    c.sent_first = true;
    c.text += out.text;
    c.reasoning += split.reasoning;
    for (ToolCall& call : split.calls) {
      call.id = new_call_id();
      c.harmony_calls.push_back(std::move(call));
    }
    c.token_ids.insert(c.token_ids.end(), out.new_tokens.begin(), out.new_tokens.end());
    for (TokenLogprobInfo& i : infos) c.logprobs.push_back(std::move(i));
    return;
  }
  if (client_gone_) return;
  ChoiceResult r;
  r.index = c.index;
  r.text = out.text;
  r.reasoning = std::move(split.reasoning);
  if (!c.sent_first && params_.echo) r.text = echo_texts_[size_t(c.prompt_idx)] + r.text;
  r.logprobs = std::move(infos);
  r.token_ids = out.new_tokens;
  if (out.finished && !aborted) {
    r.finish_reason = c.finish_reason;
    r.stop_string = c.stop_string;
  }
  if (params_.chat && params_.tools.active() && !aborted)
    stream_tool_output(c, out.text, out.finished, out.finished && out.finish_reason == FinishReason::kStop, &r);
  for (const ToolCall& call : split.calls)
    r.tool_call_deltas.push_back({c.num_harmony_calls++, new_call_id(), call.name, call.arguments});
  if (out.finished && out.finish_reason == FinishReason::kStop && c.num_harmony_calls > 0) r.called_tools = true;
  c.called_tools = c.called_tools || r.called_tools;
  const bool first = !c.sent_first;
  // A chunk when there is something to say: text, tool calls, logprobs, the first chat delta (the role), the
  // finish.
  if (r.text.empty() && r.reasoning.empty() && r.tool_call_deltas.empty() && r.logprobs.empty() &&
      !r.finish_reason && !(first && params_.chat))
    return;
  if (aborted && r.text.empty() && r.reasoning.empty() && r.logprobs.empty()) return;
  std::optional<UsageFigures> chunk_usage;
  if (params_.continuous_usage)
    chunk_usage = UsageFigures{c.num_prompt_tokens, c.num_output_tokens, c.num_cached_tokens, c.num_reasoning_tokens, c.ttft_ms};
  const std::string bytes = writer_->stream_piece(r, first, chunk_usage);
  if (!bytes.empty()) exchange_->send(bytes);
  c.sent_first = true;
}

void CompletionJob::stream_tool_output(Choice& c, const std::string& text, bool finished, bool stopped,
                                       ChoiceResult* r) {
  if (named_tool_call()) {
    // The whole output is the call's arguments: its first piece carries the id and name.
    r->text.clear();
    if (c.named_call_id.empty()) {
      c.named_call_id = new_call_id();
      r->tool_call_deltas.push_back({0, c.named_call_id, params_.tools.named, text});
    } else if (!text.empty()) {
      r->tool_call_deltas.push_back({0, {}, {}, text});
    }
    r->called_tools = finished && stopped;
    return;
  }
  if (!c.tool_parser) return;
  r->text = c.tool_parser->push(text);
  if (!finished) return;
  ToolCallParser::Result parsed = c.tool_parser->finish();
  r->text += parsed.content;
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    const ToolCall& call = parsed.calls[i];
    r->tool_call_deltas.push_back({int32_t(i), new_call_id(), call.name, call.arguments});
  }
  r->called_tools = stopped && !parsed.calls.empty();
}

void CompletionJob::finish_tool_output(Choice& c, ChoiceResult* r) {
  const bool stopped = c.finish_reason == FinishReason::kStop;
  if (named_tool_call()) {
    r->tool_calls.push_back({new_call_id(), params_.tools.named, std::move(r->text)});
    r->text.clear();
    r->called_tools = stopped;
    return;
  }
  if (!c.tool_parser) return;
  ToolCallParser::Result parsed = parse_tool_calls(r->text, c.tool_parser->format());
  r->text = std::move(parsed.content);
  r->tool_calls = std::move(parsed.calls);
  for (ToolCall& call : r->tool_calls) call.id = new_call_id();
  r->called_tools = stopped && !r->tool_calls.empty();
}

UsageFigures CompletionJob::usage() const {
  UsageFigures u;
  // Prompt tokens count once per prompt, however many choices share it (as OpenAI and vLLM count them).
  int32_t last_prompt = -1;
  for (const Choice& c : choices_) {
    if (c.prompt_idx != last_prompt) {
      u.prompt_tokens += c.num_prompt_tokens;
      if (last_prompt < 0) u.ttft_ms = c.ttft_ms;
      u.cached_tokens += c.num_cached_tokens;
      last_prompt = c.prompt_idx;
    }
    u.completion_tokens += c.num_output_tokens;
    if (c.saw_reasoning) u.reasoning_tokens += c.num_reasoning_tokens;
  }
  return u;
}

void CompletionJob::cancel_running() {
  for (Choice& c : choices_)
    if (!c.done) ctx_.engine->cancel(c.handle.id);
}

void CompletionJob::client_gone() {
  if (completed_) return;
  client_gone_ = true;
  cancel_running();
}

void CompletionJob::expire(ApiError why) {
  if (completed_ || error_) return;
  error_ = std::move(why);
  cancel_running();
}

void CompletionJob::complete() {
  completed_ = true;
  const std::string response_id = writer_->id();  // read before a worker may be building the body
  for (Choice& c : choices_) c.handle.stream->set_listener(nullptr);
  const UsageFigures u = usage();
  // An early end (deadline, shutdown) is an error for the client only if the engine cut a choice short.
  bool cut_short = failed_;
  for (const Choice& c : choices_) cut_short |= c.finish_reason == FinishReason::kAbort;
  if (cut_short && !error_ && !client_gone_) {
    // Nobody here cancelled it (no disconnect, deadline or shutdown): the engine ended it (a failed step).
    error_ = ApiError{
        500, "the engine failed while running the request; the server logged the cause", "server_error", {}, {}};
  }
  int status = 200;
  std::string finish;
  if (client_gone_) {
    status = 499;  // nginx's "client closed request"
    finish = "client disconnected";
  } else if (error_ && cut_short) {
    status = error_->http_status;
    finish = "error: " + error_->message;
  } else {
    finish = std::string(finish_reason_json(choices_.empty() ? FinishReason::kLength : choices_[0].finish_reason));
  }
  if (!client_gone_) {
    if (params_.stream && stream_started_) {
      ChoiceResult last;
      if (!choices_.empty()) {
        last.finish_reason = choices_[0].finish_reason;
        last.stop_string = choices_[0].stop_string;
        last.called_tools = choices_[0].called_tools;
      }
      exchange_->send(writer_->stream_close(error_ && cut_short ? &*error_ : nullptr, u, last));
      exchange_->end_stream();
    } else if (error_ && cut_short) {
      exchange_->respond(writer_->error_response(*error_));
    } else if (params_.stream) {
      exchange_->respond(
          writer_->error_response(ApiError{500, "the stream ended before it started", "server_error", {}, {}}));
    } else {
      std::vector<ChoiceResult> results;
      for (Choice& c : choices_) {
        ChoiceResult r;
        r.index = c.index;
        r.text = std::move(c.text);
        r.token_ids = std::move(c.token_ids);
        r.finish_reason = c.finish_reason;
        r.stop_string = std::move(c.stop_string);
        r.logprobs = std::move(c.logprobs);
        r.prompt_logprobs = std::move(c.prompt_logprobs);
        r.reasoning = std::move(c.reasoning);
        if (params_.chat && params_.tools.active()) finish_tool_output(c, &r);
        for (ToolCall& call : c.harmony_calls) r.tool_calls.push_back(std::move(call));
        if (!c.harmony_calls.empty() && c.finish_reason == FinishReason::kStop) r.called_tools = true;
        results.push_back(std::move(r));
      }
      // A whole body of many tokens and logprobs takes long to build (about 0.5 s for 16 choices x 500 tokens
      // with 20 logprobs each): on the request workers, the strand's I/O thread meanwhile answering its other
      // connections (/health). The job is done with writer_ and the results after this; respond() may be called
      // from any thread. Inline when there are no workers or their queue is full.
      auto shared_results = std::make_shared<std::vector<ChoiceResult>>(std::move(results));
      std::function<void()> build = [self = shared_from_this(), shared_results, u] {
        HttpResponse resp;
        try {
          resp.body = self->writer_->whole_response(*shared_results, u);
        } catch (const std::exception& e) {
          self->ctx_.log->message(fmt::format("internal error building {}'s response: {}", self->writer_->id(), e.what()));
          resp = self->writer_->error_response(
              ApiError{500, "internal server error; the server logged the cause", "server_error", {}, {}});
        }
        self->exchange_->respond(std::move(resp));
      };
      if (ctx_.workers == nullptr || !ctx_.workers->try_post(build)) build();
    }
  }
  ctx_.metrics->record_http_request(status);
  RequestLogEntry e;
  e.id = response_id;
  e.path = exchange_->request().path;
  e.status = status;
  e.num_choices = int32_t(choices_.size());
  e.prompt_tokens = u.prompt_tokens;
  e.output_tokens = u.completion_tokens;
  e.cached_tokens = u.cached_tokens;
  e.ttft_ms = choices_.empty() ? 0.0 : choices_[0].ttft_ms;
  e.e2e_ms = double(ctx_.engine->now_us() - start_us_) / 1e3;
  e.finish = finish;
  ctx_.log->write(e);
  if (on_done_) std::exchange(on_done_, nullptr)();
}

}  // namespace pagoda::server

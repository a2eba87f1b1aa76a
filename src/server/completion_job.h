// CompletionJob: one /v1/completions, /v1/chat/completions or /v1/messages request inside the server: its
// choices (one engine request per prompt and per n), the events coming back from the engine, and the response
// they become: SSE events as tokens arrive, or one JSON body at the end, in the shapes of its ResponseWriter
// (OpenAI's or Anthropic's); a chat output's reasoning split from its answer (ReasoningParser) before its tool
// calls are read. All its work runs on its exchange's strand (the
// engine's listeners only post there), so no lock guards its state. Ends every choice it started: on a client
// disconnect, a deadline or shutdown it cancels them in the engine and waits for their final events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/reasoning_parser.h"
#include "chat/tool_call_parser.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/http_exchange.h"
#include "server/openai_protocol.h"
#include "server/request_log.h"
#include "server/request_workers.h"
#include "server/response_writer.h"
#include "server/server_job.h"
#include "server/serving_metrics.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

// What every job borrows from the ApiServer; all of it outlives the jobs.
struct JobContext {
  Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ServingMetrics* metrics = nullptr;
  RequestLog* log = nullptr;
  std::string model_name;
  ToolCallFormat tool_call_format = ToolCallFormat::kHermes;  // how the model writes calls (tool_choice auto)
  RequestWorkers* workers = nullptr;  // where whole response bodies are built, off the I/O threads; null: inline
  IdGenerator* ids = nullptr;         // the server's (its log lines' ids, where the writer has none)
  ReasoningSyntax reasoning_syntax = ReasoningSyntax::kNone;  // chat: how the output's reasoning is marked
};

struct JobPrompt {
  std::vector<TokenId> tokens;
  std::string echo_text;  // the prompt as text, when echo was asked for
  bool opens_reasoning = false;  // chat: the rendered prompt leaves the model inside its reasoning
};

class CompletionJob : public ServerJob, public std::enable_shared_from_this<CompletionJob> {
 public:
  CompletionJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, CompletionParams params,
                std::unique_ptr<ResponseWriter> writer, std::function<void()> on_done);
  // Submits every choice (on the strand). A refusal cancels what was already submitted and answers with the
  // engine's error (400, 429, 503); true when the job is running.
  // `constraint`: the compiled output constraint of every choice, or null.
  bool start(std::vector<JobPrompt> prompts, std::shared_ptr<const grammar::CompiledGrammar> constraint);
  // Ends the request early with `why` (a deadline, shutdown): cancels what still runs; the response's last
  // event (or the whole response) is that error. On the strand.
  void expire(ApiError why) override;
  // Something threw inside the job: cancels what still runs and ends the response with a 500 (or, mid-stream,
  // an error event), writes the log line and calls on_done. On the strand.
  void fail(const std::string& what) override;
  HttpExchange& exchange() override { return *exchange_; }
  const std::string& id() const { return writer_->id(); }

 private:
  // n requests of one prefill-only request (an echo of the prompt alone), each its own prefill; on an error none.
  Result<std::vector<RequestHandle>> submit_each(const GenerateRequest& req, int32_t n);
  struct Choice {
    int32_t index = 0;
    int32_t prompt_idx = 0;
    RequestHandle handle;
    std::string text;  // whole text so far (non-stream)
    std::vector<TokenId> token_ids;  // its tokens (non-stream)
    std::vector<TokenLogprobInfo> logprobs;
    TokenId prev_token = -1;         // for a token's bytes in the logprobs
    TextOffsetCounter text_offsets;  // completions logprobs: where each token starts in the choice's whole text
    bool prompt_scored = false;      // the prompt's logprobs (echo with logprobs, prompt_logprobs) were taken
    std::optional<PromptLogprobs> prompt_logprobs;  // vLLM's prompt_logprobs (whole responses)
    int32_t num_prompt_tokens = 0;
    int32_t num_cached_tokens = 0;
    int32_t num_output_tokens = 0;
    bool sent_first = false;
    bool done = false;
    // Tool calls (chat with tools): a parser for tool_choice auto and required; for a named function, the
    // output is the arguments of one call, streamed as they come.
    std::optional<ToolCallParser> tool_parser;
    std::string named_call_id;  // set once the named call's first piece went out (or at the start)
    // Reasoning (chat, a reasoning syntax, no forced call): the parser that splits the output first; the
    // reasoning so far (non-stream), harmony's calls (non-stream: all; stream: how many went out).
    std::optional<ReasoningParser> reasoning_parser;
    std::string reasoning;
    std::vector<ToolCall> harmony_calls;
    int32_t num_harmony_calls = 0;
    int32_t num_reasoning_tokens = 0;  // counted while the parser is (or may be) in the reasoning
    bool saw_reasoning = false;        // ... and they count once some reasoning came out
    FinishReason finish_reason = FinishReason::kLength;
    std::string stop_string;    // the stop string that ended it, if one did
    bool called_tools = false;  // streamed: it ended with tool calls
    double ttft_ms = 0.0;
  };

  void drain();  // takes every waiting engine event of every choice (fails the job if anything throws)
  void drain_events();
  void handle_output(Choice& c, RequestOutput& out);
  void client_gone();
  void cancel_running();
  void complete();  // every choice is done: the end of the response, metrics, the log line
  std::vector<TokenLogprobInfo> logprob_infos(Choice& c, const std::vector<TokenLogprobs>& lps);
  // The prompt's scores from the choice's first output: the echoed prompt's logprob entries (echo with logprobs)
  // into *infos, and vLLM's prompt_logprobs into the choice.
  void score_prompt(Choice& c, const std::vector<TokenLogprobs>& prompt_lps, std::vector<TokenLogprobInfo>* infos);
  // The engine scores the prompt: echo with logprobs, or prompt_logprobs. The most alternatives either asks for.
  int32_t prompt_alternatives() const {
    return std::max(params_.echo && params_.logprobs >= 0 ? params_.logprobs : -1, params_.prompt_logprobs);
  }
  UsageFigures usage() const;
  // The streamed chunk's tool-call pieces and content for `text`, the output the event added (its end when
  // `finished`); r->text is what may go out as content.
  void stream_tool_output(Choice& c, const std::string& text, bool finished, bool stopped, ChoiceResult* r);
  // A tool call's id (call_...), from the server's one generator: the chat parsers leave calls unnamed.
  std::string new_call_id() { return ctx_.ids->next("call_"); }
  // A whole response's choice: the calls in its text, and what remains of it as content.
  void finish_tool_output(Choice& c, ChoiceResult* r);
  bool named_tool_call() const { return params_.tools.active() && params_.tools.choice == ToolChoice::kNamed; }

  JobContext ctx_;
  std::shared_ptr<HttpExchange> exchange_;
  CompletionParams params_;
  std::unique_ptr<ResponseWriter> writer_;
  std::function<void()> on_done_;
  std::vector<Choice> choices_;
  std::vector<std::string> echo_texts_;
  std::vector<std::vector<TokenId>> prompt_tokens_;  // each prompt's, when the prompt is scored
  int32_t num_done_ = 0;
  bool client_gone_ = false;
  bool completed_ = false;
  bool failed_ = false;            // fail() ended it
  bool stream_started_ = false;    // the SSE headers were sent
  std::optional<ApiError> error_;  // why the request ended early
  int64_t start_us_ = 0;
};

}  // namespace pagoda::server

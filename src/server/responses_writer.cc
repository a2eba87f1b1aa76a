// ResponsesWriter: the Responses API's object and typed events for a CompletionJob.
#include "server/responses_writer.h"

#include <fmt/format.h>

#include <chrono>

#include "server/json_text.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string_view final_status(const std::optional<FinishReason>& reason) {
  return reason == FinishReason::kLength ? "incomplete" : "completed";
}

}  // namespace

ResponsesWriter::ResponsesWriter(IdGenerator& ids, std::string model, ojson echo)
    : ids_(&ids), id_(ids.next("resp_")), model_(std::move(model)), echo_(std::move(echo)) {
  created_at_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ResponsesWriter::event(const ojson& data) {
  ojson numbered = data;
  numbered["sequence_number"] = next_sequence_number_++;
  return fmt::format("event: {}\ndata: {}\n\n", data["type"].get<std::string>(),
                     numbered.dump(-1, ' ', false, ojson::error_handler_t::replace));
}

std::string ResponsesWriter::error_event(const ApiError& error) const {
  // The Responses stream's error event; "error" too, so that clients that look for one (the openai SDK) raise it.
  const ojson e = {{"type", "error"},
                   {"code", error.code ? ojson(*error.code) : ojson(error.type)},
                   {"message", error.message},
                   {"param", error.param ? ojson(*error.param) : ojson(nullptr)},
                   {"error", ojson::parse(error.to_json())["error"]}};
  return fmt::format("event: error\ndata: {}\n\n", e.dump(-1, ' ', false, ojson::error_handler_t::replace));
}

std::string ResponsesWriter::cut_message() const {
  return error_event(invalid_request("the stream was cut: the client reads too slowly"));
}

ojson ResponsesWriter::output_json(std::string_view status) const {
  ojson output = ojson::array();
  for (const ResponseOutputItem& item : items_) output.push_back(output_item_json(item, status));
  return output;
}

std::string ResponsesWriter::stream_open(int32_t) {
  const ojson response = response_object(id_, created_at_, model_, "in_progress", ojson::array(), std::nullopt, echo_);
  std::string out = event({{"type", "response.created"}, {"response", response}});  // numbered in this order
  out += event({{"type", "response.in_progress"}, {"response", response}});
  return out;
}

std::string ResponsesWriter::stream_piece(const ChoiceResult& piece, bool, const std::optional<UsageFigures>&) {
  std::string out;
  if (!piece.reasoning.empty()) {
    if (reasoning_idx_ < 0) {
      reasoning_idx_ = int32_t(items_.size());
      items_.push_back(ResponseOutputItem{ids_->next("rs_"), false, {}, {}, {}, {}, true});
      out += event({{"type", "response.output_item.added"},
                    {"output_index", reasoning_idx_},
                    {"item", output_item_json(items_.back(), "in_progress")}});
      out += event({{"type", "response.content_part.added"},
                    {"item_id", items_.back().id},
                    {"output_index", reasoning_idx_},
                    {"content_index", 0},
                    {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
    }
    ResponseOutputItem& reasoning = items_[size_t(reasoning_idx_)];
    reasoning.text += piece.reasoning;
    out += event({{"type", "response.reasoning_text.delta"},
                  {"item_id", reasoning.id},
                  {"output_index", reasoning_idx_},
                  {"content_index", 0},
                  {"delta", piece.reasoning}});
  }
  if (!piece.text.empty()) {
    if (message_idx_ < 0) {
      message_idx_ = int32_t(items_.size());
      items_.push_back(ResponseOutputItem{ids_->next("msg_"), false, {}, {}, {}, {}, false});
      out += event({{"type", "response.output_item.added"},
                    {"output_index", message_idx_},
                    {"item", output_item_json(items_.back(), "in_progress")}});
      out += event({{"type", "response.content_part.added"},
                    {"item_id", items_.back().id},
                    {"output_index", message_idx_},
                    {"content_index", 0},
                    {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}}}});
    }
    ResponseOutputItem& message = items_[size_t(message_idx_)];
    message.text += piece.text;
    out += event({{"type", "response.output_text.delta"},
                  {"item_id", message.id},
                  {"output_index", message_idx_},
                  {"content_index", 0},
                  {"delta", piece.text},
                  {"logprobs", ojson::array()}});
  }
  for (const ToolCallDelta& d : piece.tool_call_deltas) {
    if (size_t(d.index) >= call_idx_.size()) {  // a new call: its first piece has its id and name
      call_idx_.resize(size_t(d.index) + 1, -1);
      call_idx_[size_t(d.index)] = int32_t(items_.size());
      items_.push_back(ResponseOutputItem{ids_->next("fc_"), true, {}, d.id, d.name, {}, false});
      out += event({{"type", "response.output_item.added"},
                    {"output_index", int32_t(items_.size()) - 1},
                    {"item", output_item_json(items_.back(), "in_progress")}});
    }
    const int32_t idx = call_idx_[size_t(d.index)];
    ResponseOutputItem& call = items_[size_t(idx)];
    call.arguments += d.arguments;
    if (!d.arguments.empty())
      out += event({{"type", "response.function_call_arguments.delta"},
                    {"item_id", call.id},
                    {"output_index", idx},
                    {"delta", d.arguments}});
  }
  return out;
}

std::string ResponsesWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) {
  if (error != nullptr) return error_event(*error);
  // Cut at max_output_tokens: the response and its items are "incomplete", as OpenAI's are.
  const std::string_view status = final_status(last.finish_reason);
  std::string out;
  for (size_t i = 0; i < items_.size(); ++i) {
    const ResponseOutputItem& item = items_[i];
    if (item.is_reasoning) {
      out += event({{"type", "response.reasoning_text.done"},
                    {"item_id", item.id},
                    {"output_index", i},
                    {"content_index", 0},
                    {"text", item.text}});
      out += event({{"type", "response.content_part.done"},
                    {"item_id", item.id},
                    {"output_index", i},
                    {"content_index", 0},
                    {"part", {{"type", "reasoning_text"}, {"text", item.text}}}});
    } else if (item.is_call) {
      out += event({{"type", "response.function_call_arguments.done"},
                    {"item_id", item.id},
                    {"output_index", i},
                    {"arguments", item.arguments}});
    } else {
      out += event({{"type", "response.output_text.done"},
                    {"item_id", item.id},
                    {"output_index", i},
                    {"content_index", 0},
                    {"text", item.text},
                    {"logprobs", ojson::array()}});
      out += event({{"type", "response.content_part.done"},
                    {"item_id", item.id},
                    {"output_index", i},
                    {"content_index", 0},
                    {"part", {{"type", "output_text"}, {"text", item.text}, {"annotations", ojson::array()}}}});
    }
    out +=
        event({{"type", "response.output_item.done"}, {"output_index", i}, {"item", output_item_json(item, status)}});
  }
  const ojson response = response_object(id_, created_at_, model_, status, output_json(status), usage, echo_);
  out +=
      event({{"type", status == "completed" ? "response.completed" : "response.incomplete"}, {"response", response}});
  return out;
}

std::string ResponsesWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  const ChoiceResult none;
  const ChoiceResult& c = choices.empty() ? none : choices[0];
  items_.clear();
  if (!c.reasoning.empty())
    items_.push_back(ResponseOutputItem{ids_->next("rs_"), false, c.reasoning, {}, {}, {}, true});
  if (!c.text.empty() || c.tool_calls.empty())
    items_.push_back(ResponseOutputItem{ids_->next("msg_"), false, c.text, {}, {}, {}, false});
  for (const ToolCall& t : c.tool_calls)
    items_.push_back(ResponseOutputItem{ids_->next("fc_"), true, {}, t.id, t.name, t.arguments, false});
  const std::string_view status = final_status(c.finish_reason);
  return response_object(id_, created_at_, model_, status, output_json(status), usage, echo_)
      .dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace pagoda::server

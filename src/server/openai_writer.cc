// OpenAiWriter: OpenAI's completion and chat shapes for a CompletionJob.
#include "server/openai_writer.h"

#include <chrono>

namespace pagoda::server {

OpenAiWriter::OpenAiWriter(IdGenerator& ids, bool chat, std::string model, bool with_logprobs, bool include_usage,
                           bool legacy_functions)
    : chat_(chat), with_logprobs_(with_logprobs), include_usage_(include_usage), legacy_functions_(legacy_functions) {
  header_.id = ids.next(response_id_prefix(chat));
  header_.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  header_.model = std::move(model);
}

std::string OpenAiWriter::cut_message() const {
  return sse_event(invalid_request("the stream was cut: the client reads too slowly").to_json()) +
         std::string(kSseDone);
}

std::string OpenAiWriter::stream_open(int32_t) { return {}; }

std::string OpenAiWriter::stream_piece(const ChoiceResult& piece, bool first,
                                       const std::optional<UsageFigures>& usage) {
  return sse_event(chat_ ? chat_chunk(header_, piece, first, with_logprobs_, usage, legacy_functions_)
                         : completion_chunk(header_, piece, with_logprobs_, usage));
}

std::string OpenAiWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult&) {
  std::string out;
  if (error != nullptr)
    out = sse_event(error->to_json());
  else if (include_usage_)
    out = sse_event(usage_chunk(header_, chat_, usage));
  return out + std::string(kSseDone);
}

std::string OpenAiWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  return chat_ ? chat_response(header_, choices, usage, with_logprobs_, legacy_functions_)
               : completion_response(header_, choices, usage, with_logprobs_);
}

}  // namespace pagoda::server

// ReasoningParser (reasoning_parser.h): marker search over a held-back tail, one state per part of the output.
#include "chat/reasoning_parser.h"

#include <algorithm>
#include <array>

namespace pagoda {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kAnalysisHeader = "<|channel|>analysis<|message|>";
constexpr std::string_view kFinalHeader = "<|channel|>final<|message|>";
// What ends a harmony message's body: its end, a call, the reply's end, or (unterminated) the next message.
constexpr std::array<std::string_view, 4> kBodyEnds = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
constexpr std::string_view kSpace = " \t\r\n";
constexpr size_t kMaxHeader = 512;  // bytes of a harmony header (role, channel, recipient, constraint) at most

bool is_space(char c) { return kSpace.find(c) != std::string_view::npos; }

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// The length of the longest tail of `text` that begins one of `markers` (and may complete it with more text).
template <typename Markers>
size_t marker_prefix_tail(std::string_view text, const Markers& markers) {
  size_t keep = 0;
  for (std::string_view m : markers)
    for (size_t len = std::min(text.size(), m.size() - 1); len > keep; --len)
      if (m.starts_with(text.substr(text.size() - len))) {
        keep = len;
        break;
      }
  return keep;
}

// The word after `key` in a harmony header, up to a space or the next marker.
std::string_view header_word(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = header.substr(at + key.size());
  size_t end = 0;
  while (end < rest.size() && !is_space(rest[end]) && rest[end] != '<') ++end;
  return rest.substr(0, end);
}

}  // namespace

ReasoningSyntax reasoning_syntax_of_template(std::string_view source) {
  if (source.find(kChannel) != std::string_view::npos && source.find(kMessage) != std::string_view::npos)
    return ReasoningSyntax::kHarmony;
  if (source.find(kThinkOpen) != std::string_view::npos || source.find(kThinkClose) != std::string_view::npos)
    return ReasoningSyntax::kThinkTags;
  return ReasoningSyntax::kNone;
}

std::string_view reasoning_syntax_name(ReasoningSyntax syntax) {
  switch (syntax) {
    case ReasoningSyntax::kNone: return "none";
    case ReasoningSyntax::kThinkTags: return "think_tags";
    case ReasoningSyntax::kHarmony: return "harmony";
  }
  return "none";
}

std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name) {
  if (name == "auto") return ReasoningFormat::kAuto;
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "deepseek") return ReasoningFormat::kDeepseek;
  return std::nullopt;
}

std::string_view reasoning_format_name(ReasoningFormat format) {
  switch (format) {
    case ReasoningFormat::kAuto: return "auto";
    case ReasoningFormat::kNone: return "none";
    case ReasoningFormat::kDeepseek: return "deepseek";
  }
  return "auto";
}

ReasoningSyntax reasoning_syntax_for(ReasoningFormat format, ReasoningSyntax template_syntax) {
  switch (format) {
    case ReasoningFormat::kNone: return ReasoningSyntax::kNone;
    case ReasoningFormat::kAuto: return template_syntax;
    case ReasoningFormat::kDeepseek:
      return template_syntax == ReasoningSyntax::kNone ? ReasoningSyntax::kThinkTags : template_syntax;
  }
  return template_syntax;
}

ReasoningBounds reasoning_bounds(ReasoningSyntax syntax) {
  switch (syntax) {
    case ReasoningSyntax::kNone: return {};
    case ReasoningSyntax::kThinkTags: return {kThinkOpen, kThinkClose};
    case ReasoningSyntax::kHarmony: return {{}, kFinalHeader};
  }
  return {};
}

bool prompt_opens_reasoning(ReasoningSyntax syntax, std::string_view prompt) {
  switch (syntax) {
    case ReasoningSyntax::kNone: return false;
    case ReasoningSyntax::kThinkTags: return rtrim(prompt).ends_with(kThinkOpen);
    case ReasoningSyntax::kHarmony: return prompt.ends_with(kAnalysisHeader);
  }
  return false;
}

ReasoningParser::ReasoningParser(ReasoningSyntax syntax, bool starts_in_reasoning, bool harmony_calls,
                                 bool only_if_closed)
    : syntax_(syntax), harmony_calls_(harmony_calls), state_(State::kContent) {
  if (syntax == ReasoningSyntax::kThinkTags) {
    state_ = !starts_in_reasoning ? State::kStart : only_if_closed ? State::kUndecided : State::kReasoning;
    trim_next_ = state_ == State::kReasoning;
  } else if (syntax == ReasoningSyntax::kHarmony) {
    state_ = starts_in_reasoning ? State::kBody : State::kHeader;
    route_ = Route::kReasoning;
    seen_message_ = starts_in_reasoning;
  }
}

bool ReasoningParser::in_reasoning() const {
  if (syntax_ == ReasoningSyntax::kThinkTags) return state_ == State::kReasoning || state_ == State::kUndecided;
  return state_ == State::kBody && route_ == Route::kReasoning;
}

ReasoningPieces ReasoningParser::push(std::string_view text) {
  ReasoningPieces out;
  held_.append(text);
  if (syntax_ == ReasoningSyntax::kThinkTags)
    push_think(&out);
  else if (syntax_ == ReasoningSyntax::kHarmony)
    push_harmony(&out);
  else
    out.content.swap(held_);
  return out;
}

void ReasoningParser::push_think(ReasoningPieces* out) {
  for (;;) {
    if (trim_next_) {
      held_.erase(0, held_.size() - ltrim(held_).size());
      if (held_.empty()) return;
      trim_next_ = false;
    }
    switch (state_) {
      case State::kStart: {
        const std::string_view t = ltrim(held_);
        if (t.empty() || (kThinkOpen.starts_with(t) && t.size() < kThinkOpen.size())) return;  // may still open
        if (t.starts_with(kThinkOpen)) {
          held_.erase(0, held_.size() - t.size() + kThinkOpen.size());
          state_ = State::kReasoning;
          trim_next_ = true;
          continue;
        }
        state_ = State::kContent;  // no reasoning: the answer as written
        continue;
      }
      case State::kUndecided: {
        // Searched from where the last search could not have found a complete tag: linear in the output.
        const size_t at = held_.find(kThinkClose, undecided_scanned_);
        if (at == std::string::npos) {  // everything waits: reasoning if </think> comes, else content
          undecided_scanned_ = held_.size() >= kThinkClose.size() ? held_.size() - kThinkClose.size() + 1 : 0;
          return;
        }
        out->reasoning += rtrim(ltrim(std::string_view(held_).substr(0, at)));
        held_.erase(0, at + kThinkClose.size());
        state_ = State::kContent;
        trim_next_ = true;
        continue;
      }
      case State::kReasoning: {
        const size_t at = held_.find(kThinkClose);
        if (at != std::string::npos) {
          out->reasoning += rtrim(std::string_view(held_).substr(0, at));
          held_.erase(0, at + kThinkClose.size());
          state_ = State::kContent;
          trim_next_ = true;
          continue;
        }
        // Hold a tail that may begin </think>, and the whitespace before it (the reasoning's end is trimmed).
        size_t keep = marker_prefix_tail(held_, std::array{kThinkClose});
        while (keep < held_.size() && is_space(held_[held_.size() - keep - 1])) ++keep;
        out->reasoning.append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      default:
        out->content += held_;
        held_.clear();
        return;
    }
  }
}

void ReasoningParser::push_harmony(ReasoningPieces* out) {
  for (;;) {
    switch (state_) {
      case State::kHeader: {
        const size_t at = held_.find(kMessage);
        if (at == std::string::npos && held_.size() > kMaxHeader) {
          state_ = State::kContent;  // no header is this long: the model left the format; its text is the answer
          continue;
        }
        if (at == std::string::npos) {
          // Before any message, text that cannot begin a header is a plain answer (a model that ignores the format).
          const std::string_view t = ltrim(held_);
          if (!seen_message_ && !t.empty()) {
            const bool header_like = t.starts_with(kChannel) || t.starts_with(kStart) || t.starts_with("assistant") ||
                                     kChannel.starts_with(t) || kStart.starts_with(t) ||
                                     std::string_view("assistant").starts_with(t);
            if (!header_like) {
              state_ = State::kContent;
              continue;
            }
          }
          return;
        }
        const std::string_view header = std::string_view(held_).substr(0, at);
        const std::string_view channel = header_word(header, kChannel);
        const std::string_view recipient = header_word(header, "to=");
        call_name_.clear();
        call_arguments_.clear();
        if (recipient.starts_with("functions.")) {
          route_ = harmony_calls_ ? Route::kCall : Route::kContent;
          call_name_ = recipient.substr(std::string_view("functions.").size());
        } else if (!recipient.empty() || channel == "analysis") {
          route_ = Route::kReasoning;  // thinking, or a built-in tool's use (browser, python): not the answer
        } else {
          route_ = Route::kContent;  // final, or commentary without a recipient (a preamble to the user)
        }
        held_.erase(0, at + kMessage.size());
        state_ = State::kBody;
        seen_message_ = true;
        continue;
      }
      case State::kBody: {
        size_t at = std::string::npos;
        size_t len = 0;
        for (std::string_view end : kBodyEnds) {
          const size_t found = held_.find(end);
          if (found < at) {
            at = found;
            len = end == kStart ? 0 : end.size();  // <|start|> opens the next header: left to it
          }
        }
        if (at != std::string::npos) {
          route_body(std::string_view(held_).substr(0, at), out);
          end_message(out);
          held_.erase(0, at + len);
          state_ = State::kHeader;
          continue;
        }
        const size_t keep = marker_prefix_tail(held_, kBodyEnds);
        route_body(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
        return;
      }
      default:
        out->content += held_;
        held_.clear();
        return;
    }
  }
}

void ReasoningParser::route_body(std::string_view text, ReasoningPieces* out) {
  switch (route_) {
    case Route::kReasoning: out->reasoning += text; break;
    case Route::kContent: out->content += text; break;
    case Route::kCall: call_arguments_ += text; break;
  }
}

void ReasoningParser::end_message(ReasoningPieces* out) {
  if (route_ == Route::kCall) {
    ToolCall call;
    call.name = call_name_;
    const std::string_view args = rtrim(ltrim(call_arguments_));
    call.arguments = args.empty() ? "{}" : std::string(args);
    out->calls.push_back(std::move(call));
  }
  call_name_.clear();
  call_arguments_.clear();
  route_ = Route::kContent;
}

ReasoningPieces ReasoningParser::finish() {
  ReasoningPieces out;
  switch (state_) {
    case State::kStart: out.content.swap(held_); break;  // only a beginning of <think>, or whitespace
    case State::kUndecided: out.content.swap(held_); break;  // never closed: the grammar's answer
    case State::kReasoning: out.reasoning = rtrim(held_); break;  // never closed: cut by max_tokens
    case State::kContent:
      if (!trim_next_) out.content.swap(held_);
      break;
    case State::kHeader:
      if (!seen_message_) out.content.swap(held_);  // no harmony at all; after a message, a header cut short is markup
      break;
    case State::kBody:
      route_body(held_, &out);
      end_message(&out);
      break;
  }
  held_.clear();
  return out;
}

ReasoningPieces parse_reasoning(std::string_view text, ReasoningSyntax syntax, bool starts_in_reasoning,
                                bool harmony_calls, bool only_if_closed) {
  ReasoningParser parser(syntax, starts_in_reasoning, harmony_calls, only_if_closed);
  ReasoningPieces out = parser.push(text);
  ReasoningPieces tail = parser.finish();
  out.reasoning += tail.reasoning;
  out.content += tail.content;
  for (ToolCall& c : tail.calls) out.calls.push_back(std::move(c));
  return out;
}

}  // namespace pagoda

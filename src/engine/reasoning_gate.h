// ReasoningGate: where a reasoning model's constrained answer begins. A request's grammar (a JSON schema...)
// constrains the answer, not the reasoning before it: the output is free until it ends with the tokens that close
// the reasoning (</think>, harmony's final-channel header), then the grammar holds, as vLLM's structured outputs
// wait for its reasoning parser's end. ReasoningGate is the request's plain value; ReasoningGateState follows one
// sequence's output through it. Owns no grammar and no tokenizer: the server names the tokens, TokenConstraints
// masks and feeds the grammar.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/types.h"

namespace pagoda {

struct ReasoningGate {
  std::vector<TokenId> end;  // the tokens that close the reasoning; non-empty
  // kNoToken: the output starts inside the reasoning (the prompt opened it). Else the reasoning opens with this
  // token as the first output token, or not at all: any other first token is the answer's, under the grammar.
  TokenId start = kNoToken;

  static constexpr TokenId kNoToken = -1;
};

class ReasoningGateState {
 public:
  enum class Phase : uint8_t {
    kAnswer,      // the grammar holds (also: no gate)
    kFirstToken,  // the first output token: the grammar's, or the gate's start token
    kReasoning,   // free text until the gate's end tokens
  };

  ReasoningGateState() = default;
  explicit ReasoningGateState(ReasoningGate gate)
      : gate_(std::move(gate)), phase_(gate_.start == ReasoningGate::kNoToken ? Phase::kReasoning : Phase::kFirstToken) {}

  Phase phase() const { return phase_; }
  TokenId start_token() const { return gate_.start; }

  // Follows one output token; true when it is the answer's (the grammar takes it).
  bool take(TokenId token) {
    switch (phase_) {
      case Phase::kAnswer: return true;
      case Phase::kFirstToken:
        if (token == gate_.start) {
          phase_ = Phase::kReasoning;
          return false;
        }
        phase_ = Phase::kAnswer;
        return true;
      case Phase::kReasoning:
        recent_.push_back(token);
        if (recent_.size() > gate_.end.size()) recent_.erase(recent_.begin());
        if (recent_ == gate_.end) phase_ = Phase::kAnswer;
        return false;
    }
    return true;
  }

 private:
  ReasoningGate gate_;
  Phase phase_ = Phase::kAnswer;
  std::vector<TokenId> recent_;  // the last end.size() reasoning tokens at most
};

}  // namespace pagoda

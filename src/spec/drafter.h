// Drafter: proposes the tokens a sequence will probably continue with, for speculative decoding: the engine
// verifies them all in one forward pass and keeps the ones the target model agrees with. An interface, so the
// scheduler asks any drafter the same way (prompt lookup, a draft model). A drafter sees token ids only; it owns
// no sequence and no thread, and gives the same proposal for the same tokens and the same finished requests before
// them (a draft model: up to the float rounding of a near tie, its K/V having been computed in other chunks).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"

namespace pagoda {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Writes at most `max_drafts` proposed continuations of `tokens` (prompt then output) into `drafts` (cleared
  // first); none when it has no guess. Where the drafter can tell how likely each draft is, `chances` gets, for
  // each, the probability that it is the target's next token once the drafts before it were (cleared first; left
  // empty where it cannot tell: the scheduler then goes by the sequence's acceptance rate).
  virtual void propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
                       std::vector<float>& chances) = 0;
  // Whether each draft asked for costs real work (a draft model's forward pass): the scheduler then asks for no
  // more than it expects to verify.
  virtual bool pays_per_draft() const { return false; }
  // A sequence finished (stopped or reached its length, not aborted): `tokens` (prompt then output) whose output
  // starts at `first_output`. A drafter that learns across requests keeps what it needs; the default forgets it.
  virtual void learn(std::span<const TokenId> tokens, int64_t first_output) {
    (void)tokens;
    (void)first_output;
  }
};

}  // namespace pagoda

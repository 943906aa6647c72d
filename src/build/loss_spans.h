// Loss spans: which characters of a record's text carry loss (SFT: the
// assistant's turns), and which of its tokens therefore do. A record gives
// them as [[start, end], ...] in characters (Unicode code points, Python str
// indices), half-open, sorted and not overlapping, under loss_spans_key (these
// carry loss) or no_loss_spans_key (everything else does). They are untrusted
// input: every rule is checked and a broken one named. docs/format.md 3.1 and
// 9.3. Pure functions; thread-safe.
#ifndef TOKPACK_SRC_BUILD_LOSS_SPANS_H_
#define TOKPACK_SRC_BUILD_LOSS_SPANS_H_

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/tokenizer.h"

namespace tokpack {

// Bytes [begin, end) of a text that carry loss.
struct ByteSpan {
  uint32_t begin;
  uint32_t end;
};

// Reads `value`, the field `key` of a record whose text is `text` (valid
// UTF-8), into *loss: the byte ranges that carry loss, sorted, not
// overlapping; with `inverse` (no_loss_spans) the rest of the text. Returns
// why the value breaks a rule ("loss_spans[1]: end 40 is past the text's 12
// characters"), or "" when it is good.
std::string ReadLossSpans(simdjson::dom::element value, std::string_view key, std::string_view text,
                          bool inverse, std::vector<ByteSpan>* loss);

// The straddle rule: token i carries loss (flags[i] = 1, else 0) when any of
// its bytes lies in a span of `loss` (sorted, not overlapping). A token with
// no bytes of its own (ranges[i] empty at byte p: sentencepiece's leading
// byte-fallback pieces, a lone dummy-prefix "▁") counts as holding byte p, the
// character it stands before (at the end of the text, the byte before p).
void TokenLossFlags(const std::vector<TokenRange>& ranges, const std::vector<ByteSpan>& loss,
                    size_t text_size, char* flags);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_LOSS_SPANS_H_

// Token byte ranges of a sentencepiece encoding, from the library's own
// alignment of the normalized text to the input (SentencePieceText's
// begin/end), so that normalization (NFKC, the escaped and dummy-prefix
// spaces, removed whitespace) maps back exactly. Thread-safe: a pure
// function of a const processor.
#ifndef TOKPACK_SRC_TOKENIZER_SPM_OFFSETS_H_
#define TOKPACK_SRC_TOKENIZER_SPM_OFFSETS_H_

#include <string_view>
#include <vector>

#include "tokpack/status.h"
#include "tokpack/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace tokpack {

// Sets *ids to sp.Encode(text)'s ids and *ranges to each one's bytes in
// `text`. A byte-fallback character's pieces before its last, and a piece
// made only of normalizer output (a dummy-prefix "▁" alone), get an empty
// range at the character's start, as sentencepiece reports them.
Status SpmEncodeWithOffsets(const sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                            std::vector<int>* ids, std::vector<TokenRange>* ranges);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_SPM_OFFSETS_H_

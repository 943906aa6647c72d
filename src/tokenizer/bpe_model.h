// What the two BPE kinds (tokenizer.json, tiktoken) share: a BpeTokenizer
// as a TokenizerModel, and the lookup of a special token's id. Thread-safe
// as BpeTokenizer is.
#ifndef TOKPACK_SRC_TOKENIZER_BPE_MODEL_H_
#define TOKPACK_SRC_TOKENIZER_BPE_MODEL_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/tokenizer_kinds.h"
#include "tokpack/status.h"

namespace tokpack {

std::unique_ptr<TokenizerModel> MakeBpeModel(std::unique_ptr<BpeTokenizer> bpe);

// The id of the token named by `chosen` (an option or the config), else the
// first of `well_known` that `bpe` has, else -1. `what` names the role
// ("EOS") in the error for a `chosen` that is no token of the file at `path`.
StatusOr<int64_t> SpecialTokenId(const BpeTokenizer& bpe, const std::string& path,
                                 const std::string& chosen, const char* what,
                                 std::initializer_list<const char*> well_known);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_BPE_MODEL_H_

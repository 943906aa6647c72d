// A dataset's token identity: what decides the text each of its token ids
// stands for. Datasets read as one (the parts of a merge, the sources of a
// loader's mixture) must share it, or the same id means one thing in one
// dataset and another in the next, and nothing downstream can tell.
//
// The identity is the tokenizer recorded in the manifest (the model file's
// xxh3, vocab_size, tiktoken's split pattern and special tokens, the EOS,
// BOS and pad ids) and the build's add_bos/add_eos settings. For a mixture
// (Unknown::kMatches), a field unknown on either side is not compared:
//   - model_xxh3 0 (no tokenizer recorded: a bare Megatron prefix, an import
//     without a tokenizer): the hash, pattern, special tokens and ids, whose
//     defaults then mean "unknown", not "none";
//   - vocab_size -1: the vocab size;
//   - provenance kind "import" (an import or a bare prefix): add_bos/add_eos.
// A merge (Unknown::kDiffers) writes one tokenizer for all its parts, so there
// a tokenizer recorded in one part and not in another is a difference too;
// add_bos/add_eos of imports are still not compared (they record none).
#ifndef TOKPACK_SRC_FORMAT_TOKEN_IDENTITY_H_
#define TOKPACK_SRC_FORMAT_TOKEN_IDENTITY_H_

#include <string_view>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

struct NamedManifest {
  std::string_view name;  // For errors: the dataset's path.
  const Manifest* manifest;
};

// Whether a tokenizer field unknown on one side matches the other's value.
enum class Unknown { kMatches, kDiffers };

// OK when every two of `datasets` have the same token identity in the
// fields both know (with Unknown::kDiffers: in every tokenizer field). Else InvalidArgument naming
// the first two found to differ and every field in which they do, with both values:
//   'a' and 'b' have different tokenizers (tokenizer file xxh3
//   0x1f.. vs 0x9c.., eos_id 100257 vs 1)
// or "different BOS/EOS settings (add_eos true vs false)", or both. Each
// dataset is compared with the first that knows each field, so an unknown
// first one does not let two known, different ones through.
Status CheckTokenIdentity(const std::vector<NamedManifest>& datasets,
                          Unknown unknown = Unknown::kMatches);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_TOKEN_IDENTITY_H_

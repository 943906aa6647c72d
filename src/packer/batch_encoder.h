// BatchEncoder: turns a RawBatch into an EncodedBatch: parses JSONL records,
// applies the UTF-8 policy, tokenizes, adds BOS/EOS and narrows ids to the
// shard dtype. One encoder per thread (it owns a JSON parser and scratch
// space); the Tokenizer it points to is shared.
#ifndef TOKPACK_SRC_PACKER_BATCH_ENCODER_H_
#define TOKPACK_SRC_PACKER_BATCH_ENCODER_H_

#include <memory>
#include <string>

#include "packer/batch.h"
#include "tokpack/manifest.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

class BatchEncoder {
 public:
  // `tokenizer` must outlive the encoder.
  BatchEncoder(const Tokenizer* tokenizer, const BuildSettings& settings, TokenDtype dtype);
  ~BatchEncoder();

  // Encodes every record of `in`. Per-record problems become entries of
  // out->dropped; a non-OK status is a fatal (internal) failure.
  Status Encode(const RawBatch& in, EncodedBatch* out);

 private:
  struct Json;
  // Sets *text to the document text of a JSON line, or returns the reason
  // the line is bad.
  std::string ExtractText(std::string_view line, std::string_view* text);

  const Tokenizer* tokenizer_;
  BuildSettings settings_;
  TokenDtype dtype_;
  std::unique_ptr<Json> json_;
  std::vector<int> ids_;
  std::string repaired_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_PACKER_BATCH_ENCODER_H_

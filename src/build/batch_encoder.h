// BatchEncoder: turns a RawBatch into an EncodedBatch: parses JSONL records,
// applies the UTF-8 policy, tokenizes, adds BOS/EOS and narrows ids to the
// shard dtype; with loss masks, it also marks the tokens that carry loss
// (loss_spans.h; BOS and EOS as docs/format.md 3.1 says); with document
// sources, it notes each document's record and id (docs/format.md 3.2). One encoder per thread (it
// owns a JSON parser and scratch space); the Tokenizer it points to is shared. JSON is parsed in
// place, with no copy of the record; scratch that a huge record grew is freed after it.
#ifndef TOKPACK_SRC_BUILD_BATCH_ENCODER_H_
#define TOKPACK_SRC_BUILD_BATCH_ENCODER_H_

#include <memory>
#include <string>
#include <vector>

#include "build/batch.h"
#include "build/loss_spans.h"
#include "tokpack/manifest.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

class BatchEncoder {
 public:
  // `tokenizer` must outlive the encoder.
  BatchEncoder(const Tokenizer* tokenizer, const BuildSettings& settings, TokenDtype dtype);
  ~BatchEncoder();

  // Encodes every record of `in`, which must be sealed. Per-record problems
  // become entries of out->dropped (a tokenizer failure, kFailed, ends the
  // batch there); a non-OK status is a fatal (internal) failure.
  Status Encode(const RawBatch& in, EncodedBatch* out);

 private:
  struct Json;
  // Encodes record `i` into *out; false if the tokenizer failed on it.
  bool EncodeRecord(const RawBatch& in, size_t i, EncodedBatch* out);
  // Appends ids to *tokens_out_ in the shard dtype; counts them in doc_tokens_.
  void AppendTokens(const int* ids, size_t n);
  void ReleaseScratch();
  // Sets *text to the document text of a JSON line and, where the line has
  // loss spans, loss_ to them (has_spans_); or returns the reason the line
  // is bad, setting *fatal where no bad-line policy may skip it (spans in a
  // build without loss masks).
  std::string ExtractText(std::string_view line, std::string_view* text, bool* fatal);
  // Encodes `text` with token offsets and appends its tokens (BOS and text;
  // the caller adds EOS) and their loss flags by loss_ (EOS's too).
  [[nodiscard]] Status EncodeWithSpans(std::string_view text, EncodedBatch* out,
                                       EncodeCounts* counts);

  const Tokenizer* tokenizer_;
  BuildSettings settings_;
  TokenDtype dtype_;
  std::unique_ptr<Json> json_;
  std::vector<int> ids_;  // The tokenizer's run buffer.
  std::string repaired_;
  // Document sources: the JSON record's id (has_id_), as text.
  bool has_id_ = false;
  std::string id_;
  // Loss masks: the record's spans, its tokens' ranges and flags.
  bool has_spans_ = false;
  std::vector<ByteSpan> loss_;
  std::vector<TokenRange> ranges_;
  std::string flags_;
  std::string* tokens_out_ = nullptr;  // Of the record being encoded.
  uint64_t doc_tokens_ = 0;
  Tokenizer::IdSink sink_;  // AppendTokens.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_BATCH_ENCODER_H_

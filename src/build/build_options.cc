// BuildOptions' table: the one declaration of each packer option (name, type,
// default, validation, doc line). The CLI flags of `tokpack build`, the
// keyword arguments of tokpack.build and the stubs are made from it.
#include <climits>

#include "base/option_table.h"
#include "base/quote.h"
#include "inputs/input_formats.h"
#include "tokpack/builder.h"

namespace tokpack {

using O = BuildOptions;

namespace {

// "auto (by file name), jsonl, text or parquet (...)": the registry's formats.
std::string InputFormatDoc() {
  std::vector<std::string> formats = InputFormatChoices();
  formats.front() += " (by file name)";
  return JoinList(formats) + " (applies to every input file)";
}

}  // namespace

template <>
const OptionTable<O>& OptionTableOf<O>() {
  static const OptionTable<O>* table = new OptionTable<O>({
      StringOption<O>(
          "text_key",
          "JSONL field or Parquet/Arrow column holding the text; nested: /meta/text or meta.text",
          [](auto& o) -> auto& { return o.settings.text_key; }),
      StringOption<O>(
          "input_format", InputFormatDoc(),
          [](auto& o) -> auto& { return o.settings.input_format; }, InputFormatChoices()),
      BoolOption<O>(
          "text_per_line", "Plain text: one document per line instead of one per file",
          [](auto& o) -> auto& { return o.settings.text_per_line; }),
      BoolOption<O>(
          "bos", "Prepend the tokenizer's BOS id to every document",
          [](auto& o) -> auto& { return o.settings.add_bos; }),
      BoolOption<O>(
          "eos", "Append the tokenizer's EOS id to every document",
          [](auto& o) -> auto& { return o.settings.add_eos; }, "--no-eos"),
      StringOption<O>("invalid_utf8",
                      "replace (with U+FFFD, as Python's errors='replace'), skip the document, "
                      "or error",
                      [](auto& o) -> auto& { return o.settings.invalid_utf8; },
                      {"replace", "skip", "error"}),
      BoolOption<O>(
          "skip_bad_lines",
          "Skip and count bad records (malformed JSON, missing, null or non-string "
          "text) instead of failing",
          [](auto& o) -> auto& { return o.settings.skip_bad_lines; }),
      BoolOption<O>(
          "loss_masks",
          "Write a loss mask beside every shard (SFT): a record's tokens carry loss inside "
          "its loss_spans (or outside its no_loss_spans), every token of a record without "
          "them does; without this, a record with spans is an error",
          [](auto& o) -> auto& { return o.settings.loss_masks; }),
      StringOption<O>(
          "loss_spans_key",
          "JSONL field (or /pointer) of a record's [start, end) character ranges whose tokens "
          "carry loss",
          [](auto& o) -> auto& { return o.settings.loss_spans_key; }),
      StringOption<O>(
          "no_loss_spans_key",
          "JSONL field (or /pointer) of a record's [start, end) character ranges whose tokens "
          "carry no loss (all others do)",
          [](auto& o) -> auto& { return o.settings.no_loss_spans_key; }),
      BoolOption<O>(
          "doc_sources",
          "Record where each document came from (input, line or row, id) beside every shard, "
          "for `tokpack show --source`, `tokpack find` and Dataset.source()",
          [](auto& o) -> auto& { return o.settings.doc_sources; }, "--no-doc-sources"),
      StringOption<O>(
          "id_key",
          "JSONL field (or /pointer), Python dict key or Parquet column of a record's id (a "
          "string or an integer), recorded with document sources; records without it have none",
          [](auto& o) -> auto& { return o.settings.id_key; }),
      BoolOption<O>(
          "skip_unknown_files",
          "Leave out (and list) files whose format the name does not tell, instead of "
          "failing",
          [](auto& o) -> auto& { return o.skip_unknown_files; }),
      UIntOption<O>(
          "shard_tokens", "Token budget per shard",
          [](auto& o) -> auto& { return o.settings.shard_tokens; }, 1),
      UIntOption<O>(
          "chunk_bytes", "Checksum chunk size in bytes",
          [](auto& o) -> auto& { return o.chunk_bytes; }, 1),
      UIntOption<O>(
          "max_document_bytes",
          "Refuse, as a bad record, any JSONL line, text line or file, Parquet value or text "
          "longer than this many bytes (at most 1 GiB); it bounds the build's memory",
          [](auto& o) -> auto& { return o.max_document_bytes; }, 1),
      IntOption<O>(
          "threads", "Tokenizer threads (0: one per hardware thread)",
          [](auto& o) -> auto& { return o.threads; }, 0, 1024),
      BoolOption<O>(
          "force", "Replace an existing dataset at the output",
          [](auto& o) -> auto& { return o.force; }),
  });
  return *table;
}

template class OptionSet<O>;

Status BuildOptions::Validate() const {
  TOKPACK_RETURN_IF_ERROR(CheckFields());  // Fields assigned directly, too.
  // What readers accept (the table checks only the lower bound).
  TOKPACK_RETURN_IF_ERROR(CheckChunkBytes(chunk_bytes).WithContext("--chunk-bytes"));
  if (output.empty()) return InvalidArgumentError("no output directory given (--output)");
  if (tokenizer_model.empty()) return InvalidArgumentError("no tokenizer given (--tokenizer)");
  if (part_count < 1 || part_index < 0 || part_index >= part_count) {
    return InvalidArgumentError("--part must be i/N with 0 <= i < N");
  }
  if (texts && !inputs.empty()) {
    return InvalidArgumentError("give either input files or texts, not both");
  }
  if (texts && part_count > 1) {
    return InvalidArgumentError("--part splits input files; it cannot split texts");
  }
  if (settings.text_key.empty()) return InvalidArgumentError("--text-key must not be empty");
  if (settings.loss_spans_key.empty() || settings.no_loss_spans_key.empty()) {
    return InvalidArgumentError("--loss-spans-key and --no-loss-spans-key must not be empty");
  }
  if (settings.loss_spans_key == settings.no_loss_spans_key ||
      settings.loss_spans_key == settings.text_key ||
      settings.no_loss_spans_key == settings.text_key) {
    return InvalidArgumentError(
        "--text-key, --loss-spans-key and --no-loss-spans-key must name three different fields");
  }
  if (settings.id_key.empty()) return InvalidArgumentError("--id-key must not be empty");
  if (max_document_bytes > kMaxMaxDocumentBytes) {
    return InvalidArgumentError("max_document_bytes must be at most " +
                                std::to_string(kMaxMaxDocumentBytes) + " (1 GiB), not " +
                                std::to_string(max_document_bytes));
  }
  return Status::Ok();
}

}  // namespace tokpack

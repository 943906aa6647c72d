// Parquet inputs for the packer, through the plugin of
// inputs/parquet/parquet_plugin.h, loaded on first use. Thread-safe to call;
// each reader is used by one thread at a time.
#ifndef TOKPACK_SRC_INPUTS_PARQUET_INPUT_H_
#define TOKPACK_SRC_INPUTS_PARQUET_INPUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "inputs/parquet/parquet_plugin.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// The text column of one Parquet file.
class ParquetTextReader {
 public:
  explicit ParquetTextReader(std::unique_ptr<parquet_plugin::TextReader> impl, std::string name)
      : impl_(std::move(impl)), name_(std::move(name)) {}

  int num_row_groups() const { return impl_->NumRowGroups(); }
  uint64_t row_group_bytes(int g) const { return impl_->RowGroupBytes(g); }
  uint64_t row_group_rows(int g) const { return impl_->RowGroupRows(g); }
  // Reads only row groups [begin, end) from now on.
  Status Select(int begin, int end);
  // The next row: true with *text (valid until the next call) and *bad empty,
  // or true with *bad saying why the row has no text; false at the end.
  StatusOr<bool> Next(std::string_view* text, uint64_t* row, std::string* bad);

 private:
  std::unique_ptr<parquet_plugin::TextReader> impl_;
  std::string name_;
};

// Opens `path` (a local file, or an s3://, gs:// or http(s):// object read by
// ranged GETs) and selects column `text_key`. FailedPrecondition, saying how
// to install it, when the plugin or the pyarrow it was built against is
// missing; errors name the file. Objects are read with `storage`. A page
// that would decompress into more than 2 x `max_document_bytes` + 1 MiB is
// not decompressed: its rows are bad rows naming its size and the cap
// (parquet_plugin.h), so a value far too large to be a document is refused
// before it is made whole. With `integers`, an integer column's values read
// as decimal text (ids); else its rows are bad rows.
StatusOr<std::unique_ptr<ParquetTextReader>> OpenParquetInput(const std::string& path,
                                                              const std::string& text_key,
                                                              const StorageOptions& storage,
                                                              uint64_t max_document_bytes,
                                                              bool integers = false);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_PARQUET_INPUT_H_

// The boundary between the core and libtokpack_parquet.so, the plugin that
// reads Parquet with Apache Arrow's C++ libraries from the pyarrow wheel.
// The core loads it with dlopen only when a Parquet input is read, so
// neither `import tokpack` nor the CLI needs pyarrow otherwise.
//
// Only the C++ standard library crosses this boundary (no tokpack::Status,
// no Arrow types), so the plugin links nothing of the core. Bump
// kParquetPluginAbi whenever a declaration here changes.
#ifndef TOKPACK_SRC_INPUTS_PARQUET_PARQUET_PLUGIN_H_
#define TOKPACK_SRC_INPUTS_PARQUET_PARQUET_PLUGIN_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace tokpack::parquet_plugin {

inline constexpr int kParquetPluginAbi = 3;

// The bytes of one Parquet file or object, read at offsets (the core's side:
// a local file or ranged GETs). Used by one thread at a time.
class Input {
 public:
  virtual ~Input() = default;
  virtual const std::string& Name() const = 0;
  virtual uint64_t Size() const = 0;
  // Copies [offset, offset + n) into dst; on failure returns false and sets
  // *error (naming the input).
  virtual bool ReadAt(uint64_t offset, uint64_t n, char* dst, std::string* error) = 0;
};

// The values of one text column, row by row. Used by one thread at a time.
class TextReader {
 public:
  virtual ~TextReader() = default;
  virtual int NumRowGroups() const = 0;
  // Compressed bytes of the text column's chunk plus the rest of row group
  // `g` (total_compressed_size), for balancing --part.
  virtual uint64_t RowGroupBytes(int g) const = 0;
  virtual uint64_t RowGroupRows(int g) const = 0;
  // Reads row groups [begin, end) from the next Next() on; rows keep their
  // 1-based number within the file.
  virtual bool Select(int begin, int end, std::string* error) = 0;
  // 1: a row was read. *row is its 1-based number in the file; either
  // (*data, *size) is its text (valid until the next call) and *bad is empty,
  // or *bad says why the row holds no text (null, not a string).
  // 0: the selected row groups are exhausted. -1: failure, *error says why.
  virtual int Next(const char** data, size_t* size, uint64_t* row, std::string* bad,
                   std::string* error) = 0;
};

}  // namespace tokpack::parquet_plugin

extern "C" {
// kParquetPluginAbi of the plugin, checked before anything else is called.
int tokpack_parquet_abi();
// Opens `input` (owned by the reader from then on, also on failure) and
// selects the column `text_key`: a top-level column ("text") or a field of
// a struct column by dotted path ("meta.text") or JSON pointer
// ("/meta/text"). All row groups are selected. Null on failure, with
// *error naming the file (and, for a missing column, the columns there are).
// No page is decompressed into more than 2 x `max_document_bytes` + 1 MiB
// (a writer puts up to 1024 values in a page before it looks at its size,
// so a page of long documents can well pass one of them): a larger one is
// refused before its buffer exists, and each of its rows is a bad row that
// names its size and the cap (a refused dictionary page: each row left in
// its row group). With `integers`, a column of integers (INT32 or INT64,
// signed or unsigned, no other logical type) reads as each value's decimal
// text, as ids do; else its rows are bad rows ("not a string").
tokpack::parquet_plugin::TextReader* tokpack_parquet_open(tokpack::parquet_plugin::Input* input,
                                                          const char* text_key,
                                                          uint64_t max_document_bytes,
                                                          bool integers, std::string* error);
}

#endif  // TOKPACK_SRC_INPUTS_PARQUET_PARQUET_PLUGIN_H_

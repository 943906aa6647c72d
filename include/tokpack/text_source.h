// TextSource: texts a build reads from the caller instead of from files (the
// Python binding's iterables of str and Arrow streams, or a C++ caller's own
// source), in batches; and the limits on one document's bytes that every
// input honours. A TextSource is used by one build, from one thread at a time.
#ifndef TOKPACK_TEXT_SOURCE_H_
#define TOKPACK_TEXT_SOURCE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

// The default and the largest limit on one document's bytes (a JSONL line, a
// text line or file, a Parquet value, a caller's text): 256 MiB and 1 GiB
// (a document's token count must fit the index's int32).
inline constexpr uint64_t kDefaultMaxDocumentBytes = 256ull << 20;
inline constexpr uint64_t kMaxMaxDocumentBytes = 1ull << 30;

// A batch of texts handed to the packer by a TextSource: each entry is a
// text, a JSON record read as a JSONL line is (its text_key field, and its
// loss spans: the binding's dicts), or a bad record whose reason stands in
// its place.
struct TextBatch {
  std::string data;  // Entries back to back.
  struct Entry {
    uint32_t end;       // Offset one past the entry in `data`.
    bool bad;           // The entry is the reason the record holds no text.
    bool json = false;  // The entry is a JSON object, not the text itself.
  };
  std::vector<Entry> entries;

  void Clear() {
    data.clear();
    entries.clear();
  }
  void Add(std::string_view text, bool bad = false) {
    data.append(text);
    entries.push_back({static_cast<uint32_t>(data.size()), bad});
  }
  void AddJson(std::string_view record) {
    data.append(record);
    entries.push_back({static_cast<uint32_t>(data.size()), false, true});
  }
};

// Texts that come from the caller instead of files: the Python binding's
// iterables of str and Arrow C streams. Next() is called from one packer
// thread at a time; the source is used by one build.
class TextSource {
 public:
  virtual ~TextSource() = default;
  // Clears `batch` and fills it with the next texts, about `max_bytes` of
  // them (at least one entry unless the source is exhausted). Returns false
  // once the source is exhausted. An error stops the build.
  virtual StatusOr<bool> Next(size_t max_bytes, TextBatch* batch) = 0;
  // How errors and the provenance name the source, e.g. "<python iterable>".
  virtual std::string name() const = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_TEXT_SOURCE_H_

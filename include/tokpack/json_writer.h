// JsonWriter: builds compact-but-readable JSON text (two-space indent) for
// manifests and machine-readable CLI output, or one-line JSON for JSONL
// files. Public so the tools write JSON as the library does. Not thread-safe:
// one writer per thread.
#ifndef TOKPACK_JSON_WRITER_H_
#define TOKPACK_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokpack {

// The shortest decimal text that reads back as `v`, as Python's repr writes
// it: "0.9" (not "0.90000000000000002"), "90", "1e-05"; 0 and -0 as "0";
// "nan", "inf", "-inf" (for messages; not JSON).
std::string ShortestDouble(double v);

class JsonWriter {
 public:
  // kIndented: one member per line, two-space indent (manifests, CLI output).
  // kOneLine: the same text without line breaks and indentation (JSONL).
  enum class Layout { kIndented, kOneLine };
  explicit JsonWriter(Layout layout = Layout::kIndented) : layout_(layout) {}

  // Containers. Keyed variants are for members of an object.
  void BeginObject();
  void BeginObject(std::string_view key);
  void EndObject();
  void BeginArray();
  void BeginArray(std::string_view key);
  void EndArray();

  // Scalars, as array elements or (with a key) object members.
  void String(std::string_view v);
  void String(std::string_view key, std::string_view v);
  void Int(std::string_view key, int64_t v);
  void UInt(std::string_view key, uint64_t v);
  void UInt(uint64_t v);
  void Double(std::string_view key, double v);
  void Bool(std::string_view key, bool v);

  // Arrays whose elements go on one line (keeps long checksum lists compact).
  void InlineStringArray(std::string_view key, const std::vector<std::string>& v);
  // Nine significant digits: nanoseconds in timestamps of up to a second.
  void InlineDoubleArray(std::string_view key, const std::vector<double>& v);

  // The text written so far, with a trailing newline once the root closed.
  const std::string& str() const { return out_; }

 private:
  void Separator();
  void Key(std::string_view key);
  void Newline();
  void Escaped(std::string_view raw);

  Layout layout_;
  std::string out_;
  std::vector<bool> first_;  // Per open container: no element written yet.
};

}  // namespace tokpack

#endif  // TOKPACK_JSON_WRITER_H_

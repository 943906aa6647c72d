// MakeArrowStreamTextSource over Arrow C streams built here by hand, as a
// producer (pyarrow, polars, duckdb) lays them out: no Arrow library needed.
#include "frontend/arrow_stream_source.h"

#include <arrow/c/abi.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tokpack {
namespace {

using Values = std::vector<std::optional<std::string>>;

int g_live = 0;     // Schemas, arrays and streams made and not yet released.
int g_out = 0;      // Arrays handed to the consumer and not yet released.
int g_max_out = 0;  // The most arrays the consumer held at once.

// --- Schemas ---------------------------------------------------------------

struct SchemaData {
  std::string format, name;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> pointers;
};

void ReleaseSchema(ArrowSchema* s) {
  auto* d = static_cast<SchemaData*>(s->private_data);
  for (ArrowSchema& c : d->children) {
    if (c.release != nullptr) c.release(&c);
  }
  delete d;
  s->release = nullptr;
  --g_live;
}

ArrowSchema Schema(std::string format, std::string name = "",
                   std::vector<ArrowSchema> children = {}) {
  auto* d = new SchemaData{std::move(format), std::move(name), std::move(children), {}};
  for (ArrowSchema& c : d->children) d->pointers.push_back(&c);
  ArrowSchema s{};
  s.format = d->format.c_str();
  s.name = d->name.c_str();
  s.flags = ARROW_FLAG_NULLABLE;
  s.n_children = static_cast<int64_t>(d->pointers.size());
  s.children = d->pointers.empty() ? nullptr : d->pointers.data();
  s.release = &ReleaseSchema;
  s.private_data = d;
  ++g_live;
  return s;
}

ArrowSchema Batch(std::vector<ArrowSchema> columns) { return Schema("+s", "", std::move(columns)); }

// --- Arrays ----------------------------------------------------------------

struct ArrayData {
  std::vector<std::optional<std::string>> buffers;
  std::vector<const void*> pointers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_pointers;
  bool out = false;  // Handed to the consumer.
};

void ReleaseArray(ArrowArray* a) {
  auto* d = static_cast<ArrayData*>(a->private_data);
  for (ArrowArray& c : d->children) {
    if (c.release != nullptr) c.release(&c);
  }
  if (d->out) --g_out;
  delete d;
  a->release = nullptr;
  --g_live;
}

// An array over `buffers` (nullopt: a null pointer) and `children`.
ArrowArray Array(int64_t length, int64_t offset, int64_t null_count,
                 std::vector<std::optional<std::string>> buffers,
                 std::vector<ArrowArray> children = {}) {
  auto* d = new ArrayData{std::move(buffers), {}, std::move(children), {}, false};
  for (auto& b : d->buffers) d->pointers.push_back(b ? b->data() : nullptr);
  for (ArrowArray& c : d->children) d->child_pointers.push_back(&c);
  ArrowArray a{};
  a.length = length;
  a.offset = offset;
  a.null_count = null_count;
  a.n_buffers = static_cast<int64_t>(d->pointers.size());
  a.n_children = static_cast<int64_t>(d->child_pointers.size());
  a.buffers = d->pointers.data();
  a.children = d->child_pointers.empty() ? nullptr : d->child_pointers.data();
  a.release = &ReleaseArray;
  a.private_data = d;
  ++g_live;
  return a;
}

template <typename T>
std::string Raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A validity bitmap of `valid`, or nullopt when all are valid.
std::optional<std::string> Bitmap(const std::vector<bool>& valid) {
  bool all = true;
  std::string bits((valid.size() + 7) / 8, '\0');
  for (size_t i = 0; i < valid.size(); ++i) {
    if (valid[i]) bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
    all = all && valid[i];
  }
  if (all) return std::nullopt;
  return bits;
}

std::vector<bool> Validity(const Values& v) {
  std::vector<bool> valid;
  for (const auto& s : v) valid.push_back(s.has_value());
  return valid;
}

// A utf8 (int32 offsets) or large_utf8 (int64) array of `v`; its first
// `offset` values lie before the array's start.
ArrowArray Strings(const Values& v, bool large = false, int64_t offset = 0) {
  std::string data;
  std::vector<int32_t> offsets32 = {0};
  std::vector<int64_t> offsets64 = {0};
  for (const auto& s : v) {
    if (s) data += *s;
    offsets32.push_back(static_cast<int32_t>(data.size()));
    offsets64.push_back(static_cast<int64_t>(data.size()));
  }
  auto bitmap = Bitmap(Validity(v));
  return Array(static_cast<int64_t>(v.size()) - offset, offset, bitmap ? -1 : 0,
               {bitmap, large ? Raw(offsets64) : Raw(offsets32), data});
}

// A string_view array of `v`: texts over 12 bytes go to two data buffers in turn.
ArrowArray Views(const Values& v, int64_t offset = 0) {
  std::string views, buffers[2];
  int turn = 0;
  for (const auto& s : v) {
    char view[16] = {};
    const std::string text = s.value_or("");
    const int32_t length = static_cast<int32_t>(text.size());
    std::memcpy(view, &length, 4);
    if (length <= 12) {
      std::memcpy(view + 4, text.data(), text.size());
    } else {
      const int32_t index = turn;
      const int32_t at = static_cast<int32_t>(buffers[turn].size());
      std::memcpy(view + 4, text.data(), 4);
      std::memcpy(view + 8, &index, 4);
      std::memcpy(view + 12, &at, 4);
      buffers[turn] += text;
      turn = 1 - turn;
    }
    views.append(view, 16);
  }
  const std::vector<int64_t> sizes = {static_cast<int64_t>(buffers[0].size()),
                                      static_cast<int64_t>(buffers[1].size())};
  auto bitmap = Bitmap(Validity(v));
  return Array(static_cast<int64_t>(v.size()) - offset, offset, bitmap ? -1 : 0,
               {bitmap, views, buffers[0], buffers[1], Raw(sizes)});
}

ArrowArray Int64s(const std::vector<int64_t>& v, std::vector<bool> valid = {}) {
  valid.resize(v.size(), true);
  auto bitmap = Bitmap(valid);
  return Array(static_cast<int64_t>(v.size()), 0, bitmap ? -1 : 0, {bitmap, Raw(v)});
}

// A struct array (a record batch at the top) of `length` rows.
ArrowArray Struct(int64_t length, std::vector<ArrowArray> children, std::vector<bool> valid = {},
                  int64_t offset = 0) {
  valid.resize(static_cast<size_t>(length + offset), true);
  auto bitmap = Bitmap(valid);
  return Array(length, offset, bitmap ? -1 : 0, {bitmap}, std::move(children));
}

// --- Streams ---------------------------------------------------------------

struct StreamData {
  std::function<ArrowSchema()> schema;
  std::deque<ArrowArray> arrays;
  int fail_at = -1;  // get_next call that fails (0-based), or -1.
  int calls = 0;
  std::string error;
};

StreamData* Data(ArrowArrayStream* s) { return static_cast<StreamData*>(s->private_data); }

int GetSchema(ArrowArrayStream* s, ArrowSchema* out) {
  *out = Data(s)->schema();
  return 0;
}

int GetNext(ArrowArrayStream* s, ArrowArray* out) {
  StreamData* d = Data(s);
  if (d->calls++ == d->fail_at) {
    d->error = "the producer broke";
    return EIO;
  }
  if (d->arrays.empty()) {
    *out = ArrowArray{};
    return 0;
  }
  *out = d->arrays.front();
  d->arrays.pop_front();
  static_cast<ArrayData*>(out->private_data)->out = true;
  g_max_out = std::max(g_max_out, ++g_out);
  return 0;
}

const char* GetLastError(ArrowArrayStream* s) { return Data(s)->error.c_str(); }

void ReleaseStream(ArrowArrayStream* s) {
  for (ArrowArray& a : Data(s)->arrays) a.release(&a);
  delete Data(s);
  s->release = nullptr;
  --g_live;
}

ArrowArrayStream Stream(std::function<ArrowSchema()> schema, std::vector<ArrowArray> arrays,
                        int fail_at = -1) {
  auto* d = new StreamData{std::move(schema), {arrays.begin(), arrays.end()}, fail_at, 0, ""};
  ArrowArrayStream s{};
  s.get_schema = &GetSchema;
  s.get_next = &GetNext;
  s.get_last_error = &GetLastError;
  s.release = &ReleaseStream;
  s.private_data = d;
  ++g_live;
  return s;
}

// The same, with the arrays from `make()`.
template <typename MakeArrays>
ArrowArrayStream Stream(std::function<ArrowSchema()> schema, MakeArrays make) {
  return Stream(std::move(schema), std::vector<ArrowArray>(make()));
}

// A stream of record batches with one utf8 column "text".
ArrowArrayStream TextStream(const std::vector<Values>& batches) {
  std::vector<ArrowArray> arrays;
  for (const Values& v : batches) {
    arrays.push_back(Struct(static_cast<int64_t>(v.size()), [&] {
      std::vector<ArrowArray> c;
      c.push_back(Strings(v));
      return c;
    }()));
  }
  return Stream([] { return Batch({Schema("u", "text")}); }, std::move(arrays));
}

// --- Reading ---------------------------------------------------------------

struct Entry {
  std::string text;
  bool bad;
  bool operator==(const Entry& o) const { return text == o.text && bad == o.bad; }
};

std::ostream& operator<<(std::ostream& os, const Entry& e) {
  return os << (e.bad ? "bad:" : "") << '"' << e.text << '"';
}

Entry Text(std::string t) { return {std::move(t), false}; }
Entry Bad(std::string why) { return {std::move(why), true}; }

// Every entry of the stream, read `max_bytes` at a time.
StatusOr<std::vector<Entry>> ReadAll(ArrowArrayStream stream, const std::string& key = "text",
                                     size_t max_bytes = 1 << 20) {
  auto source = MakeArrowStreamTextSource(&stream, key, "<arrow stream>");
  EXPECT_EQ(stream.release, nullptr) << "the stream must be moved out, also on failure";
  if (!source.ok()) return source.status();
  EXPECT_EQ((*source)->name(), "<arrow stream>");
  std::vector<Entry> entries;
  TextBatch batch;
  while (true) {
    StatusOr<bool> more = (*source)->Next(max_bytes, &batch);
    if (!more.ok()) return more.status();
    if (!*more) break;
    EXPECT_FALSE(batch.entries.empty());
    uint32_t begin = 0;
    for (const TextBatch::Entry& e : batch.entries) {
      entries.push_back({batch.data.substr(begin, e.end - begin), e.bad});
      begin = e.end;
    }
  }
  return entries;
}

class ArrowStreamSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { g_live = g_out = g_max_out = 0; }
  void TearDown() override {
    EXPECT_EQ(g_live, 0) << "every schema, array and the stream are released";
    EXPECT_EQ(g_out, 0);
  }
};

TEST_F(ArrowStreamSourceTest, Utf8AcrossBatchesInOrderOneBatchHeldAtATime) {
  auto entries = ReadAll(TextStream({{"one", "two", ""}, {}, {"three"}, {"four", "five"}}), "text",
                         /*max_bytes=*/4);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("one"), Text("two"), Text(""), Text("three"),
                                          Text("four"), Text("five")}));
  EXPECT_EQ(g_max_out, 1);
}

TEST_F(ArrowStreamSourceTest, LargeUtf8AndBinary) {
  auto stream = Stream(
      [] {
        return Batch({Schema("U", "text"), Schema("z", "raw")});
      },
      [] {
        std::vector<ArrowArray> a;
        std::vector<ArrowArray> c;
        c.push_back(Strings({"large", "utf8"}, /*large=*/true));
        c.push_back(Strings({"b\xff", "x"}));
        a.push_back(Struct(2, std::move(c)));
        return a;
      });
  auto entries = ReadAll(stream);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("large"), Text("utf8")}));

  stream = Stream([] { return Batch({Schema("Z", "raw")}); },
                  [] {
                    std::vector<ArrowArray> a;
                    std::vector<ArrowArray> c;
                    c.push_back(Strings({"b\xff", std::nullopt}, /*large=*/true));
                    a.push_back(Struct(2, std::move(c)));
                    return a;
                  });
  entries = ReadAll(stream, "raw");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  // Bytes as they are: the packer's UTF-8 policy deals with them.
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("b\xff"), Bad("text is null")}));
}

TEST_F(ArrowStreamSourceTest, StringViewsInlineAndInBuffersWithAnOffset) {
  const std::string long1 = "a text longer than twelve bytes";
  const std::string long2 = "another text that is stored out of line";
  auto stream = Stream(
      [] { return Batch({Schema("vu", "text")}); },
      [&] {
        std::vector<ArrowArray> a;
        std::vector<ArrowArray> c;
        c.push_back(Views({"skipped", long1, "short", std::nullopt, long2, "twelve bytes"}, 1));
        a.push_back(Struct(5, std::move(c)));
        return a;
      });
  auto entries = ReadAll(stream);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text(long1), Text("short"), Bad("text is null"),
                                          Text(long2), Text("twelve bytes")}));
}

TEST_F(ArrowStreamSourceTest, NullsAreBadRecords) {
  auto entries = ReadAll(TextStream({{"a", std::nullopt, "c"}, {std::nullopt}}));
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries,
            (std::vector<Entry>{Text("a"), Bad("text is null"), Text("c"), Bad("text is null")}));
}

TEST_F(ArrowStreamSourceTest, BatchAndColumnOffsetsAddUp) {
  // Batch rows start at 1 of the struct, whose child starts at its value 2:
  // batch row r is value 3 + r of the child's buffers.
  auto stream =
      Stream([] { return Batch({Schema("u", "text")}); },
             [] {
               std::vector<ArrowArray> a;
               std::vector<ArrowArray> c;
               c.push_back(Strings({"x", "x", "x", "d", std::nullopt, "f", "g"}, false, 2));
               a.push_back(Struct(3, std::move(c), {true, true, true, true}, 1));
               return a;
             });
  auto entries = ReadAll(stream);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("d"), Bad("text is null"), Text("f")}));
}

ArrowArrayStream NestedStream() {
  // {id: int64, meta: struct<lang: utf8, text: utf8>}, meta null in row 1.
  return Stream(
      [] {
        return Batch(
            {Schema("l", "id"), Schema("+s", "meta", {Schema("u", "lang"), Schema("u", "text")})});
      },
      [] {
        std::vector<ArrowArray> a, meta, columns;
        meta.push_back(Strings({"en", "xx", "de"}));
        meta.push_back(Strings({"hello", "hidden", std::nullopt}));
        columns.push_back(Int64s({1, 2, 3}));
        columns.push_back(Struct(3, std::move(meta), {true, false, true}));
        a.push_back(Struct(3, std::move(columns)));
        return a;
      });
}

TEST_F(ArrowStreamSourceTest, NestedFieldByDottedPathOrPointer) {
  const std::vector<Entry> want = {Text("hello"), Bad("text is null"), Bad("text is null")};
  for (const char* key : {"meta.text", "/meta/text"}) {
    auto entries = ReadAll(NestedStream(), key);
    ASSERT_TRUE(entries.ok()) << key << ": " << entries.status().ToString();
    EXPECT_EQ(*entries, want) << key;
  }
}

TEST_F(ArrowStreamSourceTest, AColumnNamedWithADotWinsOverThePath) {
  auto stream = Stream([] { return Batch({Schema("u", "meta.text")}); },
                       [] {
                         std::vector<ArrowArray> a, c;
                         c.push_back(Strings({"flat"}));
                         a.push_back(Struct(1, std::move(c)));
                         return a;
                       });
  auto entries = ReadAll(stream, "meta.text");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("flat")}));
}

TEST_F(ArrowStreamSourceTest, ANonStringColumnMakesEveryRowBad) {
  auto entries = ReadAll(NestedStream(), "id");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  const Entry bad = Bad("text is int64, not a string");
  EXPECT_EQ(*entries, (std::vector<Entry>{bad, bad, bad}));

  auto stream = Stream([] { return Batch({Schema("l", "text")}); },
                       [] {
                         std::vector<ArrowArray> a, c;
                         c.push_back(Int64s({7, 8}, {true, false}));
                         a.push_back(Struct(2, std::move(c)));
                         return a;
                       });
  entries = ReadAll(stream);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{bad, Bad("text is null")}));

  entries = ReadAll(NestedStream(), "meta");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(entries->front(), Bad("text is struct, not a string"));
}

TEST_F(ArrowStreamSourceTest, AMissingColumnIsAnErrorListingTheColumns) {
  auto entries = ReadAll(NestedStream(), "text");
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries.status().message(),
            "<arrow stream>: no column 'text' in the Arrow stream (its columns: id, meta)");

  entries = ReadAll(NestedStream(), "meta.body");
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().message(),
            "<arrow stream>: no field 'body' in column 'meta' (its fields: lang, text)");

  entries = ReadAll(NestedStream(), "id.text");
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().message(),
            "<arrow stream>: column 'id' is int64, not a struct: it has no field 'text'");
}

TEST_F(ArrowStreamSourceTest, AStreamOfPlainStringArraysIsTheTexts) {
  auto stream = Stream([] { return Schema("U"); },
                       [] {
                         std::vector<ArrowArray> a;
                         a.push_back(Strings({"chunk", "ed"}, true));
                         a.push_back(Strings({"array"}, true));
                         return a;
                       });
  auto entries = ReadAll(stream, "ignored");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(*entries, (std::vector<Entry>{Text("chunk"), Text("ed"), Text("array")}));

  stream = Stream([] { return Schema("l"); }, {});
  entries = ReadAll(stream);
  ASSERT_FALSE(entries.ok());
  EXPECT_NE(entries.status().message().find("holds int64 arrays"), std::string::npos)
      << entries.status().message();
}

TEST_F(ArrowStreamSourceTest, TheProducersErrorIsReported) {
  auto stream = TextStream({{"a"}, {"b"}});
  Data(&stream)->fail_at = 1;
  auto entries = ReadAll(stream);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), StatusCode::kIoError);
  EXPECT_NE(entries.status().message().find("the producer broke"), std::string::npos)
      << entries.status().message();
}

TEST_F(ArrowStreamSourceTest, AConsumedStreamIsRefused) {
  ArrowArrayStream released{};
  auto source = MakeArrowStreamTextSource(&released, "text", "<arrow stream>");
  EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeArrowStreamTextSource(nullptr, "text", "<arrow stream>").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ArrowStreamSourceTest, MalformedArraysAreErrorsNotCrashes) {
  // Offsets out of order in row 2 (record 3 of the stream).
  auto stream = Stream(
      [] { return Batch({Schema("u", "text")}); },
      [] {
        std::vector<ArrowArray> a, c;
        c.push_back(Array(3, 0, 0, {std::nullopt, Raw(std::vector<int32_t>{0, 1, 2, 1}), "abc"}));
        a.push_back(Struct(3, std::move(c)));
        return a;
      });
  auto entries = ReadAll(stream);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(entries.status().message().find("<arrow stream>:3:"), std::string::npos)
      << entries.status().message();

  // A child shorter than the batch.
  stream = Stream([] { return Batch({Schema("u", "text")}); },
                  [] {
                    std::vector<ArrowArray> a, c;
                    c.push_back(Strings({"a"}));
                    a.push_back(Struct(2, std::move(c)));
                    return a;
                  });
  entries = ReadAll(stream);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), StatusCode::kDataLoss);

  // A string view pointing past its buffers, and one longer than its buffer.
  for (const auto& [buffer, offset] : {std::pair<int32_t, int32_t>{5, 0}, {0, 4}}) {
    stream = Stream([] { return Batch({Schema("vu", "text")}); },
                    [buffer = buffer, offset = offset] {
                      std::vector<ArrowArray> a, c;
                      char view[16] = {};
                      const int32_t length = 20;
                      std::memcpy(view, &length, 4);
                      std::memcpy(view + 8, &buffer, 4);
                      std::memcpy(view + 12, &offset, 4);
                      c.push_back(Array(1, 0, 0,
                                        {std::nullopt, std::string(view, 16), std::string(20, 'x'),
                                         Raw(std::vector<int64_t>{20})}));
                      a.push_back(Struct(1, std::move(c)));
                      return a;
                    });
    entries = ReadAll(stream);
    ASSERT_FALSE(entries.ok()) << buffer << " " << offset;
    EXPECT_EQ(entries.status().code(), StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace tokpack

// A toy tokenizer kind and a toy input format, added the way a contributor
// adds one (a row of the registry: tokenizer_kinds.h, input_formats.h), then
// used by a real Build() and read back with Dataset::Open.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "inputs/input_formats.h"
#include "inputs/input_stream.h"
#include "tests/test_util.h"
#include "tokenizer/tokenizer_kinds.h"
#include "tokpack/builder.h"
#include "tokpack/dataset.h"
#include "tokpack/tokenizer.h"

namespace tokpack {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteStringToFile;

// The toy kind: a file whose first line is "toy-bytes"; byte b is id b + 1,
// and 257 ends each document.
constexpr std::string_view kToyMagic = "toy-bytes\n";
constexpr int kToyEos = 257;

class ToyModel : public TokenizerModel {
 public:
  Status Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                const Tokenizer::IdSink* sink) const override {
    ids->clear();
    for (unsigned char c : text) ids->push_back(c + 1);
    if (counts) *counts = EncodeCounts();
    if (sink && !ids->empty()) {
      (*sink)(ids->data(), ids->size());
      ids->clear();
    }
    return Status::Ok();
  }
  StatusOr<std::string> Decode(const std::vector<int>& ids) const override {
    std::string text;
    for (int id : ids) {
      if (id >= 1 && id <= 256) text += static_cast<char>(id - 1);
    }
    return text;
  }
};

bool IsToyBytes(std::string_view bytes) { return bytes.substr(0, kToyMagic.size()) == kToyMagic; }

StatusOr<LoadedTokenizer> LoadToyBytes(const TokenizerFile& file) {
  if (!file.options.pattern.empty()) {
    return InvalidArgumentError("tokenizer '" + file.path + "' takes no pattern");
  }
  LoadedTokenizer t;
  t.model = std::make_unique<ToyModel>();
  t.info.type = "toy-bytes";
  t.info.file = "tokenizer.toy";
  t.info.vocab_size = kToyEos + 1;
  t.info.eos_id = kToyEos;
  return t;
}

// The toy format: one document per line; lines starting with '#' are comments.
class ToyRecords : public RecordSource {
 public:
  explicit ToyRecords(std::unique_ptr<ByteStream> stream) : lines_(std::move(stream)) {}

  StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) override {
    while (true) {
      const size_t start = out->size();
      TOKPACK_ASSIGN_OR_RETURN(bool more, lines_.Next(out, max_bytes, &record->bytes));
      if (!more) return false;
      text_bytes_ += record->bytes + 1;
      if (record->bytes <= max_bytes && out->compare(start, 1, "#") == 0) {
        out->resize(start);
        continue;
      }
      record->number = lines_.line_number();
      record->kind = RecordKind::kText;
      return true;
    }
  }
  uint64_t text_bytes() const override { return text_bytes_; }

 private:
  LineReader lines_;
  uint64_t text_bytes_ = 0;
};

StatusOr<std::unique_ptr<RecordSource>> OpenToy(const InputRecord& in,
                                                const SourceContext& context) {
  TOKPACK_ASSIGN_OR_RETURN(auto stream, OpenInputStream(in, context));
  return std::unique_ptr<RecordSource>(std::make_unique<ToyRecords>(std::move(stream)));
}

// Registered once per process: the rows stay for the other tests, which
// name no toy file.
void RegisterToys() {
  static const bool registered = [] {
    RegisterTokenizerKind({"toy-bytes", "a toy-bytes file", IsToyBytes, LoadToyBytes});
    RegisterInputFormat({"toy", {".toy"}, true, false, OpenToy, nullptr});
    return true;
  }();
  (void)registered;
}

std::vector<int64_t> Ids(std::string_view text) {
  std::vector<int64_t> ids;
  for (unsigned char c : text) ids.push_back(c + 1);
  ids.push_back(kToyEos);
  return ids;
}

TEST(ExtensionPoints, AToyKindAndAToyFormatBuildAndReadBack) {
  RegisterToys();
  TempDir dir;
  WriteStringToFile(dir.Join("vocab.bin"), std::string(kToyMagic) + "anything\n");
  WriteStringToFile(dir.Join("a.toy"), "# a comment\nhello\nworld\n");
  WriteStringToFile(dir.Join("b.toy.zst"), testing::ZstdCompress("#\nzst ok\n"));
  BuildOptions o;
  o.inputs = {dir.Join("a.toy"), dir.Join("b.toy.zst")};
  o.output = dir.Join("out");
  o.tokenizer_model = dir.Join("vocab.bin");
  o.threads = 2;
  auto summary = Build(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  auto ds = Dataset::Open(o.output);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->manifest().tokenizer.type, "toy-bytes");
  EXPECT_EQ((*ds)->manifest().tokenizer.file, "tokenizer.toy");
  const std::vector<std::vector<int64_t>> want = {Ids("hello"), Ids("world"), Ids("zst ok")};
  ASSERT_EQ((*ds)->num_documents(), want.size());
  for (uint64_t i = 0; i < want.size(); ++i) {
    uint64_t offset = 0, length = 0;
    ASSERT_TRUE((*ds)->DocumentExtent(i, &offset, &length).ok());
    std::vector<int64_t> ids(length);
    ASSERT_TRUE((*ds)->ReadTokens(offset, length, ids.data()).ok());
    EXPECT_EQ(ids, want[i]) << i;
  }

  // The dataset's copy loads as the kind it records.
  auto copy = Tokenizer::FromRecorded(ReadFileOrDie(dir.Join("out/tokenizer.toy")), "tokenizer.toy",
                                      (*ds)->manifest().tokenizer);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ(*(*copy)->Decode({105, 106}), "hi");
}

TEST(ExtensionPoints, TheRegistriesListWhatWasAdded) {
  RegisterToys();
  // --input-format takes the name; the Python package's path test and the
  // error for a file of no kind know it.
  auto forced = InputFormatFor("notes.md", "toy");
  ASSERT_TRUE(forced.ok());
  EXPECT_STREQ((*forced)->name, "toy");
  EXPECT_TRUE(LooksLikeInputName("Corpus.TOY.gz"));
  EXPECT_NE(InputFormatFor("a.md", "auto").status().message().find("toy: .toy"), std::string::npos);
  EXPECT_NE(TokenizerKindList().find("a toy-bytes file"), std::string::npos);
}

}  // namespace
}  // namespace tokpack

// removed.json (docs/format.md 17): what is written reads back, and every
// rule of an untrusted list is an error naming the file and the field.
#include "format/removed_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokpack {
namespace {

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;

std::string List(const std::string& documents, const std::string& fingerprint = "0123456789abcdef",
                 const std::string& extra = "") {
  return R"({"format": "tokpack-removed", "version": 1, "fingerprint": ")" + fingerprint +
         R"(", "documents": )" + documents + extra + "}";
}

// The error of parsing `text` for a dataset of 100 documents.
Status Refusal(const std::string& text) {
  return ParseRemovedListFor(text, "ds/removed.json", kFingerprint, 100).status();
}

TEST(RemovedList, WhatIsWrittenReadsBack) {
  for (const std::vector<uint64_t>& docs :
       {std::vector<uint64_t>{}, {0}, {3, 4, 99}, {7, UINT64_MAX}}) {
    const std::string json = RemovedListJson({kFingerprint, docs});
    StatusOr<RemovedList> back = ParseRemovedList(json, "removed.json");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
    EXPECT_EQ(back->fingerprint, kFingerprint);
    EXPECT_EQ(back->documents, docs);
  }
  // One index a line: a list kept in version control diffs by document.
  EXPECT_EQ(RemovedListJson({kFingerprint, {3, 12}}),
            "{\n  \"format\": \"tokpack-removed\",\n  \"version\": 1,\n  \"fingerprint\": "
            "\"0123456789abcdef\",\n  \"documents\": [\n    3,\n    12\n  ]\n}\n");
}

TEST(RemovedList, AListForTheDatasetGivesItsDocuments) {
  StatusOr<std::vector<uint64_t>> docs =
      ParseRemovedListFor(List("[0, 5, 99]"), "removed.json", kFingerprint, 100);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ(*docs, (std::vector<uint64_t>{0, 5, 99}));
}

TEST(RemovedList, EachBadFieldIsNamed) {
  const struct {
    std::string text, message;
  } cases[] = {
      {"", "ds/removed.json: not valid JSON"},
      {"{\"format\": ", "not valid JSON"},
      {"[1, 2]", "ds/removed.json: is not an object"},
      {R"({"format": "tokpack-dataset", "version": 1, "fingerprint": "0123456789abcdef",
          "documents": []})",
       "field 'format' is not 'tokpack-removed'"},
      {R"({"version": 1, "fingerprint": "0123456789abcdef", "documents": []})",
       "field 'format' is missing or not a string"},
      {R"({"format": "tokpack-removed", "version": 2, "fingerprint": "0123456789abcdef",
          "documents": []})",
       "field 'version' is 2; this tokpack reads version 1"},
      {List("[]", "0123456789ABCDEF"), "field 'fingerprint' is not 16 lowercase hex digits"},
      {List("[]", "123"), "field 'fingerprint' is not 16 lowercase hex digits"},
      {List("{}"), "field 'documents' is missing or not an array"},
      {List("[1, -2]"), "field 'documents[1]' is not an unsigned integer"},
      {List("[1, 2.5]"), "field 'documents[1]' is not an unsigned integer"},
      {List("[1, \"2\"]"), "field 'documents[1]' is not an unsigned integer"},
      {List("[1, 18446744073709551616]"), "not valid JSON"},
      {List("[3, 2]"), "field 'documents[1]' is 2, not above the one before it (3)"},
      {List("[3, 3]"), "field 'documents[1]' is 3, not above the one before it (3)"},
      {List("[3]", "0123456789abcdef", ", \"note\": 1"), "field 'note' is not a field"},
      {List("[0, 100]"), "field 'documents[1]' is 100, past the last of the dataset's 100"},
  };
  for (const auto& c : cases) {
    const Status s = Refusal(c.text);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.text << "\n" << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.text << "\n" << s.message();
    EXPECT_NE(s.message().find("ds/removed.json"), std::string::npos) << s.message();
  }
}

TEST(RemovedList, AListMadeForAnotherVersionOfTheDatasetIsRefused) {
  // Checked before the indices: after a rebuild they name other documents,
  // whatever their range.
  const Status s = Refusal(List("[5, 500]", "00000000000000ff"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("ds/removed.json was made for another version of the dataset "
                             "(fingerprint 00000000000000ff, the dataset's is 0123456789abcdef"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace tokpack

// The mixture model (tokpack/mixture.h): phases by name from the API and
// from a phases file, one set of rules, errors in the user's names.
#include "tokpack/mixture.h"

#include <gtest/gtest.h>

namespace tokpack {
namespace {

const std::vector<std::string> kNames = {"web", "code", "math"};

std::string ApiError(const std::vector<NamedPhase>& phases) {
  StatusOr<std::vector<MixturePhase>> r = PhasesByName(kNames, phases);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

std::string FileError(const std::string& json) {
  StatusOr<Mixture> r = ParseMixtureJson(json, "mix.json");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

const char kSources[] = R"("sources": {"web": "d/web", "code": "d/code",
                                      "math": {"path": "d/math", "split": "9,1"}})";

TEST(MixtureTest, NamedPhasesBecomeOneWeightPerSource) {
  auto r = PhasesByName(kNames, {{0, {{"code", 0.1}, {"web", 0.9}}}, {5, {{"math", 1}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].weights, (std::vector<double>{0.9, 0.1, 0}));
  EXPECT_EQ((*r)[1].start_step, 5);
  EXPECT_EQ((*r)[1].weights, (std::vector<double>{0, 0, 1}));
}

TEST(MixtureTest, ApiErrorsNameThePhaseAndTheSource) {
  EXPECT_EQ(ApiError({}), "phases is empty: a mixture needs at least one phase");
  EXPECT_EQ(ApiError({{0, {{"web", 1}}}, {-1, {{"web", 1}}}}),
            "phases[1]: start_step is -1; start steps are integers >= 0");
  EXPECT_EQ(ApiError({{3, {{"web", 1}}}}),
            "phases[0]: start_step is 3; the first phase starts at 0");
  EXPECT_EQ(ApiError({{0, {{"web", 1}}}, {0, {{"web", 1}}}}),
            "phases[1]: start_step is 0, not after the 0 before it");
  EXPECT_EQ(ApiError({{0, {{"cod", 1}}}}),
            "phases[0] (start_step 0): 'cod' names no source (the sources are web, code, math)");
  EXPECT_EQ(ApiError({{0, {{"web", 1}, {"web", 2}}}}),
            "phases[0] (start_step 0): 'web' is given twice");
  EXPECT_EQ(ApiError({{0, {{"web", -0.5}}}}),
            "phases[0] (start_step 0): the weight of 'web' is -0.5; weights must be finite and "
            ">= 0");
  EXPECT_EQ(ApiError({{0, {{"web", 1}}}, {7, {{"web", 0}, {"code", 0}}}}),
            "phases[1] (start_step 7) has no positive weight: every weight is 0 in {'web': 0.0, "
            "'code': 0.0}; a phase needs at least one source");
}

TEST(MixtureTest, AFileNamesItsSourcesOptionsAndPhases) {
  auto m = ParseMixtureJson(std::string("{") + kSources + R"(,
      "phases": [{"start_step": 0, "weights": {"web": 0.9, "code": 0.1}},
                 {"start_step": 9, "weights": {"math": 2}}]})",
                            "mix.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Names(), kNames);
  EXPECT_EQ(m->sources[2].location, "d/math");
  EXPECT_EQ(m->sources[2].options,
            (std::vector<std::pair<std::string, std::string>>{{"split", "9,1"}}));
  ASSERT_EQ(m->phases.size(), 2u);
  EXPECT_EQ(m->phases[1].weights, (std::vector<double>{0, 0, 2}));
}

TEST(MixtureTest, FileErrorsNameTheField) {
  const std::string head = std::string("{") + kSources + R"(, "phases": )";
  EXPECT_EQ(FileError(head + R"([{"start_step": 0, "weights": {"web": -1}}]})"),
            "mix.json: field 'phases[0].weights.web' is -1; weights must be finite and >= 0");
  EXPECT_EQ(FileError(head + R"([{"start_step": 0, "weights": {"mathh": 1}}]})"),
            "mix.json: field 'phases[0].weights.mathh' names no source (the sources are web, "
            "code, math)");
  EXPECT_EQ(FileError(head + R"([{"start_step": 0, "weights": {"web": "a"}}]})"),
            "mix.json: field 'phases[0].weights.web' is not a number");
  EXPECT_EQ(FileError(head + R"([{"start_step": 0, "weight": {}}]})"),
            "mix.json: field 'phases[0].weight' is not a field of a phases file here");
  EXPECT_EQ(FileError(head + R"([{"start_step": 2, "weights": {"web": 1}}]})"),
            "mix.json: field 'phases[0].start_step' is 2; the first phase starts at 0");
  EXPECT_EQ(FileError(head + "[]}"),
            "mix.json: field 'phases' is empty: a mixture needs at least one phase");
  EXPECT_EQ(FileError(R"({"sources": {"web": 3}, "phases": []})"),
            "mix.json: field 'sources.web' is not a path or URL (a non-empty string) or an "
            "object {\"path\", dataset options}");
  EXPECT_EQ(FileError(R"({"sources": {"web": {"path": "x", "split": "9,x"}}, "phases": []})")
                .find("mix.json: field 'sources.web.split' is refused: "),
            0u);
  EXPECT_EQ(FileError("[1]"), "mix.json: not a JSON object {\"sources\", \"phases\"}");
}

}  // namespace
}  // namespace tokpack

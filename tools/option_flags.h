// CLI flags made from an options table (LoaderOptions::Describe(),
// BuildOptions::Describe()): one flag per option, with the option's doc line,
// default and choices, so the CLI never declares an option of its own.
#ifndef TOKPACK_TOOLS_OPTION_FLAGS_H_
#define TOKPACK_TOOLS_OPTION_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "tokpack/options.h"
#include "tokpack/status.h"

namespace tokpack::cli {

// Checks that a flag's value is an integer in [min, max], worded as the
// option tables word it ("--chunk-bytes: must be at least 1, not '0'");
// CLI::PositiveNumber and CLI::Range print their bounds as doubles.
inline CLI::Validator IntInRange(uint64_t min, uint64_t max = UINT64_MAX) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        // strtoull would skip blanks and wrap "-1".
        const bool digits = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
        const unsigned long long x = std::strtoull(text.c_str(), &end, 10);
        if (digits && *end == '\0' && errno == 0 && x >= min && x <= max) return "";
        // Past 64 bits "at least 0" would not say what is wrong.
        const std::string range =
            errno == ERANGE ? "between " + std::to_string(min) + " and " + std::to_string(max)
                            : DescribeIntRange(min, max);
        return "must be " + range + ", not '" + text + "'";
      },
      "", "INT_IN_RANGE");
}

// Registers a flag for each option of `infos` not in `skip`. The returned
// function, called after parsing, sets the options given on the command line
// in *options (through Options::SetText, which names a bad value's option).
template <typename Options>
std::function<Status(Options*)> AddOptionFlags(CLI::App* app, const std::vector<OptionInfo>& infos,
                                               const std::set<std::string>& skip = {}) {
  auto given = std::make_shared<std::map<std::string, std::string>>();
  for (const OptionInfo& info : infos) {
    if (skip.count(info.name)) continue;
    const std::string flag = OptionFlag(info);
    const std::string name = info.name;
    if (info.type == OptionType::kBool) {
      const bool negated = flag.rfind("--no-", 0) == 0;
      std::string doc = info.doc;
      if (negated && !doc.empty()) {
        doc[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(doc[0])));
        doc = "Do not " + doc;
      }
      app->add_flag_callback(
          flag, [given, name, negated] { (*given)[name] = negated ? "false" : "true"; }, doc);
      continue;
    }
    static const char* const kTypeNames[] = {"", "INT", "UINT", "FLOAT", "TEXT"};
    CLI::Option* opt =
        app->add_option_function<std::string>(
               flag, [given, name](const std::string& v) { (*given)[name] = v; }, info.doc)
            ->type_name(kTypeNames[static_cast<int>(info.type)])
            ->default_str(info.default_text);
    if (!info.choices.empty()) opt->check(CLI::IsMember(info.choices));
  }
  return [given](Options* options) -> Status {
    for (const auto& [name, text] : *given) {
      TOKPACK_RETURN_IF_ERROR(options->SetText(name, text));
    }
    return Status::Ok();
  };
}

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_OPTION_FLAGS_H_

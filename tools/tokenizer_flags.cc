// The CLI flags that complete a tokenizer file (TokenizerOptions), shared by
// `build` and `import`.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "frontend/registry_names.h"
#include "tools/commands.h"

namespace tokpack::cli {

std::function<Status()> AddTokenizerOptions(CLI::App* app, TokenizerOptions* options) {
  auto specials = std::make_shared<std::vector<std::string>>();
  app->add_option("--pattern", options->pattern,
                  "tiktoken files: split regex, or a preset (" +
                      PatternPresetsText(/*with_special_tokens=*/true) +
                      ") that also brings its special tokens; " +
                      PatternPresetsText(/*with_special_tokens=*/false) + ": the pattern alone");
  app->add_option("--special", *specials,
                  "tiktoken files: a special token as TEXT=ID (repeatable), e.g. "
                  "'<|endoftext|>=100257'");
  app->add_option("--eos,--eos-token", options->eos_token,
                  "Text of the token to append as EOS (default: the tokenizer's own)");
  app->add_option("--bos-token", options->bos_token,
                  "Text of the token --bos prepends (default: the tokenizer's own)");
  return [specials, options]() -> Status {
    for (const std::string& spec : *specials) {
      const size_t eq = spec.rfind('=');
      const std::string id = eq == std::string::npos ? "" : spec.substr(eq + 1);
      char* end = nullptr;
      errno = 0;
      const long long value = id.empty() ? -1 : std::strtoll(id.c_str(), &end, 10);
      if (eq == 0 || id.empty() || *end != '\0' || errno != 0 || value < 0) {
        return InvalidArgumentError("--special '" + spec +
                                    "': expected TEXT=ID with a non-negative integer ID");
      }
      options->special_tokens.emplace_back(spec.substr(0, eq), value);
    }
    return Status::Ok();
  };
}

}  // namespace tokpack::cli

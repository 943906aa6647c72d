// Subcommands of the tokpack CLI. Each Add*Command registers its options on
// `app` and returns a runner to call when the subcommand was chosen, with the
// storage settings main() read from the environment; runners return the
// process exit code.
#ifndef TOKPACK_TOOLS_COMMANDS_H_
#define TOKPACK_TOOLS_COMMANDS_H_

#include <atomic>
#include <functional>
#include <string>

#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"
#include "tokpack/tokenizer.h"

namespace CLI {
class App;
}

namespace tokpack::cli {

using Runner = std::function<int(const StorageOptions& storage)>;

// Set by SIGINT/SIGTERM; long-running commands stop when it turns true.
extern std::atomic<bool> g_interrupted;

Runner AddBuildCommand(CLI::App* app);
Runner AddInfoCommand(CLI::App* app);
Runner AddVerifyCommand(CLI::App* app);
Runner AddMergeCommand(CLI::App* app);
Runner AddImportCommand(CLI::App* app);
Runner AddShowCommand(CLI::App* app);
Runner AddSampleCommand(CLI::App* app);
Runner AddPushCommand(CLI::App* app);
Runner AddProfileCommand(CLI::App* app);
Runner AddPackCommand(CLI::App* app);
Runner AddFindCommand(CLI::App* app);
Runner AddRemoveCommand(CLI::App* app);

// "'docs.jsonl' line 3, id 'a-17'": a document's origin, as show --source
// prints it (source_commands.cc).
std::string DescribeSource(const Dataset::DocumentSource& source);
// The documents made from line (row, item) `line` of `input`, an input's
// path as the manifest lists it (every input of that path) or its index, as
// `find --input --line` takes them: none when that record made no document.
// NotFound when `input` is no input of `ds` (source_commands.cc).
StatusOr<std::vector<uint64_t>> FindByLine(const Dataset& ds, const std::string& input,
                                           uint64_t line);

// `sample --explain`: prints the rows of `steps` steps from `first` as
// loader.Explain() gives them, each span with its document's origin where
// the dataset has sources; `json`: one JSON object per row. Returns the
// exit code (source_commands.cc).
int PrintExplained(const Loader& loader, const std::vector<std::string>& names,
                   const std::vector<std::shared_ptr<Dataset>>& datasets, int64_t first,
                   int64_t steps, bool json);

// Registers --seq-len and --max-docs-per-sequence (with `choose`, also
// --packing) from LoaderOptions' table; the returned function, called after
// parsing, sets those given in *options.
std::function<Status(LoaderOptions*)> AddPackingFlags(CLI::App* app, bool choose);
// PackDataset for `o`'s seq_len and max_docs_per_sequence, its progress
// lines on stderr as "tokpack COMMAND: ...".
StatusOr<PackingInfo> PackWithProgress(const Dataset& dataset, const LoaderOptions& o,
                                       const StorageOptions& storage, int threads,
                                       const char* command);
// The packing numbers, as `pack` and `info --packing best_fit` print them.
void PrintPackingInfo(const PackingInfo& info);

// Registers --pattern, --special, --eos-token and --bos-token, which fill
// `options` (the tokenizer file's kind decides which apply). Call the returned
// function before using `options`: it parses --special TEXT=ID.
std::function<Status()> AddTokenizerOptions(CLI::App* app, TokenizerOptions* options);

// Prints "tokpack <command>: <status>" to stderr and returns the exit code
// (130 when cancelled by a signal, 1 otherwise).
int ReportError(const char* command, const Status& status);

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_COMMANDS_H_

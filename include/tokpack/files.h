// Files read whole into memory: the caps on each kind, and ReadSmallFile,
// the one way tokpack reads a local file it takes as configuration (a
// tokenizer and the tokenizer_config.json beside it, a cursor, a phases
// file, AWS credentials). Such a path comes from a user, a flag or a
// checkpoint, so it may name anything: a FIFO that blocks a plain open()
// forever, a device such as /dev/zero that never ends, a directory, or a
// sparse file of terabytes. Each cap is far above what real files of its
// kind need, and low enough that a wrong file fails at once, naming itself,
// instead of filling memory.
#ifndef TOKPACK_FILES_H_
#define TOKPACK_FILES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tokpack/status.h"

namespace tokpack {

// A tokenizer file (--tokenizer, tokpack.Tokenizer, a dataset's copy, local
// or remote). The largest that open models ship, tokenizer.json files of
// vocabularies of a few hundred thousand tokens, are about 30 MB; a dataset
// must be able to load the copy of any tokenizer it was built with, so this
// one cap serves both.
inline constexpr uint64_t kMaxTokenizerBytes = uint64_t{1} << 30;
// A dataset's inputs.jsonl (the inputs of a build too many to list in the
// manifest): about 100 bytes per input file.
inline constexpr uint64_t kMaxInputListBytes = uint64_t{1} << 30;
// A dataset's removed.json (the documents it serves as removed): about 15
// bytes per document listed (one a line), so 256 MiB lists some 17 million.
inline constexpr uint64_t kMaxRemovedListBytes = uint64_t{256} << 20;
// A list of document ids or indices, one a line (tokpack remove --ids-file,
// --docs-file): ids are at most 4096 bytes (docs/format.md 3.2), most far less.
inline constexpr uint64_t kMaxIdListBytes = uint64_t{1} << 30;
// The tokenizer_config.json beside a tokenizer.json, read for its EOS and
// BOS token names. Real ones are under 1 MB (Llama 3's, with a chat template
// and 256 reserved tokens, is about 50 KB).
inline constexpr uint64_t kMaxTokenizerConfigBytes = uint64_t{64} << 20;
// A saved cursor (--state-in, a trainer checkpoint's tokpack_cursor.json):
// about 250 bytes, plus at most ~45 per source and begun phase (a 20-digit
// count and a weight), so 16 MiB holds e.g. 600 sources through 600 phases.
inline constexpr uint64_t kMaxCursorBytes = uint64_t{16} << 20;
// A phases file (--phases): a few KB name the sources and their phases; 1 MiB
// is thousands of phases.
inline constexpr uint64_t kMaxPhasesFileBytes = uint64_t{1} << 20;
// An AWS shared credentials or config file: a few hundred bytes per profile.
inline constexpr uint64_t kMaxAwsFileBytes = uint64_t{16} << 20;

// The whole of the local file `path`, symbolic links followed. `what` names
// the kind of file in messages, with its article ("a tokenizer file").
//
// Rule: what `path` reaches must be a regular file; a FIFO, a device, a
// socket or a directory is refused without blocking and without reading
// (it is looked at before it is opened, opened O_NONBLOCK, and checked
// again with fstat). A file larger than `max_bytes` is refused before
// anything is allocated, naming the cap and `what`. Exactly the size fstat
// gave is read; a file that shrank or grew meanwhile is refused (DataLoss).
// Errors name `path`: NotFound when it does not exist, InvalidArgument for
// the rules above, else the errno's code (tokpack/status.h).
StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                    std::string_view what);

}  // namespace tokpack

#endif  // TOKPACK_FILES_H_

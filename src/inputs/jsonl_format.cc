// The input format "jsonl": one JSON object per line, the text a field of it
// (--text-key); blank lines carry no record. Also what stdin is read as.
#include "inputs/input_formats.h"

namespace tokpack {

StatusOr<std::unique_ptr<RecordSource>> OpenJsonlInput(const InputRecord& in,
                                                       const SourceContext& context) {
  TOKPACK_ASSIGN_OR_RETURN(auto stream, OpenInputStream(in, context));
  return LineRecords(std::move(stream), /*json=*/true);
}

}  // namespace tokpack

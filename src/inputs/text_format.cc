// The input format "text": a file is one document, or with --text-per-line
// each line is one.
#include "inputs/input_formats.h"

namespace tokpack {

StatusOr<std::unique_ptr<RecordSource>> OpenTextInput(const InputRecord& in,
                                                      const SourceContext& context) {
  TOKPACK_ASSIGN_OR_RETURN(auto stream, OpenInputStream(in, context));
  if (context.settings->text_per_line) return LineRecords(std::move(stream), /*json=*/false);
  return WholeStreamRecord(std::move(stream));
}

}  // namespace tokpack

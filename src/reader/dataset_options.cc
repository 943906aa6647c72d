// DatasetOptions' table: the one declaration of each option of opening a
// dataset. tokpack.Dataset's keyword arguments and the CLI flags of the
// commands that read datasets are made from it.
#include "base/option_table.h"
#include "reader/split_ranges.h"
#include "tokpack/dataset.h"

namespace tokpack {
namespace {

using O = DatasetOptions;

// The split's text, refused as soon as it is set when it does not parse
// (Open checks it against split_index and the shards).
OptionTable<O>::Entry SplitOption() {
  OptionTable<O>::Entry e = StringOption<O>(
      "split",
      "Open one part of a held-out split: weights such as \"949,50,1\" (split_index picks "
      "the part; empty: the whole dataset)",
      [](auto& o) -> auto& { return o.split; });
  e.set = [](O& o, const OptionValue& v) {
    const std::string& text = std::get<std::string>(v);
    if (!text.empty()) TOKPACK_RETURN_IF_ERROR(ParseSplit(text).status());
    o.split = text;
    return Status::Ok();
  };
  return e;
}

}  // namespace

template <>
const OptionTable<O>& OptionTableOf<O>() {
  static const OptionTable<O>* table = new OptionTable<O>({
      BoolOption<O>(
          "verify_on_open",
          "Check every chunk of the local .bin/.idx files against the manifest's checksums at "
          "open (reads the whole dataset; remote chunks are checked when fetched)",
          [](auto& o) -> auto& { return o.verify_on_open; }),
      SplitOption(),
      IntOption<O>(
          "split_index", "The part of split to open, 0-based",
          [](auto& o) -> auto& { return o.split_index; }, 0, SplitSpec::kMaxParts - 1),
  });
  return *table;
}

template class OptionSet<O>;

}  // namespace tokpack

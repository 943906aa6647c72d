// DatasetOptions' table: the one declaration of each option of opening a
// dataset. tokpack.Dataset's keyword arguments and the CLI flags of the
// commands that read datasets are made from it.
#include "common/option_table.h"
#include "tokpack/dataset.h"

namespace tokpack {

using O = DatasetOptions;

template <>
const OptionTable<O>& OptionTableOf<O>() {
  static const OptionTable<O>* table = new OptionTable<O>({
      BoolOption<O>(
          "verify_on_open",
          "Check every chunk of the local .bin/.idx files against the manifest's checksums at "
          "open (reads the whole dataset; remote chunks are checked when fetched)",
          [](auto& o) -> auto& { return o.verify_on_open; }),
  });
  return *table;
}

template class OptionSet<O>;

}  // namespace tokpack

// ProgressPrinter: renders BuildProgress on stderr, as a live bar on a
// terminal or as plain periodic lines otherwise (logs, Slurm output files).
// Called from the builder's progress thread only.
#ifndef TOKPACK_TOOLS_PROGRESS_PRINTER_H_
#define TOKPACK_TOOLS_PROGRESS_PRINTER_H_

#include <string>

#include "tokpack/builder.h"

namespace tokpack::cli {

class ProgressPrinter {
 public:
  // `tty`: draw a bar redrawn in place; else print one line per call.
  explicit ProgressPrinter(bool tty) : tty_(tty) {}
  void Update(const BuildProgress& p);
  // Ends the live bar's line (no-op for plain output).
  void Finish();

  // Human units: "12.3 MB", "4.5M", "1:02:03".
  static std::string Bytes(double b);
  static std::string Count(double n);
  static std::string Duration(double seconds);

 private:
  bool tty_;
  bool drawn_ = false;
};

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_PROGRESS_PRINTER_H_

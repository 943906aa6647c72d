// Plots for the CLI: a command's --plot hands its report, as JSON, to a
// module of the tokpack package run by a Python child process, which draws
// it with matplotlib (tokpack.profile_plot, tokpack.mixture_plot). The CLI
// stays free of Python; matplotlib is needed only when a plot is drawn.
#ifndef TOKPACK_TOOLS_PYTHON_PLOT_H_
#define TOKPACK_TOOLS_PYTHON_PLOT_H_

#include <string>

#include "tokpack/status.h"

namespace tokpack::cli {

// Writes `report_json` to OUT.json and runs `PYTHON -m MODULE OUT.json OUT`
// (argv, no shell), with the Python beside this executable (a venv's bin/,
// where pip puts the CLI), else python3 on PATH. OUT.json is removed once
// the plot is drawn; on failure it is kept, and FailedPrecondition names
// the module, the cause and `pip install 'tokpack[plots]'`.
[[nodiscard]] Status DrawWithPython(const std::string& module, const std::string& report_json,
                                    const std::string& out);

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_PYTHON_PLOT_H_

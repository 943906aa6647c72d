#include "tools/python_plot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "tools/file_util.h"

extern char** environ;

namespace tokpack::cli {
namespace {

std::string PythonInterpreter() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.resize(dir.rfind('/') + 1);
    if (access((dir + "python3").c_str(), X_OK) == 0) return dir + "python3";
  }
  return "python3";
}

}  // namespace

Status DrawWithPython(const std::string& module, const std::string& report_json,
                      const std::string& out) {
  const std::string json_path = out + ".json";
  {
    std::ofstream f(json_path);
    f << report_json;
    if (!f.good()) return InternalError("cannot write " + json_path);
  }
  const std::string python = PythonInterpreter();
  std::vector<std::string> args = {python, "-m", module, json_path, out};
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (err == 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  const bool ok = err == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    return FailedPreconditionError(
        "--plot runs `" + python + " -m " + module + "`, which " +
        (err ? std::string("could not start: ") + std::strerror(err) : std::string("failed")) +
        "; it needs the tokpack package and matplotlib (pip install 'tokpack[plots]'); the "
        "report is kept in " +
        json_path);
  }
  RemoveAllQuietly(json_path);
  return Status::Ok();
}

}  // namespace tokpack::cli

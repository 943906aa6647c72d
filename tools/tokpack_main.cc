// tokpack: the command-line interface (build, info, verify, merge, import,
// show, find, remove, ...). See README.md for examples.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <map>
#include <new>
#include <string>

#include "tokpack/version.h"
#include "tools/commands.h"

namespace tokpack::cli {

std::atomic<bool> g_interrupted{false};

int ReportError(const char* command, const Status& status) {
  std::fprintf(stderr, "tokpack %s: error: %s\n", command, status.message().c_str());
  return status.code() == StatusCode::kCancelled ? 130 : 1;
}

}  // namespace tokpack::cli

namespace {

extern "C" void OnSignal(int sig) {
  tokpack::cli::g_interrupted.store(true);
  // A second signal terminates at once.
  std::signal(sig, SIG_DFL);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tokpack::cli;
  CLI::App app{"tokpack: corpora to sharded, memory-mapped token datasets"};
  app.set_version_flag("--version", std::string("tokpack ") + tokpack::Version());
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  auto add = [&](const char* name, const char* help, Runner (*fn)(CLI::App*)) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = fn(sub);
  };
  add("build", "Tokenize corpora into a dataset", AddBuildCommand);
  add("info", "Summarize a dataset", AddInfoCommand);
  add("verify", "Recompute checksums and check every index against its data", AddVerifyCommand);
  add("merge", "Write one manifest over the parts of a --part build (no copying)", AddMergeCommand);
  add("import", "Write a manifest over existing Megatron .bin/.idx pairs (no copying)",
      AddImportCommand);
  add("show", "Print documents as token ids or decoded text", AddShowCommand);
  add("find", "Find the documents of an id, or of an input's line or row", AddFindCommand);
  add("remove",
      "Serve documents as removed (pad tokens, no loss) without a rebuild; or restore them",
      AddRemoveCommand);
  add("sample", "Print the batches a rank would train on (shuffled, resumable)", AddSampleCommand);
  add("push", "Upload a dataset to s3:// or gs:// (manifest last)", AddPushCommand);
  add("pack", "Make a dataset's best-fit packing plan ahead of training (packing=best_fit)",
      AddPackCommand);
  add("profile", "Simulate training: wait for data per step by loader setting, and advice",
      AddProfileCommand);
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  // Past RLIMIT_FSIZE a write would kill the process without a word; ignored,
  // it fails with EFBIG, which is reported naming the file, and the staging
  // directory is removed as after any other error.
  std::signal(SIGXFSZ, SIG_IGN);
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    // The one place the CLI reads the environment (TOKPACK_CACHE_DIR, AWS_*, ...).
    tokpack::StatusOr<tokpack::StorageOptions> storage = tokpack::StorageOptions::FromEnvironment();
    if (!storage.ok()) return ReportError(sub->get_name().c_str(), storage.status());
    // SIGINT also stops remote requests (e.g. to a server that hangs).
    storage->cancel = tokpack::UnownedCancelFlag(&g_interrupted);
    // Errors are Status values; what still escapes (an allocation the system
    // refuses) ends with a message and exit 1, not SIGABRT, and unwinds the
    // staging directories' cleanup on its way.
    const std::string name = sub->get_name();
    try {
      return run(*storage);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "tokpack %s: error: out of memory while running `tokpack %s`\n",
                   name.c_str(), name.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tokpack %s: error: %s\n", name.c_str(), e.what());
    }
    return 1;
  }
  return 2;
}

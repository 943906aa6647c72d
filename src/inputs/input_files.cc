#include "inputs/input_files.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/file_system.h"
#include "inputs/input_formats.h"
#include "inputs/remote_input.h"
#include "storage/object_url.h"

namespace tokpack {
namespace fs = std::filesystem;
namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Sorted names of the visible entries of `dir`.
StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) return ErrnoToStatus(ec.value(), "list directory", dir);
  std::sort(names.begin(), names.end());
  return names;
}

Status WalkDir(const std::string& dir, std::vector<std::string>* out) {
  TOKPACK_ASSIGN_OR_RETURN(auto names, ListDir(dir));
  for (const std::string& name : names) {
    std::string path = JoinPath(dir, name);
    if (IsDirectory(path)) {
      TOKPACK_RETURN_IF_ERROR(WalkDir(path, out));
    } else if (IsRegularFile(path)) {
      out->push_back(path);
    }
  }
  return Status::Ok();
}

// Matches path components comps[i..] below `dir` ("**" spans zero or more
// directories), appending matching regular files to `out`.
Status GlobWalk(const std::string& dir, const std::vector<std::string>& comps, size_t i,
                std::vector<std::string>* out) {
  if (i == comps.size()) {
    if (IsRegularFile(dir)) out->push_back(dir);
    return Status::Ok();
  }
  const std::string& comp = comps[i];
  if (comp == "**") {
    TOKPACK_RETURN_IF_ERROR(GlobWalk(dir, comps, i + 1, out));
    if (!IsDirectory(dir)) return Status::Ok();
    TOKPACK_ASSIGN_OR_RETURN(auto names, ListDir(dir));
    for (const std::string& name : names) {
      std::string path = JoinPath(dir, name);
      if (IsDirectory(path)) TOKPACK_RETURN_IF_ERROR(GlobWalk(path, comps, i, out));
    }
    return Status::Ok();
  }
  if (!HasWildcard(comp)) {
    std::string path = JoinPath(dir, comp);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return GlobWalk(path, comps, i + 1, out);
    return Status::Ok();
  }
  if (!IsDirectory(dir)) return Status::Ok();
  TOKPACK_ASSIGN_OR_RETURN(auto names, ListDir(dir));
  for (const std::string& name : names) {
    if (::fnmatch(comp.c_str(), name.c_str(), FNM_PERIOD) == 0) {
      TOKPACK_RETURN_IF_ERROR(GlobWalk(JoinPath(dir, name), comps, i + 1, out));
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> Glob(const std::string& pattern) {
  std::vector<std::string> comps;
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t slash = pattern.find('/', start);
    if (slash == std::string::npos) slash = pattern.size();
    if (slash > start) comps.push_back(pattern.substr(start, slash - start));
    start = slash + 1;
  }
  std::string root = pattern.rfind('/', 0) == 0 ? "/" : "";
  std::vector<std::string> out;
  TOKPACK_RETURN_IF_ERROR(GlobWalk(root.empty() ? "." : root, comps, 0, &out));
  if (root.empty()) {
    for (std::string& p : out) p = p.substr(2);  // Drop the "./" we walked from.
  }
  // Byte order of full paths, whatever the walk order; "**" can reach a file twice.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

bool HasWildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

StatusOr<ExpandedInputs> ExpandInputs(const std::vector<std::string>& specs,
                                      const StorageOptions& storage,
                                      const std::string& input_format, bool skip_unknown) {
  if (specs.empty()) return InvalidArgumentError("no inputs given");
  ExpandedInputs out;
  const auto add = [&](std::string path, uint64_t bytes) -> Status {
    StatusOr<const InputFormat*> format = InputFormatFor(path, input_format);
    if (!format.ok()) {
      if (!skip_unknown) {
        return InvalidArgumentError(format.status().message() +
                                    ", or --skip-unknown-files to leave such files out");
      }
      out.skipped.push_back(std::move(path));
      return Status::Ok();
    }
    out.inputs.push_back({std::move(path), bytes});
    return Status::Ok();
  };
  for (const std::string& spec : specs) {
    if (spec == "-") {
      out.inputs.push_back({"-", 0});
      continue;
    }
    if (IsRemoteUrl(spec)) {
      TOKPACK_ASSIGN_OR_RETURN(auto objects, ExpandRemoteInput(spec, storage));
      for (RemoteObject& o : objects) TOKPACK_RETURN_IF_ERROR(add(std::move(o.url), o.bytes));
      continue;
    }
    std::vector<std::string> files;
    if (IsDirectory(spec)) {
      TOKPACK_RETURN_IF_ERROR(WalkDir(spec, &files));
      std::sort(files.begin(), files.end());
      if (files.empty()) return NotFoundError("input directory '" + spec + "' holds no files");
    } else if (HasWildcard(spec) && !IsRegularFile(spec)) {
      TOKPACK_ASSIGN_OR_RETURN(files, Glob(spec));
      if (files.empty()) return NotFoundError("no files match input pattern '" + spec + "'");
    } else {
      files.push_back(spec);
    }
    for (std::string& f : files) {
      TOKPACK_ASSIGN_OR_RETURN(uint64_t size, FileSize(f));
      if (::access(f.c_str(), R_OK) != 0) return ErrnoToStatus(errno, "read input", f);
      TOKPACK_RETURN_IF_ERROR(add(std::move(f), size));
    }
  }
  size_t stdin_count = std::count_if(out.inputs.begin(), out.inputs.end(),
                                     [](const InputRecord& r) { return r.path == "-"; });
  if (stdin_count > 1) return InvalidArgumentError("stdin ('-') can be given only once");
  if (out.inputs.empty()) {
    return NotFoundError("no input of a type the packer reads (" +
                         std::to_string(out.skipped.size()) + " skipped, the first '" +
                         out.skipped.front() + "')");
  }
  return out;
}

std::vector<InputRecord> SelectPart(const std::vector<InputRecord>& all, int index, int count) {
  if (count <= 1) return all;
  __extension__ typedef unsigned __int128 u128;  // bytes * count overflows 64 bits.
  u128 total = 0;
  for (const auto& r : all) total += r.bytes;
  std::vector<InputRecord> out;
  u128 before = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    // Twice the midpoint avoids halves; empty corpora fall back to file index.
    u128 mid2 = 2 * before + all[i].bytes;
    int part = total == 0 ? static_cast<int>(i * count / all.size())
                          : static_cast<int>(mid2 * count / (2 * total));
    if (part >= count) part = count - 1;
    if (part == index) out.push_back(all[i]);
    before += all[i].bytes;
  }
  return out;
}

StatusOr<std::vector<InputRecord>> SelectPartByRowGroups(const std::vector<InputRecord>& all,
                                                         int index, int count,
                                                         const std::string& input_format,
                                                         const std::string& text_key,
                                                         const StorageOptions& storage) {
  std::vector<InputRecord> units;
  std::vector<uint32_t> groups_of;   // Row groups of each unit's file.
  std::vector<uint64_t> file_bytes;  // Size of each unit's file.
  for (const InputRecord& in : all) {
    StatusOr<const InputFormat*> format = InputFormatFor(in.path, input_format);
    uint32_t groups = 0;
    if (format.ok() && (*format)->units != nullptr) {
      TOKPACK_ASSIGN_OR_RETURN(std::vector<uint64_t> unit_bytes,
                               (*format)->units(in.path, text_key, storage));
      groups = static_cast<uint32_t>(unit_bytes.size());
      for (uint32_t g = 0; g < groups; ++g) {
        units.push_back({in.path, unit_bytes[g], g, g + 1});
        groups_of.push_back(groups);
        file_bytes.push_back(in.bytes);
      }
    }
    if (groups == 0) {
      units.push_back(in);
      groups_of.push_back(0);
      file_bytes.push_back(in.bytes);
    }
  }
  std::vector<InputRecord> selected;
  std::vector<size_t> selected_unit;  // The first unit of each selected record.
  const std::vector<InputRecord> part = SelectPart(units, index, count);
  // SelectPart keeps order and contiguity, so a file's row groups in this
  // part are adjacent: merge them into one range.
  size_t u = 0;
  for (const InputRecord& r : part) {
    while (!(units[u].path == r.path && units[u].row_group_begin == r.row_group_begin)) ++u;
    const bool extends = !selected.empty() && !r.whole_file() && selected.back().path == r.path &&
                         selected.back().row_group_end == r.row_group_begin;
    if (extends) {
      selected.back().row_group_end = r.row_group_end;
      selected.back().bytes += r.bytes;
    } else {
      selected.push_back(r);
      selected_unit.push_back(u);
    }
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    InputRecord& r = selected[i];
    // All of a file's row groups: recorded as the file, as a build without --part does.
    if (!r.whole_file() && r.row_group_begin == 0 &&
        r.row_group_end == groups_of[selected_unit[i]]) {
      r.row_group_end = 0;
      r.bytes = file_bytes[selected_unit[i]];
    }
  }
  return selected;
}

}  // namespace tokpack

#include <algorithm>

#include "io/file_system.h"
#include "io/staging_dir.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

bool IsInside(const std::string& path, const std::string& dir) {
  std::string rel = RelativePath(path, dir);
  return rel.empty() || rel == "." || rel.rfind("..", 0) != 0;
}

Status CheckCompatible(const Manifest& a, const std::string& a_name, const Manifest& b,
                       const std::string& b_name) {
  std::string what;
  if (a.dtype != b.dtype)
    what = "token dtypes";
  else if (a.chunk_bytes != b.chunk_bytes)
    what = "checksum chunk sizes";
  else if (a.tokenizer.model_xxh3 != b.tokenizer.model_xxh3 ||
           a.tokenizer.vocab_size != b.tokenizer.vocab_size ||
           // One file read with another split pattern, other special tokens or
           // another EOS/BOS choice gives other ids.
           a.tokenizer.pattern != b.tokenizer.pattern ||
           a.tokenizer.special_tokens != b.tokenizer.special_tokens ||
           a.tokenizer.eos_id != b.tokenizer.eos_id || a.tokenizer.bos_id != b.tokenizer.bos_id)
    what = "tokenizers";
  else if (a.provenance.kind != "import" && b.provenance.kind != "import" &&
           (a.provenance.settings.add_bos != b.provenance.settings.add_bos ||
            a.provenance.settings.add_eos != b.provenance.settings.add_eos)) {
    what = "BOS/EOS settings";
  }
  if (what.empty()) return Status::Ok();
  return InvalidArgumentError("cannot merge '" + a_name + "' and '" + b_name + "': different " +
                              what);
}

}  // namespace

StatusOr<Manifest> MergeDatasets(const std::string& output, const std::vector<std::string>& sources,
                                 bool force) {
  if (sources.empty()) return InvalidArgumentError("merge needs at least one part directory");
  struct Source {
    std::string dir;
    Manifest m;
  };
  std::vector<Source> parts;
  for (const std::string& dir : sources) {
    if (IsInside(dir, output)) {
      return InvalidArgumentError("part '" + dir + "' lies inside the merge output '" + output +
                                  "'");
    }
    TOKPACK_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(dir));
    parts.push_back({dir, std::move(m)});
  }
  const int count = parts[0].m.provenance.part_count;
  const bool split = std::any_of(parts.begin(), parts.end(),
                                 [](const Source& s) { return s.m.provenance.part_count > 1; });
  if (split) {
    std::vector<int> seen(count, 0);
    for (const Source& s : parts) {
      if (s.m.provenance.part_count != count) {
        return InvalidArgumentError(
            "'" + s.dir + "' is part " + std::to_string(s.m.provenance.part_index) + "/" +
            std::to_string(s.m.provenance.part_count) + " but '" + parts[0].dir + "' is one of " +
            std::to_string(count) + " parts");
      }
      if (++seen[s.m.provenance.part_index] > 1) {
        return InvalidArgumentError("part " + std::to_string(s.m.provenance.part_index) + "/" +
                                    std::to_string(count) + " is given twice");
      }
    }
    for (int i = 0; i < count; ++i) {
      if (seen[i] == 0) {
        return InvalidArgumentError("part " + std::to_string(i) + "/" + std::to_string(count) +
                                    " is missing from the merge");
      }
    }
    std::stable_sort(parts.begin(), parts.end(), [](const Source& a, const Source& b) {
      return a.m.provenance.part_index < b.m.provenance.part_index;
    });
  }
  Manifest out;
  const Manifest& first = parts[0].m;
  out.dtype = first.dtype;
  out.chunk_bytes = first.chunk_bytes;
  out.tokenizer = first.tokenizer;
  out.tokenizer.file.clear();
  out.provenance.version = Version();
  out.provenance.kind = "merge";
  out.provenance.settings = first.provenance.settings;
  for (const Source& s : parts) {
    TOKPACK_RETURN_IF_ERROR(CheckCompatible(first, parts[0].dir, s.m, s.dir));
    for (const ShardInfo& shard : s.m.shards) {
      for (const auto& [ext, bytes] :
           {std::pair<const char*, uint64_t>{".bin", shard.bin.bytes}, {".idx", shard.idx.bytes}}) {
        const std::string file = JoinPath(s.dir, shard.path + ext);
        TOKPACK_ASSIGN_OR_RETURN(uint64_t size, FileSize(file));
        if (size != bytes) {
          return DataLossError(file + ": " + std::to_string(size) + " bytes, its manifest says " +
                               std::to_string(bytes));
        }
      }
      ShardInfo moved = shard;
      moved.path = RelativePath(JoinPath(s.dir, shard.path), output);
      out.shards.push_back(std::move(moved));
    }
    const Provenance& p = s.m.provenance;
    out.provenance.inputs.insert(out.provenance.inputs.end(), p.inputs.begin(), p.inputs.end());
    out.provenance.sources.push_back(s.dir);
    BuildCounts& c = out.provenance.counts;
    c.documents += p.counts.documents;
    c.tokens += p.counts.tokens;
    c.skipped_empty += p.counts.skipped_empty;
    c.bad_lines += p.counts.bad_lines;
    c.utf8_repaired += p.counts.utf8_repaired;
    c.skipped_invalid_utf8 += p.counts.skipped_invalid_utf8;
  }
  TOKPACK_ASSIGN_OR_RETURN(auto staging, StagingDir::Create(output, force));
  if (!first.tokenizer.file.empty()) {
    out.tokenizer.file = first.tokenizer.file;
    TOKPACK_RETURN_IF_ERROR(CopyFile(PosixFileSystem(),
                                     JoinPath(parts[0].dir, first.tokenizer.file),
                                     JoinPath(staging->path(), out.tokenizer.file)));
  }
  TOKPACK_RETURN_IF_ERROR(staging->Commit(PosixFileSystem(), out.ToJson()));
  return out;
}

}  // namespace tokpack

// A Dataset's document sources (docs/format.md 3.2): each shard's .src read
// through its ByteSource (mapped, or remote chunks checked against the
// manifest), so a lookup fetches the header and runs once per shard, then
// the one id block or the few hash entries it needs.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "format/source_index.h"
#include "reader/dataset_impl.h"

namespace tokpack {

struct SourceFile {
  std::unique_ptr<ByteSource> src;
  std::string name;
  uint64_t documents = 0;
  uint64_t input_offset = 0;  // Added to the file's input indices.
  uint64_t input_total = 0;   // The manifest's inputs.

  std::once_flag once;
  Status status;  // Of loading the header and runs.
  SourceHeader header;
  std::vector<SourceRun> runs;

  // Parses the header and runs once; every later call returns that result.
  Status Load() {
    std::call_once(once, [this] { status = DoLoad(); });
    return status;
  }

  StatusOr<std::string> ReadAt(uint64_t offset, uint64_t n) const {
    std::string out(n, '\0');
    TOKPACK_RETURN_IF_ERROR(src->Read(offset, n, out.data()));
    return out;
  }

  // Block b's ids, one per document (nullopt: none).
  StatusOr<std::vector<std::optional<std::string>>> Block(uint64_t b) const {
    TOKPACK_ASSIGN_OR_RETURN(std::string ends, ReadAt(header.block_offsets_offset() + 8 * b, 16));
    uint64_t begin, end;
    std::memcpy(&begin, ends.data(), 8);
    std::memcpy(&end, ends.data() + 8, 8);
    if (begin > end || end > header.blob_bytes) {
      return DataLossError(name + ": id block " + std::to_string(b) +
                           " lies outside the file's id data (a damaged document-source file)");
    }
    TOKPACK_ASSIGN_OR_RETURN(std::string frame, ReadAt(header.blob_offset() + begin, end - begin));
    const uint64_t docs = std::min<uint64_t>(kIdBlockDocs, documents - b * kIdBlockDocs);
    return DecodeIdBlock(frame, docs, name);
  }

  // Id hash entry e: (hash, document).
  StatusOr<std::pair<uint32_t, uint32_t>> HashEntry(uint64_t e) const {
    TOKPACK_ASSIGN_OR_RETURN(std::string b, ReadAt(header.hashes_offset() + 8 * e, 8));
    uint32_t hash, doc;
    std::memcpy(&hash, b.data(), 4);
    std::memcpy(&doc, b.data() + 4, 4);
    if (doc >= documents) {
      return DataLossError(name + ": id entry " + std::to_string(e) + " names document " +
                           std::to_string(doc) + " of " + std::to_string(documents) +
                           " (a damaged document-source file)");
    }
    return std::pair{hash, doc};
  }

 private:
  Status DoLoad() {
    TOKPACK_ASSIGN_OR_RETURN(std::string head,
                             ReadAt(0, std::min<uint64_t>(src->size(), kSourceHeaderBytes)));
    TOKPACK_ASSIGN_OR_RETURN(header, ParseSourceHeader(head, src->size(), documents, name));
    if (header.inputs > input_total || input_offset > input_total - header.inputs) {
      return DataLossError(name + ": its " + std::to_string(header.inputs) +
                           " inputs, from input " + std::to_string(input_offset) +
                           ", pass the manifest's " + std::to_string(input_total));
    }
    TOKPACK_ASSIGN_OR_RETURN(std::string bytes,
                             ReadAt(header.runs_offset(), header.runs * kSourceRunBytes));
    TOKPACK_ASSIGN_OR_RETURN(runs, ParseRuns(bytes, header, name));
    return Status::Ok();
  }
};

std::shared_ptr<SourceFile> NewSourceFile(std::unique_ptr<ByteSource> src, std::string name,
                                          uint64_t documents, uint64_t input_offset,
                                          uint64_t input_total) {
  auto f = std::make_shared<SourceFile>();
  f->src = std::move(src);
  f->name = std::move(name);
  f->documents = documents;
  f->input_offset = input_offset;
  f->input_total = input_total;
  return f;
}

namespace {

// The first stream document of a segment (k) for shard-local document `local`,
// or nullopt when the segment does not hold it.
std::optional<uint64_t> StreamDocument(const Dataset::Impl& d, size_t k, uint64_t local) {
  const Dataset::Impl::Shard& s = d.shards[k];
  const uint64_t count = d.doc_ends[k] - s.first_document;
  if (local < s.first_entry || local - s.first_entry >= count) return std::nullopt;
  return s.first_document + (local - s.first_entry);
}

// The input list: the manifest's, or its side file's, read once.
StatusOr<const std::vector<InputRecord>*> InputList(const Dataset::Impl& d) {
  const Provenance& p = d.manifest.provenance;
  if (p.inputs_file.empty()) return &p.inputs;
  Dataset::Impl::InputList& list = *d.input_list;
  std::call_once(list.once, [&] {
    if (!d.read_inputs_file) {
      list.status = FailedPreconditionError(d.path + ": its input list cannot be read");
      return;
    }
    StatusOr<std::string> text = d.read_inputs_file(p.inputs_file);
    if (!text.ok()) {
      list.status = text.status();
      return;
    }
    Provenance read = p;
    list.status = ReadInputList(*text, d.path + "/" + p.inputs_file, &read);
    list.inputs = std::move(read.inputs);
  });
  TOKPACK_RETURN_IF_ERROR(list.status);
  return &list.inputs;
}

Status NoSources(const Dataset::Impl& d) {
  return FailedPreconditionError(
      d.path +
      " has no document sources (built before tokpack recorded them, with --no-doc-sources, "
      "imported, or merged from parts of which one had none)");
}

}  // namespace

bool Dataset::has_sources() const {
  return !impl_->shards.empty() && impl_->shards.front().sources != nullptr;
}

StatusOr<Dataset::DocumentSource> Dataset::Source(uint64_t i) const {
  const Impl& d = *impl_;
  if (i >= num_documents()) {
    return OutOfRangeError(d.path + ": document " + std::to_string(i) + " past the end of " +
                           std::to_string(num_documents()) + " documents");
  }
  if (!has_sources()) return NoSources(d);
  const size_t k = d.ShardOfDocument(i);
  const Impl::Shard& s = d.shards[k];
  SourceFile& f = *s.sources;
  TOKPACK_RETURN_IF_ERROR(f.Load());
  const uint64_t local = i - s.first_document + s.first_entry;
  const SourceRun& run = RunOf(f.runs, local);
  DocumentSource out;
  out.input = run.input + f.input_offset;
  out.record = run.first_record + (local - run.first_doc);
  TOKPACK_ASSIGN_OR_RETURN(const std::vector<InputRecord>* inputs, InputList(d));
  if (out.input < inputs->size()) out.input_path = (*inputs)[out.input].path;
  if (f.header.blocks > 0) {
    TOKPACK_ASSIGN_OR_RETURN(auto ids, f.Block(local / kIdBlockDocs));
    if (auto& id = ids[local % kIdBlockDocs]) {
      out.has_id = true;
      out.id = std::move(*id);
    }
  }
  return out;
}

StatusOr<std::vector<InputRecord>> Dataset::Inputs() const {
  TOKPACK_ASSIGN_OR_RETURN(const std::vector<InputRecord>* inputs, InputList(*impl_));
  return *inputs;
}

StatusOr<std::vector<uint64_t>> Dataset::FindById(std::string_view id) const {
  const Impl& d = *impl_;
  if (!has_sources()) return NoSources(d);
  const uint32_t hash = IdHash(id);
  std::vector<uint64_t> found;
  for (size_t k = 0; k < d.shards.size(); ++k) {
    // The segments of a split share their shard's file: search it once.
    if (k > 0 && d.shards[k].sources == d.shards[k - 1].sources) continue;
    SourceFile& f = *d.shards[k].sources;
    TOKPACK_RETURN_IF_ERROR(f.Load());
    // The first entry of `hash`, by bisection over the sorted entries.
    uint64_t lo = 0, hi = f.header.hashes;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      TOKPACK_ASSIGN_OR_RETURN(auto e, f.HashEntry(mid));
      if (e.first < hash) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    uint64_t block = UINT64_MAX;
    std::vector<std::optional<std::string>> ids;
    for (uint64_t e = lo; e < f.header.hashes; ++e) {
      TOKPACK_ASSIGN_OR_RETURN(auto entry, f.HashEntry(e));
      if (entry.first != hash) break;
      const uint64_t local = entry.second;
      if (local / kIdBlockDocs != block) {
        block = local / kIdBlockDocs;
        TOKPACK_ASSIGN_OR_RETURN(ids, f.Block(block));
      }
      const auto& candidate = ids[local % kIdBlockDocs];
      if (!candidate || *candidate != id) continue;  // Another id of the same hash.
      for (size_t j = k; j < d.shards.size() && d.shards[j].sources == d.shards[k].sources; ++j) {
        if (auto doc = StreamDocument(d, j, local)) found.push_back(*doc);
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

StatusOr<std::optional<uint64_t>> Dataset::FindByRecord(uint64_t input, uint64_t record) const {
  const Impl& d = *impl_;
  if (!has_sources()) return NoSources(d);
  // (input, record) grows with the document across shards and runs, as a
  // build reads its inputs in order and a merge concatenates them: bisect
  // the segments by their first document's origin, then the runs.
  using Key = std::pair<uint64_t, uint64_t>;
  const Key want{input, record};
  size_t lo = 0, hi = d.shards.size();  // The last segment starting at or before `want`.
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    TOKPACK_ASSIGN_OR_RETURN(DocumentSource first, Source(d.shards[mid].first_document));
    if (Key{first.input, first.record} <= want) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::optional<uint64_t>();
  const size_t k = lo - 1;
  const Impl::Shard& s = d.shards[k];
  SourceFile& f = *s.sources;
  TOKPACK_RETURN_IF_ERROR(f.Load());
  if (input < f.input_offset) return std::optional<uint64_t>();
  const Key local_want{input - f.input_offset, record};
  auto it = std::upper_bound(f.runs.begin(), f.runs.end(), local_want,
                             [](const Key& w, const SourceRun& r) {
                               return w < Key{r.input, r.first_record};
                             });
  if (it == f.runs.begin()) return std::optional<uint64_t>();
  const SourceRun& run = *(it - 1);
  const uint64_t run_end = it == f.runs.end() ? f.documents : it->first_doc;
  if (run.input != local_want.first || record - run.first_record >= run_end - run.first_doc) {
    return std::optional<uint64_t>();
  }
  return StreamDocument(d, k, run.first_doc + (record - run.first_record));
}

}  // namespace tokpack

// verify_on_open's check of one mapped local file against its manifest entry.
#ifndef TOKPACK_SRC_READER_VERIFY_CHUNKS_H_
#define TOKPACK_SRC_READER_VERIFY_CHUNKS_H_

#include <atomic>
#include <cstdint>

#include "storage/byte_source.h"
#include "tokpack/cancel.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

// Compares each chunk of `file`, a mapped local file, with its checksum in
// `want`, the file's manifest entry; DataLoss names the file and the first
// chunk that differs. The sizes agree (the open checked them) and so do the
// chunk counts (Manifest::Parse checked one checksum per chunk).
// Cancelled as soon as `cancel` (may be null) is raised: a dataset of
// terabytes takes long to read.
Status VerifyChunks(const ByteSource& file, const FileDigest& want, uint64_t chunk_bytes,
                    const CancelFlag& cancel);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_VERIFY_CHUNKS_H_

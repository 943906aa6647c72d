// The device stage's kernel: widens compact token windows into inputs and
// targets on the GPU, so only the compact dtype crosses PCIe.
#ifndef TOKPACK_SRC_READER_CUDA_WIDEN_H_
#define TOKPACK_SRC_READER_CUDA_WIDEN_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tokpack {

// windows: [rows, L + 1] tokens of `in_item` bytes (2: uint16, 4: int32).
// inputs[r, j] = windows[r, j] and targets[r, j] = windows[r, j + shift]
// (shift 1: next-token labels, 0: labels equal to the inputs), as integers
// of `out_item` bytes (4 or 8), except -100 where `bits` (the labels' loss
// mask bits, [rows, L] bytes; null: every label carries loss) is 0.
// Enqueued on `stream`.
cudaError_t LaunchWidenWindows(const void* windows, size_t in_item, int64_t rows, int64_t L,
                               int64_t shift, const uint8_t* bits, void* inputs, void* targets,
                               size_t out_item, cudaStream_t stream);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_CUDA_WIDEN_H_

#include <algorithm>

#include "reader/cuda/widen.h"

namespace tokpack {
namespace {

template <typename In, typename Out>
__global__ void WidenWindows(const In* __restrict__ windows, int64_t cells, int64_t L,
                             int64_t shift, const uint8_t* __restrict__ bits,
                             Out* __restrict__ inputs, Out* __restrict__ targets) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < cells;
       i += stride) {
    const int64_t r = i / L;
    const In* row = windows + r * (L + 1);
    const int64_t j = i - r * L;
    inputs[i] = static_cast<Out>(row[j]);
    const Out label = static_cast<Out>(row[j + shift]);
    targets[i] = bits == nullptr || bits[i] ? label : static_cast<Out>(-100);
  }
}

template <typename In, typename Out>
cudaError_t Launch(const void* windows, int64_t rows, int64_t L, int64_t shift, const uint8_t* bits,
                   void* inputs, void* targets, cudaStream_t stream) {
  const int64_t cells = rows * L;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((cells + threads - 1) / threads, 4096));
  WidenWindows<In, Out><<<std::max(blocks, 1), threads, 0, stream>>>(
      static_cast<const In*>(windows), cells, L, shift, bits, static_cast<Out*>(inputs),
      static_cast<Out*>(targets));
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchWidenWindows(const void* windows, size_t in_item, int64_t rows, int64_t L,
                               int64_t shift, const uint8_t* bits, void* inputs, void* targets,
                               size_t out_item, cudaStream_t stream) {
  if (in_item == 2) {
    return out_item == 8
               ? Launch<uint16_t, int64_t>(windows, rows, L, shift, bits, inputs, targets, stream)
               : Launch<uint16_t, int32_t>(windows, rows, L, shift, bits, inputs, targets, stream);
  }
  return out_item == 8
             ? Launch<int32_t, int64_t>(windows, rows, L, shift, bits, inputs, targets, stream)
             : Launch<int32_t, int32_t>(windows, rows, L, shift, bits, inputs, targets, stream);
}

}  // namespace tokpack

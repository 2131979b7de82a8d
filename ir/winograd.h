// Winograd F(2×2, 3×3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"):
// a 2×2 output tile of a 3×3 stride-1 conv from a 4×4 input tile d and the filter g as
//   Y = AT · [(G g GT) ⊙ (BT d B)] · A,
// 16 multiplies instead of 36. The ops winograd_input / winograd_output (ops.def) apply BT and
// AT; lowering's winograd pass applies G to the weights at compile time. Defined once here, for
// the reference implementations, the pass and the tests; the CPU kernels (emit_winograd.cpp)
// spell the same sums out with their ±1 coefficients.
#pragma once

namespace aotrace::ir::winograd {

constexpr int kTile = 4;    // input tile (and transformed tile) side
constexpr int kOut = 2;     // output tile side
constexpr int kKernel = 3;  // filter side

constexpr double BT[kTile][kTile] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double G[kTile][kKernel] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double AT[kOut][kTile] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

// Output tiles along a dim of `out` outputs.
constexpr long long tiles(long long out) { return (out + kOut - 1) / kOut; }

}  // namespace aotrace::ir::winograd

// Winograd F(m×m, 3×3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"):
// an m×m output tile of a 3×3 stride-1 conv from an n×n input tile d (n = m + 2) and the
// filter g as
//   Y = AT · [(G g GT) ⊙ (BT d B)] · A,
// n² multiplies instead of 9m². Two sizes: F(2×2) (16 for 36: BT, G, AT of 0 and ±1, ±1/2, so
// every product in the transforms is exact) and F(4×4) (36 for 144; coefficients up to 8, so
// the result is within ~3e-6 of the direct conv's relative to its largest magnitude rather than
// a few ulps). The ops winograd_input / winograd_output (ops.def) apply
// BT and AT, their attr `tile` = m; lowering's winograd pass applies G to the weights at
// compile time. Defined once here, for the reference implementations, the pass, the tests and
// the CPU kernels (emit_winograd.cpp, which spell each row out as adds of its ±1 terms and
// multiply-adds of the others).
#pragma once

namespace aotrace::ir::winograd {

constexpr int kKernel = 3;   // filter side
constexpr int kMaxTile = 6;  // the largest input tile side (F(4×4))

struct Transform {
  int m;  // output tile side
  int n;  // input (and transformed) tile side, m + 2
  double BT[kMaxTile][kMaxTile];
  double G[kMaxTile][kKernel];
  double AT[kMaxTile - 2][kMaxTile];
  int points() const { return n * n; }
};

constexpr Transform kF2 = {2,
                           4,
                           {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                           {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                           {{1, 1, 1, 0}, {0, 1, -1, -1}}};

// F(4×4) from the points 0, 1, -1, 1/2, -2 and ∞ (Barabasz et al., "Error Analysis and Improving
// the Accuracy of Winograd Convolution for Deep Neural Networks"), not Lavin's 0, ±1, ±2, ∞:
// emulated in f32 on resnet-like layers (ReLU inputs, He-initialised weights, 64 / 256 / 512
// channels) the largest error relative to the output's largest magnitude is 1.3 / 1.6 / 2.0e-6
// against Lavin's 2.3 / 3.2 / 4.4e-6, which at 512 channels broke the f32 tolerance
// (1e-5 + 1e-4·|x|) on 0.02% of the elements.
constexpr Transform kF4 = {4,
                           6,
                           {{1, -1.5, -2, 1.5, 1, 0},
                            {0, -1, 0.5, 2.5, 1, 0},
                            {0, 1, -2.5, 0.5, 1, 0},
                            {0, -2, -1, 2, 1, 0},
                            {0, 0.5, -1, -0.5, 1, 0},
                            {0, 1, -1.5, -2, 1.5, 1}},
                           {{1, 0, 0},
                            {1.0 / 3, 1.0 / 3, 1.0 / 3},
                            {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                            {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                            {1.0 / 15, -2.0 / 15, 4.0 / 15},
                            {0, 0, 1}},
                           {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5, -2, 0}, {0, 1, 1, 0.25, 4, 0}, {0, 1, -1, 0.125, -8, 1}}};

// The transform of output tile side m: F(4×4) for 4, else F(2×2) (the ops' infer rules accept 2
// and 4 only).
constexpr const Transform& transform(long long m) { return m == 4 ? kF4 : kF2; }

// Output tiles of side m along a dim of `out` outputs.
constexpr long long tiles(long long out, long long m) { return (out + m - 1) / m; }

}  // namespace aotrace::ir::winograd

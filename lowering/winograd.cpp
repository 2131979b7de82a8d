// winograd: a 3×3 stride-1 conv as Winograd F(m×m, 3×3) (ir/winograd.h), where it pays:
//
//   conv(x, W [O, C, 3, 3], bias)  →  V = winograd_input(x)                [P, C, N·T]
//                                     M = matmul(U, V), U = G W GT [P, O, C], a new weight
//                                     Y = winograd_output(M) (+ bias)      [N, O, OH, OW]
//
// P = (m + 2)² GEMMs of O×C×T (T = the m×m output tiles) take P/(9m²) of the conv's multiplies
// (F(2×2): 16/36, F(4×4): 36/144; tile_for below picks m); the transforms are a few adds and
// multiply-adds per element, in kernels of their own (cpu/emit_winograd.cpp), the output
// transform with the conv's epilogue (bias, batch norm, activation, residual) fused. U is
// computed here, in double, from the weight: the bundle stores it in place of W.
//
// Taken for f32, f16 and bf16 convs with a static weight and static shapes, groups 1, stride and
// dilation 1, any zero padding, when the conv is compute-bound enough (worth_it below;
// Options::winograd can ask for every such conv, or none). A half conv is computed in f32 (its
// input and bias cast to f32, U in f32) and cast back once: the conv rounds once, as eager's and
// the direct conv's do. Runs before
// pad_conv_inputs: winograd_input reads the unpadded input and zero-fills the border itself.
// Test: lowering_tests Winograd.* (F(2×2) and F(4×4): sizes that are not whole tiles, padding
// 0/1/2, batch > 1, every fused epilogue, against the direct conv; the error bound), and the
// resnet model tests.
#include "ir/winograd.h"
#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

// Whether the transform's savings outweigh its costs. The GEMMs do 16/36 of the multiplies but
// read 16/9 as many weights, and the transforms pass over the input and output once more. On
// resnet18 (AVX-512, 1 thread) every 3×3 stride-1 layer gains, 56×56×64 to 7×7×512 (16 tiles:
// 1.70 → 1.17 ms). Few channels leave the transforms dominant, and under 16 tiles the GEMMs
// are too narrow (under 8 columns they would not even take the packed GEMM).
bool worth_it(int64_t n, int64_t c, int64_t o, int64_t oh, int64_t ow) {
  int64_t tiles = n * ir::winograd::tiles(oh, 2) * ir::winograd::tiles(ow, 2);
  return c >= 16 && o >= 16 && tiles >= 16;
}

// The output tile side: Options::winograd_tile where set, else F(4×4) where its GEMMs have 16
// columns or more (the images' 4×4 tiles), F(2×2) below. Measured on resnet50's 3×3 layers with
// batch norm and ReLU (AVX-512, 2 threads, same host interleaved): 512 channels at 7×7 batch 4
// (16 tiles) 2.85 → 2.08 ms, 256 at 14×14 batch 4 3.6 → 2.7, 128 at 28×28 and 64 at 56×56
// (fused kernels) 10-25% faster; at 7×7 batch 1 (4 tiles, GEMMs of 4 columns) 0.69 → 1.65.
int64_t tile_for(int64_t forced, int64_t n, int64_t oh, int64_t ow) {
  if (forced != 0) return forced;
  return n * ir::winograd::tiles(oh, 4) * ir::winograd::tiles(ow, 4) >= 16 ? 4 : 2;
}

struct Rewriter {
  const ir::Graph& old;
  GraphCopy& c;
  Options::Winograd mode;
  int64_t forced_tile;  // Options::winograd_tile
  std::vector<int> weight_index;  // value → index in old.weights, or -1

  // The winograd form of `n`, or -1 where it does not apply or pay.
  ir::ValueId rewrite(const ir::Node& n, const std::vector<ir::ValueId>& operands) {
    if (n.op != ir::OpKind::Conv) return -1;
    const ir::TensorType &xt = old.type(n.operands[0]), &wt = old.type(n.operands[1]);
    auto xs = xt.static_shape(), ws = wt.static_shape(), os = old.type(n.results[0]).static_shape();
    if (!xs || !ws || !os || xs->size() != 4 || !computed_in_f32(xt.dtype) || wt.dtype != xt.dtype) return -1;
    int w = weight_index[static_cast<size_t>(n.operands[1])];
    if (w < 0 || (*ws)[2] != 3 || (*ws)[3] != 3) return -1;
    if (n.attrs.has("groups") && n.attrs.i("groups") != 1) return -1;
    for (const char* key : {"stride", "dilation"})
      for (int64_t v : n.attrs.ints(key))
        if (v != 1) return -1;
    const int64_t O = (*ws)[0], C = (*ws)[1], N = (*xs)[0], OH = (*os)[2], OW = (*os)[3];
    if (mode == Options::Winograd::automatic && !worth_it(N, C, O, OH, OW)) return -1;

    const ir::winograd::Transform& f = ir::winograd::transform(tile_for(forced_tile, N, OH, OW));
    const int64_t P = f.points();

    // U[n·a + b, o, c] = (G · W[o, c] · GT)[a][b].
    const auto& src = old.weights[static_cast<size_t>(w)];
    const uint8_t* g = src.data->data();
    auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(P * O * C) * sizeof(float));
    auto* u = reinterpret_cast<float*>(bytes->data());
    // Separably, G · W first, then · GT (for F(2×2) 84 multiply-adds per filter instead of 144),
    // in double: F(2×2)'s G has entries 0, ±1/2 and 1, so every product is exact and U rounds
    // once; F(4×4)'s thirds and fifteenths round in double, far below f32's rounding of U.
    for (int64_t o = 0; o < O; ++o)
      for (int64_t ci = 0; ci < C; ++ci) {
        float taps[9];
        for (int64_t i = 0; i < 9; ++i) taps[i] = float_element(g, wt.dtype, (o * C + ci) * 9 + i);
        double gw[ir::winograd::kMaxTile][3] = {};
        for (int a = 0; a < f.n; ++a)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) gw[a][j] += f.G[a][i] * taps[i * 3 + j];
        for (int a = 0; a < f.n; ++a)
          for (int b = 0; b < f.n; ++b) {
            double s = 0;
            for (int j = 0; j < 3; ++j) s += gw[a][j] * f.G[b][j];
            u[((a * f.n + b) * O + o) * C + ci] = static_cast<float>(s);
          }
      }
    ir::TensorType ut = wt;
    ut.dtype = ir::DType::f32;
    ut.shape = {P, O, C};
    // Named by the tile: two variants (or convs) of one weight may take different ones.
    const std::string kind = f.m == 2 ? "winograd" : "winograd" + std::to_string(f.m);
    const std::string source = src.source.empty() ? "" : kind + "(" + src.source + ")";
    ir::ValueId U = c.graph.add_weight(src.name + "." + kind, ut, source, std::move(bytes));

    const ir::Attrs out = attrs_of({{"tile", int64_t{f.m}}, {"out", std::vector<int64_t>{OH, OW}}});
    ir::Attrs in_attrs = out;
    in_attrs.set("pad_low", n.attrs.ints("pad_low"));
    ir::ValueId V = c.graph.add(ir::OpKind::WinogradInput, {as_f32(c, old, weight_index, n.operands[0], operands[0], n.loc)},
                                in_attrs, n.loc);
    ir::ValueId M = c.graph.add(ir::OpKind::Matmul, {U, V}, {}, n.loc);
    ir::ValueId Y = c.graph.add(ir::OpKind::WinogradOutput, {M}, out, n.loc);
    if (operands.size() > 2) {
      ir::Attrs shape;
      shape.set("shape", ir::Shape{1, O, 1, 1});
      ir::ValueId bias = c.graph.add(ir::OpKind::Reshape, {as_f32(c, old, weight_index, n.operands[2], operands[2], n.loc)},
                                     shape, n.loc);
      Y = c.graph.add(ir::OpKind::Add, {Y, bias}, {}, n.loc);
    }
    return c.graph.cast(Y, xt.dtype, n.loc);
  }
};

}  // namespace

ir::Graph winograd(ir::Graph old, Options::Winograd mode, int64_t tile) {
  if (mode == Options::Winograd::never) return old;
  GraphCopy c = copy_signature(old);
  Rewriter r{old, c, mode, tile, weight_indices(old)};
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    if (ir::ValueId y = r.rewrite(n, operands); y >= 0) {
      c.map[static_cast<size_t>(n.results[0])] = y;
      continue;
    }
    copy_node(c, n, std::move(operands));
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering

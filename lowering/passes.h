// Private to lowering/: the passes of lower_graph (pipeline.cpp) and the data they hand on.
//
//   graph passes   decompose, fold_constants, cse, dce,        ir::Graph → ir::Graph
//                  conv_taps, channels_last, winograd, pad_conv_inputs, pack_weights
//                  (the last two serve the CPU backend only: in cpu/)
//   fuse           decides which values are materialised        ir::Graph → FusedGraph
//   schedule       kernels in order, buffers, loop nests        FusedGraph → Schedule
//   plan (cpu)     per kernel: how a GEMM is blocked (cpu/plan.h) Schedule → CpuPlans
//   codegen (cpu)  one LLVM function per kernel → ELF object    Schedule → ir::Bytes
//   plan_memory    arena offsets with liveness-based reuse       Schedule → ir::ExecutionPlan
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lowering/lowering.h"

namespace aotrace::lowering {

ir::Graph decompose(ir::Graph g);       // decompose.cpp
ir::Graph fold_constants(ir::Graph g);  // fold_constants.cpp
ir::Graph cse(ir::Graph g);             // cse.cpp
ir::Graph dce(ir::Graph g);             // dce.cpp
ir::Graph conv_taps(ir::Graph g);       // conv_taps.cpp
ir::Graph channels_last(ir::Graph g);   // channels_last.cpp
ir::Graph winograd(ir::Graph g, Options::Winograd mode, int64_t tile);  // winograd.cpp
// Graph passes that serve the CPU backend only (DESIGN §4), in lowering/cpu/:
ir::Graph pad_conv_inputs(ir::Graph g); // cpu/pad_conv_inputs.cpp
ir::Graph pack_weights(ir::Graph g);    // cpu/pack_weights.cpp

// Whether conv `n` is one the CPU backend's depthwise kernel takes (cpu/emit_depthwise.cpp):
// f32, two spatial dims, groups > 1 with one input channel per group (any channel multiplier),
// a static weight of at most 64 taps, a width stride of 1 or 2 and no static size-0 dim. That
// kernel handles zero padding itself (a padded scratch), so pad_conv_inputs leaves
// these convs padded. Defined in cpu/pad_conv_inputs.cpp.
bool is_depthwise_conv(const ir::Graph& g, const ir::Node& n);

// GEMM panels (emit_gemm.cpp): A in MR-row panels, B in NR-column panels, both K-major. Fixed for
// every target, so that one plan and its pre-packed weights serve every CPU variant.
constexpr int64_t kPackedMR = 6;
constexpr int64_t kPackedNR = 16;
// The smallest GEMM the CPU backend packs and plans (cpu/plan.cpp; pack_weights packs exactly
// those weights): at least 4 rows, 4 columns and a depth of 8 (symbolic sizes at their maxima).
// Smaller products take the per-element loops, which win at 1 or 2 columns (a matrix times 1-2
// vectors) and tie at 3, but were 2-4.5x slower from 4 to 7 (a 1x1 conv 2048 -> 1024 of a 2x2
// image, resnext50's last stage at 64x64: 1.53 -> 0.34 ms).
constexpr int64_t kGemmMinRows = 4;
constexpr int64_t kGemmMinColumns = 4;
constexpr int64_t kGemmMinDepth = 8;

// The largest k whose topk kernels keep a row's k best in sorted stack arrays (emit_topk_rows;
// 12 KiB at 1024, a CPU thread's stack or a GPU thread's local memory).
constexpr int64_t kTopkRowsMaxK = 1024;
// Whether topk `n` (x of rank >= 1) ranks each row as a heap in its indices kernel's own output
// (emit_topk_heap), decompose gathering the values at those indices: for k > kTopkRowsMaxK, and
// where k² > 2n (n: the row at its largest size). The sorted arrays insert ~k(1 + ln(n/k))
// elements, each moving ~k/2 slots, and rank again for the values: they win where that is small
// against n, the heap (a key per element, log k per insert, one kernel) elsewhere. One CPU
// thread, 512 rows of 1024 (torch 1.13 in brackets): sort 98 → 24 ms (27.7), k = 250
// 51 → 14 ms (10.2), k = 64 15.8 → 5.1 ms (5.7); top-200 of 50257 stays with the arrays
// (0.043 ms a kernel, the heap 0.089). Defined in decompose.cpp.
bool topk_as_heap(const ir::Graph& g, const ir::Node& n);

// f32, f16 and bf16: the floats kernels compute in f32 (f16 and bf16 stored in 16 bits, widened
// where they are loaded), which the GEMMs, their packed weights and the GPU's warp reductions
// take alike.
inline bool computed_in_f32(ir::DType t) { return t == ir::DType::f32 || t == ir::DType::f16 || t == ir::DType::bf16; }

// Dynamic dims (DESIGN §4): shapes may hold symbols declared in Graph::symbols. Kernels get the
// symbols' values at run time (symbols[i]: the i-th entry of Graph::symbols, in its std::map
// order); decisions taken at compile time (blocking, chunking, task splits, whether a GEMM pays)
// use the sizes at their maxima, and buffers are sized for them.
//
// Every symbol of `g` at its SymRange max: the sizes the memory plan is laid out for.
using ir::max_bindings;  // the symbols at their maxima (ir.h)
using ir::min_bindings;  // at their minima
// `e` with the symbols at `at` (max_bindings): a compile-time estimate of a dim, exact for a
// static one. internal_error when a symbol is unbound.
int64_t planned_size(const ir::SymExpr& e, const ir::SymBindings& at);
// Running the toolchain's programs (link.cpp: ld.lld; cuda/link.cpp: ptxas).
void write_file(const std::filesystem::path& path, const ir::Bytes& bytes);
ir::Bytes read_bytes(const std::filesystem::path& path);
std::string read_text(const std::filesystem::path& path);
// Runs argv (argv[0] a path) with stdout and stderr into `log`; returns the exit status.
int run_tool(const std::vector<std::string>& argv, const std::filesystem::path& log);
std::filesystem::path make_temp_dir(const std::string& prefix);  // "aotrace-link-XXXXXX"

// The position of symbol `name` in Graph::symbols: its index in the kernels' symbols array.
int symbol_index(const ir::Graph& g, const std::string& name);
// The static shape of a value; user_error for symbolic dims (weights, and what must be static).
std::vector<int64_t> static_dims(const ir::Graph& g, ir::ValueId v);
// user_error unless every symbol in the shapes of `g` is declared in Graph::symbols with a
// finite range that excludes 0 and 1 (those sizes are static variants).
void check_codegen_supported(const ir::Graph& g);

// A kernel writes one materialised value (its root). Everything it computes that is not
// materialised is inlined into it: elementwise and index ops, Full and Arange as expressions,
// movement ops as index maps (views: transposes, broadcasts, slices, padding cost nothing), and
// at most one reduction (Reduce, Matmul, Conv or Pool) whose operands are evaluated inside its
// reduction loop. Scans and topk are kernels of their own.
struct FusedKernel {
  ir::ValueId root = -1;
  ir::ValueId reduction = -1;          // inlined reduction (may be the root), -1 if none
  std::vector<ir::ValueId> reads;      // materialised values it loads, in first-use order
};

struct FusedGraph {
  ir::Graph graph;
  std::vector<bool> materialised;      // per value: inputs, weights, kernel roots
  std::vector<FusedKernel> kernels;    // in topological order
};

FusedGraph fuse(ir::Graph g);  // fuse.cpp

// A buffer of the plan before memory planning (index = PlanBuffer index).
struct LogicalBuffer {
  ir::PlanBuffer::Kind kind = ir::PlanBuffer::Kind::Arena;
  int64_t index = 0;        // Input/Output position, Weight index
  ir::ValueId value = -1;   // the value it holds
  int64_t size_bytes = 0;   // with symbolic dims: at their maxima (max_bindings)
  int64_t min_size_bytes = 0;  // at their minima (min_bindings): what inspect reports
};

struct ScheduledKernel {
  std::string symbol;
  ir::ValueId root = -1;                 // the value computed and stored to buffers[0]
  ir::ValueId reduction = -1;            // its inlined reduction (FusedKernel::reduction), or -1
  std::vector<int32_t> buffers;          // [output, reads...] as LogicalBuffer indices
  std::vector<ir::ValueId> read_values;  // value held by buffers[1..]
  ir::Shape loop_extents;                // the output loop nest (row-major; empty: scalar)
  std::string what;                      // what it computes (ir::KernelCall::what)
  std::vector<int> nodes;                // the graph nodes it computes, in graph order
};

struct Schedule {
  FusedGraph fused;
  std::vector<LogicalBuffer> buffers;
  std::vector<ScheduledKernel> kernels;  // in execution order
};

Schedule schedule(FusedGraph fused, const std::string& symbol_prefix);  // schedule.cpp
ir::ExecutionPlan plan_memory(const Schedule& s);                       // memory_plan.cpp
namespace cpu { struct CpuPlan; }  // cpu/plan.h: plan_cpu_kernels
// cpu/codegen.cpp, with one plan per scheduled kernel; `phases` (when given) gets the LLVM
// phases' times: llvm-ir (emitting the kernels' IR), llvm-opt (the O2 pipeline), llvm-mc
// (instruction selection to the object).
ir::Bytes codegen_cpu(const Schedule& s, const std::vector<cpu::CpuPlan>& plans, const Options& options,
                      std::vector<PassTiming>* phases = nullptr);

// Rebuilding a graph in a pass: copies inputs, weights and symbols; `map` sends old values to new.
struct GraphCopy {
  ir::Graph graph;
  std::vector<ir::ValueId> map;
};
GraphCopy copy_signature(const ir::Graph& old);
// Appends old node `n` with new `operands` (and `attrs`, default n's) and maps its results.
void copy_node(GraphCopy& c, const ir::Node& n, std::vector<ir::ValueId> operands);
void copy_node(GraphCopy& c, const ir::Node& n, std::vector<ir::ValueId> operands, const ir::Attrs& attrs);
// Sets the outputs of `copy` from the old graph's outputs through the map.
ir::Graph finish_copy(GraphCopy copy, const ir::Graph& old);
// Value → its index in g.weights, or -1.
std::vector<int> weight_indices(const ir::Graph& g);
// Element i of a weight's bytes `p` of type t (f32, f16 or bf16) as a float: the half types
// widen exactly.
float float_element(const uint8_t* p, ir::DType t, int64_t i);
// Old value `v` (f32, f16 or bf16; `mapped` in the copy) as f32 in the copy, for passes that
// compute half convs in f32: itself if f32, a new f32 weight holding a half weight's values
// (widened here, not by a kernel), else a cast.
ir::ValueId as_f32(GraphCopy& c, const ir::Graph& old, const std::vector<int>& weight_index, ir::ValueId v,
                   ir::ValueId mapped, const SourceLoc& loc);
// The attributes of a node a pass adds, from {key, value} pairs.
ir::Attrs attrs_of(std::initializer_list<std::pair<std::string, ir::AttrValue>> items);

}  // namespace aotrace::lowering

// ir/ — the graph IR every layer of the compiler shares (DESIGN §3).
//
// What it offers:
//   DType, Device, SymExpr, TensorType  — types with symbolic shapes
//   OpKind + op_info()                  — the op table (ir/ops.def), each op defined once
//   Graph                               — typed SSA: inputs, weights, nodes, outputs
//   Guard, Assumption                   — what a capture relies on (DESIGN §2)
//   HostTensor + evaluate()             — the reference interpreter (plain C++ loops)
//   verify()                            — invariant checker run between passes
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/diagnostics.h"

namespace aotrace::ir {

// ---------------------------------------------------------------------------------------------
// DType
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, b8 };

std::string_view dtype_name(DType);           // "f32", …, "bool"
std::string_view dtype_torch_name(DType);     // "float32", …, "bool"
std::optional<DType> parse_dtype(std::string_view);  // accepts both spellings and torch.float32
size_t dtype_size(DType);
bool is_floating(DType);
bool is_integral(DType);  // integers and bool
// torch's promotion of two tensor dtypes (same category ordering as torch.result_type).
DType promote(DType a, DType b);

struct Device {
  enum class Kind : uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;
  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device&) const = default;
};

// ---------------------------------------------------------------------------------------------
// SymExpr: integers and symbols with + - * // % min max, simplified on construction.
// Immutable and cheap to copy. Equality is structural on the simplified (canonical) form.
struct SymNode;
using SymBindings = std::map<std::string, int64_t>;

class SymExpr {
 public:
  SymExpr(int64_t value = 0);  // NOLINT: implicit, so shapes can be written {1, s0}
  static SymExpr symbol(std::string name);

  bool is_constant() const;
  std::optional<int64_t> as_constant() const;
  int64_t constant() const;  // internal_error when symbolic
  std::vector<std::string> symbols() const;
  std::optional<int64_t> evaluate(const SymBindings&) const;  // nullopt: unbound symbol or /0
  SymExpr substitute(const std::map<std::string, SymExpr>&) const;
  std::string str() const;  // "2*s0 + 1", "s0//2", "s0%8", "min(s0, 4)"

  friend SymExpr operator+(const SymExpr&, const SymExpr&);
  friend SymExpr operator-(const SymExpr&, const SymExpr&);
  friend SymExpr operator*(const SymExpr&, const SymExpr&);
  friend SymExpr floordiv(const SymExpr&, const SymExpr&);
  friend SymExpr mod(const SymExpr&, const SymExpr&);
  friend SymExpr min(const SymExpr&, const SymExpr&);
  friend SymExpr max(const SymExpr&, const SymExpr&);
  friend bool operator==(const SymExpr&, const SymExpr&);

  const SymNode& node() const { return *node_; }
  explicit SymExpr(std::shared_ptr<const SymNode> n) : node_(std::move(n)) {}

 private:
  std::shared_ptr<const SymNode> node_;
};

struct SymNode {
  enum class Kind : uint8_t { Const, Symbol, Add, Mul, FloorDiv, Mod, Min, Max };
  Kind kind;
  int64_t value = 0;   // Const
  std::string name;    // Symbol
  std::vector<SymExpr> args;
};

// The range a symbol may take (from the YAML's dynamic dims).
struct SymRange {
  int64_t min = 1;
  int64_t max = INT64_MAX;
  int64_t multiple_of = 1;
};

using SymRanges = std::map<std::string, SymRange>;
// Whether `value` is a size `r` admits (in [min, max] and a multiple of multiple_of).
bool in_range(const SymRange& r, int64_t value);
// Bounds [lo, hi] of `e` when every symbol lies in its range (a symbol without one: [1, max]);
// conservative (interval arithmetic), nullopt when an operation has no useful bound.
std::optional<std::pair<int64_t, int64_t>> sym_bounds(const SymExpr& e, const SymRanges& ranges);

using Shape = std::vector<SymExpr>;
std::string shape_str(const Shape&);  // "[s0, 784]"

struct TensorType {
  DType dtype = DType::f32;
  Device device;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  SymExpr numel() const;
  std::optional<std::vector<int64_t>> static_shape() const;
  std::string str() const;  // "f32[s0, 784]"
  bool operator==(const TensorType&) const;
};

// ---------------------------------------------------------------------------------------------
// Ops
enum class OpCategory : uint8_t {
  Source, Unary, Binary, Compare, Ternary, Cast, Reduce, Scan, Matmul, Movement, Index, Conv,
  Pool, Sort, Transform, Composite
};

enum class OpKind : uint16_t {
#define AOT_OP(name, text, category, arity) name,
#include "ir/ops.def"
#undef AOT_OP
};

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string, DType, Shape>;

struct Attrs {
  std::map<std::string, AttrValue> items;

  bool has(const std::string& key) const { return items.count(key) != 0; }
  int64_t i(const std::string& key) const;
  double f(const std::string& key) const;
  const std::vector<int64_t>& ints(const std::string& key) const;
  const std::string& s(const std::string& key) const;
  DType dtype(const std::string& key) const;
  const Shape& shape(const std::string& key) const;
  Attrs& set(const std::string& key, AttrValue v) {
    items[key] = std::move(v);
    return *this;
  }
  std::string str() const;  // "{axes=[1], keepdim=1}", keys sorted
};

class Graph;
struct Node;
struct HostTensor;

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int arity;  // -1: variadic
  // Result types from operand types and attrs; user_error on a mismatch (e.g. shapes).
  std::function<std::vector<TensorType>(std::span<const TensorType>, const Attrs&)> infer;
  // Reference implementation (plain loops). Null for composites (evaluated via decompose).
  std::function<std::vector<HostTensor>(std::span<const HostTensor>, const Attrs&)> reference;
  // Composite only: appends primitive nodes to `g` computing the results from `operands`.
  std::function<std::vector<int32_t>(Graph& g, std::span<const int32_t> operands, const Attrs&,
                                     const SourceLoc& loc)>
      decompose;
};

const OpInfo& op_info(OpKind);
std::optional<OpKind> op_by_name(std::string_view);
inline std::string_view op_name(OpKind k) { return op_info(k).name; }
bool is_elementwise(OpCategory);

// ---------------------------------------------------------------------------------------------
// Graph: typed SSA. Values are numbered; every value is an input, a weight or a node result.
using ValueId = int32_t;

struct Node {
  OpKind op;
  std::vector<ValueId> operands;
  Attrs attrs;
  std::vector<ValueId> results;
  SourceLoc loc;  // the user's Python file:line that created it
};

// The Python structure of the outputs: a tensor leaf, or a tuple/list/dict of subtrees.
struct OutputTree {
  // Constant: a Python value the entry returns that is no tensor (None, an int, a float, a
  // bool, a string), known at compile time; `value` is its repr ("None", "3", "'ok'").
  enum class Kind : uint8_t { Leaf, Tuple, List, Dict, Constant };
  Kind kind = Kind::Leaf;
  int leaf = 0;                    // Leaf: index into Graph::outputs
  std::vector<OutputTree> children;
  std::vector<std::string> keys;   // Dict
  std::string value;               // Constant
  std::string str() const;         // "(0, [1, 2])"
};

using Bytes = std::vector<uint8_t>;

// An input the entry changes in place (x.add_(1), x[0] = 0 on an input): its new value is
// Graph::outputs[output], after the output tree's leaves, and the runtime writes it back into
// the caller's tensor after the call, as torch would have changed it.
struct InputUpdate {
  int input = 0;   // index into Graph::inputs
  int output = 0;  // index into Graph::outputs
};

class Graph {
 public:
  struct Input {
    std::string name;    // the parameter name ("x")
    ValueId value;
    std::string source;  // "L['x']"
  };
  struct Weight {
    std::string name;    // "fc1.weight"
    ValueId value;
    std::string source;  // "L['self'].fc1.weight"
    std::shared_ptr<const Bytes> data;  // contiguous, little-endian, type(value)
  };

  ValueId add_input(std::string name, TensorType type, std::string source);
  ValueId add_weight(std::string name, TensorType type, std::string source,
                     std::shared_ptr<const Bytes> data);
  // Infers result types with the op's rule (user_error at `loc` on mismatch) and appends.
  std::vector<ValueId> add_node(OpKind op, std::vector<ValueId> operands, Attrs attrs = {},
                                SourceLoc loc = {});
  ValueId add(OpKind op, std::vector<ValueId> operands, Attrs attrs = {}, SourceLoc loc = {});
  // A scalar constant (rank 0) of the given dtype.
  ValueId constant(double value, DType dtype, SourceLoc loc = {});
  // `v` as `dtype`: a Cast node, none when it has that dtype already.
  ValueId cast(ValueId v, DType dtype, SourceLoc loc = {});
  void set_outputs(std::vector<ValueId> outputs, OutputTree tree);

  // The reference is invalidated by adding values: copy it before calling add().
  const TensorType& type(ValueId v) const { return types_.at(static_cast<size_t>(v)); }
  size_t num_values() const { return types_.size(); }
  // Appends a value with a type directly (used by passes that rebuild graphs).
  ValueId new_value(TensorType type);

  // Stable text dump, used by golden tests and `explain --graph`.
  std::string str() const;

  std::vector<Input> inputs;
  std::vector<Weight> weights;
  std::vector<Node> nodes;
  std::vector<ValueId> outputs;
  OutputTree output_tree;
  std::vector<InputUpdate> input_updates;  // their outputs come last in `outputs`
  // The input holding the random generator's state, i64[2] = (seed, offset), read by the
  // Random ops; -1 when the graph draws no random numbers. Not an input of the Python call:
  // the runtime fills it on every call (a new offset each time).
  int rng_input = -1;
  // How many outputs the output tree's leaves use (all but the input updates').
  size_t num_result_outputs() const { return outputs.size() - input_updates.size(); }
  std::map<std::string, SymRange> symbols;

 private:
  std::vector<TensorType> types_;
};

// The graph's symbols at the ends of their ranges.
SymBindings max_bindings(const Graph& g);
SymBindings min_bindings(const Graph& g);

// Checks SSA, operand definedness, arities and that recorded types match the op rules.
// internal_error on violation (it runs between passes: a failure is a compiler bug).
void verify(const Graph&);

// ---------------------------------------------------------------------------------------------
// Guards and assumptions (DESIGN §2).
struct Guard {
  enum class Kind : uint8_t {
    Rank,        // rank(input) == value
    DType,       // dtype(input) == dtype
    Device,      // device(input) == device
    DimEq,       // size(input, dim) == value
    DimRange,    // value <= size(input, dim) <= value2
    DimMultiple, // size(input, dim) % value == 0
    DimsEqual,   // size(input, dim) == size(other_input, other_dim)
    Contiguous,  // input is row-major contiguous
    ValueEq,     // a 0-d input (a Python int, float or bool argument) holds `scalar`
    // A key-padding mask [B, T] (nonzero = padded) whose rows each hold their padding at the end
    // and of which some row has none: where torch 1.13's nested-tensor path keeps the length T.
    PaddingMask,
  };
  Kind kind = Kind::Rank;
  int input = 0;
  int dim = 0;
  int64_t value = 0;
  int64_t value2 = 0;
  int other_input = 0;
  int other_dim = 0;
  DType dtype = DType::f32;
  Device device;
  double scalar = 0;         // ValueEq: the value (dtype says int64, float64 or bool)
  std::string source;        // the tensor's source: "L['x']"
  std::string other_source;  // DimsEqual: the other tensor's source, "L['y']"
  std::string symbol;        // DimRange, DimMultiple, DimsEqual of a dynamic dim: its name ("seq")
  SourceLoc origin;    // where the specialisation happened (user file:line), if any

  std::string str() const;  // "L['x'].size()[0] == 8"
};

// The counter-based generator of OpKind::Random (op_random.cpp), shared by the reference and
// every backend: Philox4x32-10 (Salmon et al., SC'11) with key (seed low, seed high) and counter
// (i low, i high, stream, offset low). Uniform: the first word's top 24 bits / 2^24, in [0, 1).
// Normal: Box-Muller on the first two words, sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1].
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;
void philox4x32(uint32_t counter[4], uint32_t key[2]);  // in place: counter becomes the output
double philox_sample(int64_t seed, int64_t offset, int64_t stream, int64_t index, bool normal);

// A Python int, float or bool as repr() writes it: "3", "0.5", "2.0", "True" (dtype: i64, f64
// or b8; the others as their category).
std::string python_scalar_repr(double value, DType dtype);

// A fact about Python state read at compile time; verified while compiling.
struct Assumption {
  std::string text;  // "L['self'].training == False"
  SourceLoc origin;
};

// ---------------------------------------------------------------------------------------------
// Execution plan: what lowering produces for one variant and the bundle stores (DESIGN §4-5).
// Kernels follow the calling convention of artifacts/runtime/aotrace_kernel_abi.h:
//   void kernel(void* const* buffers, const int64_t* symbols, const aotrace_kernel_ctx* ctx)
struct PlanBuffer {
  enum class Kind : uint8_t { Input, Output, Weight, Arena };
  Kind kind = Kind::Arena;
  int64_t index = 0;       // Input/Output: position; Weight: index into Graph::weights
  int64_t offset = 0;      // Arena: byte offset, 64-byte aligned
  int64_t size_bytes = 0;
};

struct KernelCall {
  std::string symbol;            // exported symbol in the CPU library
  std::vector<int32_t> buffers;  // indices into ExecutionPlan::buffers, in argument order
  // What it computes, for profiles: "conv f32[1, 64, 56, 56] <- f32[1, 64, 56, 56], f32[64, 64, 3, 3]
  // + add, relu (model.py:12)".
  std::string what;
  // The nodes of the lowered graph it computes (lowering::LoweredVariant::graph), in graph
  // order: for compile --report (not stored in the bundle).
  std::vector<int32_t> nodes{};
  // CUDA kernels: the threads a launch covers (one per task; a SymExpr of the variant's
  // symbols) in blocks of `block`; 0 for CPU kernels.
  SymExpr threads = 0;
  int32_t block = 0;
};

struct ExecutionPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<KernelCall> calls;  // in order
  int64_t arena_bytes = 0;        // the memory plan's peak (dynamic dims: at their maxima)
  int64_t arena_bytes_at_min = 0; // the same plan's peak with the dynamic dims at their minima
};

// ---------------------------------------------------------------------------------------------
// Reference interpreter.
struct HostTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  Bytes data;  // contiguous, row-major

  int64_t numel() const;
  static HostTensor zeros(DType dtype, std::vector<int64_t> shape);
  static HostTensor from_f32(std::vector<int64_t> shape, const std::vector<float>& values);
  double get(int64_t linear_index) const;     // converted to double
  void set(int64_t linear_index, double v);   // converted from double
};

// IEEE half and bfloat16 conversions (round to nearest even), used by HostTensor get/set.
float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);

// Runs the graph with the op reference implementations (composites through their
// decompositions). Symbols are bound from the input shapes.
std::vector<HostTensor> evaluate(const Graph&, std::span<const HostTensor> inputs);

}  // namespace aotrace::ir

// embed/ — capture (DESIGN §2): the embedded CPython 3.11, the PEP 523 frame hook and the
// Translator, a symbolic interpreter of CPython 3.11 bytecode that turns a model's entry
// function into an ir::Graph plus guards, assumptions and graph breaks.
//
// Python headers appear only in embed/*.cpp; this header is plain C++.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace aotrace::embed {

// One input of the entry with its concrete profile shape: a tensor, or a Python scalar (an
// int, float or bool, dtype i64, f64 or b8, shape []) whose value is compiled in and guarded.
struct CaptureInput {
  std::string name;
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;  // the example tensor's (a dynamic dim: its example size)
  SourceLoc origin;  // where the shape was declared (the YAML), for guard provenance
  bool scalar = false;
  double value = 0;  // scalar: its value
  // Dims traced as symbols (DESIGN §6): inputs naming the same dim share its symbol.
  struct DynamicDim {
    int dim = 0;
    std::string symbol;   // the dim's name in the YAML ("seq")
    ir::SymRange range;
    SourceLoc declared;   // where the YAML declares the dim
  };
  std::vector<DynamicDim> dynamic;
  bool on_cuda = false;  // `device: cuda`: a device guard (the example tensor stays on the CPU)
  SourceLoc device_origin;  // where the YAML says `device: cuda`
};

// Thrown by capture when a Python branch depends on a dynamic dim the range does not decide
// (`if T > 64:`): the range splits at the condition into `parts`, each captured on its own.
struct RangeSplit {
  std::string symbol;
  std::vector<ir::SymRange> parts;
  std::string condition;  // "seq > 64"
  SourceLoc loc;          // the user's line
};

// How the entry's arguments are built from the inputs: an input (a tensor, or a Python scalar
// passed as a 0-d tensor of its dtype), or a tuple, list or dict of arguments. The inputs are
// its leaves, depth first.
struct CaptureArg {
  enum class Kind : uint8_t { Tensor, Scalar, Tuple, List, Dict };
  Kind kind = Kind::Tensor;
  std::string key;  // parameter name (top level) or dict key
  int input = -1;   // Tensor, Scalar: index into the inputs
  std::vector<CaptureArg> items;
};
// Each input its own positional argument (the default structure).
std::vector<CaptureArg> one_argument_per_input(const std::vector<CaptureInput>& inputs);

struct GraphBreak {
  std::string category;  // "data-dependent control flow", "tensor value read (.item())", …
  std::string reason;
  std::string hint;
  std::vector<SourceLoc> user_stack;  // outermost first; each with file, line, function
};

// A real (eager) call of the entry: the tensors it was given, exactly as passed (dtype, shape,
// contiguous, in CaptureInput order), and its outputs flattened like Graph::outputs (the
// leaves of Graph::output_tree: depth first through tuples, lists and dict values; then the
// inputs it updated in place, Graph::input_updates, as it left them).
struct EagerCall {
  std::vector<ir::HostTensor> inputs;
  std::vector<ir::HostTensor> outputs;
  bool has_outputs = false;  // false: the outputs could not be matched to the graph's
  // The float16/bfloat16 ops torch's CPU build lacks, which the call ran widened to float32 and
  // rounded back (as a GPU computes them): "layer_norm", "linear", …
  std::vector<std::string> widened;
};

struct Capture {
  ir::Graph graph;  // the graph up to the first break (the whole program when none)
  // Every graph, in order: graph_count = graphs.size() = breaks.size() + 1 when the capture
  // could continue past each break (it runs the breaking region for real; see translator.h),
  // fewer when it had to stop. graphs.front() is `graph`.
  std::vector<ir::Graph> graphs;
  std::vector<ir::Guard> guards;
  std::vector<ir::Assumption> assumptions;
  std::vector<GraphBreak> breaks;
  // The entry's real call on the example inputs (the frame hook lets the frame run after
  // tracing it). Outputs only when there was no graph break, so that `graph` is the whole call.
  EagerCall example;
  std::vector<CaptureArg> arguments;  // how the call's arguments were built from the inputs
  double seconds = 0;
};

// The embedded interpreter: one per process, created on first use, never finalised
// (torch does not support re-initialisation). Not thread-safe: capture is single-threaded.
class Interpreter {
 public:
  static Interpreter& instance();

  // Runs `script` as module "__aotrace_main__" with its folder first on sys.path. The
  // namespace stays alive for evaluate/capture. user_error with the Python traceback's
  // innermost user file:line when the script raises.
  void run_script(const std::filesystem::path& script);
  // From now on the scripts' print() (sys.stdout) writes to stderr: for commands whose stdout
  // is a report (explain), so that the model's output never mixes into it.
  void send_prints_to_stderr();
  // Every file of the user's that this process read through Python so far, sorted, absolute:
  // the script, the modules it imported and the files it opened for reading (weights, data),
  // without the Python installation's and the system's files (the rule: embed/files_read.cpp).
  // For depfiles and the compile cache's key.
  std::vector<std::filesystem::path> files_read();

  // Captures one call of `call_expr` (evaluated in the script's namespace: an nn.Module, whose
  // forward is traced in eval mode under no_grad, or a function) for inputs of these shapes.
  // `arguments` builds the call's arguments from the inputs (empty: one per input).
  Capture capture(const std::string& call_expr, const std::vector<CaptureInput>& inputs,
                  std::vector<CaptureArg> arguments = {});

  // The golden vectors of a capture without graph breaks, from torch eager: its example call,
  // except that integer inputs (zeros in the capture: the one value valid for every use of an
  // integer tensor, e.g. an index into a dim of any size) get small values in [0, 4) when the
  // entry accepts them; when eager raises on those, the zeros stay. Torch runs on one thread
  // here and in the capture, so that the outputs do not depend on the machine's core count.
  EagerCall golden_call(const std::string& call_expr, const Capture& capture);

  // Runs the call for real with torch (eager) on the given inputs; returns the flattened outputs
  // then, for each of `updates` (a graph's input_updates), the input as the call left it: the
  // order of Graph::outputs.
  // A scalar input is given as a 0-d tensor of its dtype and passed as a Python scalar.
  std::vector<ir::HostTensor> run_eager(const std::string& call_expr,
                                        const std::vector<ir::HostTensor>& inputs,
                                        const std::vector<ir::InputUpdate>& updates = {},
                                        const std::vector<CaptureArg>& arguments = {});

  // The callables of the torch op table that bind no signature from torch, because torch
  // parses their arguments by hand too (Tensor.to, indexing): their builders do the same. Every
  // other torch call binds through torch's schemas or Python signature (embed/torch_schema.cpp).
  std::vector<std::string> torch_callables_parsed_by_hand();

  // `aotrace profiles init`: the script's candidate entries and, for `call_expr` (empty: the
  // last nn.Module the script defines, else its last function), forward's parameters and the
  // inputs inferred from the model, as one JSON object (embed/survey.cpp). After run_script.
  std::string survey_entries(const std::string& call_expr);

  // `aotrace profiles record`: runs `driver` (after run_script ran the spec's script) with a
  // hook on the code of `call_expr`'s entry; returns every call's arguments named `parameters`
  // (flattened as the bundle's inputs: NAME.i, NAME.key) as a JSON list of {name: {dtype,
  // shape}} (embed/record.cpp).
  std::string record_calls(const std::string& call_expr, const std::vector<std::string>& parameters,
                           const std::filesystem::path& driver);

  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

 private:
  Interpreter();
};

}  // namespace aotrace::embed

// Private to embed/: the Translator, a symbolic interpreter of CPython 3.11 bytecode.
//
// One handler per opcode (opcodes_*.cpp), registered in one table (opcode_table.cpp). User
// functions and module forwards are inlined as nested Frames; Python that does not touch
// tensors runs for real (ConstVar). Anything it cannot express in the graph raises a GraphBreak.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "embed/embed.h"
#include "embed/variables.h"

namespace aotrace::embed {

// Thrown by handlers; caught by Translator::translate_entry, which records it with the stack.
struct GraphBreakSignal {
  std::string category, reason, hint;
};

// One entry of a code object's exception table (co_exceptiontable, CPython 3.11): an exception
// raised by an instruction in [start, end) (byte offsets) unwinds the stack to `depth`, pushes
// the raising offset when `lasti`, then the exception, and continues at `target`.
struct ExceptionEntry {
  int start = 0, end = 0, target = 0, depth = 0;
  bool lasti = false;
};

struct Frame;
// A Python exception raised in traced code on its way to the handler of `frame` (a try block
// covering the frame's current instruction); caught by that frame's run loop.
struct PythonRaise {
  PyRef exc;
  Frame* frame;
  ExceptionEntry handler;
  int offset;  // of the instruction that raised (or called what raised), in `frame`
};

struct Instruction {
  int opcode = 0;
  int arg = 0;
  int offset = 0;       // in bytes, of the opcode (after any EXTENDED_ARG prefixes)
  int next_offset = 0;  // in bytes, after inline caches
};

// The decoded bytecode of one code object, shared by every frame running it.
struct Bytecode {
  std::vector<ExceptionEntry> exception_table;
  const ExceptionEntry* handler_at(int offset) const;  // null: no try block covers it
  PyRef code;
  std::vector<Instruction> instructions;
  std::map<int, size_t> index_of_offset;  // byte offset -> instruction index
  std::string filename, function;
  PyRef consts, names;                       // co_consts, co_names
  std::vector<std::string> localsplus_names; // locals, then new cells, then free vars
  int num_free = 0;
  size_t index_at(int offset) const;  // internal_error when not an instruction start
};

struct Frame {
  const Bytecode* bytecode = nullptr;
  PyRef function;                 // the Python function being run (closure, defaults)
  PyRef globals, builtins;
  std::vector<VarRef> locals;     // co_localsplusnames order (locals, cells, free vars)
  std::vector<VarRef> stack;
  size_t pc = 0;                  // index into bytecode->instructions
  PyRef kw_names;                 // set by KW_NAMES for the next CALL
  const std::vector<VarRef>* closure = nullptr;  // for COPY_FREE_VARS
  VarRef return_value;
  bool returned = false;
  int line = 0;
  std::vector<VarRef>* yields = nullptr;  // a generator's frame: YIELD_VALUE appends here

  VarRef pop();
  VarRef& top(int depth = 0);  // depth 0: top of stack
  void push(VarRef v) { stack.push_back(std::move(v)); }
  std::vector<VarRef> pop_n(size_t n);  // in push order
};

class Translator;
using OpcodeHandler = void (*)(Translator&, Frame&, const Instruction&);

class Translator {
 public:
  explicit Translator(Capture& out);

  // Translates the entry call: `fn` is the Python function (for a module, type(m).forward),
  // `args` its positional arguments as variables (self first for a module). After a graph
  // break it keeps going when example inputs were given (add_input): it evaluates the graph so
  // far on them, runs the breaking instruction of the entry frame for real and resumes tracing
  // with a new graph (resume.cpp), so that every break is reported, like torch._dynamo.explain.
  VarRef translate_entry(PyObject* fn, std::vector<VarRef> args,
                         std::vector<std::pair<std::string, VarRef>> kwargs = {});

  ir::Graph& graph() { return out_.graph; }
  Capture& capture() { return out_; }
  SourceLoc loc() const;  // the user's current file:line (innermost frame)

  [[noreturn]] void graph_break(std::string category, std::string reason, std::string hint = {});
  // Raises the Python exception `exc` in the traced code: to the innermost frame whose try
  // block covers its current instruction; with none, it is a graph break (category "python
  // exception") or, for `raise` statements, a user error, with `reason` and `hint`.
  [[noreturn]] void raise_python(PyRef exc, std::string reason, std::string hint, bool user_error_if_uncaught = false);
  // The pending Python error (PyErr) raised in the traced code, with `what` raised it.
  [[noreturn]] void raise_pending(const std::string& what, std::string hint = {});
  // Whether the current instruction of some frame is covered by a try block.
  bool in_try_block() const;
  // The exception being handled (`except` blocks: PUSH_EXC_INFO / POP_EXCEPT), for bare `raise`.
  PyRef handled_exception;

  // Calls a variable: torch ops add nodes, user functions and modules are inlined, builtins are
  // evaluated symbolically, and constant callables on constant arguments run for real.
  VarRef call(const VarRef& fn, std::vector<VarRef> args,
              std::vector<std::pair<std::string, VarRef>> kwargs);
  // super() without arguments in the current frame.
  VarRef zero_argument_super();
  // `closure`: cells of a function made by MAKE_FUNCTION in traced code (else fn.__closure__).
  VarRef call_module(const VarRef& fn, std::vector<VarRef> args, std::vector<std::pair<std::string, VarRef>> kwargs);
  VarRef call_python_object(PyObject* obj, const std::vector<VarRef>& args,
                            const std::vector<std::pair<std::string, VarRef>>& kwargs);
  VarRef inline_function(PyObject* fn, std::vector<VarRef> args,
                         std::vector<std::pair<std::string, VarRef>> kwargs,
                         const std::vector<VarRef>* closure = nullptr);

  // A Python object from outside the traced code as a variable (tensors become weights).
  VarRef wrap(PyObject* obj, const Source& source);
  VarRef constant(PyObject* obj, const Source& source = {});  // borrows obj
  VarRef attribute(const VarRef& obj, const std::string& name);
  // `module.name = value` in traced code (word_language_model caches self.src_mask): later reads
  // in this capture see `value`; the module itself is left as it is, and an assumption says that
  // every call of the bundle runs as this one did, from the attribute's value at compile time.
  void store_module_attribute(const VarRef& module, const std::string& name, VarRef value);
  // The value traced code assigned to `module`.`name`; null when it assigned none.
  VarRef module_attribute_written(PyObject* module, const std::string& name) const;
  VarRef subscript(const VarRef& obj, const VarRef& index);
  VarRef binary_op(const std::string& op, const VarRef& a, const VarRef& b);
  // Python truth of a variable (branches); graph break on tensors.
  bool truth(const VarRef& v);
  // The Python object of a compile-time value (ConstVar, SymIntVar, sequences of them); null
  // when the variable holds a tensor.
  PyRef to_python(const VarRef& v);
  VarRef iterate(const VarRef& v);
  // The Python function a FunctionVar runs for real: f.fn, or for one made by MAKE_FUNCTION in
  // traced code a copy whose cells hold the real values of its CellVars (null when one holds a
  // tensor of the graph).
  PyRef real_function(const FunctionVar& f);

  // The Python value of a one-element weight (a parameter, buffer or global tensor, unchanged
  // by the trace) read as x.item(), int(x), float(x) or bool(x): weights are constant in a
  // bundle, so it is read at compile time, as an assumption on its source. Null otherwise.
  PyRef weight_item(const VarRef& v);
  // Shape specialisation: marks the guard of an input dim as created here (user file:line).
  void note_specialisation(const SymIntVar& v);
  VarRef compare_sizes(const std::string& op, const ir::SymExpr& a, const ir::SymExpr& b);
  void add_assumption(const std::string& text);
  // Before a change to a container: one from outside the traced code (a global list, a module's
  // list attribute) is changed only in the capture, which an assumption records.
  void note_mutation(const VarRef& container);
  // The entry's module: its named parameters and buffers name the weights.
  void set_root_module(PyObject* module);

  // A tensor input of the entry; `example` (borrowed, may be null) is the real tensor the entry
  // is called with, used to run the program on after a graph break.
  VarRef add_input(const CaptureInput& input, int index, const Source& source,
                   PyObject* example = nullptr);
  // A Python int, float or bool input: a constant of the trace, a 0-d graph input that no op
  // reads, guarded at run time to hold the value it was compiled for.
  VarRef add_scalar_input(const CaptureInput& input, int index, const Source& source, PyObject* example);
  // The graph's random generator state (Graph::rng_input), made on first use, and a new stream
  // number for each Random op.
  ir::ValueId rng_state();
  int64_t next_random_stream() { return random_streams_++; }
  // Whether `v` is the variable of a tensor input of the entry (add_input) in the first graph:
  // an in-place update of it is written back to the caller (Graph::input_updates).
  bool is_entry_input(const VarRef& v) const;
  // Whether tracing resumed after a graph break (explain): the current graph is not the first.
  bool resumed() const { return !out_.graphs.empty(); }

  // True while an instruction is run for real after a graph break: calls run in Python and
  // tensors are plain values (ConstVar).
  bool eager() const { return eager_; }
  // Truth of a compile-time value that decides the trace: recorded as an assumption on its
  // source (G['USE_GELU'] == True, L['self'].cfg.use_tanh == True).
  void note_constant_use(const VarRef& v);
  // A float from outside the traced code folded into the graph (x * self.scale, eps=self.eps):
  // recorded as an assumption, as note_constant_use does for the values that decide branches.
  void note_float_use(const VarRef& v);

 private:
  VarRef run(Frame& frame);
  void step(Frame& frame);
  // A frame for `fn` with its arguments bound (defaults, *args, **kwargs, closure).
  void bind_frame(Frame& f, PyObject* fn, std::vector<VarRef> args,
                  std::vector<std::pair<std::string, VarRef>> kwargs,
                  const std::vector<VarRef>* closure);
  const Bytecode& bytecode_of(PyObject* code);
  VarRef weight_for(PyObject* tensor, const Source& source);
  VarRef call_eager(const VarRef& fn, std::vector<VarRef> args,
                    std::vector<std::pair<std::string, VarRef>> kwargs);
  // resume.cpp: the graph-break continuation.
  bool resume_after_break(Frame& entry);
  // Whether a break can be resumed: every input of the current graph has its real tensor.
  bool can_resume() const;
  void save_entry_containers(Frame& entry);
  void restore_entry_containers();
  void finish_graph(const VarRef& result);

  Capture& out_;
  std::vector<Frame*> frames_;
  std::map<PyObject*, std::unique_ptr<Bytecode>> bytecode_cache_;
  std::map<PyObject*, ir::ValueId> weights_by_tensor_;  // tied parameters are stored once
  std::map<PyObject*, VarRef> external_containers_;  // lists and dicts from outside, each one variable (kept alive by it)
  // The entry module's parameter and buffer names by tensor ("layers.2.weight"): a weight's
  // name, however the code reached it (self.layers[1:][1].weight).
  std::map<PyObject*, std::string> parameter_names_;
  std::vector<PyRef> named_tensors_;  // keeps parameter_names_' keys alive
  std::vector<PyRef> keep_alive_;
  int inline_depth_ = 0;
  bool eager_ = false;
  // The entry frame and its state before the instruction being run (for resuming).
  Frame* entry_ = nullptr;
  std::vector<VarRef> entry_stack_before_;
  PyRef entry_kw_names_before_;
  size_t entry_pc_before_ = 0;
  struct SavedContainer {
    VarRef container;
    std::vector<VarRef> items;  // a sequence's or iterator's items, a dict's values
    std::vector<PyRef> keys;    // a dict's keys
    size_t next;                // an iterator's position
  };
  std::vector<SavedContainer> entry_containers_before_;
  std::map<std::pair<PyObject*, std::string>, VarRef> module_attribute_writes_;
  std::vector<PyRef> input_values_;  // real tensors of the current graph's inputs (null: none)
  // The variables of the entry's tensor inputs in the first graph, with their graph input index.
  std::vector<std::pair<int, VarRef>> input_vars_;
  // The input dim that binds each symbol (its first use), for the guards of later uses.
  struct SymbolDim {
    int input = 0, dim = 0;
    std::string source;
  };
  std::map<std::string, SymbolDim> symbol_dims_;
  int64_t random_streams_ = 0;
};

// Builtins evaluated symbolically (builtins.cpp).
VarRef call_builtin(Translator&, const VarRef& fn, std::vector<VarRef> args,
                    std::vector<std::pair<std::string, VarRef>> kwargs);
bool is_symbolic_builtin(PyObject* obj);
// The name a symbolic callable is handled by ("len", "itertools.chain", "operator.add").
std::string symbolic_builtin_name(PyObject* obj);

// Containers (containers.cpp): methods of lists, dicts, ModuleDict/ModuleList and the few
// Tensor methods evaluated on shapes (numel); null when `name` is not one of them.
VarRef container_method(Translator&, const VarRef& obj, const std::string& name);
VarRef call_container_method(Translator&, const ContainerMethodVar& m, std::vector<VarRef> args,
                             std::vector<std::pair<std::string, VarRef>> kwargs);
// A DictVar's items as (key, value) tuples, its keys or its values.
std::vector<VarRef> dict_items(Translator&, const DictVar& d, const std::string& which);
// `items` in the order of sorted(items, **kwargs) (key=, reverse=): stable, keys compared as
// Python compares them (a key that is a tensor is a graph break).
std::vector<VarRef> sorted_items(Translator&, std::vector<VarRef> items,
                                 const std::vector<std::pair<std::string, VarRef>>& kwargs);
// The index of the first item equal to `x` (a tensor: the same tensor), or -1.
int find_item(Translator&, const std::vector<VarRef>& items, const VarRef& x);
// True when `o` is an instance of module.cls (e.g. "torch.nn", "ModuleDict").
bool is_instance_of(PyObject* o, const char* module, const char* cls);
// The forward pre-hooks (`pre`) or forward hooks nn.Module.__call__ runs for `module`, global
// ones first, in registration order; and its instance attribute `forward` (borrowed; null: none).
std::vector<PyRef> forward_hooks(PyObject* module, bool pre);
PyObject* instance_forward(PyObject* module);
// Whether a module iterates as torch's Sequential/ModuleList/ParameterList (items by position).
bool indexed_container(PyObject* module);
PyRef builtin_object(const char* name);
bool is_autograd_function(PyObject* cls);  // a subclass of torch.autograd.Function  // builtins.NAME (borrowed into a PyRef)

// The opcode table (opcode_table.cpp): handler for a CPython 3.11 opcode, or null.
OpcodeHandler opcode_handler(int opcode);
std::string opcode_name(int opcode);
int inline_cache_entries(int opcode);
int opcode_number(const char* name);  // -1 when unknown

}  // namespace aotrace::embed

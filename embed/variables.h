// Private to embed/: the Translator's values (DESIGN §2). Each variable that came from outside
// the traced frame carries a Source, printed in Dynamo's notation (L['x'], L['self'].fc1.weight).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "embed/py.h"
#include "ir/ir.h"

namespace aotrace::embed {

class Source {
 public:
  Source() = default;
  static Source local(const std::string& name) { return Source("L['" + name + "']"); }
  static Source global(const std::string& name) { return Source("G['" + name + "']"); }
  Source attr(const std::string& name) const { return derive("." + name); }
  Source item(int64_t index) const { return derive("[" + std::to_string(index) + "]"); }
  Source item(const std::string& key) const { return derive("['" + key + "']"); }
  Source sliced(const std::string& slice) const { return derive("[" + slice + "]"); }  // "1:", "::2"
  Source size(int dim) const { return derive(".size()[" + std::to_string(dim) + "]"); }
  Source call(const std::string& method) const { return derive("." + method + "()"); }
  bool empty() const { return text_.empty(); }
  const std::string& str() const { return text_; }

 private:
  explicit Source(std::string t) : text_(std::move(t)) {}
  Source derive(const std::string& suffix) const { return empty() ? Source() : Source(text_ + suffix); }
  std::string text_;
};

struct Var;
using VarRef = std::shared_ptr<Var>;
using Kwargs = std::vector<std::pair<std::string, VarRef>>;
struct TorchOp;
class Translator;

// A value of the traced program. Each kind of value has its own Python behaviour, as Dynamo's
// VariableTrackers do: the Translator asks the value (`x.name` is x->getattr(t, "name")) rather
// than testing what it is. The defaults treat a value as its Python object (as_python), run for
// real at compile time; values.cpp defines them and each kind's own, translator.cpp the calls.
struct Var : std::enable_shared_from_this<Var> {
  explicit Var(Source s = {}) : source(std::move(s)) {}
  virtual ~Var() = default;
  virtual std::string describe() const = 0;  // for messages: "tensor f32[8, 784]", "int 3"
  // The Python object of a compile-time value; null when there is none (a tensor of the graph).
  virtual PyRef as_python(Translator&);
  virtual VarRef getattr(Translator&, const std::string& name);   // self.name
  virtual void setattr(Translator&, const std::string& name, VarRef value);  // self.name = value
  virtual VarRef getitem(Translator&, const VarRef& index);       // self[index]
  virtual VarRef iterate(Translator&);                            // iter(self): an IteratorVar
  virtual VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs);  // self(...)
  virtual bool truth(Translator&);  // bool(self)
  virtual VarRef len(Translator&);  // len(self); null: Python's len of the Python object
  // type(self) as Python sees it; null: the type of the Python object.
  virtual PyRef python_type(Translator&) { return {}; }
  VarRef self() { return shared_from_this(); }
  Source source;
};

// The NULL that LOAD_GLOBAL / LOAD_METHOD / PUSH_NULL put below a callable.
struct NullVar : Var {
  std::string describe() const override { return "NULL"; }
};

// Any Python object evaluated for real at compile time.
struct ConstVar : Var {
  ConstVar(PyRef o, Source s) : Var(std::move(s)), obj(std::move(o)) {}
  std::string describe() const override;
  PyRef as_python(Translator&) override { return obj; }
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;  // run for real
  PyRef obj;
};

// The variables that share one tensor's memory (a tensor and its views), as far as capture
// knows: an in-place update of one must be seen by the others.
struct AliasSet {
  std::vector<std::weak_ptr<Var>> members;
};

struct TensorVar : Var {
  TensorVar(ir::ValueId v, Source s = {}) : Var(std::move(s)), value(v) {}
  std::string describe() const override { return "tensor"; }
  PyRef as_python(Translator&) override { return {}; }
  VarRef getattr(Translator&, const std::string& name) override;  // x.shape, x.view
  VarRef getitem(Translator&, const VarRef& index) override;      // Tensor.__getitem__
  VarRef iterate(Translator&) override;                           // over the first dim
  bool truth(Translator&) override;  // a graph break: the value is unknown
  VarRef len(Translator&) override;  // its first dim
  PyRef python_type(Translator&) override;
  ir::ValueId value;
  std::shared_ptr<AliasSet> aliases;  // null: no known view shares its memory
  // Set for a view that is always one (x[0], x.view(...), x.T, a split of x): its base, and
  // the same view taken of another tensor of the base's shape, so that an in-place update
  // through the view or its base can be carried to the other (ops::inplace).
  struct View {
    // The tensor it is a view of, never itself a view: a view of a view records the view
    // composed of both (x.t()[0] is a view of x). Expired: this view is its own root.
    std::weak_ptr<Var> base;
    std::function<VarRef(Translator&, const VarRef& base)> of;
    // The same view taken for real (torch) of a real tensor; null when it cannot be.
    std::function<PyRef(Translator&, PyObject* base)> of_real;
  };
  std::shared_ptr<const View> view;
};

// A shape value: x.shape[i] and arithmetic on it. `input`/`dim` say which input dim it is,
// so that a specialisation on it can be attributed to the user's line.
struct SymIntVar : Var {
  SymIntVar(ir::SymExpr e, Source s = {}, int input = -1, int dim = -1)
      : Var(std::move(s)), expr(std::move(e)), input(input), dim(dim) {}
  std::string describe() const override { return "shape value " + expr.str(); }
  PyRef as_python(Translator&) override;  // the int it is (specialises it)
  ir::SymExpr expr;
  int input, dim;
};

// tuple, list and torch.Size.
struct SequenceVar : Var {
  enum class Kind : uint8_t { Tuple, List, Size };
  SequenceVar(Kind k, std::vector<VarRef> i, Source s = {})
      : Var(std::move(s)), kind(k), items(std::move(i)) {}
  std::string describe() const override;
  PyRef as_python(Translator&) override;
  VarRef getattr(Translator&, const std::string& name) override;  // a named tuple's fields
  VarRef getitem(Translator&, const VarRef& index) override;
  VarRef iterate(Translator&) override;
  bool truth(Translator&) override { return !items.empty(); }
  VarRef len(Translator&) override;
  PyRef python_type(Translator&) override;
  Kind kind;
  std::vector<VarRef> items;
  std::vector<std::string> fields;  // a named tuple's (torch.return_types): item i is attribute fields[i]
  PyRef external;  // the list from outside the traced code that this one stands for (one variable each)
};

struct IteratorVar : Var {
  explicit IteratorVar(std::vector<VarRef> i = {}) : items(std::move(i)) {}
  std::string describe() const override { return "iterator"; }
  PyRef as_python(Translator&) override;
  VarRef iterate(Translator&) override;  // itself, from where it is
  PyRef python_type(Translator&) override;
  std::vector<VarRef> items;
  size_t next = 0;
  VarRef returned;  // a generator's return value (`r = yield from gen`); null: None
};

struct SliceVar : Var {
  SliceVar(VarRef a, VarRef b, VarRef c)
      : start(std::move(a)), stop(std::move(b)), step(std::move(c)) {}
  std::string describe() const override { return "slice"; }
  PyRef as_python(Translator&) override;
  VarRef start, stop, step;  // ConstVar None when absent
};

// An nn.Module: calling it inlines its forward; parameters and buffers become weights.
struct ModuleVar : Var {
  ModuleVar(PyRef m, Source s) : Var(std::move(s)), module(std::move(m)) {}
  std::string describe() const override;
  PyRef as_python(Translator&) override { return module; }
  VarRef getattr(Translator&, const std::string& name) override;  // CPython's lookup order
  void setattr(Translator&, const std::string& name, VarRef value) override;  // store_module_attribute
  VarRef getitem(Translator&, const VarRef& index) override;      // Sequential[i], ModuleDict[k]
  VarRef iterate(Translator&) override;                           // its own __iter__
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;  // hooks and forward
  VarRef len(Translator&) override;  // its own __len__
  PyRef module;
};

// A user Python function (inlined), optionally bound to `self`.
struct FunctionVar : Var {
  FunctionVar(PyRef f, VarRef self_, Source s) : Var(std::move(s)), fn(std::move(f)), self(std::move(self_)) {}
  std::string describe() const override;
  PyRef as_python(Translator&) override;
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;  // inlined
  PyRef fn;
  VarRef self;                  // null for plain functions
  std::vector<VarRef> closure;  // CellVars, for functions made in traced code (MAKE_FUNCTION)
  bool traced_closure = false;
};

// A torch callable known to the op table; `self` set for tensor methods (x.view).
struct TorchFnVar : Var {
  TorchFnVar(const TorchOp* o, VarRef self_, std::string n, PyRef py = {})
      : op(o), self(std::move(self_)), name(std::move(n)), obj(std::move(py)) {}
  std::string describe() const override { return "torch callable " + name; }
  PyRef as_python(Translator&) override;
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;  // graph nodes
  const TorchOp* op;
  VarRef self;
  std::string name;
  PyRef obj;  // the Python callable when known (runs it for real after a graph break)
};

// A dict whose values may be tensors: keys are compile-time Python objects, in insertion order.
struct DictVar : Var {
  explicit DictVar(Source s = {}) : Var(std::move(s)) {}
  std::string describe() const override;
  PyRef as_python(Translator&) override;
  VarRef getattr(Translator&, const std::string& name) override;  // a dataclass's fields
  void setattr(Translator&, const std::string& name, VarRef value) override;  // an object's, a field
  VarRef getitem(Translator&, const VarRef& index) override;
  VarRef iterate(Translator&) override;                           // its keys
  bool truth(Translator&) override { return !keys.empty(); }
  VarRef len(Translator&) override;
  PyRef python_type(Translator&) override;  // dict, or the dataclass
  std::vector<PyRef> keys;
  std::vector<VarRef> values;
  // Set for an instance of a dataclass built in traced code: its fields by name, in order
  // (read as attributes; output as a dict of them).
  PyRef dataclass;
  // With `dataclass` set: an instance of a plain Python class of the user's, built in traced
  // code (its __init__ inlined); the dict is its __dict__, and any attribute can be stored.
  bool instance = false;
  PyRef external;  // the dict from outside the traced code that this one stands for (one variable each)
  int find(PyObject* key) const;  // index, or -1
  void set(PyRef key, VarRef value);
};

// A method of a container variable (list.append, dict.items, ModuleDict.values, Tensor.numel),
// evaluated by the Translator.
struct ContainerMethodVar : Var {
  ContainerMethodVar(VarRef s, std::string n) : self(std::move(s)), name(std::move(n)) {}
  std::string describe() const override { return "method " + name; }
  // The real method when `self` is a real object (a module, a tensor after a break); null for
  // the trace's own lists and dicts, whose copies a real method would change in vain.
  PyRef as_python(Translator&) override;
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;
  VarRef self;
  std::string name;
};

// super() / super(cls, self): attribute lookups start after `cls` in type(self).__mro__.
struct SuperVar : Var {
  SuperVar(PyRef c, VarRef s) : cls(std::move(c)), self(std::move(s)) {}
  std::string describe() const override { return "super()"; }
  VarRef getattr(Translator&, const std::string& name) override;  // after cls in the MRO
  PyRef cls;
  VarRef self;
};

// functools.partial(fn, *args, **kwargs).
struct PartialVar : Var {
  PartialVar(VarRef f, std::vector<VarRef> a, std::vector<std::pair<std::string, VarRef>> k)
      : fn(std::move(f)), args(std::move(a)), kwargs(std::move(k)) {}
  std::string describe() const override { return "functools.partial"; }
  PyRef as_python(Translator&) override;
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;
  VarRef fn;
  std::vector<VarRef> args;
  std::vector<std::pair<std::string, VarRef>> kwargs;
};

// A Python builtin evaluated symbolically (len, range, isinstance, getattr, …).
struct BuiltinVar : Var {
  BuiltinVar(PyRef f, std::string n, Source s) : Var(std::move(s)), fn(std::move(f)), name(std::move(n)) {}
  std::string describe() const override { return "builtin " + name; }
  PyRef as_python(Translator&) override { return fn; }
  VarRef call(Translator&, std::vector<VarRef> args, Kwargs kwargs) override;  // builtins.cpp
  PyRef fn;
  std::string name;
};

// A closure cell (MAKE_CELL / LOAD_DEREF / STORE_DEREF).
struct CellVar : Var {
  explicit CellVar(VarRef c) : contents(std::move(c)) {}
  std::string describe() const override { return "cell"; }
  VarRef contents;  // null: empty cell
};

template <class T>
T* as(const VarRef& v) {
  return dynamic_cast<T*>(v.get());
}

}  // namespace aotrace::embed

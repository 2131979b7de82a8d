// `aotrace profiles init` (issue 15): what a script offers as entries and what its chosen entry
// takes, surveyed in the script's namespace by a Python helper (below). The CLI turns the JSON
// into a commented spec (cli/profiles_init.cpp).
//
// The helper lists every nn.Module instance and every function the script defines, picks the
// entry (`--call`, else the last module defined, else the last function), reads forward's
// signature, and infers the first input from the model: a torchvision model's default
// 3×224×224; else the first of these in module order: Embedding (int64 token ids [batch, seq],
// seq from block_size / max_position_embeddings / n_positions, at most 128), MultiheadAttention
// ([batch, seq, embed_dim], batch_first honoured), Linear ([batch, in_features]), Conv1d/2d/3d
// ([batch, in_channels, ...] with guessed spatial sizes), LayerNorm ([batch, seq, d]). What it
// guessed is listed per input ("todo"). It then runs the entry in eager on those shapes (batch 2)
// and says whether it ran.
// Test: errors_tests Profiles.InitWritesSpecsThatCheckAccepts.
#include "embed/embed.h"
#include "embed/py.h"

namespace aotrace::embed {
namespace {

const char* const kSurveySource = R"PY(# aotrace profiles init: the script's candidate entries and, for the chosen one, its inputs.
import inspect, json, types
import torch
import torch.nn as nn

_SEQ_GUESS = 128

def _candidates(ns):
    out = []
    for name, obj in ns.items():
        if name.startswith("_"):
            continue
        if isinstance(obj, nn.Module):
            out.append({"name": name, "kind": "module", "class": type(obj).__name__,
                        "module": type(obj).__module__})
        elif isinstance(obj, types.FunctionType) and obj.__module__ == ns.get("__name__"):
            out.append({"name": name, "kind": "function", "class": "", "module": obj.__module__})
    return out

def _seq_bound(model):
    """A sequence length the model accepts: its positional table's size, or block_size."""
    for attr in ("block_size", "max_position_embeddings", "n_positions", "max_len"):
        for holder in (model, getattr(model, "config", None)):
            v = getattr(holder, attr, None) if holder is not None else None
            if isinstance(v, int) and v > 0:
                return v, f"{attr} = {v}"
    return None, ""

def _first_input(model):
    """dtype, shape (ints, or the names 'batch' / 'seq'), why, and what was guessed."""
    if type(model).__module__.startswith("torchvision.models"):
        conv = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
        c = conv.in_channels if conv is not None else 3
        return "float32", ["batch", c, 224, 224], f"torchvision {type(model).__name__}: its default {c}x224x224", []
    seq, seq_why = _seq_bound(model)
    for name, m in model.named_modules():
        if isinstance(m, nn.Embedding):
            return "int64", ["batch", "seq"], f"token ids of the first Embedding ({name}: {m.num_embeddings} ids)", \
                   ["seq"] if seq is None else []
        if isinstance(m, nn.MultiheadAttention):
            shape = ["batch", "seq", m.embed_dim] if m.batch_first else ["seq", "batch", m.embed_dim]
            return "float32", shape, f"the first attention ({name or type(m).__name__}: embed_dim {m.embed_dim}, batch_first {m.batch_first})", ["seq"]
        if isinstance(m, nn.Linear):
            return "float32", ["batch", m.in_features], f"the first Linear ({name}: in_features {m.in_features})", []
        if isinstance(m, (nn.Conv2d, nn.Conv1d, nn.Conv3d)):
            spatial = {nn.Conv1d: [_SEQ_GUESS], nn.Conv2d: [224, 224], nn.Conv3d: [16, 112, 112]}[type(m)]
            return "float32", ["batch", m.in_channels] + spatial, f"the first {type(m).__name__} ({name}: in_channels {m.in_channels})", ["spatial"]
        if isinstance(m, nn.LayerNorm):
            d = m.normalized_shape[-1]
            return "float32", ["batch", "seq", d], f"the first LayerNorm ({name}: normalized_shape {list(m.normalized_shape)})", ["seq"]
    return None

def _runs(obj, inputs, seq):
    """Whether the entry runs in eager on the guessed inputs (batch 2: a batch of 1 can hide a
    wrong batch dim), and the error when it does not."""
    args = []
    for i in inputs:
        shape = [2 if d == "batch" else seq if d == "seq" else d for d in i["shape"]]
        args.append(torch.zeros(shape, dtype=torch.int64) if i["dtype"] == "int64" else torch.randn(shape))
    was_training = obj.training if isinstance(obj, nn.Module) else None
    try:
        if isinstance(obj, nn.Module):
            obj.eval()
        with torch.no_grad():
            obj(*args)
        return True, ""
    except Exception as e:  # the user's code: anything may be raised
        return False, f"{type(e).__name__}: {e}".splitlines()[0][:300]
    finally:
        if was_training:
            obj.train()

def survey(ns, call):
    cands = _candidates(ns)
    if not call:
        modules = [c for c in cands if c["kind"] == "module"]
        pick = modules[-1] if modules else (cands[-1] if cands else None)  # the last one defined: the model
        if pick is None:
            return json.dumps({"candidates": cands, "error": "the script defines no nn.Module instance and no function"})
        call = pick["name"]
    obj = eval(call, ns)
    is_module = isinstance(obj, nn.Module)
    fn = obj.forward if is_module else obj
    if not callable(fn):
        return json.dumps({"candidates": cands, "call": call, "error": f"{call} is not callable"})
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        params.append({"name": p.name, "default": None if p.default is p.empty else repr(p.default),
                       "required": p.default is p.empty})
    first = _first_input(obj) if is_module else None
    seq, seq_why = _seq_bound(obj) if is_module else (None, "")
    inputs = []
    for i, p in enumerate(q for q in params if q["required"]):
        if i == 0 and first is not None:
            dtype, shape, why, todo = first
        else:
            dtype, shape, why, todo = "float32", ["batch", 16], "nothing tells: a guess", ["shape"]
        inputs.append({"name": p["name"], "dtype": dtype, "shape": shape, "why": why, "todo": todo})
    seq_size = min(seq, _SEQ_GUESS) if seq else _SEQ_GUESS
    runs, run_error = _runs(obj, inputs, seq_size)
    return json.dumps({"candidates": cands, "call": call, "kind": "module" if is_module else "function",
                       "class": type(obj).__name__ if is_module else "", "entry": "forward" if is_module else call,
                       "inputs": inputs, "optional": [p for p in params if not p["required"]],
                       "seq": seq_size, "seq_why": seq_why, "runs": runs, "run_error": run_error})
)PY";

}  // namespace

std::string Interpreter::survey_entries(const std::string& call_expr) {
  PyObject* ns = script_namespace();
  AOT_CHECK(ns != nullptr, "survey before run_script");
  PyObject* helper = helper_module("__aotrace_survey__", kSurveySource);
  PyObject* survey = PyDict_GetItemString(helper, "survey");  // borrowed
  PyRef result = PyRef::steal(PyObject_CallFunction(survey, "Os", ns, call_expr.c_str()));
  if (!result) {
    const std::string error = fetch_python_error();
    user_error("cannot survey `" + call_expr + "` in the script: " + error, {},
               "pass --call with an expression of the script's namespace: an nn.Module instance or a function");
  }
  return py_str(result.get());
}

}  // namespace aotrace::embed

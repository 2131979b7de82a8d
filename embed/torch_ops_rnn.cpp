// nn.LSTM, nn.GRU and nn.RNN (their forward is the op): unrolled over the sequence, which must be
// of static length. The input projections of all steps are one linear per layer and direction;
// each step adds its hidden projection and applies the cell (torch's gate order: LSTM i, f, g,
// o; GRU r, z, n). Eval mode: dropout between layers is off.
#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

ValueId slice_of(Translator& t, ValueId x, int axis, int64_t start, int64_t end) {
  ir::Attrs attrs;
  attrs.set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", int64_t{1});
  return node(t, OpKind::Slice, {x}, attrs);
}

int64_t module_int(PyObject* m, const char* name) {
  return PyLong_AsLongLong(getattr(m, name).get());
}

bool module_bool(PyObject* m, const char* name) { return PyObject_IsTrue(getattr(m, name).get()) == 1; }

// One cell step: the new hidden state (and for an LSTM the new cell state in `c`) from the
// step's input projection `xp` ([B, G*H], input bias included) and the hidden state `h`.
ValueId cell(Translator& t, const std::string& mode, ValueId xp, ValueId h, ValueId& c, ValueId w_hh,
             ValueId b_hh, int64_t hidden) {
  std::vector<ValueId> operands{h, w_hh};
  if (b_hh >= 0) operands.push_back(b_hh);
  ValueId hp = node(t, OpKind::Linear, operands);
  auto gate = [&](ValueId v, int64_t k) { return slice_of(t, v, 1, k * hidden, (k + 1) * hidden); };
  if (mode == "LSTM") {
    ValueId g = node(t, OpKind::Add, {xp, hp});
    ValueId i = node(t, OpKind::Sigmoid, {gate(g, 0)});
    ValueId f = node(t, OpKind::Sigmoid, {gate(g, 1)});
    ValueId cand = node(t, OpKind::Tanh, {gate(g, 2)});
    ValueId o = node(t, OpKind::Sigmoid, {gate(g, 3)});
    c = node(t, OpKind::Add, {node(t, OpKind::Mul, {f, c}), node(t, OpKind::Mul, {i, cand})});
    return node(t, OpKind::Mul, {o, node(t, OpKind::Tanh, {c})});
  }
  if (mode == "GRU") {
    ValueId r = node(t, OpKind::Sigmoid, {node(t, OpKind::Add, {gate(xp, 0), gate(hp, 0)})});
    ValueId z = node(t, OpKind::Sigmoid, {node(t, OpKind::Add, {gate(xp, 1), gate(hp, 1)})});
    ValueId n = node(t, OpKind::Tanh, {node(t, OpKind::Add, {gate(xp, 2), node(t, OpKind::Mul, {r, gate(hp, 2)})})});
    // (1 - z) * n + z * h = n + z * (h - n)
    return node(t, OpKind::Add, {n, node(t, OpKind::Mul, {z, node(t, OpKind::Sub, {h, n})})});
  }
  ValueId pre = node(t, OpKind::Add, {xp, hp});
  return node(t, mode == "RNN_RELU" ? OpKind::Relu : OpKind::Tanh, {pre});
}

}  // namespace

// nn.LSTM / nn.GRU / nn.RNN .forward(self, input, hx=None): (output, h_n) or, for an LSTM,
// (output, (h_n, c_n)).
VarRef recurrent(Translator& t, const CallArgs& a) {
  const VarRef self = a.get(0, "self");
  auto* mv = as<ModuleVar>(self);
  AOT_CHECK(mv, "recurrent: not called on a module");
  PyObject* m = mv->module.get();
  const std::string mode = py_str(getattr(m, "mode").get());
  const std::string what = "nn." + std::string(mode == "LSTM" ? "LSTM" : mode == "GRU" ? "GRU" : "RNN");
  VarRef input = a.get(1, "input");
  if (!is_tensor(input))
    unsupported(t, what + " on a " + input->describe() + " (PackedSequence inputs)",
                "pad the batch to one length and pass a tensor");
  if (mode == "LSTM" && module_int(m, "proj_size") != 0) unsupported(t, what + " with proj_size");
  const int64_t hidden = module_int(m, "hidden_size"), layers = module_int(m, "num_layers");
  const bool batch_first = module_bool(m, "batch_first"), bias = module_bool(m, "bias");
  const int64_t dirs = module_bool(m, "bidirectional") ? 2 : 1;

  ValueId x = tensor(t, input, what.c_str());
  const bool batched = type_of(t, x).rank() == 3;
  if (!batched && type_of(t, x).rank() != 2)
    user_error(what + ": expected a 2-D or 3-D input, got " + type_of(t, x).str() + " (torch raises here too)", t.loc());
  if (!batched) x = unsqueeze_at(t, x, 1);          // [T, 1, H_in]
  else if (batch_first) x = permute_to(t, x, {1, 0, 2});  // time-major [T, B, H_in]
  const ir::Shape shape = type_of(t, x).shape;
  const auto steps = shape[0].as_constant();
  const auto batch = shape[1].as_constant();
  if (!steps || !batch) unsupported(t, what + " over a dynamic sequence length or batch", "declare the dims static");
  const DType dt = type_of(t, x).dtype;

  // Initial states: hx, or zeros; [layers * dirs, B, H] (unbatched: [layers * dirs, H]).
  VarRef hx = a.get(2, "hx");
  ValueId h0 = -1, c0 = -1;
  if (!is_none(hx)) {
    if (mode == "LSTM") {
      auto items = sequence_items(t, hx);
      if (!items || items->size() != 2)
        user_error(what + ": hx must be a tuple (h_0, c_0) (torch raises here too)", t.loc());
      h0 = tensor(t, (*items)[0], what.c_str());
      c0 = tensor(t, (*items)[1], what.c_str());
    } else {
      h0 = tensor(t, hx, what.c_str());
    }
    if (!batched) {
      h0 = unsqueeze_at(t, h0, 1);
      if (c0 >= 0) c0 = unsqueeze_at(t, c0, 1);
    }
  }
  auto initial = [&](ValueId given, int64_t k) {
    if (given < 0) return node(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(*batch), ir::SymExpr(hidden)}).set("value", 0.0).set("dtype", dt));
    return reshape_to(t, slice_of(t, given, 0, k, k + 1), {ir::SymExpr(*batch), ir::SymExpr(hidden)});
  };

  std::vector<ValueId> h_n, c_n;
  ValueId layer_input = x;
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<ValueId> direction_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      auto weight = [&](const std::string& name) { return tensor(t, t.attribute(self, name), what.c_str()); };
      std::vector<ValueId> ih{layer_input, weight("weight_ih" + sfx)};
      if (bias) ih.push_back(weight("bias_ih" + sfx));
      const ValueId w_hh = weight("weight_hh" + sfx);
      const ValueId b_hh = bias ? weight("bias_hh" + sfx) : -1;
      const ValueId projected = node(t, OpKind::Linear, ih);  // [T, B, G*H], every step at once
      const int64_t k = l * dirs + d;
      ValueId h = initial(h0, k), c = mode == "LSTM" ? initial(c0, k) : -1;
      std::vector<ValueId> outputs(static_cast<size_t>(*steps));
      for (int64_t s = 0; s < *steps; ++s) {
        const int64_t step = d == 0 ? s : *steps - 1 - s;
        ValueId xp = reshape_to(t, slice_of(t, projected, 0, step, step + 1),
                                {ir::SymExpr(*batch), type_of(t, projected).shape[2]});
        h = cell(t, mode, xp, h, c, w_hh, b_hh, hidden);
        outputs[static_cast<size_t>(step)] = unsqueeze_at(t, h, 0);
      }
      direction_outputs.push_back(node(t, OpKind::Concat, outputs, ir::Attrs().set("axis", int64_t{0})));
      h_n.push_back(unsqueeze_at(t, h, 0));
      if (c >= 0) c_n.push_back(unsqueeze_at(t, c, 0));
    }
    layer_input = dirs == 1 ? direction_outputs[0]
                            : node(t, OpKind::Concat, direction_outputs, ir::Attrs().set("axis", int64_t{2}));
  }
  auto stacked = [&](const std::vector<ValueId>& states) {
    ValueId v = states.size() == 1 ? states[0] : node(t, OpKind::Concat, states, ir::Attrs().set("axis", int64_t{0}));
    return batched ? v : reshape_to(t, v, {ir::SymExpr(layers * dirs), ir::SymExpr(hidden)});
  };
  ValueId output = layer_input;  // [T, B, D*H]
  if (!batched) output = reshape_to(t, output, {shape[0], type_of(t, output).shape[2]});
  else if (batch_first) output = permute_to(t, output, {1, 0, 2});
  VarRef state = wrap_value(stacked(h_n));
  if (mode == "LSTM")
    state = std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::vector<VarRef>{state, wrap_value(stacked(c_n))});
  return std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::vector<VarRef>{wrap_value(output), state});
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

// torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
// one step of nn.LSTMCell, nn.GRUCell and nn.RNNCell. The LSTM's hx is (h, c) and it returns
// (h', c'); the others return h'.
VarRef recurrent_cell(Translator& t, const CallArgs& a, const char* mode) {
  const std::string m = mode;
  ValueId x = tensor(t, a.get(0, "input"), "rnn cell");
  ValueId h = -1, c = -1;
  if (m == "LSTM") {
    auto hx = sequence_items(t, a.get(1, "hx"));
    if (!hx || hx->size() != 2) user_error("lstm_cell: hx must be a tuple (h, c)", t.loc());
    h = tensor(t, (*hx)[0], "lstm_cell");
    c = tensor(t, (*hx)[1], "lstm_cell");
  } else {
    h = tensor(t, a.get(1, "hx"), "rnn cell");
  }
  ValueId w_ih = tensor(t, a.get(2, "w_ih"), "rnn cell"), w_hh = tensor(t, a.get(3, "w_hh"), "rnn cell");
  VarRef b_ih = a.get(4, "b_ih"), b_hh = a.get(5, "b_hh");
  std::vector<ValueId> in{x, w_ih};
  if (!is_none(b_ih)) in.push_back(tensor(t, b_ih, "rnn cell"));
  ValueId xp = node(t, OpKind::Linear, in);
  const int64_t hidden = type_of(t, w_hh).shape[1].constant();
  ValueId h2 = cell(t, m, xp, h, c, w_hh, is_none(b_hh) ? -1 : tensor(t, b_hh, "rnn cell"), hidden);
  if (m == "LSTM") return sequence({wrap_value(h2), wrap_value(c)});
  return wrap_value(h2);
}

}  // namespace aotrace::embed::ops

// Padding buckets at compile time (issue 15): for each bucket of a dim declared
// `{buckets: [...]}`, the entry runs in eager on inputs whose dim is below the bucket (the
// smallest size the runtime pads up to it, and one halfway) and on the same inputs padded up
// to it with each input's `pad:` value; the outputs must agree on the valid region. That proves
// padding safe for those sizes, finds the output axes that follow the dim (the runtime slices
// them back), and refuses a model that does not mask its padding, naming the output, the first
// differing index and the cause.
#include <cmath>
#include <set>

#include "driver/compile.h"

namespace aotrace::driver {
namespace {

using Axes = std::vector<std::pair<int, int>>;  // (input or output index, axis)

std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// `t` resized along `axes` to `size`: cut, or grown with `pad`.
ir::HostTensor resized(const ir::HostTensor& t, const std::vector<int>& axes, int64_t size, double pad) {
  std::vector<int64_t> shape = t.shape;
  for (int a : axes) shape[static_cast<size_t>(a)] = size;
  ir::HostTensor out = ir::HostTensor::zeros(t.dtype, shape);
  const std::vector<int64_t> from = strides(t.shape), to = strides(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rest = i, src = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t idx = rest / to[d];
      rest %= to[d];
      if (idx >= t.shape[d]) inside = false;
      src += idx * from[d];
    }
    out.set(i, inside ? t.get(src) : pad);
  }
  return out;
}

std::string index_str(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = strides(shape);
  std::string out;
  for (size_t d = 0; d < shape.size(); ++d) {
    out += (d ? ", " : "") + std::to_string(flat / s[d]);
    flat %= s[d];
  }
  return "[" + out + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::vector<artifacts::BucketSpec> check_padding_buckets(const shape_profiles::ProfileSet& spec,
                                                         const shape_profiles::EntrySpec& entry,
                                                         const std::vector<ProfileCapture>& captures) {
  std::vector<artifacts::BucketSpec> out;
  embed::Interpreter& py = embed::Interpreter::instance();
  for (const shape_profiles::DimSpec& dim : spec.dims) {
    if (!dim.is_bucketed) continue;
    artifacts::BucketSpec bs;
    bs.dim = dim.name;
    bs.sizes = dim.values;
    std::map<int, std::vector<int>> input_axes;  // input → its axes of this dim
    for (size_t i = 0; i < entry.inputs.size(); ++i)
      for (size_t a = 0; a < entry.inputs[i].shape.size(); ++a)
        if (entry.inputs[i].shape[a].is_named && entry.inputs[i].shape[a].name == dim.name) {
          bs.inputs.push_back({static_cast<int>(i), static_cast<int>(a), *entry.inputs[i].pad});
          input_axes[static_cast<int>(i)].push_back(static_cast<int>(a));
        }
    if (bs.inputs.empty()) continue;
    std::optional<std::map<int, std::vector<int>>> output_axes;  // found by the first check
    int64_t previous = 0;
    for (int64_t bucket : dim.values) {
      const ProfileCapture* at = nullptr;
      for (const ProfileCapture& pc : captures)
        if (pc.entry == &entry && pc.profile->dims.count(dim.name) && pc.profile->dims.at(dim.name) == bucket) {
          at = &pc;
          break;
        }
      const int64_t lo = previous + 1;
      previous = bucket;
      if (at == nullptr || lo >= bucket) continue;  // no variant at this bucket, or nothing pads up to it
      if (!at->capture.graph.input_updates.empty())
        user_error("entry '" + entry.name + "' changes its inputs in place, so dim '" + dim.name + "' cannot be bucketed",
                   dim.loc, "padded inputs are copies: declare the dim as a list of sizes or a range instead");
      const embed::EagerCall golden = py.golden_call(entry.call, at->capture);
      for (int64_t size : std::set<int64_t>{lo, (lo + bucket) / 2}) {
        std::vector<ir::HostTensor> small = golden.inputs, padded = golden.inputs;
        for (const auto& [i, axes] : input_axes) {
          small[static_cast<size_t>(i)] = resized(golden.inputs[static_cast<size_t>(i)], axes, size, 0);
          padded[static_cast<size_t>(i)] =
              resized(small[static_cast<size_t>(i)], axes, bucket, *entry.inputs[static_cast<size_t>(i)].pad);
        }
        const std::string where = "dim '" + dim.name + "' = " + std::to_string(size) + " padded up to the bucket " +
                                  std::to_string(bucket);
        std::vector<ir::HostTensor> want, got;
        try {
          want = py.run_eager(entry.call, small, {}, at->capture.arguments);
        } catch (const UserError& e) {
          user_error("entry '" + entry.name + "' does not run in eager with " + dim.name + " = " + std::to_string(size) +
                         ", a size the runtime would pad up to the bucket " + std::to_string(bucket) + ": " + e.what(),
                     dim.loc, "padding can only be checked at sizes the model accepts: list the sizes it takes as static "
                              "values (`" + dim.name + ": [...]`) instead of buckets");
        }
        got = py.run_eager(entry.call, padded, {}, at->capture.arguments);
        std::map<int, std::vector<int>> axes_now;
        for (size_t k = 0; k < want.size() && k < got.size(); ++k) {
          const ir::HostTensor &w = want[k], &g = got[k];
          std::vector<int> follow;
          bool fits = w.shape.size() == g.shape.size();
          for (size_t d = 0; fits && d < w.shape.size(); ++d) {
            if (w.shape[d] == g.shape[d]) continue;
            if (w.shape[d] == size && g.shape[d] == bucket) follow.push_back(static_cast<int>(d));
            else fits = false;
          }
          if (!fits)
            user_error("output " + std::to_string(k) + " of entry '" + entry.name + "' is " + shape_text(w.shape) +
                           " at " + dim.name + " = " + std::to_string(size) + " but " + shape_text(g.shape) +
                           " with " + where + ": the runtime could not cut it back",
                       dim.loc, "bucket only dims whose outputs keep their size or follow the dim; use static sizes or a range");
          if (!follow.empty()) axes_now[static_cast<int>(k)] = follow;
          const ir::HostTensor cut = follow.empty() ? g : resized(g, follow, size, 0);
          const bool exact = !ir::is_floating(w.dtype);
          for (int64_t i = 0; i < w.numel(); ++i) {
            const double a = w.get(i), b = cut.get(i);
            const bool same = exact ? a == b : (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(a);
            if (same) continue;
            user_error(where + " changes output " + std::to_string(k) + " of entry '" + entry.name + "': at " +
                           index_str(i, w.shape) + " it is " + number(b) + " with padding, " + number(a) + " without",
                       dim.loc,
                       "the model does not mask padded positions: give it a mask input padded with `pad: true` "
                       "(a key_padding_mask), pad with a value it ignores, or declare a range (`" + dim.name +
                           ": {min: 1, max: " + std::to_string(dim.values.back()) + "}`) instead of buckets");
          }
        }
        if (output_axes && *output_axes != axes_now)
          user_error("the outputs of entry '" + entry.name + "' follow dim '" + dim.name + "' on different axes at different sizes",
                     dim.loc, "bucket only dims whose outputs follow them the same way at every size");
        output_axes = axes_now;
      }
    }
    if (output_axes)
      for (const auto& [k, axes] : *output_axes)
        for (int a : axes) bs.outputs.push_back({k, a, 0});
    out.push_back(std::move(bs));
  }
  return out;
}

}  // namespace aotrace::driver

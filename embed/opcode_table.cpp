// The opcode table: CPython 3.11 opcode name -> handler. Numbers, names and inline-cache sizes
// come from the embedded interpreter's own `opcode` module, so they always match its bytecode.
#include <array>
#include <map>

#include "embed/opcodes.h"
#include "embed/translator.h"

namespace aotrace::embed {

namespace {

struct OpcodeTable {
  std::array<OpcodeHandler, 256> handlers{};
  std::array<int, 256> caches{};
  std::array<std::string, 256> names;
  std::map<std::string, int> numbers;
};

const OpcodeTable& table() {
  static const OpcodeTable t = [] {
    OpcodeTable t;
    PyRef opcode = import("opcode");
    PyRef opname = getattr(opcode.get(), "opname");
    PyRef caches = getattr(opcode.get(), "_inline_cache_entries");
    for (int i = 0; i < 256; ++i) {
      t.names[static_cast<size_t>(i)] = py_str(PyList_GetItem(opname.get(), i));
      t.caches[static_cast<size_t>(i)] = static_cast<int>(PyLong_AsLong(PyList_GetItem(caches.get(), i)));
      t.numbers[t.names[static_cast<size_t>(i)]] = i;
    }
    for (const auto& [name, handler] : opcode_handlers()) {
      auto it = t.numbers.find(name);
      AOT_CHECK(it != t.numbers.end(), "opcode table names unknown opcode " + name);
      t.handlers[static_cast<size_t>(it->second)] = handler;
    }
    return t;
  }();
  return t;
}

}  // namespace

OpcodeHandler opcode_handler(int opcode) { return table().handlers[static_cast<size_t>(opcode & 0xff)]; }
std::string opcode_name(int opcode) { return table().names[static_cast<size_t>(opcode & 0xff)]; }
int inline_cache_entries(int opcode) { return table().caches[static_cast<size_t>(opcode & 0xff)]; }
int opcode_number(const char* name) {
  auto it = table().numbers.find(name);
  return it == table().numbers.end() ? -1 : it->second;
}

std::vector<std::pair<std::string, OpcodeHandler>> opcode_handlers() {
  std::vector<std::pair<std::string, OpcodeHandler>> all;
  for (auto* family : {&load_store_handlers, &call_handlers, &container_handlers, &control_flow_handlers})
    for (auto& h : (*family)()) all.push_back(h);
  return all;
}

}  // namespace aotrace::embed

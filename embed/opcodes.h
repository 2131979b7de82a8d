// Private to embed/: the opcode handler families, one file each (STYLE 7).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "embed/translator.h"

namespace aotrace::embed {

using HandlerList = std::vector<std::pair<std::string, OpcodeHandler>>;

HandlerList load_store_handlers();    // opcodes_load_store.cpp
HandlerList call_handlers();          // opcodes_calls.cpp
HandlerList container_handlers();     // opcodes_containers.cpp
HandlerList control_flow_handlers();  // opcodes_control_flow.cpp
HandlerList opcode_handlers();        // all of them (opcode_table.cpp)

// Relative jump targets of CPython 3.11 (in bytes).
inline int jump_forward(const Instruction& i) { return i.next_offset + 2 * i.arg; }
inline int jump_backward(const Instruction& i) { return i.next_offset - 2 * i.arg; }

}  // namespace aotrace::embed

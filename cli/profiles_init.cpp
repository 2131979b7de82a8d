// `aotrace profiles init SCRIPT [--call EXPR] [-o SPEC] [--force]` (issue 15): a first spec for a
// script, commented, that validates as it stands. The script runs in the embedded interpreter;
// embed's survey (embed/survey.cpp) lists its candidate entries and infers the chosen entry's
// inputs from the model. What it had to guess is marked TODO. The spec gets the
// `# yaml-language-server: $schema=` line, with the schema written next to it
// (aotrace-profile.schema.json), and is parsed back before init reports success.
// Test: errors_tests Profiles.InitWritesSpecsThatCheckAccepts, Profiles.InitRefusesToOverwrite.
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "embed/embed.h"

namespace aotrace::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSchemaFile = "aotrace-profile.schema.json";

// The bundle name: the script's stem with what the schema refuses replaced by '_'.
std::string bundle_name(const fs::path& script) {
  std::string name = script.stem().string();
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  return name.empty() ? "model" : name;
}

// The script as the spec names it: relative to the spec's folder when below it, else absolute.
std::string script_path_from(const fs::path& spec, const fs::path& script) {
  const fs::path abs = fs::absolute(script).lexically_normal();
  const fs::path rel = abs.lexically_relative(fs::absolute(spec).parent_path().lexically_normal());
  return rel.empty() || *rel.begin() == ".." ? abs.string() : rel.string();
}

std::string shape_text(const json& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i].is_string() ? shape[i].get<std::string>() : std::to_string(shape[i].get<int64_t>());
  }
  return out + "]";
}

bool uses_dim(const json& inputs, const std::string& dim) {
  for (const json& in : inputs)
    for (const json& d : in["shape"])
      if (d.is_string() && d.get<std::string>() == dim) return true;
  return false;
}

std::string spec_text(const json& s, const fs::path& script, const fs::path& spec, const std::string& command) {
  std::ostringstream y;
  y << "# yaml-language-server: $schema=" << kSchemaFile << "\n"
    << "# An aotrace shape-profile spec, written by `" << command << "`.\n"
    << "# Check it with `aotrace profiles check " << spec.filename().string() << "`, then build the bundle with\n"
    << "# `aotrace compile " << spec.filename().string() << "`. Lines marked TODO are guesses: set them to what your\n"
    << "# callers pass. README.md (Shape profiles) describes every field.\n"
    << "version: 1\n"
    << "name: " << bundle_name(script) << "\n"
    << "script: " << script_path_from(spec, script) << "\n"
    << "entries:\n"
    << "  " << s["entry"].get<std::string>() << ":\n";
  std::string others;
  for (const json& c : s["candidates"])
    if (c["name"] != s["call"]) others += (others.empty() ? "" : ", ") + c["name"].get<std::string>();
  y << "    # " << s["call"].get<std::string>() << ": "
    << (s["kind"] == "module" ? s["class"].get<std::string>() + " (nn.Module; its forward is the entry)" : "a function")
    << (others.empty() ? "" : "; other candidates (--call): " + others) << "\n"
    << "    call: " << s["call"].get<std::string>() << "\n"
    << "    inputs:\n";
  for (const json& in : s["inputs"]) {
    y << "      # " << in["why"].get<std::string>() << "\n";
    for (const json& t : in["todo"]) {
      const std::string what = t;
      if (what == "shape") y << "      # TODO: the shape and dtype of " << in["name"].get<std::string>() << " (nothing in the code tells)\n";
      if (what == "spatial") y << "      # TODO: the spatial sizes of " << in["name"].get<std::string>() << "\n";
    }
    y << "      " << in["name"].get<std::string>() << ": {dtype: " << in["dtype"].get<std::string>()
      << ", shape: " << shape_text(in["shape"]) << "}\n";
  }
  if (!s["optional"].empty()) {
    std::string defaults;
    for (const json& p : s["optional"])
      defaults += (defaults.empty() ? "" : ", ") + p["name"].get<std::string>() + "=" + p["default"].get<std::string>();
    y << "    # left at their defaults (declare them under inputs to pass them): " << defaults << "\n";
  }
  y << "dims:\n";
  if (uses_dim(s["inputs"], "batch"))
    y << "  # TODO: the batch sizes your callers use: a list ([1, 8, 32]) or a range ({min: 1, max: 64})\n"
      << "  batch: [1]\n";
  if (uses_dim(s["inputs"], "seq")) {
    const std::string why = s["seq_why"];
    y << "  # TODO: the sequence lengths: a list of sizes, or a range ({min: 1, max: N})"
      << (why.empty() ? "" : " (the model's " + why + ")") << "\n"
      << "  seq: [" << s["seq"].get<int64_t>() << "]\n";
  }
  y << "targets: [cpu]\n";
  return y.str();
}

}  // namespace

int profiles_init_command(const fs::path& script, const std::string& call, const fs::path& output, bool force) {
  const fs::path spec = output.empty() ? fs::path(bundle_name(script) + ".yaml") : output;
  if (fs::exists(spec) && !force)
    user_error(spec.string() + " exists; profiles init does not overwrite it", {},
               "pass -o with another path, or --force to replace it");
  if (!fs::exists(script))
    user_error("cannot read the script " + script.string(), {}, "pass the path of the Python file that builds the model");
  embed::Interpreter& py = embed::Interpreter::instance();
  py.send_prints_to_stderr();  // stdout is init's report
  py.run_script(script);
  const json s = json::parse(py.survey_entries(call));
  if (s.contains("error"))
    user_error(script.string() + ": " + s["error"].get<std::string>(), {},
               "define the model (an nn.Module instance) or the function at the script's top level, or pass --call");
  std::string command = "aotrace profiles init " + script.filename().string();
  if (!call.empty()) command += " --call " + call;
  const std::string text = spec_text(s, script, spec, command);
  {
    std::ofstream out(spec);
    if (!(out << text)) user_error("cannot write " + spec.string(), {}, "check the folder exists and is writable");
  }
  const fs::path schema = fs::absolute(spec).parent_path() / kSchemaFile;
  {
    std::ofstream out(schema);
    if (!(out << shape_profiles::profile_json_schema()))
      user_error("cannot write " + schema.string(), {}, "check the folder is writable");
  }
  shape_profiles::parse_profile_file(spec);  // what was written must be a valid spec
  std::cout << "wrote " << spec.string() << " (entry " << s["entry"].get<std::string>() << ": " << s["call"].get<std::string>()
            << ") and " << schema.filename().string() << "\n";
  size_t todos = 0;
  for (const json& in : s["inputs"])
    for (const json& t : in["todo"]) todos += t != "seq";  // seq: the dims TODO
  todos += uses_dim(s["inputs"], "batch") + uses_dim(s["inputs"], "seq");
  std::cout << "  " << todos << " TODO(s) to review: the shapes it could not read from the code\n";
  if (s["runs"].get<bool>())
    std::cout << "  the entry runs in eager on these shapes (batch 2)\n";
  else
    std::cout << "  warning: the entry does not run on these shapes in eager: " << s["run_error"].get<std::string>()
              << "\n  fix the TODOs before compiling\n";
  std::cout << "next: aotrace profiles check " << spec.string() << "\n";
  return 0;
}

}  // namespace aotrace::cli

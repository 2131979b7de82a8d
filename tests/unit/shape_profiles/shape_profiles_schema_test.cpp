// The JSON Schema agrees with the parser: same top-level keys, same required keys.
#include <yaml-cpp/yaml.h>

#include <set>

#include "tests/unit/shape_profiles/spec_fixture.h"

namespace aotrace::shape_profiles {
namespace {

const char* kSpecLines[] = {"version: 1\n", "script: mlp.py\n",
                            "entries: {f: {call: m, inputs: {}}}\n"};

TEST_F(SpecTest, SchemaIsJsonWithTheParsersTopLevelKeys) {
  YAML::Node schema = YAML::Load(profile_json_schema());  // JSON is a subset of YAML
  std::vector<std::string> keys;
  for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it)
    keys.push_back(it->first.Scalar());
  EXPECT_EQ(keys, (std::vector<std::string>{"version", "name", "script", "entries", "dims",
                                            "profiles", "targets", "options"}));
  // Every key the schema names is one the parser knows (none is reported as unknown).
  for (const std::string& key : keys) {
    try {
      parse(std::string(kSpecLines[0]) + kSpecLines[1] + kSpecLines[2] + key + ": 1\n");
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).find("unknown key"), std::string::npos) << e.render();
    }
  }
}

TEST_F(SpecTest, SchemaRequiredKeysAreTheOnesTheParserRequires) {
  YAML::Node schema = YAML::Load(profile_json_schema());
  std::set<std::string> required;
  for (const YAML::Node& key : schema["required"]) required.insert(key.Scalar());
  EXPECT_EQ(required, (std::set<std::string>{"version", "script", "entries"}));
  const char* names[] = {"version", "script", "entries"};
  for (int dropped = 0; dropped < 3; ++dropped) {
    std::string text;
    for (int i = 0; i < 3; ++i)
      if (i != dropped) text += kSpecLines[i];
    try {
      parse(text);
      ADD_FAILURE() << "no error without " << names[dropped];
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("no '" + std::string(names[dropped]) + "' key"),
                std::string::npos) << e.render();
    }
  }
}

}  // namespace
}  // namespace aotrace::shape_profiles

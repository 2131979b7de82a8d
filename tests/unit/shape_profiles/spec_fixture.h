// Shared by the shape_profiles tests: a temp folder holding the script a spec names, and
// helpers that parse inline YAML text as if it were <tmp>/spec.yaml.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "shape_profiles/shape_profiles.h"

namespace aotrace::shape_profiles {

class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("aot_sp_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "mlp.py") << "model = None\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path yaml_path() const { return dir_ / "spec.yaml"; }
  ProfileSet parse(const std::string& text) const { return parse_profile_text(text, yaml_path()); }

  // Parses text that must fail; checks file:line:col and that the message holds `phrase`.
  UserError expect_error(const std::string& text, int line, int col, const std::string& phrase) {
    try {
      parse(text);
    } catch (const UserError& e) {
      EXPECT_EQ(e.loc().file, yaml_path().string());
      EXPECT_EQ(e.loc().line, line) << e.render();
      EXPECT_EQ(e.loc().col, col) << e.render();
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos)
          << "expected '" << phrase << "' in: " << e.render();
      EXPECT_FALSE(e.hint().empty()) << e.render();
      return e;
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return UserError("no error");
  }

  std::filesystem::path dir_;
};

}  // namespace aotrace::shape_profiles

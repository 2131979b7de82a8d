// The depfile (driver.h): `OUT/bundle.fb: deps…` in the Make syntax Ninja reads too.
#include <unistd.h>

#include <fstream>
#include <system_error>

#include "driver/driver.h"

namespace aotrace::driver {

namespace fs = std::filesystem;

namespace {

// Make's escapes, which Ninja's depfile parser understands: '\ ' and '\#' and '$$'.
std::string escaped(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

[[noreturn]] void output_error(const fs::path& path, const std::string& what, const std::string& flag,
                               const std::string& why) {
  user_error("cannot write the " + what + " " + path.string() + ": " + why, {},
             "create its folder, make it writable, or choose another " + flag + " path");
}

}  // namespace

std::string depfile_text(const fs::path& target, const std::vector<fs::path>& deps) {
  std::string text = escaped(target.string()) + ":";
  for (const fs::path& d : deps) {
    const std::string s = d.string();
    if (s.find('\n') != std::string::npos) continue;  // no syntax can list it
    text += " \\\n  " + escaped(s);
  }
  return text + "\n";
}

void check_output_file(const fs::path& path, const std::string& what, const std::string& flag) {
  if (path.empty()) output_error(path, what, flag, "the path is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) output_error(path, what, flag, "it is a folder");
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) output_error(path, what, flag, "the folder " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) output_error(path, what, flag, "the folder " + dir.string() + " is not writable");
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) output_error(path, what, flag, "the file is not writable");
}

void write_output_file(const fs::path& path, const std::string& text, const std::string& what, const std::string& flag) {
  check_output_file(path, what, flag);
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path tmp = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      output_error(path, what, flag, "writing " + tmp.string() + " failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    output_error(path, what, flag, "renaming " + tmp.string() + " into place failed: " + ec.message());
  }
}

void check_depfile_writable(const fs::path& depfile) { check_output_file(depfile, "depfile", "--depfile"); }

void write_depfile(const fs::path& depfile, const fs::path& target, const std::vector<fs::path>& deps) {
  write_output_file(depfile, depfile_text(target, deps), "depfile", "--depfile");
}

}  // namespace aotrace::driver

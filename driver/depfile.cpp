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

[[noreturn]] void depfile_error(const fs::path& depfile, const std::string& why) {
  user_error("cannot write the depfile " + depfile.string() + ": " + why, {},
             "create its folder, make it writable, or choose another --depfile path");
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

void check_depfile_writable(const fs::path& depfile) {
  if (depfile.empty()) depfile_error(depfile, "the path is empty");
  std::error_code ec;
  if (fs::is_directory(depfile, ec)) depfile_error(depfile, "it is a folder");
  const fs::path dir = depfile.parent_path().empty() ? fs::path(".") : depfile.parent_path();
  if (!fs::is_directory(dir, ec)) depfile_error(depfile, "the folder " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) depfile_error(depfile, "the folder " + dir.string() + " is not writable");
  if (fs::exists(depfile, ec) && ::access(depfile.c_str(), W_OK) != 0) depfile_error(depfile, "the file is not writable");
}

void write_depfile(const fs::path& depfile, const fs::path& target, const std::vector<fs::path>& deps) {
  check_depfile_writable(depfile);
  const fs::path dir = depfile.parent_path().empty() ? fs::path(".") : depfile.parent_path();
  const fs::path tmp = dir / ("." + depfile.filename().string() + ".tmp-" + std::to_string(::getpid()));
  const std::string text = depfile_text(target, deps);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      depfile_error(depfile, "writing " + tmp.string() + " failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, depfile, ec);
  if (ec) {
    fs::remove(tmp, ec);
    depfile_error(depfile, "renaming " + tmp.string() + " into place failed: " + ec.message());
  }
}

}  // namespace aotrace::driver

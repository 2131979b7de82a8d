// Writes the fuzzers' seed corpora: the FlatBuffer of the tiny test bundle's bundle.fb (footer
// removed) and the example YAML files.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tests/runtime/tiny_bundle.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 3) {
    std::cerr << "usage: fuzz_seed BUNDLE_CORPUS_DIR YAML_CORPUS_DIR\n";
    return 2;
  }
  fs::path bundle_corpus = argv[1], yaml_corpus = argv[2];
  fs::create_directories(bundle_corpus);
  fs::create_directories(yaml_corpus);
  fs::path tmp = aotrace::testing::fresh_temp_dir("fuzz_seed") / "tiny.aot";
  aotrace::artifacts::write_bundle(aotrace::testing::tiny_bundle_spec(), tmp);
  aotrace::testing::write_bytes(bundle_corpus / "tiny.fb",
                                aotrace::testing::without_footer(aotrace::testing::read_bytes(tmp / "bundle.fb")));
  fs::remove_all(tmp.parent_path());
  for (const auto& e : fs::recursive_directory_iterator(fs::path(AOTRACE_SOURCE_DIR) / "examples"))
    if (e.path().extension() == ".yaml")
      fs::copy_file(e.path(), yaml_corpus / e.path().filename(), fs::copy_options::overwrite_existing);
  return 0;
}

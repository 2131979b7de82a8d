// Integrity (issue 5): any single changed byte of bundle.fb, and any truncated file of the
// bundle, is an error at open — never a crash, a hang or a bundle that opens and runs wrongly.
#include <gtest/gtest.h>

#include "artifacts/runtime/aotrace_runtime.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;

fs::path written_bundle(const std::string& name) {
  fs::path dir = fresh_temp_dir(name) / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  return dir;
}

bool is_load_error(rt::StatusCode c) {
  return c == rt::StatusCode::data_loss || c == rt::StatusCode::unsupported;
}

// Every byte of bundle.fb changed (all bits flipped; every fourth byte also its lowest bit),
// with hashing of the other files off: the checksum footer and the verifier catch every one.
TEST(Integrity, EverySingleByteChangeOfBundleFbIsAnError) {
  fs::path dir = written_bundle("flip_all");
  const std::string original = read_bytes(dir / "bundle.fb");
  ASSERT_GT(original.size(), 1000u);
  rt::OpenOptions fast;
  fast.verify_hashes = false;
  size_t opened = 0, tried = 0;
  for (size_t i = 0; i < original.size(); ++i)
    for (unsigned char mask : {0xffu, 0x01u}) {
      if (mask == 0x01u && i % 4 != 0) continue;
      std::string bytes = original;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      write_bytes(dir / "bundle.fb", bytes);
      auto b = rt::Bundle::open(dir.string(), fast);
      ++tried;
      if (b.ok()) {
        ++opened;
        ADD_FAILURE() << "byte " << i << " ^ " << int(mask) << " opened";
        continue;
      }
      EXPECT_TRUE(is_load_error(b.status().code())) << i << ": " << b.status().message();
      EXPECT_FALSE(b.status().message().empty());
    }
  EXPECT_EQ(opened, 0u) << "of " << tried;
  write_bytes(dir / "bundle.fb", original);
  EXPECT_TRUE(rt::Bundle::open(dir.string(), fast).ok());
}

TEST(Integrity, ChangedByteNamesTheChecksum) {
  fs::path dir = written_bundle("flip_msg");
  std::string bytes = read_bytes(dir / "bundle.fb");
  size_t at = bytes.find("model.py");  // a string's content: invisible to the verifier
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'M';
  write_bytes(dir / "bundle.fb", bytes);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("bundle.fb does not match its checksum"), std::string::npos)
      << b.status().message();
}

// bundle.fb cut at every length is an error.
TEST(Integrity, BundleFbTruncatedAtEveryLengthIsAnError) {
  fs::path dir = written_bundle("trunc_fb");
  const std::string original = read_bytes(dir / "bundle.fb");
  for (size_t n = 0; n < original.size(); ++n) {
    write_bytes(dir / "bundle.fb", original.substr(0, n));
    auto b = rt::Bundle::open(dir.string(), {/*verify_hashes=*/false});
    ASSERT_FALSE(b.ok()) << "cut at " << n;
    EXPECT_TRUE(is_load_error(b.status().code())) << n << ": " << b.status().message();
  }
}

// Every other file of the bundle, cut to empty, to half and to one byte short, is an error with
// and without hashing (sizes are always checked).
TEST(Integrity, EveryFileTruncatedIsAnError) {
  fs::path dir = written_bundle("trunc_all");
  std::vector<fs::path> files;
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().filename() != "bundle.fb") files.push_back(f.path());
  ASSERT_GT(files.size(), 10u);
  for (const fs::path& f : files) {
    const std::string original = read_bytes(f);
    for (size_t n : {size_t{0}, original.size() / 2, original.size() - 1}) {
      if (n >= original.size()) continue;
      write_bytes(f, original.substr(0, n));
      for (bool hashes : {true, false}) {
        rt::OpenOptions options;
        options.verify_hashes = hashes;
        auto b = rt::Bundle::open(dir.string(), options);
        ASSERT_FALSE(b.ok()) << f << " cut to " << n;
        EXPECT_EQ(b.status().code(), rt::StatusCode::data_loss) << b.status().message();
        EXPECT_NE(b.status().message().find(fs::relative(f, dir).string()), std::string::npos)
            << b.status().message();
      }
    }
    write_bytes(f, original);
  }
  EXPECT_TRUE(rt::Bundle::open(dir.string()).ok());
}

TEST(Integrity, BundleFbWithoutItsFooterIsAnError) {
  fs::path dir = written_bundle("nofooter");
  write_bytes(dir / "bundle.fb", without_footer(read_bytes(dir / "bundle.fb")));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("lost its checksum footer"), std::string::npos)
      << b.status().message();
}

}  // namespace
}  // namespace aotrace::testing

// driver::CompileCache directly: store and lookup, a changed input misses, a damaged entry
// misses, eviction of the least recently used entries past the size bound; the depfile's
// escapes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "driver/driver.h"

namespace {
namespace fs = std::filesystem;
using aotrace::driver::CompileCache;

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("aotrace_cache_unit_" + std::to_string(::getpid())) / info->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
    input_ = root_ / "model.py";
    write_bytes(input_, "x = 1\n");
  }
  void TearDown() override {
    if (HasFailure()) return;
    std::error_code ec;
    fs::remove_all(root_, ec);
    fs::remove(root_.parent_path(), ec);  // the process's folder, once its last test is gone
  }
  CompileCache open(uint64_t max_bytes = 1 << 30) {
    std::string why;
    auto cache = CompileCache::open(root_ / "cache", max_bytes, &why);
    EXPECT_TRUE(cache.has_value()) << why;
    return *cache;
  }
  CompileCache::Entry entry(const std::string& bytes) const {
    return {{input_}, {{"bundle.fb", bytes}, {"cpu/x.so", "kernels"}}, "1 variant"};
  }
  fs::path root_, input_;
};

TEST_F(CacheTest, StoredEntryIsFoundWhileItsInputsAreUnchanged) {
  CompileCache cache = open();
  EXPECT_FALSE(cache.lookup("base").has_value());
  std::string why;
  ASSERT_TRUE(cache.store("base", entry("toc"), &why)) << why;
  auto hit = cache.lookup("base");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->files.size(), 2u);
  EXPECT_EQ(hit->files[0].bytes, "toc");
  EXPECT_EQ(hit->files[1].path, "cpu/x.so");
  EXPECT_EQ(hit->deps, std::vector<fs::path>{input_});
  EXPECT_EQ(hit->summary, "1 variant");
  EXPECT_FALSE(cache.lookup("other base").has_value());
  write_bytes(input_, "x = 2\n");
  EXPECT_FALSE(cache.lookup("base").has_value());
  write_bytes(input_, "x = 1\n");
  EXPECT_TRUE(cache.lookup("base").has_value());
  fs::remove(input_);
  EXPECT_FALSE(cache.lookup("base").has_value());
}

TEST_F(CacheTest, DamagedOrTruncatedEntryIsAMiss) {
  CompileCache cache = open();
  std::string why;
  ASSERT_TRUE(cache.store("base", entry(std::string(1000, 'w')), &why)) << why;
  fs::path stored;
  for (const auto& f : fs::directory_iterator(cache.dir() / "bundles")) stored = f.path();
  ASSERT_FALSE(stored.empty());
  {
    std::fstream f(stored, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('X');
  }
  EXPECT_FALSE(cache.lookup("base").has_value());
  ASSERT_TRUE(cache.store("base", entry(std::string(1000, 'w')), &why)) << why;
  ASSERT_TRUE(cache.lookup("base").has_value());
  fs::resize_file(stored, fs::file_size(stored) - 10);
  EXPECT_FALSE(cache.lookup("base").has_value());
}

TEST_F(CacheTest, LeastRecentlyUsedEntriesAreEvictedPastTheBound) {
  CompileCache cache = open(2500 * 1000);  // room for two entries of a million bytes
  std::string why;
  const auto set_input = [&](const std::string& v) { write_bytes(input_, v); };
  set_input("a");
  ASSERT_TRUE(cache.store("a", entry(std::string(1000 * 1000, 'a')), &why)) << why;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  set_input("b");
  ASSERT_TRUE(cache.store("b", entry(std::string(1000 * 1000, 'b')), &why)) << why;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  set_input("a");
  ASSERT_TRUE(cache.lookup("a").has_value());  // a is now the most recently used
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  set_input("c");
  ASSERT_TRUE(cache.store("c", entry(std::string(1000 * 1000, 'c')), &why)) << why;
  EXPECT_TRUE(cache.lookup("c").has_value());
  set_input("a");
  EXPECT_TRUE(cache.lookup("a").has_value());
  set_input("b");
  EXPECT_FALSE(cache.lookup("b").has_value()) << "b was the least recently used";
  // An entry larger than the whole bound is not stored.
  EXPECT_FALSE(cache.store("d", entry(std::string(3000 * 1000, 'd')), &why));
  EXPECT_NE(why.find("larger than the cache's bound"), std::string::npos) << why;
}

TEST_F(CacheTest, FolderThatCannotBeCreatedIsReported) {
  write_bytes(root_ / "file", "");
  std::string why;
  EXPECT_FALSE(CompileCache::open(root_ / "file" / "cache", 1 << 20, &why).has_value());
  EXPECT_NE(why.find("cannot create"), std::string::npos) << why;
}

TEST(Depfile, EscapesSpacesHashesAndDollars) {
  EXPECT_EQ(aotrace::driver::depfile_text("out dir/bundle.fb", {"/a b/c#d.py", "/e$f.py"}),
            "out\\ dir/bundle.fb: \\\n  /a\\ b/c\\#d.py \\\n  /e$$f.py\n");
}

}  // namespace

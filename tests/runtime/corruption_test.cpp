// A corrupted, truncated or incompatible bundle gives an error, never a crash (DESIGN §5).
#include <gtest/gtest.h>

#include "artifacts/runtime/aotrace_runtime.h"
#include "bundle_generated.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;

fs::path written_bundle(const std::string& name) {
  fs::path dir = fresh_temp_dir(name) / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  return dir;
}

std::string open_error(const fs::path& dir, rt::OpenOptions options = {}) {
  auto b = rt::Bundle::open(dir.string(), options);
  EXPECT_FALSE(b.ok());
  return b.ok() ? "" : b.status().message();
}

TEST(Corruption, BadIdentifierIsRefused) {
  fs::path dir = written_bundle("ident");
  std::string fb_bytes = read_bytes(dir / "bundle.fb");
  fb_bytes[4] ^= 0x20;  // "AOTB" → "aOTB"
  write_bytes(dir / "bundle.fb", fb_bytes);
  EXPECT_NE(open_error(dir).find("not an aotrace bundle"), std::string::npos);
}

TEST(Corruption, ChangedFileFailsItsHash) {
  fs::path dir = written_bundle("hash");
  std::string w = read_bytes(dir / "weights.bin");
  w[0] ^= 1;
  write_bytes(dir / "weights.bin", w);
  EXPECT_NE(open_error(dir).find("file weights.bin does not match its XXH3 hash"), std::string::npos);
  rt::OpenOptions no_hash;
  no_hash.verify_hashes = false;
  EXPECT_TRUE(rt::Bundle::open(dir.string(), no_hash).ok());
}

TEST(Corruption, TruncatedWeightsAreRefusedEvenWithoutHashes) {
  fs::path dir = written_bundle("trunc");
  fs::resize_file(dir / "weights.bin", 40);
  rt::OpenOptions no_hash;
  no_hash.verify_hashes = false;
  std::string m = open_error(dir, no_hash);
  EXPECT_NE(m.find("file weights.bin has 40 bytes, bundle.fb says 88"), std::string::npos) << m;
}

TEST(Corruption, MissingKernelLibraryIsRefused) {
  fs::path dir = written_bundle("nolib");
  fs::remove(dir / "cpu/x86_64-unknown-linux-gnu.so");
  EXPECT_NE(open_error(dir).find("file cpu/x86_64-unknown-linux-gnu.so is missing"),
            std::string::npos);
}

TEST(Compatibility, NewerMajorIsRefusedNamingBothVersions) {
  fs::path dir = written_bundle("major");
  std::string bytes = without_footer(read_bytes(dir / "bundle.fb"));
  ASSERT_TRUE(fb::GetMutableBundle(bytes.data())->mutate_format_major(2));
  ASSERT_TRUE(fb::GetMutableBundle(bytes.data())->mutate_format_minor(3));
  write_bytes(dir / "bundle.fb", with_footer(bytes));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), rt::StatusCode::unsupported);
  EXPECT_NE(b.status().message().find("format version 2.3"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("this runtime reads format version 1." + std::to_string(rt::kFormatMinor)), std::string::npos)
      << b.status().message();
}

TEST(Compatibility, NewerMinorIsAccepted) {
  fs::path dir = written_bundle("minor");
  std::string bytes = without_footer(read_bytes(dir / "bundle.fb"));
  ASSERT_TRUE(fb::GetMutableBundle(bytes.data())->mutate_format_minor(7));
  write_bytes(dir / "bundle.fb", with_footer(bytes));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->format_minor(), 7u);
}

TEST(Compatibility, UnknownRequiredFeatureIsRefused) {
  fs::path dir = written_bundle("feature");
  std::string bytes = read_bytes(dir / "bundle.fb");
  std::unique_ptr<fb::BundleT> toc(fb::GetBundle(bytes.data())->UnPack());
  toc->required_features.push_back("dynamic-shapes-v9");
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishBundleBuffer(builder, fb::Bundle::Pack(builder, toc.get()));
  write_bytes(dir / "bundle.fb", with_footer(std::string(
                                     reinterpret_cast<const char*>(builder.GetBufferPointer()),
                                     builder.GetSize())));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), rt::StatusCode::unsupported);
  EXPECT_NE(b.status().message().find("requires feature 'dynamic-shapes-v9'"), std::string::npos)
      << b.status().message();
}

TEST(Corruption, PlanIndexOutOfRangeIsRefused) {
  fs::path dir = written_bundle("plan");
  std::string bytes = read_bytes(dir / "bundle.fb");
  std::unique_ptr<fb::BundleT> toc(fb::GetBundle(bytes.data())->UnPack());
  toc->entries[0]->variants[0]->plan->calls[0]->buffers[2] = 99;
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishBundleBuffer(builder, fb::Bundle::Pack(builder, toc.get()));
  write_bytes(dir / "bundle.fb", with_footer(std::string(
                                     reinterpret_cast<const char*>(builder.GetBufferPointer()),
                                     builder.GetSize())));
  std::string m = open_error(dir);
  EXPECT_NE(m.find("names a buffer out of range"), std::string::npos) << m;
}

// Every CUDA kernel aotrace writes computes its thread's index for blocks of 256 threads
// (lowering/cuda/codegen.cpp): a plan launching another block size is refused at open.
TEST(Corruption, CudaBlockOtherThan256IsRefused) {
  for (int32_t block : {256, 128}) {
    artifacts::BundleSpec spec = tiny_bundle_spec();
    spec.cuda_images.push_back({"sm_90", false, ir::Bytes(64, 0)});
    for (auto& entry : spec.entries)
      for (auto& variant : entry.variants) {
        variant.cuda_plan = variant.plan;
        for (ir::KernelCall& call : variant.cuda_plan->calls) {
          call.threads = 16;
          call.block = block;
        }
      }
    const fs::path dir = fresh_temp_dir("cuda_block" + std::to_string(block)) / "tiny.aot";
    artifacts::write_bundle(spec, dir);
    auto b = rt::Bundle::open(dir.string());
    if (block == 256) {
      EXPECT_TRUE(b.ok()) << b.status().message();  // the CPU plans run here; the CUDA ones are valid
    } else {
      ASSERT_FALSE(b.ok());
      EXPECT_NE(b.status().message().find("has block size 128, not 256"), std::string::npos) << b.status().message();
    }
  }
}

// format 1.4's input_updates: an index outside the inputs, or an Output buffer past the outputs
// without an updated input to hold, is refused at open.
TEST(Corruption, UpdatedInputOutOfRangeIsRefused) {
  for (int bad : {7, -1}) {
    fs::path dir = written_bundle("updates" + std::to_string(bad + 1));
    std::string bytes = read_bytes(dir / "bundle.fb");
    std::unique_ptr<fb::BundleT> toc(fb::GetBundle(bytes.data())->UnPack());
    toc->entries[0]->variants[0]->input_updates = {bad};
    flatbuffers::FlatBufferBuilder builder;
    fb::FinishBundleBuffer(builder, fb::Bundle::Pack(builder, toc.get()));
    write_bytes(dir / "bundle.fb", with_footer(std::string(
                                       reinterpret_cast<const char*>(builder.GetBufferPointer()),
                                       builder.GetSize())));
    std::string m = open_error(dir);
    EXPECT_NE(m.find("updated input out of range"), std::string::npos) << m;
  }
}

TEST(Corruption, OutputBufferPastTheOutputsIsRefused) {
  fs::path dir = written_bundle("outbuf");
  std::string bytes = read_bytes(dir / "bundle.fb");
  std::unique_ptr<fb::BundleT> toc(fb::GetBundle(bytes.data())->UnPack());
  auto& plan = *toc->entries[0]->variants[0]->plan;
  bool changed = false;
  for (auto& b : plan.buffers)
    if (b.kind() == fb::BufferKind::Output) {
      b = fb::PlanBuffer(b.kind(), b.index() + 1, b.offset(), b.size_bytes());
      changed = true;
    }
  ASSERT_TRUE(changed);
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishBundleBuffer(builder, fb::Bundle::Pack(builder, toc.get()));
  write_bytes(dir / "bundle.fb", with_footer(std::string(
                                     reinterpret_cast<const char*>(builder.GetBufferPointer()),
                                     builder.GetSize())));
  std::string m = open_error(dir);
  EXPECT_NE(m.find("output buffer does not match its output"), std::string::npos) << m;
}

}  // namespace
}  // namespace aotrace::testing

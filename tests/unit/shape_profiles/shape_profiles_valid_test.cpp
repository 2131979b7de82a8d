// Valid profile YAMLs: what the parser returns, defaults, profile expansion, concrete shapes.
#include "tests/unit/shape_profiles/spec_fixture.h"

#include "shape_profiles/yaml_values.h"

namespace aotrace::shape_profiles {
namespace {

const char* kFullSpec = R"(version: 1
name: mlp_bundle
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, 784]}
      mask: {dtype: bool, shape: [batch, seq]}
  embed:
    call: make_embed()
    inputs:
      ids: {dtype: int64, shape: []}
dims:
  batch: [1, 8, 32]
  seq: {min: 16, max: 512, multiple_of: 8}
profiles:
  - {name: online, batch: 1}
  - name: offline
    batch: 32
targets: [cpu, cuda]
options: {max_variants: 4, cuda_math: tf32}
)";

TEST_F(SpecTest, FullSpecTopLevel) {
  ProfileSet set = parse(kFullSpec);
  EXPECT_EQ(set.version, 1);
  EXPECT_EQ(set.name, "mlp_bundle");
  EXPECT_EQ(set.yaml_path, yaml_path());
  EXPECT_TRUE(set.script.is_absolute());
  EXPECT_TRUE(std::filesystem::equivalent(set.script, dir_ / "mlp.py"));
  EXPECT_EQ(set.targets, (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(set.max_variants, 4);
  EXPECT_EQ(set.cuda_math, "tf32");
}

TEST_F(SpecTest, FullSpecEntriesKeepDocumentOrder) {
  ProfileSet set = parse(kFullSpec);
  ASSERT_EQ(set.entries.size(), 2u);
  const EntrySpec& forward = set.entries[0];
  EXPECT_EQ(forward.name, "forward");
  EXPECT_EQ(forward.call, "model");
  EXPECT_EQ(forward.loc.line, 5);
  EXPECT_EQ(forward.loc.col, 3);
  ASSERT_EQ(forward.inputs.size(), 2u);
  EXPECT_EQ(forward.inputs[0].name, "x");
  EXPECT_EQ(forward.inputs[0].dtype, ir::DType::f32);
  EXPECT_EQ(forward.inputs[1].name, "mask");
  EXPECT_EQ(forward.inputs[1].dtype, ir::DType::b8);
  EXPECT_EQ(forward.inputs[1].loc.line, 9);
  EXPECT_EQ(forward.inputs[1].loc.col, 7);
  const EntrySpec& embed = set.entries[1];
  EXPECT_EQ(embed.call, "make_embed()");
  ASSERT_EQ(embed.inputs.size(), 1u);
  EXPECT_EQ(embed.inputs[0].dtype, ir::DType::i64);
  EXPECT_TRUE(embed.inputs[0].shape.empty());
}

TEST_F(SpecTest, FullSpecShapesAndDims) {
  ProfileSet set = parse(kFullSpec);
  const InputSpec& x = set.entries[0].inputs[0];
  ASSERT_EQ(x.shape.size(), 2u);
  EXPECT_TRUE(x.shape[0].is_named);
  EXPECT_EQ(x.shape[0].name, "batch");
  EXPECT_EQ(x.shape[0].loc.line, 8);
  EXPECT_EQ(x.shape[0].loc.col, 35);
  EXPECT_FALSE(x.shape[1].is_named);
  EXPECT_EQ(x.shape[1].value, 784);
  ASSERT_EQ(set.dims.size(), 2u);
  EXPECT_EQ(set.dims[0].name, "batch");
  EXPECT_FALSE(set.dims[0].is_dynamic);
  EXPECT_EQ(set.dims[0].values, (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(set.dims[1].name, "seq");
  EXPECT_TRUE(set.dims[1].is_dynamic);
  EXPECT_EQ(set.dims[1].range.min, 16);
  EXPECT_EQ(set.dims[1].range.max, 512);
  EXPECT_EQ(set.dims[1].range.multiple_of, 8);
}

TEST_F(SpecTest, FullSpecNamedProfiles) {
  ProfileSet set = parse(kFullSpec);
  ASSERT_EQ(set.profiles.size(), 2u);
  EXPECT_EQ(set.profiles[0].name, "online");
  EXPECT_EQ(set.profiles[0].dims, (std::map<std::string, int64_t>{{"batch", 1}}));
  EXPECT_EQ(set.profiles[1].name, "offline");
  EXPECT_EQ(set.profiles[1].dims, (std::map<std::string, int64_t>{{"batch", 32}}));
  EXPECT_EQ(set.profiles[1].loc.line, 19);
}

TEST_F(SpecTest, DefaultsNameTargetsOptions) {
  ProfileSet set = parse(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float16, shape: [4, 784]}
)");
  EXPECT_EQ(set.name, "mlp");
  EXPECT_EQ(set.targets, (std::vector<std::string>{"cpu"}));
  EXPECT_EQ(set.max_variants, 8);
  EXPECT_EQ(set.cuda_math, "f32");
  ASSERT_EQ(set.profiles.size(), 1u);
  EXPECT_EQ(set.profiles[0].name, "default");
  EXPECT_TRUE(set.profiles[0].dims.empty());
  EXPECT_EQ(set.concrete_shape(set.entries[0].inputs[0], set.profiles[0]),
            (std::vector<int64_t>{4, 784}));
}

TEST_F(SpecTest, DefaultProfilesAreEveryCombinationInDeclarationOrder) {
  ProfileSet set = parse(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, seq, 64]}
dims:
  seq: [16, 32]
  batch: [1, 8, 4]
)");
  std::vector<std::string> names;
  for (const Profile& p : set.profiles) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"seq=16,batch=1", "seq=16,batch=8", "seq=16,batch=4",
                                              "seq=32,batch=1", "seq=32,batch=8",
                                              "seq=32,batch=4"}));
  EXPECT_EQ(set.concrete_shape(set.entries[0].inputs[0], set.profiles[4]),
            (std::vector<int64_t>{8, 32, 64}));
}

TEST_F(SpecTest, DefaultProfilesSkipDynamicDims) {
  ProfileSet set = parse(R"(version: 1
script: mlp.py
entries:
  f:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, seq]}
dims:
  batch: 8
  seq: {max: 64}
)");
  EXPECT_EQ(set.dims[1].range.min, 1);
  EXPECT_EQ(set.dims[1].range.multiple_of, 1);
  // The range holds 1: size 1 is a static profile of its own, before the symbolic rest.
  ASSERT_EQ(set.profiles.size(), 2u);
  EXPECT_EQ(set.profiles[0].name, "batch=8,seq=1");
  EXPECT_EQ(set.profiles[0].dims.at("seq"), 1);
  EXPECT_TRUE(set.profiles[0].ranges.empty());
  ASSERT_EQ(set.profiles[0].notes.size(), 1u);
  EXPECT_NE(set.profiles[0].notes[0].find("holds 1, which gets its own static variant"), std::string::npos);
  EXPECT_EQ(set.profiles[1].name, "batch=8,seq=2..64");
  EXPECT_EQ(set.profiles[1].ranges.at("seq").min, 2);
  EXPECT_EQ(set.profiles[1].ranges.at("seq").max, 64);
  EXPECT_EQ(set.profiles[1].dims.count("seq"), 0u);
}

TEST_F(SpecTest, DynamicDimPlansOptSizesAndZeroBeforeTheRange) {
  ProfileSet set = parse(R"(version: 1
script: mlp.py
entries:
  f:
    call: model
    inputs:
      x: {dtype: float32, shape: [2, seq]}
dims:
  seq: {min: 0, max: 128, multiple_of: 8, opt: [64, 128]}
)");
  // 1 is no multiple of 8: only 0 is specialised; the opt sizes follow; the range is what is left.
  ASSERT_EQ(set.profiles.size(), 4u);
  EXPECT_EQ(set.profiles[0].name, "seq=0");
  EXPECT_EQ(set.profiles[1].name, "seq=64");
  EXPECT_EQ(set.profiles[2].name, "seq=128");
  EXPECT_EQ(set.profiles[3].name, "seq=8..128");
  EXPECT_EQ(set.profiles[3].ranges.at("seq").multiple_of, 8);
  // The example tensors of a symbolic dim have the range's largest size.
  EXPECT_EQ(set.concrete_shape(set.entries[0].inputs[0], set.profiles[3]), (std::vector<int64_t>{2, 128}));
  EXPECT_EQ(set.concrete_shape(set.entries[0].inputs[0], set.profiles[1]), (std::vector<int64_t>{2, 64}));
  // A range split (a branch on the size) gives one profile per part; a part of one size is static.
  std::vector<Profile> parts = split_profile(set.profiles[3], set.dims, "seq", {{8, 64, 8}, {65, 72, 8}, {73, 128, 8}}, "split by m.py:3");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].name, "seq=8..64");
  EXPECT_EQ(parts[1].name, "seq=72");
  EXPECT_EQ(parts[1].dims.at("seq"), 72);
  EXPECT_EQ(parts[2].name, "seq=80..128");
  EXPECT_EQ(parts[2].notes.back(), "seq=80..128: split by m.py:3");
}

TEST_F(SpecTest, OptSizeOutsideTheRangeIsAnError) {
  try {
    parse(R"(version: 1
script: mlp.py
entries:
  f:
    call: model
    inputs:
      x: {dtype: float32, shape: [2, seq]}
dims:
  seq: {min: 16, max: 64, opt: [32, 100]}
)");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("opt size 100 of dim 'seq' is not in its range [16, 64]"), std::string::npos);
    EXPECT_EQ(e.loc().line, 9);
  }
}

TEST_F(SpecTest, UnnamedProfileGetsGeneratedName) {
  ProfileSet set = parse(R"(version: 1
script: mlp.py
entries:
  f:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, heads]}
dims:
  batch: [1, 8]
  heads: [4, 2]
profiles:
  - {heads: 2, batch: 8}
  - {name: small, batch: 1, heads: 4}
)");
  ASSERT_EQ(set.profiles.size(), 2u);
  EXPECT_EQ(set.profiles[0].name, "batch=8,heads=2");
  EXPECT_EQ(set.profiles[1].name, "small");
  EXPECT_EQ(set.concrete_shape(set.entries[0].inputs[0], set.profiles[1]),
            (std::vector<int64_t>{1, 4}));
}

TEST_F(SpecTest, ScriptInSubfolderAndTorchDtypeSpelling) {
  std::filesystem::create_directories(dir_ / "models");
  std::ofstream(dir_ / "models" / "net.py") << "net = None\n";
  ProfileSet set = parse(R"(version: 1
script: models/net.py
entries:
  f: {call: net, inputs: {a: {dtype: torch.bfloat16, shape: [3]}, b: {dtype: f64, shape: [1]}}}
)");
  EXPECT_EQ(set.name, "net");
  EXPECT_EQ(set.script, (dir_ / "models" / "net.py").lexically_normal());
  EXPECT_EQ(set.entries[0].inputs[0].dtype, ir::DType::bf16);
  EXPECT_EQ(set.entries[0].inputs[1].dtype, ir::DType::f64);
}

TEST_F(SpecTest, ParseProfileFileReadsFromDisk) {
  std::ofstream(yaml_path()) << "version: 1\nscript: mlp.py\nentries:\n  f: {call: model, inputs: {}}\n";
  ProfileSet set = parse_profile_file(yaml_path());
  EXPECT_EQ(set.entries.size(), 1u);
  EXPECT_TRUE(set.entries[0].inputs.empty());
}

TEST_F(SpecTest, ParseProfileFileMissingFile) {
  try {
    parse_profile_file(dir_ / "absent.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read profile"), std::string::npos);
    EXPECT_EQ(e.loc().file, (dir_ / "absent.yaml").string());
  }
}

TEST(ShapeProfilesDidYouMean, EditDistanceCountsTranspositionsOnce) {
  EXPECT_EQ(detail::edit_distance("script", "script"), 0u);
  EXPECT_EQ(detail::edit_distance("scirpt", "script"), 1u);
  EXPECT_EQ(detail::edit_distance("scrip", "script"), 1u);
  EXPECT_EQ(detail::edit_distance("", "abc"), 3u);
  std::vector<std::string> keys = {"version", "script", "entries"};
  EXPECT_EQ(detail::did_you_mean("scirpt", keys), "did you mean 'script'?");
  EXPECT_EQ(detail::did_you_mean("banana", keys), "");
}

// Inputs beyond tensors: Python scalars (0-d inputs holding their value) and tuples, lists and
// dicts of inputs, flattened depth first into NAME.0 / NAME.KEY.
TEST_F(SpecTest, ScalarAndContainerInputsFlattenDepthFirst) {
  ProfileSet p = parse(
      "version: 1\nscript: mlp.py\nentries:\n  f:\n    call: model\n    inputs:\n"
      "      x: {dtype: float32, shape: [b, 4]}\n"
      "      pair: {type: tuple, items: [{dtype: float32, shape: [b]}, {type: list, items: [{type: int, value: -2}]}]}\n"
      "      feats: {type: dict, items: {mask: {dtype: bool, shape: [4]}, scale: {type: float, value: 0.25}}}\n"
      "      causal: {type: bool, value: true}\n"
      "      t: {type: tensor, dtype: int64, shape: []}\n"
      "dims: {b: [2]}\n");
  const EntrySpec& e = p.entries.at(0);
  std::vector<std::string> names;
  for (const auto& in : e.inputs) names.push_back(in.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "pair.0", "pair.1.0", "feats.mask", "feats.scale", "causal", "t"}));
  EXPECT_EQ(e.inputs[2].kind, InputSpec::Kind::Int);
  EXPECT_EQ(e.inputs[2].dtype, ir::DType::i64);
  EXPECT_EQ(e.inputs[2].value, -2);
  EXPECT_EQ(e.inputs[4].kind, InputSpec::Kind::Float);
  EXPECT_EQ(e.inputs[4].dtype, ir::DType::f64);
  EXPECT_EQ(e.inputs[4].value, 0.25);
  EXPECT_EQ(e.inputs[5].kind, InputSpec::Kind::Bool);
  EXPECT_EQ(e.inputs[5].value, 1);
  EXPECT_FALSE(e.inputs[6].is_scalar());  // a 0-d tensor is a tensor
  ASSERT_EQ(e.args.size(), 5u);
  EXPECT_EQ(e.args[1].kind, ArgSpec::Kind::Tuple);
  ASSERT_EQ(e.args[1].items.size(), 2u);
  EXPECT_EQ(e.args[1].items[1].kind, ArgSpec::Kind::List);
  EXPECT_EQ(e.args[1].items[1].items.at(0).input, 2);
  EXPECT_EQ(e.args[2].kind, ArgSpec::Kind::Dict);
  EXPECT_EQ(e.args[2].items.at(1).key, "scale");
  EXPECT_EQ(e.args[2].items.at(1).input, 4);
  EXPECT_EQ(p.concrete_shape(e.inputs[1], p.profiles.at(0)), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace aotrace::shape_profiles

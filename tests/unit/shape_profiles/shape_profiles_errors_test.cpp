// Invalid profile YAMLs: each error names file:line:col of the offending node and says what is
// wrong (DESIGN §6, STYLE 9). Columns are 1-based.
#include "tests/unit/shape_profiles/spec_fixture.h"

namespace aotrace::shape_profiles {
namespace {

// ---- YAML itself and the top level -------------------------------------------------------------

TEST_F(SpecTest, YamlSyntaxError) {
  expect_error("version: 1\nscript: mlp.py\nentries: [a, b\nfoo: 1\n", 4, 4, "invalid YAML");
}

TEST_F(SpecTest, EmptyDocument) { expect_error("", 1, 1, "the profile is empty"); }

TEST_F(SpecTest, TopLevelNotAMapping) {
  expect_error("- version\n- 1\n", 1, 1, "'the profile' must be a mapping, not a list");
}

TEST_F(SpecTest, MissingVersion) {
  expect_error("script: mlp.py\nentries: {f: {call: m, inputs: {}}}\n", 1, 1,
               "the profile has no 'version' key");
}

TEST_F(SpecTest, MissingScript) {
  expect_error("version: 1\nentries: {f: {call: m, inputs: {}}}\n", 1, 1,
               "the profile has no 'script' key");
}

TEST_F(SpecTest, MissingEntries) {
  expect_error("version: 1\nscript: mlp.py\n", 1, 1, "the profile has no 'entries' key");
}

TEST_F(SpecTest, UnknownTopLevelKeySuggestsClosest) {
  UserError e = expect_error("version: 1\nscirpt: mlp.py\n", 2, 1,
                             "unknown key 'scirpt' at the top level");
  EXPECT_EQ(e.hint(), "did you mean 'script'?");
}

TEST_F(SpecTest, UnknownKeyWithoutSuggestionListsAllowedKeys) {
  UserError e = expect_error("version: 1\nbanana: 3\n", 2, 1, "unknown key 'banana'");
  EXPECT_NE(e.hint().find("'version', 'name', 'script'"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, DuplicateTopLevelKey) {
  expect_error("version: 1\nscript: mlp.py\nversion: 1\n", 3, 1, "duplicate key 'version'");
}

TEST_F(SpecTest, VersionWrongType) {
  expect_error("version: \"1\"\nscript: mlp.py\n", 1, 10, "'version' must be an integer, not a string");
}

TEST_F(SpecTest, VersionTwoIsUnsupported) {
  UserError e = expect_error("version: 2\nscript: mlp.py\n", 1, 10, "unsupported profile version 2");
  EXPECT_NE(e.hint().find("version: 1"), std::string::npos);
}

TEST_F(SpecTest, ScriptNotFound) {
  UserError e = expect_error("version: 1\nscript: missing.py\nentries: {}\n", 2, 9,
                             "script 'missing.py' not found");
  EXPECT_NE(e.hint().find((dir_ / "missing.py").string()), std::string::npos) << e.hint();
}

TEST_F(SpecTest, ScriptWrongType) {
  expect_error("version: 1\nscript: [mlp.py]\n", 2, 9, "'script' must be a string, not a list");
}

TEST_F(SpecTest, BundleNameWithSlash) {
  expect_error("version: 1\nname: a/b\nscript: mlp.py\nentries: {f: {call: m, inputs: {}}}\n", 2, 7,
               "bundle name 'a/b' has the character '/'");
}

// ---- entries and inputs ------------------------------------------------------------------------

TEST_F(SpecTest, EntriesWrongType) {
  expect_error("version: 1\nscript: mlp.py\nentries: [forward]\n", 3, 10,
               "'entries' must be a mapping, not a list");
}

TEST_F(SpecTest, EntriesEmpty) {
  expect_error("version: 1\nscript: mlp.py\nentries: {}\n", 3, 10, "'entries' is empty");
}

TEST_F(SpecTest, EntryNameNotIdentifier) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  my-forward:
    call: model
    inputs: {}
)", 4, 3, "entry name 'my-forward' is not an identifier");
}

TEST_F(SpecTest, DuplicateEntryName) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  f: {call: a, inputs: {}}
  f: {call: b, inputs: {}}
)", 5, 3, "duplicate key 'f' in 'entries'");
}

TEST_F(SpecTest, MissingCall) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    inputs: {}
)", 4, 3, "'entries.forward' has no 'call' key");
}

TEST_F(SpecTest, CallWithoutValue) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call:
    inputs: {}
)", 5, 5, "'entries.forward.call' must be a string, not nothing");
}

TEST_F(SpecTest, MissingInputs) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
)", 4, 3, "'entries.forward' has no 'inputs' key");
}

TEST_F(SpecTest, UnknownEntryKeySuggestsClosest) {
  UserError e = expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    cal: model
    inputs: {}
)", 5, 5, "unknown key 'cal' in 'entries.forward'");
  EXPECT_EQ(e.hint(), "did you mean 'call'?");
}

TEST_F(SpecTest, MissingDtype) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {shape: [1, 784]}
)", 7, 7, "'entries.forward.inputs.x' has no 'dtype' key");
}

TEST_F(SpecTest, MissingShape) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32}
)", 7, 7, "'entries.forward.inputs.x' has no 'shape' key");
}

TEST_F(SpecTest, UnknownInputKeySuggestsClosest) {
  UserError e = expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtpye: float32, shape: [1]}
)", 7, 11, "unknown key 'dtpye' in 'entries.forward.inputs.x'");
  EXPECT_EQ(e.hint(), "did you mean 'dtype'?");
}

TEST_F(SpecTest, InputNameNotIdentifier) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      2x: {dtype: float32, shape: [1]}
)", 7, 7, "input name '2x' is not an identifier");
}

TEST_F(SpecTest, UnknownDtypeListsValidOnes) {
  UserError e = expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float31, shape: [1]}
)", 7, 18, "unknown dtype 'float31'");
  EXPECT_NE(e.hint().find("did you mean 'float32'?"), std::string::npos) << e.hint();
  EXPECT_NE(e.hint().find("'bfloat16'"), std::string::npos) << e.hint();
  EXPECT_NE(e.hint().find("'bool'"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, ShapeNotAList) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: 784}
)", 7, 34, "'entries.forward.inputs.x.shape' must be a list, not an integer");
}

TEST_F(SpecTest, ShapeEntryZero) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [2, 0]}
)", 7, 38, "shape entry 0 in 'entries.forward.inputs.x.shape[1]' is not a positive integer");
}

TEST_F(SpecTest, ShapeEntryNeitherIntegerNorName) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [2.5]}
)", 7, 35, "is neither a positive integer nor a dim name");
}

TEST_F(SpecTest, UndeclaredDimSuggestsClosest) {
  UserError e = expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [bach, 784]}
dims:
  batch: [1, 8]
)", 7, 35, "uses dim 'bach', which is not declared under 'dims'");
  EXPECT_EQ(e.hint(), "did you mean 'batch'?");
}

TEST_F(SpecTest, UndeclaredDimWithoutDims) {
  UserError e = expect_error(R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch]}
)", 7, 35, "uses dim 'batch'");
  EXPECT_NE(e.hint().find("dims: {batch: [1, 8]}"), std::string::npos) << e.hint();
}

// ---- dims --------------------------------------------------------------------------------------

// The entries every dims test shares; dims start on line 8.
const char* kEntries = R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, 16]}
)";

TEST_F(SpecTest, StaticDimEmpty) {
  expect_error(std::string(kEntries) + "dims:\n  batch: []\n", 9, 10,
               "static dim 'batch' has no values");
}

TEST_F(SpecTest, StaticDimNonPositive) {
  expect_error(std::string(kEntries) + "dims:\n  batch: [1, -4]\n", 9, 14,
               "a value of dim 'batch' must be a positive integer, not -4");
}

TEST_F(SpecTest, StaticDimDuplicateValue) {
  expect_error(std::string(kEntries) + "dims:\n  batch: [1, 8, 1]\n", 9, 17,
               "dim 'batch' lists 1 twice");
}

TEST_F(SpecTest, StaticDimNotAnInteger) {
  expect_error(std::string(kEntries) + "dims:\n  batch: [1, big]\n", 9, 14,
               "'dims.batch[1]' must be an integer, not a string");
}

TEST_F(SpecTest, DimWithoutValue) {
  expect_error(std::string(kEntries) + "dims:\n  batch:\n", 9, 3,
               "dim 'batch' must be a list of sizes or a range, not nothing");
}

TEST_F(SpecTest, DimCalledName) {
  expect_error(std::string(kEntries) + "dims:\n  batch: [1]\n  name: [2]\n", 10, 3,
               "a dim may not be called 'name'");
}

TEST_F(SpecTest, DeclaredDimUnused) {
  expect_error(std::string(kEntries) + "dims:\n  batch: [1]\n  seq: [16]\n", 10, 3,
               "dim 'seq' is declared but no input shape uses it");
}

TEST_F(SpecTest, DynamicDimMinAboveMax) {
  expect_error(std::string(kEntries) + "dims:\n  batch: {min: 64, max: 16}\n", 9, 25,
               "dim 'batch' has min 64 > max 16");
}

TEST_F(SpecTest, DynamicDimMissingMax) {
  expect_error(std::string(kEntries) + "dims:\n  batch: {min: 4}\n", 9, 3,
               "'dims.batch' has no 'max' key");
}

TEST_F(SpecTest, DynamicDimMultipleOfZero) {
  expect_error(std::string(kEntries) + "dims:\n  batch: {min: 1, max: 16, multiple_of: 0}\n", 9,
               41, "'multiple_of' of dim 'batch' must be a positive integer, not 0");
}

TEST_F(SpecTest, DynamicDimNoMultipleInRange) {
  expect_error(std::string(kEntries) + "dims:\n  batch: {min: 9, max: 15, multiple_of: 8}\n", 9,
               41, "no size in [9, 15] is a multiple of 8");
}

TEST_F(SpecTest, DynamicDimUnknownKey) {
  UserError e = expect_error(std::string(kEntries) + "dims:\n  batch: {min: 1, maximum: 16}\n",
                             9, 19, "unknown key 'maximum' in 'dims.batch'");
  EXPECT_NE(e.hint().find("'min', 'max', 'multiple_of'"), std::string::npos) << e.hint();
}

// ---- padding buckets (issue 15) ----------------------------------------------------------------

const char* kBucketed = R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [1, seq], pad: 0}
      w: {dtype: float32, shape: [16]}
)";

TEST_F(SpecTest, BucketsParseAsOneStaticVariantEach) {
  ProfileSet set = parse(std::string(kBucketed) + "dims:\n  seq: {buckets: [16, 32, 64]}\n");
  ASSERT_EQ(set.dims.size(), 1u);
  EXPECT_TRUE(set.dims[0].is_bucketed);
  EXPECT_EQ(set.dims[0].values, (std::vector<int64_t>{16, 32, 64}));
  EXPECT_EQ(set.profiles.size(), 3u);
  EXPECT_EQ(set.entries[0].inputs[0].pad, std::optional<double>(0.0));
  EXPECT_EQ(set.entries[0].inputs[1].pad, std::nullopt);
}

TEST_F(SpecTest, BucketsMustGrow) {
  expect_error(std::string(kBucketed) + "dims:\n  seq: {buckets: [32, 16]}\n", 10, 18,
               "the buckets of dim 'seq' must grow: [32, 16]");
}

TEST_F(SpecTest, BucketsWithRangeKeysAreRefused) {
  expect_error(std::string(kBucketed) + "dims:\n  seq: {buckets: [16], max: 32}\n", 10, 24,
               "unknown key 'max' in 'dims.seq'");
}

TEST_F(SpecTest, ABucketedInputNeedsItsPadValue) {
  std::string text = kBucketed;
  text.replace(text.find(", pad: 0"), 8, "");
  UserError e = expect_error(text + "dims:\n  seq: {buckets: [16]}\n", 7, 7,
                             "input 'x' of entry 'forward' has the bucketed dim 'seq' but no `pad:` value");
  EXPECT_NE(e.hint().find("`pad: true` for a key-padding mask"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, PadWithoutABucketedDimIsRefused) {
  std::string text = kBucketed;
  text.replace(text.find("shape: [16]}"), 12, "shape: [16], pad: true}");
  expect_error(text + "dims:\n  seq: {buckets: [16]}\n", 8, 45,
               "input 'w' of entry 'forward' has `pad:` but no bucketed dim");
}

// ---- profiles ----------------------------------------------------------------------------------

const char* kTwoDims = R"(version: 1
script: mlp.py
entries:
  forward:
    call: model
    inputs:
      x: {dtype: float32, shape: [batch, heads]}
dims:
  batch: [1, 8]
  heads: [2, 4]
)";

TEST_F(SpecTest, ProfileUnknownDim) {
  UserError e = expect_error(std::string(kTwoDims) +
                                 "profiles:\n  - {name: a, batch: 1, heads: 2, haeds: 4}\n",
                             12, 35, "profile sets 'haeds', which is not a declared dim");
  EXPECT_EQ(e.hint(), "did you mean 'heads'?");
}

TEST_F(SpecTest, ProfileMissingDim) {
  UserError e = expect_error(std::string(kTwoDims) +
                                 "profiles:\n  - {name: a, batch: 1}\n  - {name: b}\n",
                             12, 5, "profile 'a' gives no value for dim 'heads'");
  EXPECT_NE(e.hint().find("heads: 2"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, UnnamedProfileMissingDimIsNamedByItsValues) {
  expect_error(std::string(kTwoDims) + "profiles:\n  - heads: 4\n", 12, 5,
               "profile 'heads=4' gives no value for dim 'batch'");
}

TEST_F(SpecTest, ProfileValueNotDeclared) {
  expect_error(std::string(kTwoDims) + "profiles:\n  - name: a\n    batch: 3\n    heads: 2\n", 13,
               12, "batch=3 is not one of the declared values [1, 8]");
}

TEST_F(SpecTest, ProfileFixesDynamicDim) {
  expect_error(R"(version: 1
script: mlp.py
entries:
  forward: {call: model, inputs: {x: {dtype: float32, shape: [seq]}}}
dims:
  seq: {min: 1, max: 8}
profiles:
  - {name: a, seq: 4}
)", 8, 15, "dim 'seq' is dynamic; a profile fixes static dims only");
}

TEST_F(SpecTest, DuplicateProfileNames) {
  UserError e = expect_error(std::string(kTwoDims) +
                                 "profiles:\n  - {name: a, batch: 1, heads: 2}\n"
                                 "  - {name: a, batch: 8, heads: 2}\n",
                             13, 12, "duplicate profile name 'a'");
  EXPECT_NE(e.hint().find(":12:5"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, DuplicateGeneratedProfileNames) {
  expect_error(std::string(kTwoDims) + "profiles:\n  - {batch: 1, heads: 2}\n"
                                       "  - {heads: 2, batch: 1}\n",
               13, 5, "duplicate profile name 'batch=1,heads=2'");
}

TEST_F(SpecTest, ProfilesEmpty) {
  expect_error(std::string(kTwoDims) + "profiles: []\n", 11, 11, "'profiles' is empty");
}

TEST_F(SpecTest, ProfilesNotAList) {
  expect_error(std::string(kTwoDims) + "profiles: {name: a}\n", 11, 11,
               "'profiles' must be a list, not a mapping");
}

// ---- targets and options -----------------------------------------------------------------------

const char* kMinimal = "version: 1\nscript: mlp.py\nentries: {f: {call: m, inputs: {}}}\n";

TEST_F(SpecTest, UnknownTarget) {
  UserError e = expect_error(std::string(kMinimal) + "targets: [cpu, cuad]\n", 4, 16,
                             "unknown target 'cuad'");
  EXPECT_NE(e.hint().find("did you mean 'cuda'?"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, DuplicateTarget) {
  expect_error(std::string(kMinimal) + "targets: [cpu, cpu]\n", 4, 16,
               "target 'cpu' is listed twice");
}

TEST_F(SpecTest, TargetsEmpty) {
  expect_error(std::string(kMinimal) + "targets: []\n", 4, 10, "'targets' is empty");
}

TEST_F(SpecTest, MaxVariantsBelowOne) {
  expect_error(std::string(kMinimal) + "options: {max_variants: 0}\n", 4, 25,
               "max_variants must be at least 1 (got 0)");
}

TEST_F(SpecTest, MaxVariantsWrongType) {
  expect_error(std::string(kMinimal) + "options:\n  max_variants: many\n", 5, 17,
               "'options.max_variants' must be an integer, not a string");
}

TEST_F(SpecTest, UnknownOption) {
  UserError e = expect_error(std::string(kMinimal) + "options: {max_variant: 2}\n", 4, 11,
                             "unknown key 'max_variant' in 'options'");
  EXPECT_EQ(e.hint(), "did you mean 'max_variants'?");
}

TEST_F(SpecTest, CudaMathNamesItsChoices) {
  UserError e = expect_error(std::string(kMinimal) + "targets: [cuda]\noptions: {cuda_math: tf-32}\n", 5, 22,
                             "unknown cuda_math 'tf-32'");
  EXPECT_NE(e.hint().find("did you mean 'tf32'?"), std::string::npos) << e.hint();
  expect_error(std::string(kMinimal) + "options: {cuda_math: tf32}\n", 4, 22,
               "cuda_math is set, but the spec's targets have no cuda");
}

// ---- inputs beyond tensors ---------------------------------------------------------------------

const std::string kInputsHead = "version: 1\nscript: mlp.py\nentries:\n  f:\n    call: model\n    inputs:\n";

TEST_F(SpecTest, UnknownInputTypeSuggestsClosest) {
  UserError e = expect_error(kInputsHead + "      n: {type: integer, value: 3}\n", 7, 17,
                             "unknown input type 'integer'");
  EXPECT_NE(e.hint().find("valid types are"), std::string::npos) << e.hint();
}

TEST_F(SpecTest, ScalarInputNeedsItsValue) {
  expect_error(kInputsHead + "      n: {type: int}\n", 7, 7, "no 'value' key");
}

TEST_F(SpecTest, ScalarInputTakesNoDtypeOrShape) {
  expect_error(kInputsHead + "      n: {type: int, value: 3, dtype: int32}\n", 7, 32,
               "'entries.f.inputs.n.dtype' does not apply to a Python int");
}

TEST_F(SpecTest, IntInputMustBeAnInteger) {
  expect_error(kInputsHead + "      n: {type: int, value: 2.5}\n", 7, 29, "must be an integer");
}

TEST_F(SpecTest, BoolInputMustBeTrueOrFalse) {
  expect_error(kInputsHead + "      c: {type: bool, value: yes please}\n", 7, 30, "must be true or false");
}

TEST_F(SpecTest, FloatInputMustBeFinite) {
  expect_error(kInputsHead + "      s: {type: float, value: .inf}\n", 7, 31, "must be a finite number");
}

TEST_F(SpecTest, TensorInputTakesNoValue) {
  expect_error(kInputsHead + "      x: {dtype: float32, shape: [4], value: 1}\n", 7, 39,
               "does not apply to a tensor input");
}

TEST_F(SpecTest, ContainerInputNeedsItems) {
  expect_error(kInputsHead + "      p: {type: tuple}\n", 7, 7, "no 'items' key");
}

TEST_F(SpecTest, ContainerItemsAreCheckedLikeInputs) {
  expect_error(kInputsHead + "      p: {type: dict, items: {a: {dtype: float33, shape: [4]}}}\n", 7, 42,
               "unknown dtype 'float33'");
}

}  // namespace
}  // namespace aotrace::shape_profiles

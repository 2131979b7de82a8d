// The JSON Schema of the profile YAML (DESIGN §6), for `aotrace profiles schema`: editors use it
// to complete and check specs. It mirrors what parse_profile_text accepts; the cross-file checks
// (declared dims, profile values, the script's existence) only the parser can make.
#include "shape_profiles/shape_profiles.h"

namespace aotrace::shape_profiles {

std::string profile_json_schema() {
  return R"JSON({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "aotrace profile",
  "$defs": {
    "input": {"oneOf": [
      {"type": "object", "additionalProperties": false, "required": ["dtype", "shape"],
       "description": "a tensor",
       "properties": {
         "type": {"const": "tensor"},
         "dtype": {"type": "string",
                   "description": "a torch dtype name (ir::parse_dtype): float32, int64, bool, ...; torch. prefix allowed",
                   "pattern": "^(torch\\.)?(float32|float16|bfloat16|float64|int64|int32|int8|uint8|bool|f32|f16|bf16|f64|i64|i32|i8|u8|b8|float|double|half|long|int)$",
                   "examples": ["float32", "float16", "bfloat16", "float64", "int64",
                                "int32", "int8", "uint8", "bool"]},
         "shape": {"type": "array", "items": {"anyOf": [
           {"type": "integer", "minimum": 1},
           {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}]}},
         "device": {"enum": ["cpu", "cuda", "cuda:0"],
                    "description": "cuda: passed in GPU memory when the bundle runs on a GPU (a device guard there)"},
         "pad": {"type": ["number", "boolean"],
                 "description": "what fills the input where a bucketed dim is padded (0 for token ids, true for a key-padding mask)"}}},
      {"type": "object", "additionalProperties": false, "required": ["type", "value"],
       "description": "a Python int, compiled in and guarded at run time (a 0-d int64 tensor)",
       "properties": {"type": {"const": "int"}, "value": {"type": "integer"}}},
      {"type": "object", "additionalProperties": false, "required": ["type", "value"],
       "description": "a Python float, compiled in and guarded at run time (a 0-d float64 tensor)",
       "properties": {"type": {"const": "float"}, "value": {"type": "number"}}},
      {"type": "object", "additionalProperties": false, "required": ["type", "value"],
       "description": "a Python bool, compiled in and guarded at run time (a 0-d bool tensor)",
       "properties": {"type": {"const": "bool"}, "value": {"type": "boolean"}}},
      {"type": "object", "additionalProperties": false, "required": ["type", "items"],
       "description": "a tuple or list of inputs, flattened into NAME.0, NAME.1, ...",
       "properties": {"type": {"enum": ["tuple", "list"]},
                      "items": {"type": "array", "items": {"$ref": "#/$defs/input"}}}},
      {"type": "object", "additionalProperties": false, "required": ["type", "items"],
       "description": "a dict of inputs, flattened into NAME.KEY",
       "properties": {"type": {"const": "dict"},
                      "items": {"type": "object",
                                "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                "additionalProperties": {"$ref": "#/$defs/input"}}}}]}
  },
  "type": "object",
  "additionalProperties": false,
  "required": ["version", "script", "entries"],
  "properties": {
    "version": {"const": 1},
    "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$",
             "description": "bundle name; default: the script's stem"},
    "script": {"type": "string", "description": "Python file, relative to this YAML file"},
    "entries": {
      "type": "object", "minProperties": 1,
      "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
      "additionalProperties": {
        "type": "object", "additionalProperties": false, "required": ["call", "inputs"],
        "properties": {
          "call": {"type": "string", "minLength": 1,
                   "description": "expression evaluated in the script's namespace"},
          "inputs": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {"$ref": "#/$defs/input"}
          }
        }
      }
    },
    "dims": {
      "type": "object",
      "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": {"const": "name"}},
      "additionalProperties": {"anyOf": [
        {"type": "integer", "minimum": 1},
        {"type": "array", "minItems": 1, "uniqueItems": true,
         "items": {"type": "integer", "minimum": 1}},
        {"type": "object", "additionalProperties": false, "required": ["max"],
         "properties": {"min": {"type": "integer", "minimum": 0},
                        "max": {"type": "integer", "minimum": 1},
                        "multiple_of": {"type": "integer", "minimum": 1},
                        "opt": {"anyOf": [{"type": "integer", "minimum": 0},
                                          {"type": "array", "uniqueItems": true,
                                           "items": {"type": "integer", "minimum": 0}}]}}},
        {"type": "object", "additionalProperties": false, "required": ["buckets"],
         "description": "one variant per bucket; a call is padded up to the smallest bucket that holds it",
         "properties": {"buckets": {"type": "array", "minItems": 1, "uniqueItems": true,
                                    "items": {"type": "integer", "minimum": 1}}}}]}
    },
    "profiles": {
      "type": "array", "minItems": 1,
      "items": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}},
                "additionalProperties": {"type": "integer", "minimum": 1}}
    },
    "targets": {"type": "array", "minItems": 1, "uniqueItems": true,
                "items": {"enum": ["cpu", "cuda"]}},
    "options": {"type": "object", "additionalProperties": false,
                "properties": {"max_variants": {"type": "integer", "minimum": 1},
                               "cuda_math": {"enum": ["f32", "tf32", "f16", "bf16"]}}}
  }
}
)JSON";
}

}  // namespace aotrace::shape_profiles

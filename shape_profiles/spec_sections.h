// shape_profiles/ private: one parser per section of the profile YAML (DESIGN §6).
// parse_spec.cpp runs them in order; each throws a UserError at the offending node.
#pragma once

#include "shape_profiles/shape_profiles.h"
#include "shape_profiles/yaml_values.h"

namespace aotrace::shape_profiles::detail {

// entries: {NAME: {call: EXPR, inputs: {PARAM: {dtype: D, shape: [...]}}}}  (parse_entries.cpp)
std::vector<EntrySpec> parse_entries(const Value& entries);

// dims: {NAME: [v, ...] | v | {min, max, multiple_of}}  (dims_and_profiles.cpp)
std::vector<DimSpec> parse_dims(const Value& dims);

// Every named dim in an input shape is declared, and every declared dim is used.
void check_dim_uses(const std::vector<EntrySpec>& entries, const std::vector<DimSpec>& dims,
                    const SourceLoc& dims_loc);

// profiles: [{name: N, DIM: v, ...}]: each gives one declared value per static dim.
std::vector<Profile> parse_profiles(const Value& profiles, const std::vector<DimSpec>& dims);

// No `profiles:`: every combination of the static dims' values, in declaration order.
std::vector<Profile> default_profiles(const std::vector<DimSpec>& dims, const SourceLoc& loc);
// Gives every profile the ranges of the dynamic dims, then the planned specialisations (DESIGN
// §6): the sizes 0 and 1 of a range and its `opt` sizes get static profiles of their own, listed
// before the range's (dispatch takes the first variant that accepts the inputs).
std::vector<Profile> specialise_dynamic_dims(std::vector<Profile> profiles, const std::vector<DimSpec>& dims);

}  // namespace aotrace::shape_profiles::detail

// A mistyped subcommand (`aotrace compil x.yaml`, `aotrace profiles chek`) is the user's error
// with the closest real name, checked before CLI11 parses (which would only say that a
// subcommand is required). Tests: UsageErrors.MistypedSubcommand*.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "cli/commands.h"

namespace aotrace::cli {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours each cost 1 ("chekc" is 1 from "check").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// A shell word as typed back in a hint: quoted when it holds anything but safe characters.
std::string shell_word(const std::string& w) {
  const bool safe = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@%", c);
  });
  return safe ? w : "'" + w + "'";
}

}  // namespace

std::string closest_name(const std::string& typo, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& name : names) {
    // Close: one edit for short names, two from six letters on, or the start of the name.
    const size_t d = edit_distance(typo, name);
    const bool close = d <= (name.size() >= 6 ? 2u : 1u) || (typo.size() >= 3 && name.rfind(typo, 0) == 0);
    if (close && d < best_distance) best = name, best_distance = d;
  }
  return best;
}

void refuse_unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* level = &app;
  std::string command = "aotrace";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return;
    if (word.empty() || word[0] == '-') continue;  // the levels that take subcommands have only flags
    std::vector<std::string> names;
    for (const CLI::App* sub : level->get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) != names.end()) {
      level = level->get_subcommand(word);
      command += " " + word;
      if (level->get_require_subcommand_min() == 0) return;  // the rest is this subcommand's to parse
      continue;
    }
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string suggestion = closest_name(word, names);
    if (suggestion.empty())
      throw UserError("unknown subcommand '" + word + "' of `" + command + "`", {},
                      "the subcommands are " + list + "; `" + command + " --help` describes them");
    std::string fixed = command + " " + suggestion;
    for (size_t j = i + 1; j < args.size(); ++j) fixed += " " + shell_word(args[j]);
    throw UserError("unknown subcommand '" + word + "'; did you mean '" + suggestion + "'?", {}, fixed);
  }
}

}  // namespace aotrace::cli

#include "cli/usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "stoker/util/utf8.h"

namespace stoker::cli {

std::string or_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

namespace {

// Edit distance counting an insertion, deletion, substitution or swap of neighbours as one
// (optimal string alignment).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// Parses a decimal whole number (optional sign) into `value`; a magnitude beyond 64 bits is
// clamped to just beyond them (still outside any option's range).
bool parse_whole(const std::string& text, __int128* value) {
  constexpr __int128 kBeyond = static_cast<__int128>(std::numeric_limits<uint64_t>::max()) + 1;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i == text.size()) return false;
  __int128 magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    magnitude = std::min(kBeyond, magnitude * 10 + (text[i] - '0'));
  }
  *value = negative ? -magnitude : magnitude;
  return true;
}

std::string single_quoted(const std::string& text) { return "'" + text + "'"; }

// "stoker train" for the train subcommand.
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* p = app.get_parent(); p != nullptr; p = p->get_parent())
    path = p->get_name() + " " + path;
  return path;
}

// The subcommand being parsed when the error came: the deepest one given.
const CLI::App& deepest_command(const CLI::App& app) {
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().back();
  return *current;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
    names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// A subcommand was required: either the word given is not one, or none was given.
std::string command_message(const CLI::App& command, const std::vector<std::string>& leftovers) {
  const std::vector<std::string> names = subcommand_names(command);
  // "stoker bench" -> "bench ": what precedes the subcommand in a message.
  std::string prefix = command_path(command);
  prefix = prefix.find(' ') == std::string::npos ? "" : prefix.substr(prefix.find(' ') + 1) + " ";
  for (const std::string& word : leftovers) {
    if (word.empty() || word[0] == '-') continue;
    const std::string near = closest_match(word, names);
    if (!near.empty())
      return fmt::format("unknown command '{}{}' (did you mean '{}{}'?)", prefix, word, prefix,
                         near);
    return fmt::format("unknown command '{}{}': the commands are {}", prefix, word, or_list(names));
  }
  const std::string after =
      prefix.empty() ? "" : " after '" + prefix.substr(0, prefix.size() - 1) + "'";
  return fmt::format("missing command{}: choose {} (see {} --help)", after, or_list(names),
                     command_path(command));
}

// Arguments left over: an unknown option, or a value no option or positional takes.
std::string leftover_message(const CLI::App& command, const std::vector<std::string>& leftovers) {
  const std::string help = command_path(command) + " --help";
  for (const std::string& word : leftovers) {
    if (word.size() < 2 || word[0] != '-') continue;
    const std::string option = word.substr(0, word.find('='));
    const std::string near = closest_match(option, option_names(command));
    if (!near.empty()) return fmt::format("unknown option {} (did you mean {}?)", option, near);
    return fmt::format("unknown option {} (see {})", option, help);
  }
  const std::string word = leftovers.empty() ? "" : leftovers.front();
  return fmt::format("unexpected argument '{}' (see {})", word, help);
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  std::vector<std::string> extensions;
  for (const std::string& c : candidates) {
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) extensions.push_back(c);
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A typo changes a few characters, and not most of a short word.
  const size_t allowed = std::min<size_t>(2, std::max<size_t>(1, word.size() / 3));
  if (best_distance <= allowed) return best;
  // "--check" for "--checkpoint-dir": a prefix of one candidate only, and not a bare dash.
  const size_t dashes = word.find_first_not_of('-');
  if (extensions.size() == 1 && dashes != std::string::npos && word.size() - dashes >= 2)
    return extensions.front();
  return "";
}

CLI::Validator whole_number(const std::string& option, int64_t min, uint64_t max,
                            const std::string& limit) {
  return CLI::Validator(
      [option, min, max, limit](std::string& text) -> std::string {
        __int128 value = 0;
        if (!parse_whole(text, &value))
          throw UsageError(option + ": " + single_quoted(text) + " is not a whole number");
        if (value < min) throw UsageError(fmt::format("{} must be at least {}", option, min));
        if (value > max)
          throw UsageError(fmt::format("{} must be at most {}{}", option, max,
                                       limit.empty() ? "" : " (" + limit + ")"));
        return "";
      },
      "", "whole_number");
}

CLI::Validator real_number(const std::string& option, double min, bool min_inclusive, double max) {
  return CLI::Validator(
      [option, min, min_inclusive, max](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || std::isnan(value))
          throw UsageError(option + ": " + single_quoted(text) + " is not a number");
        if (!std::isfinite(value) || (errno == ERANGE && std::abs(value) > 1))
          throw UsageError(option + ": " + single_quoted(text) + " is not a finite number");
        if (min_inclusive ? value < min : value <= min)
          throw UsageError(fmt::format("{} must be {} {:g}", option,
                                       min_inclusive ? "at least" : "greater than", min));
        if (value > max) throw UsageError(fmt::format("{} must be at most {:g}", option, max));
        return "";
      },
      "", "real_number");
}

CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices) {
  return CLI::Validator(
      [option, choices](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return "";
        const std::string near = closest_match(text, choices);
        throw UsageError(fmt::format("{}: unknown value '{}' ({}{})", option, text,
                                     near.empty() ? "" : "did you mean '" + near + "'? ",
                                     "choose " + or_list(choices)));
      },
      "", "one_of");
}

CLI::Option* add_choice(CLI::App& app, const std::string& name, std::string& value,
                        const std::string& help, const std::vector<std::string>& choices) {
  return app.add_option(name, value, fmt::format(fmt::runtime(help), or_list(choices)))
      ->check(one_of(name, choices));
}

CLI::Validator path_value(const std::string& option) {
  return CLI::Validator(
      [option](std::string& text) -> std::string {
        if (text.empty())
          throw UsageError(option + ": the path is empty: give a path, or leave " + option +
                           " out for its default");
        // Paths go into JSON (logs, checkpoints, manifests, reports), which holds text only.
        if (!is_valid_utf8(text))
          throw UsageError(option + ": '" + printable(text) +
                           "' is not valid UTF-8, and stoker records its paths in JSON files; "
                           "rename it, or reach it through a link with a UTF-8 name");
        return "";
      },
      "", "path");
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& command = deepest_command(app);
  const std::vector<std::string> leftovers = app.remaining(true);
  const bool needs_subcommand =
      command.get_require_subcommand_min() > 0 && command.get_subcommands().empty();
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && needs_subcommand)
    return command_message(command, leftovers);
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr)
    return leftover_message(command, leftovers);
  // "Could not convert: --x = abc", for an option without one of the checks above.
  const std::string text = error.what();
  const std::string prefix = "Could not convert: ";
  const size_t equals = text.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr && text.rfind(prefix, 0) == 0 &&
      equals != std::string::npos) {
    return fmt::format("{}: '{}' is not a valid value (see {} --help)",
                       text.substr(prefix.size(), equals - prefix.size()), text.substr(equals + 3),
                       command_path(command));
  }
  // The rest of CLI11's messages are single lines that name the option ("--images is
  // required", "--lr: 1 required FLOAT missing").
  std::string message = text;
  message = message.substr(0, message.find('\n'));
  return fmt::format("{} (see {} --help)", message, command_path(command));
}

}  // namespace stoker::cli

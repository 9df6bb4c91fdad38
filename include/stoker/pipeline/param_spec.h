#pragma once
// ParamSpec: one parameter described as data — its name, type, default, help, bounds, choices —
// and the one reader of its text. Operations (op_registry.h: `color_jitter:brightness=0.4`) and
// the loader's settings (loader_settings.h: `workers=auto`) are both described this way, so the
// command line, Python and the docs read one schema and every number is parsed by one parser.
// Values are plain data: thread-safe to share.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace stoker {

enum class ParamType { kBool, kInt, kFloat, kFloats, kChoice, kOps, kText };

// A parameter's value: typed (bool, int64, double, a list of doubles, a name or text) or, as a
// command line gives it, text still to parse by the parameter's type. A kOps value (a list of
// pixel operations' calls, for the combinators) is its text, "[NAME:key=value;NAME]", checked
// and written back by op_registry.h's make_op_call. A kInt's word ("auto") is its text.
using ParamValue = std::variant<bool, int64_t, double, std::vector<double>, std::string>;

// One parameter, declared as
//   ParamSpec::real("flip", 0.0, "probability of a flip").in(0, 1)
//   ParamSpec::integer("workers", -1, "worker threads").in(-1, 1024).or_word("auto")
struct ParamSpec {
  static constexpr size_t kAnyCount = static_cast<size_t>(-1);

  static ParamSpec flag(std::string name, bool default_value, std::string doc);
  static ParamSpec integer(std::string name, int64_t default_value, std::string doc);
  static ParamSpec real(std::string name, double default_value, std::string doc);
  // From min_count to max_count numbers (kAnyCount: no limit).
  static ParamSpec reals(std::string name, std::vector<double> default_value, std::string doc,
                         size_t min_count, size_t max_count);
  // One of `choices` (names, such as "bilinear" or "random"); the default is one of them.
  static ParamSpec choice(std::string name, std::string default_value,
                          std::vector<std::string> choices, std::string doc);
  // A list of at most max_count pixel operations' calls (a combinator's); the default is none.
  static ParamSpec ops(std::string name, std::string doc, size_t max_count);
  // The same of decoding operations' (kSource: a combinator of crops, random_source_choice).
  static ParamSpec source_ops(std::string name, std::string doc, size_t max_count);
  // Free text (a policy string, "rand-m9-mstd0.5-inc1"), which the operation's factory reads:
  // up to 256 printable ASCII characters but `,`, `;`, `[` and `]` (a call's text, also in a
  // list of calls, stays one call).
  static ParamSpec text(std::string name, std::string default_value, std::string doc);
  // Bounds of a number (each number of a list): [lo, hi], >= lo, > lo.
  ParamSpec in(double lo, double hi) const;
  ParamSpec at_least(double lo) const;
  ParamSpec above(double lo) const;
  // A kInt that also takes `word` in place of a number ("auto", "all").
  ParamSpec or_word(std::string word) const;
  // The same with another default (a word, where a kInt's default is one).
  ParamSpec defaulting_to(ParamValue value) const;

  std::string name;
  ParamType type = ParamType::kFloat;
  ParamValue default_value;  // of `type`
  std::string doc;
  // kInt, kFloat, kFloats (each number): the bounds, an open minimum excluding its bound. A
  // float is always finite.
  std::optional<double> min;
  std::optional<double> max;
  bool min_open = false;
  // kFloats: how many numbers; kOps: how many calls.
  size_t min_count = 1;
  size_t max_count = 1;
  // kOps: its calls are decoding operations' (source_ops), not pixel operations'.
  bool sources = false;
  // kChoice: the names it may take.
  std::vector<std::string> choices;
  // kInt: the word it takes besides numbers; empty: none.
  std::string word;
};

// Text as a value of `p`'s type ("0.5" a double, "[0.08,1]" a list, "true", a kInt's word as
// its text, a name or text as itself); nullopt if it is none. Bounds are param_value's.
std::optional<ParamValue> parse_param_text(const ParamSpec& p, const std::string& text);
// `value` as `p`'s type, within its bounds (an int where a float is taken becomes a double);
// nullopt if it is not. kOps text is not checked here (op_registry.h's make_op_call does).
std::optional<ParamValue> param_value(const ParamSpec& p, const ParamValue& value);
// What a value of `p` must be, as the errors say it: "a number at least 0", "2 numbers above 0",
// "a whole number in [1, 256] or auto".
std::string values_text(const ParamSpec& p);
// A value as a call's text writes it ("0.5", "[0.08,1]", "true", text as itself).
std::string to_text(const ParamValue& value);
// A value as an error shows it: as to_text, text quoted and made printable.
std::string quoted_text(const ParamValue& value);
const char* to_string(ParamType type);

}  // namespace stoker

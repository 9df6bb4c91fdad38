#pragma once
// ParamSpec: one parameter described as data — its name, type, default, help, bounds, choices —
// and the one reader of its text. Operations (pipeline/op_registry.h:
// `color_jitter:brightness=0.4`), data sources (access/source_registry.h: Parquet's
// `image_column`) and the loader's settings (pipeline/loader_settings.h: `workers=auto`) are all
// described this way, so the command line, Python and the docs read one schema and every number
// is parsed by one parser. Values are plain data: thread-safe to share.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "stoker/util/status.h"

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

// Checked parameters: every one of a list of ParamSpecs, typed, defaults filled in, in the
// order of the list (bind_params makes them).
class Params {
 public:
  Params() = default;
  explicit Params(std::vector<std::pair<std::string, ParamValue>> values)
      : values_(std::move(values)) {}
  bool flag(const std::string& name) const { return std::get<bool>(at(name)); }
  int64_t integer(const std::string& name) const { return std::get<int64_t>(at(name)); }
  double real(const std::string& name) const { return std::get<double>(at(name)); }
  const std::vector<double>& reals(const std::string& name) const {
    return std::get<std::vector<double>>(at(name));
  }
  const std::string& choice(const std::string& name) const {
    return std::get<std::string>(at(name));
  }
  // A kOps value's text, "[call;call]" (op_registry.h's parse_op_list reads it).
  const std::string& ops(const std::string& name) const { return choice(name); }
  const std::string& text(const std::string& name) const { return choice(name); }
  const std::vector<std::pair<std::string, ParamValue>>& values() const { return values_; }

 private:
  const ParamValue& at(const std::string& name) const;
  std::vector<std::pair<std::string, ParamValue>> values_;
};

// Throws std::logic_error (a bug of the registry entry `owner`) where a default is not its
// parameter's value.
void check_defaults(const std::string& owner, const std::vector<ParamSpec>& specs);

// Checks a kOps value's text and gives its canonical form (op_registry.h's); an error's message
// follows "OWNER: NAME: ".
using OpsCheck = std::function<Result<ParamValue>(const ParamSpec&, const std::string&)>;

// `given` (name, value) pairs as `specs`' Params: text read as its parameter's type, each value
// within its bounds, the others their defaults. kInvalidArgument, one line that starts with
// `owner`, for an unknown name (naming the parameters there are), one given twice, or a value
// its parameter does not take ("color_jitter: brightness must be a number at least 0, not -1").
// A kOps parameter's value goes through `check_ops` (a list of specs with one needs it).
Result<Params> bind_params(const std::string& owner, const std::vector<ParamSpec>& specs,
                           const std::vector<std::pair<std::string, ParamValue>>& given,
                           const OpsCheck& check_ops = {});

}  // namespace stoker

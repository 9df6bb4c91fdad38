#include "stoker/util/param_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// Within the bounds of `p` (a number of kInt, kFloat or kFloats).
bool in_bounds(const ParamSpec& p, double x) {
  if (!std::isfinite(x)) return false;
  if (p.min && (p.min_open ? !(x > *p.min) : !(x >= *p.min))) return false;
  return !p.max || x <= *p.max;
}

// " in [0, 1]", " above 0", ...: the bounds of `p` as words; "" when unbounded.
std::string bounds_text(const ParamSpec& p) {
  if (p.min && p.max) return fmt::format(" in {}{}, {}]", p.min_open ? "(" : "[", *p.min, *p.max);
  if (p.min) return fmt::format(" {} {}", p.min_open ? "above" : "at least", *p.min);
  if (p.max) return fmt::format(" at most {}", *p.max);
  return "";
}

// `value` as the command line writes it; text quoted.
std::string value_text(const ParamValue& value, bool quote_text = true) {
  struct Visitor {
    bool quote;
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return fmt::format("{}", i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::vector<double>& list) const {
      return fmt::format("[{}]", fmt::join(list, quote ? ", " : ","));
    }
    std::string operator()(const std::string& text) const {
      return quote ? "'" + printable(text) + "'" : text;
    }
  };
  return std::visit(Visitor{quote_text}, value);
}

template <typename T>
std::optional<T> parse_number(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || text.empty()) return std::nullopt;
  return value;
}

// Text as a value of `type`; nullopt if it is not one.
std::optional<ParamValue> parse_text(ParamType type, const std::string& text) {
  switch (type) {
    case ParamType::kBool:
      if (text == "true" || text == "false") return ParamValue(text == "true");
      return std::nullopt;
    case ParamType::kInt:
      if (auto i = parse_number<int64_t>(text)) return ParamValue(*i);
      return std::nullopt;
    case ParamType::kFloat:
      if (auto d = parse_number<double>(text)) return ParamValue(*d);
      return std::nullopt;
    case ParamType::kFloats: {
      std::string inner = text;
      if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']')
        inner = inner.substr(1, inner.size() - 2);
      std::vector<double> list;
      size_t begin = 0;
      while (!inner.empty() && begin <= inner.size()) {
        const size_t comma = std::min(inner.find(',', begin), inner.size());
        const auto d = parse_number<double>(inner.substr(begin, comma - begin));
        if (!d) return std::nullopt;
        list.push_back(*d);
        begin = comma + 1;
      }
      return ParamValue(std::move(list));
    }
    case ParamType::kChoice:
    case ParamType::kOps:
    case ParamType::kText:
      return ParamValue(text);
  }
  return std::nullopt;
}

// A kText value: short, printable ASCII, none of the characters that split a call's text.
bool plain_text(const std::string& text) {
  if (text.size() > 256) return false;
  for (char c : text)
    if (c < 0x20 || c > 0x7e || c == ',' || c == ';' || c == '[' || c == ']') return false;
  return true;
}

}  // namespace

std::optional<ParamValue> parse_param_text(const ParamSpec& p, const std::string& text) {
  if (p.type == ParamType::kInt && !p.word.empty() && text == p.word) return ParamValue(text);
  return parse_text(p.type, text);
}

std::optional<ParamValue> param_value(const ParamSpec& p, const ParamValue& value) {
  switch (p.type) {
    case ParamType::kBool:
      if (std::holds_alternative<bool>(value)) return value;
      return std::nullopt;
    case ParamType::kInt:
      if (const auto* i = std::get_if<int64_t>(&value); i && in_bounds(p, static_cast<double>(*i)))
        return value;
      if (const auto* text = std::get_if<std::string>(&value);
          text && !p.word.empty() && *text == p.word)
        return value;
      return std::nullopt;
    case ParamType::kFloat: {
      double d;
      if (const auto* i = std::get_if<int64_t>(&value)) {
        d = static_cast<double>(*i);
      } else if (const auto* x = std::get_if<double>(&value)) {
        d = *x;
      } else {
        return std::nullopt;
      }
      if (in_bounds(p, d)) return ParamValue(d);
      return std::nullopt;
    }
    case ParamType::kFloats: {
      std::vector<double> list;
      if (const auto* l = std::get_if<std::vector<double>>(&value)) {
        list = *l;
      } else if (const auto* x = std::get_if<double>(&value)) {
        list = {*x};
      } else if (const auto* i = std::get_if<int64_t>(&value)) {
        list = {static_cast<double>(*i)};
      } else {
        return std::nullopt;
      }
      if (list.size() < p.min_count || list.size() > p.max_count) return std::nullopt;
      for (double x : list)
        if (!in_bounds(p, x)) return std::nullopt;
      return ParamValue(std::move(list));
    }
    case ParamType::kChoice:
      if (const auto* text = std::get_if<std::string>(&value);
          text && std::find(p.choices.begin(), p.choices.end(), *text) != p.choices.end())
        return value;
      return std::nullopt;
    case ParamType::kOps:  // its calls are make_op_call's to check
      if (std::holds_alternative<std::string>(value)) return value;
      return std::nullopt;
    case ParamType::kText:
      if (const auto* text = std::get_if<std::string>(&value); text && plain_text(*text))
        return value;
      return std::nullopt;
  }
  return std::nullopt;
}

std::string values_text(const ParamSpec& p) {
  switch (p.type) {
    case ParamType::kBool:
      return "true or false";
    case ParamType::kInt:
      return "a whole number" + bounds_text(p) + (p.word.empty() ? "" : " or " + p.word);
    case ParamType::kFloat:
      return (p.min || p.max ? "a number" : "a finite number") + bounds_text(p);
    case ParamType::kFloats: {
      const bool one = p.min_count == 1 && p.max_count == 1;
      const std::string numbers =
          std::string(p.min || p.max ? "" : "finite ") + (one ? "number" : "numbers");
      if (p.min_count == p.max_count)
        return fmt::format("{} {}{}", p.min_count, numbers, bounds_text(p));
      if (p.max_count == ParamSpec::kAnyCount)
        return fmt::format("{} or more {}{}", p.min_count, numbers, bounds_text(p));
      return fmt::format("{} to {} {}{}", p.min_count, p.max_count, numbers, bounds_text(p));
    }
    case ParamType::kChoice:
      return fmt::format("one of {}", fmt::join(p.choices, ", "));
    case ParamType::kOps: {
      return fmt::format("at most {} {} operations, [NAME:key=value;NAME]", p.max_count,
                         p.sources ? "decoding" : "pixel");
    }
    case ParamType::kText:
      return "text of up to 256 printable characters but , ; [ ]";
  }
  return "";
}

std::string to_text(const ParamValue& value) { return value_text(value, /*quote_text=*/false); }

std::string quoted_text(const ParamValue& value) { return value_text(value); }

ParamSpec ParamSpec::flag(std::string name, bool default_value, std::string doc) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::kBool;
  p.default_value = default_value;
  p.doc = std::move(doc);
  return p;
}

ParamSpec ParamSpec::integer(std::string name, int64_t default_value, std::string doc) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kInt;
  p.default_value = default_value;
  return p;
}

ParamSpec ParamSpec::real(std::string name, double default_value, std::string doc) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kFloat;
  p.default_value = default_value;
  return p;
}

ParamSpec ParamSpec::reals(std::string name, std::vector<double> default_value, std::string doc,
                           size_t min_count, size_t max_count) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kFloats;
  p.default_value = std::move(default_value);
  p.min_count = min_count;
  p.max_count = max_count;
  return p;
}

ParamSpec ParamSpec::source_ops(std::string name, std::string doc, size_t max_count) {
  ParamSpec p = ops(std::move(name), std::move(doc), max_count);
  p.sources = true;
  return p;
}

ParamSpec ParamSpec::choice(std::string name, std::string default_value,
                            std::vector<std::string> choices, std::string doc) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kChoice;
  p.default_value = std::move(default_value);
  p.choices = std::move(choices);
  return p;
}

ParamSpec ParamSpec::ops(std::string name, std::string doc, size_t max_count) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kOps;
  p.default_value = std::string("[]");
  p.min_count = 0;
  p.max_count = max_count;
  return p;
}

ParamSpec ParamSpec::text(std::string name, std::string default_value, std::string doc) {
  ParamSpec p = flag(std::move(name), false, std::move(doc));
  p.type = ParamType::kText;
  p.default_value = std::move(default_value);
  return p;
}

ParamSpec ParamSpec::in(double lo, double hi) const {
  ParamSpec p = at_least(lo);
  p.max = hi;
  return p;
}

ParamSpec ParamSpec::at_least(double lo) const {
  ParamSpec p = *this;
  p.min = lo;
  return p;
}

ParamSpec ParamSpec::above(double lo) const {
  ParamSpec p = at_least(lo);
  p.min_open = true;
  return p;
}

ParamSpec ParamSpec::defaulting_to(ParamValue value) const {
  ParamSpec p = *this;
  p.default_value = std::move(value);
  return p;
}

ParamSpec ParamSpec::or_word(std::string word) const {
  ParamSpec p = *this;
  p.word = std::move(word);
  return p;
}

const char* to_string(ParamType type) {
  switch (type) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "int";
    case ParamType::kFloat:
      return "float";
    case ParamType::kFloats:
      return "floats";
    case ParamType::kChoice:
      return "choice";
    case ParamType::kOps:
      return "ops";
    case ParamType::kText:
      return "text";
  }
  return "?";
}

const ParamValue& Params::at(const std::string& name) const {
  for (const auto& [key, value] : values_)
    if (key == name) return value;
  throw std::logic_error("no parameter '" + name + "'");
}

namespace {

std::string names_of(const std::vector<ParamSpec>& specs) {
  std::vector<std::string> names;
  for (const ParamSpec& p : specs) names.push_back(p.name);
  return names.empty() ? "it has none" : "parameters: " + fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

void check_defaults(const std::string& owner, const std::vector<ParamSpec>& specs) {
  for (const ParamSpec& p : specs)
    if (!param_value(p, p.default_value))
      throw std::logic_error(owner + ": the default of " + p.name + " is not " + values_text(p));
}

Result<Params> bind_params(const std::string& owner, const std::vector<ParamSpec>& specs,
                           const std::vector<std::pair<std::string, ParamValue>>& given,
                           const OpsCheck& check_ops) {
  std::vector<std::optional<ParamValue>> values(specs.size());
  for (const auto& entry : given) {
    // Named, not bound: clang 14 takes no structured binding into a lambda.
    const std::string& key = entry.first;
    const ParamValue& value = entry.second;
    const auto p = std::find_if(specs.begin(), specs.end(),
                                [&](const ParamSpec& spec) { return spec.name == key; });
    if (p == specs.end())
      return invalid_argument(
          fmt::format("{}: unknown parameter '{}' ({})", owner, printable(key), names_of(specs)));
    std::optional<ParamValue>& slot = values[p - specs.begin()];
    if (slot) return invalid_argument(fmt::format("{}: {} is given twice", owner, key));
    if (p->type == ParamType::kOps) {
      const auto* text = std::get_if<std::string>(&value);
      if (!check_ops) throw std::logic_error(owner + ": a kOps parameter without its check");
      Result<ParamValue> ops =
          text ? check_ops(*p, *text)
               : Result<ParamValue>(invalid_argument(
                     fmt::format("must be {}, not {}", values_text(*p), quoted_text(value))));
      if (!ops.is_ok())
        return invalid_argument(fmt::format("{}: {}: {}", owner, key, ops.status().message()));
      slot = std::move(ops).value();
      continue;
    }
    // Text that reads as the type is that value, and named as one if it is out of bounds.
    ParamValue read = value;
    if (const auto* text = std::get_if<std::string>(&value))
      read = parse_param_text(*p, *text).value_or(value);
    slot = param_value(*p, read);
    if (!slot)
      return invalid_argument(
          fmt::format("{}: {} must be {}, not {}", owner, key, values_text(*p), quoted_text(read)));
  }
  std::vector<std::pair<std::string, ParamValue>> checked;
  for (size_t i = 0; i < specs.size(); ++i)
    checked.emplace_back(specs[i].name, values[i] ? *values[i] : specs[i].default_value);
  return Params(std::move(checked));
}

}  // namespace stoker

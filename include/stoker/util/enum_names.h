#pragma once
// EnumNames: the one table of an enum's names, from which its to_string, its parse, the CLI's
// choices and the Python package's choices all come, so that a name is written once.
//
//   inline constexpr auto kAmpModeNames = enum_names<AmpMode>(
//       {{AmpMode::kOff, "off"}, {AmpMode::kBf16, "bf16"}, {AmpMode::kFp16, "fp16"}});
//   kAmpModeNames.name(AmpMode::kBf16)  // "bf16"
//   kAmpModeNames.find("fp16")          // AmpMode::kFp16; std::nullopt for an unknown name
//   kAmpModeNames.names()               // {"off", "bf16", "fp16"}: the choices, in order
//   kAmpModeNames.joined()              // "off, bf16, fp16": for messages
//
// A table lists every value of its enum once, in the order its choices are shown. A parse
// function names what it parses in its own message (find + joined). Thread-safety: immutable.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// One value and its name.
template <typename Enum>
struct EnumEntry {
  Enum value;
  const char* name;
};

template <typename Enum, size_t N>
class EnumNames {
 public:
  using Entry = EnumEntry<Enum>;

  constexpr explicit EnumNames(const Entry (&entries)[N]) {
    for (size_t i = 0; i < N; ++i) entries_[i] = entries[i];
  }

  // The name of `value`; "unknown" for a value not in the table (only a cast can make one).
  const char* name(Enum value) const {
    for (const Entry& e : entries_) {
      if (e.value == value) return e.name;
    }
    return "unknown";
  }
  // The value named `name` (exactly), if any.
  std::optional<Enum> find(std::string_view name) const {
    for (const Entry& e : entries_) {
      if (name == e.name) return e.value;
    }
    return std::nullopt;
  }
  // Every name, in the table's order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.emplace_back(e.name);
    return out;
  }
  // The names joined by ", ".
  std::string joined() const {
    std::string out;
    for (const Entry& e : entries_) {
      if (!out.empty()) out += ", ";
      out += e.name;
    }
    return out;
  }

 private:
  std::array<Entry, N> entries_{};
};

// EnumNames<Enum, N> from a braced list of {value, name} pairs (N counted).
template <typename Enum, size_t N>
constexpr EnumNames<Enum, N> enum_names(const EnumEntry<Enum> (&entries)[N]) {
  return EnumNames<Enum, N>(entries);
}

}  // namespace stoker

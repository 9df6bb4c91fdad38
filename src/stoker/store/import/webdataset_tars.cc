#include "stoker/store/import/webdataset_tars.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The bytes of `names`.
uint64_t bytes_of(const std::vector<std::string>& names) {
  uint64_t bytes = 0;
  for (const std::string& name : names) bytes += name.size();
  return bytes;
}

// braceexpand's parse: the product of literal runs and brace items, escapes kept until the end.
class BraceExpander {
 public:
  BraceExpander(const std::string& whole, size_t limit, uint64_t byte_limit)
      : whole_(whole), limit_(limit), byte_limit_(byte_limit) {}

  Result<std::vector<std::string>> pattern(const std::string& text) {
    std::vector<std::string> out{""};
    size_t start = 0, depth = 0;
    for (size_t pos = 0; pos < text.size(); ++pos) {
      if (text[pos] == '\\') {
        ++pos;
      } else if (text[pos] == '{') {
        if (depth++ == 0 && pos > start) {
          STOKER_RETURN_IF_ERROR(times(out, {text.substr(start, pos - start)}));
          start = pos;
        }
      } else if (text[pos] == '}') {
        if (depth == 0) return bad("unbalanced braces");
        if (--depth > 0) continue;  // closes a nested brace: part of this one's expression
        const std::string expr = text.substr(start + 1, pos - start - 1);
        STOKER_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> item, expression(expr));
        if (item) {
          STOKER_RETURN_IF_ERROR(times(out, *item));
        } else {
          STOKER_ASSIGN_OR_RETURN(std::vector<std::string> inner, pattern(expr));
          STOKER_RETURN_IF_ERROR(times(out, {"{"}));
          STOKER_RETURN_IF_ERROR(times(out, inner));
          STOKER_RETURN_IF_ERROR(times(out, {"}"}));
        }
        start = pos + 1;
      }
    }
    if (depth != 0) return bad("unbalanced braces");
    if (start < text.size()) STOKER_RETURN_IF_ERROR(times(out, {text.substr(start)}));
    return out;
  }

 private:
  // The pattern for a message: a long one by its start, end and length, cut between UTF-8
  // characters.
  std::string shown() const {
    constexpr size_t kStart = 100, kEnd = 40;
    if (whole_.size() <= kStart + kEnd) return whole_;
    const auto inside = [&](size_t at) { return (whole_[at] & 0xC0) == 0x80; };
    size_t start = kStart, end = whole_.size() - kEnd;
    while (start > 0 && inside(start)) --start;
    while (end < whole_.size() && inside(end)) ++end;
    return fmt::format("{}...{} ({} bytes)", whole_.substr(0, start), whole_.substr(end),
                       whole_.size());
  }

  Status bad(const std::string& why) const {
    return invalid_argument(fmt::format("{}: {}", shown(), why));
  }

  Status too_many_bytes() const {
    return bad(fmt::format("names of more than {} bytes in all", byte_limit_));
  }

  // out = out x item, within the limits. out's and item's bytes are within byte_limit_ (each
  // made here), their counts within limit_: the product's bytes fit in 64 bits.
  Status times(std::vector<std::string>& out, const std::vector<std::string>& item) {
    if (!item.empty() && out.size() > limit_ / item.size())
      return bad(fmt::format("more than {} names", limit_));
    if (bytes_of(out) * item.size() + out.size() * bytes_of(item) > byte_limit_)
      return too_many_bytes();
    std::vector<std::string> product;
    product.reserve(out.size() * item.size());
    for (const std::string& a : out)
      for (const std::string& b : item) product.push_back(a + b);
    out = std::move(product);
    return Status::ok();
  }

  // An integer range or a comma sequence; nullopt for neither (the braces are literal).
  Result<std::optional<std::vector<std::string>>> expression(const std::string& expr) {
    STOKER_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> range, int_range(expr));
    if (range) return range;
    size_t start = 0, depth = 0;
    std::vector<std::string> items;
    uint64_t items_bytes = 0;
    bool sequence = false;
    for (size_t pos = 0; pos < expr.size(); ++pos) {
      if (expr[pos] == '\\') {
        ++pos;
      } else if (expr[pos] == '{') {
        ++depth;
      } else if (expr[pos] == '}') {
        --depth;
      } else if (expr[pos] == ',' && depth == 0) {
        STOKER_RETURN_IF_ERROR(append(items, items_bytes, expr.substr(start, pos - start)));
        start = pos + 1;
        sequence = true;
      }
    }
    if (depth != 0 || !sequence) return std::optional<std::vector<std::string>>();
    STOKER_RETURN_IF_ERROR(append(items, items_bytes, expr.substr(start)));
    return std::optional<std::vector<std::string>>(std::move(items));
  }

  // items += pattern(text), within the limits; `bytes` is items' bytes.
  Status append(std::vector<std::string>& items, uint64_t& bytes, const std::string& text) {
    STOKER_ASSIGN_OR_RETURN(std::vector<std::string> more, pattern(text));
    if (items.size() + more.size() > limit_) return bad(fmt::format("more than {} names", limit_));
    bytes += bytes_of(more);
    if (bytes > byte_limit_) return too_many_bytes();
    items.insert(items.end(), more.begin(), more.end());
    return Status::ok();
  }

  // `-?D+..-?D+(..-?D+)?`: the integers from the first to the second, both included.
  Result<std::optional<std::vector<std::string>>> int_range(const std::string& expr) {
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      const size_t dots = expr.find("..", at);
      parts.push_back(expr.substr(at, dots == std::string::npos ? std::string::npos : dots - at));
      if (dots == std::string::npos) break;
      at = dots + 2;
    }
    auto integer = [](const std::string& s) {
      const size_t digits = s.rfind('-', 0) == 0 ? 1 : 0;
      return s.size() > digits && s.find_first_not_of("0123456789", digits) == std::string::npos;
    };
    if (parts.size() < 2 || parts.size() > 3 || !integer(parts[0]) || !integer(parts[1]) ||
        (parts.size() == 3 && !integer(parts[2])))
      return std::optional<std::vector<std::string>>();
    for (const std::string& p : parts)
      if (p.size() > 18) return bad("a range bound of more than 18 digits");
    const int64_t first = std::stoll(parts[0]), last = std::stoll(parts[1]);
    int64_t step = parts.size() == 3 ? std::llabs(std::stoll(parts[2])) : 1;
    if (step == 0) step = 1;
    size_t padding = 0;
    for (const std::string& p : {parts[0], parts[1]})
      if (p != "0" && p != "-0" && (p.rfind("0", 0) == 0 || p.rfind("-0", 0) == 0))
        padding = std::max(parts[0].size(), parts[1].size());
    const uint64_t span = static_cast<uint64_t>(first < last ? last - first : first - last);
    if (span / static_cast<uint64_t>(step) >= limit_)
      return bad(fmt::format("more than {} names", limit_));
    std::vector<std::string> out;
    for (uint64_t k = 0; k <= span / static_cast<uint64_t>(step); ++k) {
      const int64_t v = first < last ? first + static_cast<int64_t>(k) * step
                                     : first - static_cast<int64_t>(k) * step;
      out.push_back(fmt::format("{:0{}d}", v, padding));
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

  const std::string& whole_;
  size_t limit_;
  uint64_t byte_limit_;
};

// `text` with each `\c` made `c`.
std::string unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

bool is_tar_name(const fs::path& path) { return path.extension() == ".tar"; }

// The .tar files of folder `dir`, by name; whether it also holds a folder.
std::vector<std::string> tars_in(const std::string& dir, bool* has_folder) {
  std::vector<std::string> tars;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && has_folder != nullptr) *has_folder = true;
    if (entry.is_regular_file(ec) && is_tar_name(entry.path())) tars.push_back(entry.path());
  }
  std::sort(tars.begin(), tars.end());
  return tars;
}

bool is_pattern(const std::string& spec) { return spec.find('{') != std::string::npos; }

}  // namespace

Result<std::vector<std::string>> expand_braces(const std::string& pattern, size_t limit,
                                               uint64_t byte_limit) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          BraceExpander(pattern, limit, byte_limit).pattern(pattern));
  for (std::string& name : names) name = unescape(name);
  return names;
}

Result<std::vector<std::string>> webdataset_tars(const std::string& spec) {
  std::vector<std::string> tars;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find('\n', start), spec.size());
    const std::string line = spec.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(line, ec)) {
      std::vector<std::string> found = tars_in(line, nullptr);
      if (found.empty()) return not_found(line + ": a folder without .tar files");
      tars.insert(tars.end(), found.begin(), found.end());
      continue;
    }
    std::vector<std::string> names{line};
    if (is_pattern(line)) {
      STOKER_ASSIGN_OR_RETURN(names, expand_braces(line));
    }
    for (const std::string& name : names) {
      if (!fs::exists(name, ec)) return not_found(name + ": no such tar");
      tars.push_back(name);
    }
  }
  if (tars.empty()) return not_found("'" + spec + "': names no tar");
  return tars;
}

bool looks_like_webdataset(const std::string& spec) {
  std::error_code ec;
  if (spec.find('\n') != std::string::npos) return true;
  if (fs::is_directory(spec, ec)) {
    bool has_folder = false;
    return !tars_in(spec, &has_folder).empty() && !has_folder;
  }
  if (is_pattern(spec) && !fs::exists(spec, ec)) {
    Result<std::vector<std::string>> names = expand_braces(spec, 1000000);
    return names.is_ok() && !names.value().empty() && is_tar_name(names.value().front());
  }
  return is_tar_name(spec) && fs::is_regular_file(spec, ec);
}

}  // namespace stoker

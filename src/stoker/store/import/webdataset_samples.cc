#include "stoker/store/import/webdataset_samples.h"

#include <fmt/format.h>

#include <set>

namespace stoker {
namespace {

// webdataset's skip_meta `__[^/]*__($|/)` at the name's start, and its meta files `__*__`.
bool is_meta(const std::string& name) {
  if (name.rfind("__", 0) != 0) return false;
  if (name.find('/') == std::string::npos && name.size() >= 2 &&
      name.compare(name.size() - 2, 2, "__") == 0)
    return true;
  for (size_t end = name.find("__", 2); end != std::string::npos; end = name.find("__", end + 1)) {
    if (name.find('/', 2) < end) return false;
    if (end + 2 == name.size() || name[end + 2] == '/') return true;
  }
  return false;
}

std::string lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

}  // namespace

std::optional<size_t> WebDatasetSample::member(const std::string& field) const {
  const auto found = fields.find(field);
  if (found == fields.end()) return std::nullopt;
  return found->second;
}

// The regular expression ^((?:.*/|)[^.]+)[.]([^/]*)$, as Python's re matches it: the prefix
// `.*/` tried from its longest (it holds no newline), then empty; after it, one or more
// non-dots up to the first dot, and no slash after that dot.
std::optional<std::pair<std::string, std::string>> split_key(const std::string& name) {
  const size_t newline = name.find('\n');
  auto try_at = [&](size_t start) -> std::optional<std::pair<std::string, std::string>> {
    const size_t dot = name.find('.', start);
    if (dot == std::string::npos || dot == start || name.find('/', dot + 1) != std::string::npos)
      return std::nullopt;
    return std::make_pair(name.substr(0, dot), name.substr(dot + 1));
  };
  for (size_t slash = name.rfind('/'); slash != std::string::npos;
       slash = slash == 0 ? std::string::npos : name.rfind('/', slash - 1)) {
    if (newline < slash) continue;
    if (auto split = try_at(slash + 1)) return split;
  }
  return try_at(0);
}

std::vector<WebDatasetSample> group_samples(const TarListing& listing) {
  std::vector<WebDatasetSample> samples;
  std::set<std::string> keys;
  bool open = false;  // whether the last sample may take more members
  for (size_t i = 0; i < listing.members.size(); ++i) {
    const TarMember& m = listing.members[i];
    if (is_meta(m.name)) continue;
    const auto split = split_key(m.name);
    if (!split) {
      samples.push_back({m.name, {}, fmt::format("member {}: its name has no key", m.name)});
      open = false;
      continue;
    }
    const auto& [key, field] = *split;
    if (!open || samples.back().key != key) {
      samples.push_back({key, {}, ""});
      open = true;
      if (!keys.insert(key).second)
        samples.back().problem =
            fmt::format("member {}: key {} again (a duplicate key)", m.name, key);
    }
    WebDatasetSample& sample = samples.back();
    if (sample.fields.size() == kMaxSampleMembers) {  // a bad record, its members not kept
      if (sample.problem.empty())
        sample.problem = fmt::format("member {}: sample {} has more than {} members", m.name, key,
                                     kMaxSampleMembers);
      continue;
    }
    const std::string name = lower(field);
    const bool second = !sample.fields.emplace(name, i).second;
    if (sample.problem.empty() && second)
      sample.problem = fmt::format("member {}: a second {} of sample {}", m.name, name, key);
    if (sample.problem.empty() && !m.unsupported.empty())
      sample.problem = fmt::format("member {}: {}, not a file", m.name, m.unsupported);
  }
  if (listing.damage.empty()) return samples;
  // A member cut short spoils the sample it belongs to; other damage is a record of its own.
  const auto cut = split_key(listing.cut_member);
  if (open && cut && cut->first == samples.back().key) {
    samples.back().problem = listing.damage;
  } else {
    samples.push_back({"", {}, listing.damage});
  }
  return samples;
}

}  // namespace stoker

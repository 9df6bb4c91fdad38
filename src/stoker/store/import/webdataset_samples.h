#pragma once
// A tar's members grouped into samples as the `webdataset` library groups them
// (tariterators.group_by_keys): a member's key is its name up to the first dot of its last
// component (base_plus_ext), its field the rest, lower-cased (ASCII); consecutive members with
// the same key form one sample. Members webdataset passes over are passed over: names of the
// form `__NAME__` (its metadata), directories. Stricter than webdataset, so that nothing is
// dropped unseen, these are samples with a problem (a bad record, named by tar and member): a
// member whose name has no key, a field twice in a sample, a key seen earlier in the tar (a
// duplicate key), a member that is not a regular file, a sample of more than kMaxSampleMembers
// members (each a field: its schema would be as wide), and the listing's damage (the last
// sample's problem where it cuts that sample's member short, else a sample of its own). Functions;
// thread-safe.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/store/import/tar_members.h"

namespace stoker {

inline constexpr size_t kMaxSampleMembers = 1024;

struct WebDatasetSample {
  std::string key;
  std::map<std::string, size_t> fields;  // field -> member index (a sample may hold thousands)
  std::string problem;                   // "" or why the sample is a bad record, naming the member
  // The member of `field`, or nullopt.
  std::optional<size_t> member(const std::string& field) const;
};

// (key, field) of a member's name as base_plus_ext splits it; nullopt when it has no key.
std::optional<std::pair<std::string, std::string>> split_key(const std::string& name);

// The samples of `listing`, in tar order.
std::vector<WebDatasetSample> group_samples(const TarListing& listing);

}  // namespace stoker

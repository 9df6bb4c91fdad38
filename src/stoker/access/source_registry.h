#pragma once
// The source registry: every kind of data a loader can read (stoker's shards, an image folder,
// WebDataset tars, Parquet files, ...) described once, by its name, its parameters (ParamSpecs:
// Parquet's `image_column`), what `auto` recognises as it, and its opening, local or at a URL.
// Python (`stoker._stoker.sources()`, the loader's `source=`), the commands and the tests read
// this table; parameters are checked here, once.
//
// A source is one file, sources/NAME.cc, defining `SourceSpec stoker::sources::NAME()`; the build
// lists the files of sources/ itself (cmake/StokerRegistry.cmake), so adding one touches nothing
// else (docs/ARCHITECTURE.md, "Adding a data source").
//
// The table is built on first use and immutable after: thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/cache/data_access.h"
#include "stoker/store/dataset.h"
#include "stoker/util/param_spec.h"
#include "stoker/util/status.h"

namespace stoker {

// A source's parameters as given ("image_column" = "img"), checked against its spec.
using SourceParams = std::vector<std::pair<std::string, ParamValue>>;

// What a source is opened with.
struct SourceOpening {
  std::string location;                       // a path, a URL, or several (a spec: lines, braces)
  const DataAccessOptions* access = nullptr;  // the shard cache's settings (remote data)
  // The reader's shuffle window, which the cache must hold (remote::kShardByShard, 0: all).
  int64_t shuffle_window = 0;
  Params params;  // the source's own, checked, defaults filled in
  // Turns true when the opening is to end (kCancelled): a remote listing polls it. May be empty.
  std::function<bool()> cancelled;
};

struct SourceSpec {
  std::string name;  // "parquet": `source=` in Python
  std::string doc;   // one line: what it reads
  std::vector<ParamSpec> params;
  // Where `auto` asks it, lower first; the first that recognises a location opens it.
  int auto_rank = 0;
  // Whether `auto` takes `location` (a path or URL) as this source's. It may look (list a
  // folder, ask a server; `cancelled`, which may be empty, ends that); a failure to look is a
  // no. Null: only named.
  std::function<bool(const std::string& location, const std::function<bool()>& cancelled)>
      recognises;
  // The dataset at opening.location: one line naming it where it cannot be opened.
  std::function<Result<std::shared_ptr<const Dataset>>(const SourceOpening& opening)> open;
};

// Every source, in the order `auto` asks them.
const std::vector<SourceSpec>& data_sources();
// The source named `name`; kInvalidArgument naming the sources (and "auto") for another name.
Result<const SourceSpec*> find_source(const std::string& name);
// The source `name` names, or for "auto" the first that recognises `location` (`cancelled` as
// SourceSpec::recognises takes it).
Result<const SourceSpec*> source_for(const std::string& name, const std::string& location,
                                     const std::function<bool()>& cancelled = nullptr);
// The registry as JSON: [{"name", "doc", "auto_rank", "params": [ParamSpec as param_json.h]}].
std::string sources_json();

}  // namespace stoker

#pragma once
// The tars a WebDataset names: a `.tar` file, a folder (its `.tar` files, by name), or a brace
// pattern as the `braceexpand` package (webdataset's) expands it: `{000..999}` a range of
// integers zero-padded to the wider end's width (a step `{0..9..2}` too), `{a,b,c}`
// alternatives, nested, `\{` a literal brace; several of these one a line (a Python list).
// Local paths only. Functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// The most bytes of names a pattern may expand to (a million names of 268 characters).
inline constexpr uint64_t kMaxBraceNameBytes = uint64_t{256} << 20;

// The expansions of `pattern` in order; kInvalidArgument naming the pattern (its start and end
// where it is long) for unbalanced braces, more than `limit` names or names of more than
// `byte_limit` bytes in all, both checked before the names are made.
Result<std::vector<std::string>> expand_braces(const std::string& pattern, size_t limit = 1000000,
                                               uint64_t byte_limit = kMaxBraceNameBytes);

// The tars `spec` names, in order: kNotFound naming a path that does not exist (or a folder
// without `.tar` files), kInvalidArgument for a bad pattern or a path that is not a tar's.
Result<std::vector<std::string>> webdataset_tars(const std::string& spec);

// Whether `spec` reads as WebDataset tars (for `auto`): a `.tar` file, several lines, a brace
// pattern, or a folder holding `.tar` files and no sub-folder.
bool looks_like_webdataset(const std::string& spec);

}  // namespace stoker

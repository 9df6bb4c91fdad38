#pragma once
// Token ids in a table's column, one row per document (Hugging Face datasets' tokenized
// `input_ids`: list<int32> or list<int64>), in Parquet files or Arrow IPC files (stream or file
// format: save_to_disk's `data-*.arrow`), decoded once into a Megatron-LM indexed dataset
// (megatron_index.h: one sequence and one document per row) that TokenSource reads in place.
// Parquet is compressed, so it cannot be read at random in place; the decoded copy can.
//
// The files are those `path` names (data_files.h: a file, a folder's, a glob's, sorted by name),
// read in order, a row group or record batch at a time (memory: one of them, and 4 bytes a row).
// The copy is kept in CACHE_DIR/token-columns/KEY.STAMP/ (tokens.bin, tokens.idx): KEY is the
// XXH3-64 of the column's name and the files' absolute paths, STAMP that of the files' identities
// (size, time) and the copy's format. It is written in a temporary folder renamed into place
// (never half-written; of processes building it at once, one's stays), and then replaces the
// other copies of the same KEY (files changed since: one copy per file set). An open that finds
// the copy of the files as they are decodes nothing. (Uncompressed Arrow could be mapped in place
// instead; not done.)
//
// The copy's token type is the narrowest of uint16, int32 and int64 that holds every id (uint16
// is the fastest to widen into batches): where every Parquet row group's statistics give the
// column's maximum, that; else uint16, the tokens written so far rewritten wider when a larger id
// comes (once or twice at most; a large vocabulary shows itself in the first rows).
//
// Errors, one line naming the file (and the row, counted in the file, with its row group or
// record batch): no such column, a column that is not a list of integers, a null row or id, an id
// below 0 or above int64's largest, a file that is not Parquet or Arrow or is damaged, a file
// changed while it was decoded; nothing is left in the cache then. Local files only. Functions;
// thread-safe, and safe across processes.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/in_place_files.h"
#include "stoker/util/saved_form.h"
#include "stoker/util/status.h"

namespace stoker {

struct TokenColumn {
  std::string location;  // the path the files were named by
  std::string column;
  std::string prefix;                    // the copy: PREFIX.bin and PREFIX.idx
  std::vector<std::string> files;        // the files decoded, in order
  std::vector<FileIdentity> identities;  // of `files`, as the copy was made of them
  std::string format;                    // "Parquet" or "Arrow"
  bool decoded = false;                  // whether this call decoded them (not found in the cache)
};

// The decoded copy of column `column` of the Parquet (`.parquet`) or Arrow (`.arrow`) files
// `path` names, from `cache_dir`'s, or decoded now.
Result<TokenColumn> token_column(const std::string& path, const std::string& column,
                                 const std::string& cache_dir);

}  // namespace stoker

#pragma once
// Token ids in a table's column, one row per document (Hugging Face datasets' tokenized
// `input_ids`: list<int32> or list<int64>), in Parquet files or Arrow IPC files (stream or file
// format: save_to_disk's `data-*.arrow`), for TokenSource (token_source.h) to read: one
// sequence and one document per row, the rows of the files in order.
//
// The files are those `path` names (data_files.h: a file, a folder's, a glob's, sorted by name),
// read in order: an Arrow file a record batch at a time, a Parquet file 2^16 levels (and ids) at a
// time, into the copy as they come (memory: a record batch, or a Parquet page and 4 MiB of its
// column chunk; and 4 bytes a row). What Arrow allocates for one file's read at once (a page or
// a body decompressed, a dictionary) is capped at 1 GiB (kMaxUnitRecordBytes) in a pool of its
// own: an Arrow record batch of more, compressed, or a Parquet page (or one whose header claims
// more) is refused in one line naming the file, the record batch or row group and the bytes
// asked (write smaller batches).
//
// Arrow files read in place: where every record batch of every file holds the column's ids
// uncompressed (no IPC body compression: Arrow's reader over the mapped file gives the ids'
// buffer inside the mapping), of one integer type in all of them (widened as a token file's,
// token_layout.h), with no null row or id, nothing is copied or written: the column's layout is
// one TokenSpan per record batch (its rows' ids, from its list offsets, at their byte offset in
// the file) over the files, TokenSpan::file naming the file (the spans of several files make one
// array, as the copy's do), the documents its rows (with their first tokens where asked). Its
// ids are then checked as a token file's are, when a unit is read (token_source.h), not here.
// Arrow's reader checks every batch's offsets against its ids (ValidateFull) first.
//
// Parquet (compressed, so it cannot be read at random in place) and other Arrow files (bodies
// compressed with LZ4 or ZSTD, nulls, files of different id types) are decoded once into a
// Megatron-LM indexed dataset (megatron_index.h) that TokenSource reads in place.
// The copy is kept in CACHE_DIR/token-columns/KEY.STAMP/ (tokens.bin, tokens.idx): KEY is the
// XXH3-64 of the column's name and the files' absolute paths, STAMP that of the files' identities
// (size, time) and the copy's format. It is written in a temporary folder renamed into place
// (never half-written; of processes building it at once, one's stays), and then replaces the
// other copies of the same KEY (files changed since: one copy per file set). An open that finds
// the copy of the files as they are decodes nothing.
//
// The copy's token type is the narrowest of uint16, int32 and int64 that holds every id (uint16
// is the fastest to widen into batches): where every Parquet row group's statistics give the
// column's maximum, that; else uint16, the tokens written so far rewritten wider when a larger id
// comes (once or twice at most; a large vocabulary shows itself in the first rows).
//
// Errors, one line naming the file (and the row, counted in the file, with its row group or
// record batch): no such column, a column that is not a list of integers, a null row or id, an id
// below 0 or above int64's largest (a copy's), a file that is not Parquet or Arrow or is damaged
// (cut short, its metadata or offsets wrong, a row group of more than 2^20 rows,
// kMaxRowsPerUnit), a Parquet row group decoding to more token ids than its bytes may hold
// (a decompression bomb: more than 8192 ids a byte of its column's chunk, or than 2^24 where
// that allows fewer; counted as they come, whatever its footer or page headers say), Arrow's
// allocations for a read past their cap, a file changed while it was decoded or read;
// nothing is left in the cache then. Local files only. Functions;
// thread-safe, and safe across processes.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/import/token_layout.h"
#include "stoker/store/in_place_files.h"
#include "stoker/util/saved_form.h"
#include "stoker/util/status.h"

namespace stoker {

struct TokenColumn {
  std::string location;  // the path the files were named by
  std::string column;
  std::string prefix;                    // the copy: PREFIX.bin and PREFIX.idx ("": in place)
  std::vector<std::string> files;        // the files read, in order
  std::vector<FileIdentity> identities;  // of `files`, as the copy was made of them or read
  std::string format;                    // "Parquet" or "Arrow"
  bool decoded = false;                  // whether this call decoded them (not found in the cache)
  // Read in place (Arrow, no copy): the ids' layout over `files`, the documents (rows), and,
  // where asked, each non-empty one's first token in the array, in order.
  bool in_place = false;
  TokenLayout layout;
  uint64_t documents = 0;
  std::vector<uint64_t> document_starts;
};

// Column `column` of the Parquet (`.parquet`) or Arrow (`.arrow`) files `path` names: read in
// place (Arrow, as above), or its decoded copy, from `cache_dir`'s or decoded now.
// `document_starts`: whether an in-place column lists its documents' first tokens (8 bytes a
// row; a copy's Megatron index has them).
Result<TokenColumn> token_column(const std::string& path, const std::string& column,
                                 const std::string& cache_dir, bool document_starts = false);

}  // namespace stoker

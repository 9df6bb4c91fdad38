#pragma once
// ObjectStore: the objects under a remote dataset's URL, by name ("manifest.json",
// "shard-00003.stk", "train/manifest.json"): get (whole or a byte range, optionally only while
// the object keeps an ETag), head, put, remove, list. HttpStore reads an HTTP(S) folder; S3Store
// reads and writes under an s3://bucket/prefix, signing with SigV4 (by libcurl), path-style on a
// custom endpoint (AWS_ENDPOINT_URL...) and virtual-host style on AWS. Messages name objects by
// their redacted URL (s3://bucket/key, http://host/path). docs/REMOTE-DESIGN.md, sections 1 and 4.
// Thread-safe: one store serves any number of threads.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/net/aws_credentials.h"
#include "stoker/net/http_client.h"
#include "stoker/net/remote_url.h"

namespace stoker::remote {

// The time a HEAD, a listing's page or a manifest's GET may take, retries included
// (docs/REMOTE-DESIGN.md, section 4: a small request served slowly is not waited on for ever).
inline constexpr double kSmallRequestSeconds = 60;

// An object a folder's listing names, and what the listing says of it where it says it (S3:
// size and ETag; nginx's JSON index: size and modification time; an HTML index page: nothing).
struct ListedObject {
  std::string name;  // in its folder
  std::optional<uint64_t> size;
  std::string etag;   // "" when not listed
  std::string mtime;  // "" when not listed
  bool operator==(const ListedObject& o) const {
    return name == o.name && size == o.size && etag == o.etag && mtime == o.mtime;
  }
};

// What is directly in a folder: its objects and its sub-folders (names without the '/'), each
// sorted by name.
struct FolderEntries {
  std::vector<ListedObject> files;
  std::vector<std::string> folders;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The redacted URL of object `name`, for messages.
  virtual std::string describe(const std::string& name) const = 0;

  // Object `name`'s body (or `range` of it) into `sink`; with `if_match`, only while its ETag
  // is that (else kCorrupt: it changed on the server); with `if_none_match`, status 304 and no
  // body while it is that; within `total_timeout_s` (retries included) when it is > 0.
  // kNotFound if there is no such object.
  Result<HttpResponse> get(const std::string& name, std::optional<ByteRange> range,
                           const ByteSink& sink, const std::string& if_match = "",
                           const std::function<bool()>& cancelled = nullptr,
                           const std::string& if_none_match = "", double total_timeout_s = 0) const;
  // Object `name`'s size and ETag, within kSmallRequestSeconds.
  Result<HttpResponse> head(const std::string& name,
                            const std::function<bool()>& cancelled = nullptr) const;
  // Writes object `name` from the file at `path`, or from `bytes`; kUnsupported for a
  // read-only store.
  virtual Result<HttpResponse> put_file(const std::string& name, const std::string& path) const;
  virtual Result<HttpResponse> put_bytes(const std::string& name, std::string_view bytes) const;
  // Deletes object `name` (done too if there was none); kUnsupported for a read-only store.
  virtual Result<HttpResponse> remove(const std::string& name) const;
  // The names of the objects directly in `folder` ("" for the URL's own folder, else names
  // ending in '/'), relative to it, sorted: not those in folders below (list_entries' files).
  Result<std::vector<std::string>> list(const std::string& folder) const;
  // The objects and sub-folders directly in `folder` (as list's), with what the listing says of
  // each object; `cancelled` (may be empty) turning true ends it (kCancelled).
  virtual Result<FolderEntries> list_entries(
      const std::string& folder, const std::function<bool()>& cancelled = nullptr) const = 0;
  // Whether the store's container exists: S3's bucket (kNotFound naming it if not, or the
  // error of a HEAD of it); always for HTTP. S3 servers may create a missing bucket on a PUT
  // (SeaweedFS does), so an upload checks this first.
  virtual Status check_bucket() const { return Status::ok(); }

 protected:
  explicit ObjectStore(std::shared_ptr<HttpClient> client) : client_(std::move(client)) {}
  // The request for object `name`: its URL, redacted URL and signing.
  virtual HttpRequest request(const std::string& name) const = 0;

  std::shared_ptr<HttpClient> client_;
};

// The objects under an http(s):// URL; read-only.
class HttpStore : public ObjectStore {
 public:
  HttpStore(std::shared_ptr<HttpClient> client, RemoteUrl url);
  std::string describe(const std::string& name) const override;
  Result<HttpResponse> put_file(const std::string& name, const std::string& path) const override;
  Result<HttpResponse> put_bytes(const std::string& name, std::string_view bytes) const override;
  Result<HttpResponse> remove(const std::string& name) const override;
  // The files the folder's index page links to (a web server's autoindex: a GET of the folder's
  // URL, parse_http_index_page), within kSmallRequestSeconds; kCorrupt naming the URL for a
  // page over 8 MiB or one parse_http_index_page refuses. Sub-folders are the links ending in
  // '/' (parse_http_index_entries).
  Result<FolderEntries> list_entries(
      const std::string& folder, const std::function<bool()>& cancelled = nullptr) const override;

 private:
  HttpRequest request(const std::string& name) const override;
  // kUnsupported naming object `name`: HTTP is read-only.
  Status read_only(const std::string& name) const;

  RemoteUrl url_;
};

// The objects under an s3:// URL.
class S3Store : public ObjectStore {
 public:
  S3Store(std::shared_ptr<HttpClient> client, RemoteUrl url, AwsCredentials credentials);
  std::string describe(const std::string& name) const override;
  // ListObjectsV2 with a '/' delimiter, page by page. The listing is checked, not trusted:
  // kCorrupt for a key not directly in the folder ('/' or ".." after the prefix), a token given
  // twice or over 4 KiB, a page over 8 MiB; kIoError past 100,000 pages or 10 minutes. The
  // sub-folders are the listing's common prefixes; each object comes with its size and ETag.
  Result<FolderEntries> list_entries(
      const std::string& folder, const std::function<bool()>& cancelled = nullptr) const override;
  Status check_bucket() const override;

 private:
  HttpRequest request(const std::string& name) const override;

  RemoteUrl url_;
  AwsCredentials credentials_;
};

// The URL that reaches `key` of `bucket`: on `endpoint` path-style (endpoint/bucket/key), else
// on AWS in `region` (https://bucket.s3.region.amazonaws.com/key; path-style for a bucket with
// a '.', which a virtual host's TLS certificate would not cover). The key percent-encoded.
std::string s3_object_url(const std::string& bucket, const std::string& key,
                          const std::string& region, const std::string& endpoint);

// The keys of a ListObjectsV2 response's <Contents> and its <NextContinuationToken> ("" when
// <IsTruncated> is not true), XML entities decoded; each key's object (its <Size> and <ETag>
// where given) and the <CommonPrefixes>' prefixes. kCorrupt naming `where` for a body that is
// no such response.
struct S3ListPage {
  std::vector<std::string> keys;
  std::vector<ListedObject> objects;  // named by their keys, as `keys`
  std::vector<std::string> prefixes;
  std::string next_token;
};
Result<S3ListPage> parse_s3_list_page(const std::string& xml, const std::string& where);

// The names of the files directly in `folder` that its index page `page` lists, percent-decoded,
// sorted, each once: a web server's autoindex (nginx's, Apache's, Python's http.server's) or any
// HTML page, each <a href> resolved against the folder's URL; or nginx's `autoindex_format json`
// (a page starting with '['), its entries of type "file". Other links are left out: sub-folders
// (a trailing '/'), parents, links with a query or fragment (sort orders), other schemes, hosts
// or userinfo, names that are no valid URL path. A small strict tokenizer rather than an HTML
// library (none is a dependency; an index page is machine-written `<a href="...">`): kCorrupt
// naming `where` for a page cut inside a tag, quoted value, comment or script, or for a JSON
// page that is not a list. docs/REMOTE-DESIGN.md, section 1; fuzzed (fuzz/http_index_fuzz.cc).
Result<std::vector<std::string>> parse_http_index_page(std::string_view page,
                                                       const RemoteUrl& folder,
                                                       const std::string& where);
// The files (with a JSON index's size and mtime) and the sub-folders of that page: links to a
// folder directly in `folder` (ending in '/'), or a JSON index's entries of type "directory".
Result<FolderEntries> parse_http_index_entries(std::string_view page, const RemoteUrl& folder,
                                               const std::string& where);

// The store for `url`: HttpStore, or S3Store with the credentials `env` gives.
Result<std::unique_ptr<ObjectStore>> open_object_store(const RemoteUrl& url,
                                                       std::shared_ptr<HttpClient> client,
                                                       const Environment& env);

}  // namespace stoker::remote

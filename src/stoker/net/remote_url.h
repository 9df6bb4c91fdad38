#pragma once
// RemoteUrl: where a remote dataset lives, `s3://bucket/prefix` or `http(s)://host/path`
// (docs/REMOTE-DESIGN.md, section 1), parsed once into a normal form: its cache key, the URLs of
// the objects under it, and a redacted form that every message uses (no userinfo, no query: a
// password or a signed token never reaches a message, a log or the cache's files).
// Values; thread-compatible.

#include <string>
#include <string_view>

#include "stoker/util/status.h"

namespace stoker::remote {

enum class UrlScheme { kS3, kHttp, kHttps };

struct RemoteUrl {
  UrlScheme scheme = UrlScheme::kHttp;
  // s3: the bucket. http(s): host[:port], lower case, without a default port (80, 443); an
  // IPv6 address in brackets.
  std::string host;
  // The path, percent-decoded, without leading or trailing '/': s3's key prefix, or the
  // folder under the HTTP server's root ("" for the root itself).
  std::string path;
  std::string userinfo;  // http(s): "user:password" as given before '@', "" if none
  std::string query;     // http(s): after '?' as given, "" if none; sent with every object

  // scheme://host/path?query, percent-encoded, no userinfo: equal for URLs naming the same
  // dataset however they were written.
  std::string normal() const;
  // normal() without the query: the form for messages and files.
  std::string redacted() const;
  // 16 hex digits of XXH3-64 of normal(): the dataset's folder in the cache.
  std::string cache_key() const;
  // The key of object `name` under path (s3: "prefix/name", or "name" with no prefix).
  std::string object_key(const std::string& name) const;
};

// Whether `text` names a remote dataset (it starts with s3://, http:// or https://, in any case)
// rather than a local path.
bool is_remote_url(std::string_view text);

// Parses `text`. kInvalidArgument, one line naming the URL in redacted, printable form, for:
// another scheme; no bucket or host; a bucket that is not 3-63 of [a-z0-9.-_] starting and ending
// with a letter or digit; a bad port; a bad percent escape, a control character, an empty, "." or
// ".." path segment; a fragment ('#'); userinfo or a query in an s3 URL; an '@' after the host
// (a password's '/', '?', '#' or '@' must be percent-encoded, else part of it would be read as
// the host, path or query and shown).
Result<RemoteUrl> parse_remote_url(std::string_view text);

// `text` with what could be secret cut out: from "://" to the last '@' (a malformed URL may
// hold '/', '?' or '#' in its password), then from '?' or '#' on. For text that did not parse.
std::string redact_url_text(std::string_view text);

// The one form in which a dataset's path or URL is shown or stored for people (messages, logs,
// reports, Python's reprs and results): a URL's redacted() when it parses, else
// redact_url_text(); a local path as it is.
std::string shown_location(std::string_view path_or_url);

// A command-line argument as a report shows it: from a "scheme://" in it on (`--data=URL`),
// shown_location()'s form (redact_url_text()'s for other schemes); other words as they are.
std::string shown_argument(std::string_view word);

// `path` percent-encoded as S3 and SigV4 expect: every byte but A-Z a-z 0-9 - . _ ~ and '/'.
std::string uri_encode_path(std::string_view path);

}  // namespace stoker::remote

#include "stoker/net/remote_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "stoker/util/checksum.h"
#include "stoker/util/utf8.h"

namespace stoker::remote {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with %XX escapes decoded; false on a malformed escape.
bool percent_decode(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return false;
    *out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return true;
}

bool valid_bucket(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  if (!is_alnum(bucket.front()) || !is_alnum(bucket.back())) return false;
  return std::all_of(bucket.begin(), bucket.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  });
}

bool valid_host_name(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return is_alnum(c) || c == '.' || c == '-' || c == '_';
  });
}

// host[:port] of an http(s) authority, normalised; "" if malformed.
std::string normal_host(std::string_view authority, UrlScheme scheme) {
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return "";
    host = authority.substr(0, close + 1);
    const std::string_view inside = authority.substr(1, close - 1);
    if (inside.empty() || !std::all_of(inside.begin(), inside.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
        })) {
      return "";
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return "";
      port = after.substr(1);
      if (port.empty()) return "";
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return "";
    }
    if (!valid_host_name(host)) return "";
  }
  if (!port.empty()) {
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return "";
    }
    const int number = std::stoi(std::string(port));
    if (number < 1 || number > 65535) return "";
    const bool default_port = (scheme == UrlScheme::kHttp && number == 80) ||
                              (scheme == UrlScheme::kHttps && number == 443);
    if (!default_port) return lower(host) + ":" + std::to_string(number);
  }
  return lower(host);
}

// The decoded path without its outer slashes; an error naming what is wrong, else "".
std::string normal_path(std::string_view raw, std::string* path) {
  std::string decoded;
  if (!percent_decode(raw, &decoded)) return "a malformed percent escape in the path";
  if (std::any_of(decoded.begin(), decoded.end(), is_control)) {
    return "a control character in the path";
  }
  size_t begin = decoded.find_first_not_of('/');
  if (begin == std::string::npos) return "";
  const size_t end = decoded.find_last_not_of('/') + 1;
  *path = decoded.substr(begin, end - begin);
  size_t start = 0;
  while (start <= path->size()) {
    size_t slash = path->find('/', start);
    if (slash == std::string::npos) slash = path->size();
    const std::string_view segment(path->data() + start, slash - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return "an empty, '.' or '..' path segment";
    }
    start = slash + 1;
  }
  return "";
}

Status bad_url(std::string_view text, const std::string& why) {
  return invalid_argument(
      fmt::format("{}: not a valid dataset URL: {}", printable(redact_url_text(text)), why));
}

}  // namespace

bool is_remote_url(std::string_view text) {
  const std::string head = lower(text.substr(0, 8));
  return head.rfind("s3://", 0) == 0 || head.rfind("http://", 0) == 0 ||
         head.rfind("https://", 0) == 0;
}

Result<RemoteUrl> parse_remote_url(std::string_view text) {
  const size_t separator = text.find("://");
  if (!is_remote_url(text) || separator == std::string_view::npos) {
    return bad_url(text, "it must start with s3://, http:// or https://");
  }
  if (std::any_of(text.begin(), text.end(), is_control)) {
    return bad_url(text, "a control character");
  }
  if (text.find('#') != std::string_view::npos) return bad_url(text, "a fragment ('#')");
  RemoteUrl url;
  const std::string scheme = lower(text.substr(0, separator));
  url.scheme = scheme == "s3"     ? UrlScheme::kS3
               : scheme == "http" ? UrlScheme::kHttp
                                  : UrlScheme::kHttps;
  std::string_view rest = text.substr(separator + 3);
  const size_t question = rest.find('?');
  if (question != std::string_view::npos) {
    url.query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view raw_path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (rest.substr(authority.size()).find('@') != std::string_view::npos ||
      url.query.find('@') != std::string::npos) {
    return bad_url(text,
                   "an '@' after the host: percent-encode it (%40), and a password's "
                   "reserved characters as well");
  }
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    url.userinfo = std::string(authority.substr(0, at));
    authority = authority.substr(at + 1);
  }
  if (url.scheme == UrlScheme::kS3) {
    if (!url.userinfo.empty() || at != std::string_view::npos) {
      return bad_url(text, "credentials belong in the environment or a profile, not the URL");
    }
    if (question != std::string_view::npos) return bad_url(text, "a query in an s3:// URL");
    url.host = std::string(authority);
    if (!valid_bucket(url.host)) {
      return bad_url(text,
                     "the bucket must be 3-63 of a-z 0-9 . - _, starting and ending with "
                     "a letter or digit");
    }
  } else {
    url.host = normal_host(authority, url.scheme);
    if (url.host.empty()) return bad_url(text, "a missing or malformed host or port");
  }
  const std::string path_error = normal_path(raw_path, &url.path);
  if (!path_error.empty()) return bad_url(text, path_error);
  return url;
}

std::string RemoteUrl::redacted() const {
  const char* name = scheme == UrlScheme::kS3     ? "s3"
                     : scheme == UrlScheme::kHttp ? "http"
                                                  : "https";
  std::string out = fmt::format("{}://{}", name, host);
  if (!path.empty()) out += "/" + uri_encode_path(path);
  return out;
}

std::string RemoteUrl::normal() const {
  return query.empty() ? redacted() : redacted() + "?" + query;
}

std::string RemoteUrl::cache_key() const {
  const std::string text = normal();
  return fmt::format("{:016x}", xxh3_64(text.data(), text.size()));
}

std::string RemoteUrl::object_key(const std::string& name) const {
  return path.empty() ? name : path + "/" + name;
}

std::string redact_url_text(std::string_view text) {
  std::string out(text);
  const size_t separator = out.find("://");
  const size_t authority = separator == std::string::npos ? 0 : separator + 3;
  const size_t at = out.rfind('@');
  if (at != std::string::npos && at >= authority) out.erase(authority, at + 1 - authority);
  return out.substr(0, out.find_first_of("?#"));
}

std::string shown_location(std::string_view path_or_url) {
  if (!is_remote_url(path_or_url)) return std::string(path_or_url);
  Result<RemoteUrl> url = parse_remote_url(path_or_url);
  return url.is_ok() ? url.value().redacted() : redact_url_text(path_or_url);
}

std::string shown_argument(std::string_view word) {
  const size_t separator = word.find("://");
  if (separator == std::string_view::npos) return std::string(word);
  size_t scheme = separator;
  while (scheme > 0 && is_alnum(word[scheme - 1])) --scheme;
  const std::string_view url = word.substr(scheme);
  return std::string(word.substr(0, scheme)) +
         (is_remote_url(url) ? shown_location(url) : redact_url_text(url));
}

std::string uri_encode_path(std::string_view path) {
  std::string out;
  for (const char c : path) {
    if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

}  // namespace stoker::remote

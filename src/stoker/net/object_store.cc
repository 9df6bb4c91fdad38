#include "stoker/net/object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "stoker/util/utf8.h"

namespace stoker::remote {

namespace {

// A listing's bounds: a page of 1000 keys of 1 KiB is about 1.5 MB; a real token is a few
// hundred bytes.
constexpr uint64_t kMaxListPageBytes = uint64_t{8} << 20;
constexpr size_t kMaxListTokenBytes = 4096;
constexpr size_t kMaxListPages = 100000;
constexpr int kMaxListSeconds = 600;

// The longest numeric character reference xml_text decodes, leading zeros and all ("&#x0007F;").
constexpr size_t kMaxCharacterReference = 12;

// `text` with XML's five predefined entities and numeric character references below 128
// decoded (S3 escapes keys so).
std::string xml_text(std::string_view text) {
  static const std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool decoded = false;
    for (const auto& [entity, c] : kEntities) {
      if (text.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size();
        decoded = true;
        break;
      }
    }
    if (!decoded && text.substr(i, 2) == "&#") {
      // A reference below 128 is short: looking further would make a run of "&#" quadratic.
      const size_t near = text.substr(i, kMaxCharacterReference).find(';');
      const size_t end = near == std::string_view::npos ? near : i + near;
      const bool hex = i + 2 < text.size() && (text[i + 2] == 'x' || text[i + 2] == 'X');
      const std::string digits(end == std::string_view::npos
                                   ? std::string_view()
                                   : text.substr(i + (hex ? 3 : 2), end - i - (hex ? 3 : 2)));
      char* stop = nullptr;
      const long code = std::strtol(digits.c_str(), &stop, hex ? 16 : 10);
      if (!digits.empty() && *stop == '\0' && code > 0 && code < 128) {
        out += static_cast<char>(code);
        i = end + 1;
        decoded = true;
      }
    }
    if (!decoded) out += text[i++];
  }
  return out;
}

// The text of each <tag>...</tag> of `xml`, in order (elements of one tag do not nest in S3's
// responses).
std::vector<std::string_view> elements(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  std::vector<std::string_view> found;
  for (size_t at = xml.find(open); at != std::string_view::npos; at = xml.find(open, at)) {
    const size_t start = at + open.size();
    const size_t stop = xml.find(close, start);
    if (stop == std::string_view::npos) break;
    found.push_back(xml.substr(start, stop - start));
    at = stop + close.size();
  }
  return found;
}

// The body of `r` (a listing's page), refused past kMaxListPageBytes: kCorrupt naming its URL.
Result<std::string> get_list_page(const HttpClient& client, const HttpRequest& r) {
  std::string body;
  STOKER_RETURN_IF_ERROR(
      client
          .get(r, std::nullopt,
               [&](uint64_t offset, const char* data, size_t size) {
                 if (offset > kMaxListPageBytes || size > kMaxListPageBytes - offset)
                   return corrupt(fmt::format("{}: a listing page over {} bytes; not used",
                                              r.redacted_url, kMaxListPageBytes));
                 body.resize(std::max<size_t>(body.size(), offset + size));
                 body.replace(offset, size, data, size);
                 return Status::ok();
               })
          .status());
  return body;
}

// Whether `a` and `b` are equal, ASCII letters of either case alike (HTML's tag and attribute
// names).
bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// The href of each <a> tag of HTML `page`, entities decoded, in order. A small tokenizer, not
// a parser: comments, <!...> and <?...> declarations, and <script> and <style> text are skipped;
// text and other tags are passed over. kCorrupt naming `where` for a page that ends inside a
// tag, a quoted value, a comment or a script (cut short: its links would be some of them).
Result<std::vector<std::string>> html_links(std::string_view page, const std::string& where) {
  const auto cut = [&](const char* inside) {
    return corrupt(where + ": the index page ends inside " + inside + "; not used");
  };
  std::vector<std::string> links;
  size_t i = 0;
  const auto skip_past = [&](std::string_view end) {
    const size_t at = page.find(end, i);
    i = at == std::string_view::npos ? page.size() + 1 : at + end.size();
    return at != std::string_view::npos;
  };
  while ((i = page.find('<', i)) != std::string_view::npos) {
    const std::string_view rest = page.substr(i);
    if (rest.substr(0, 4) == "<!--") {
      i += 4;
      if (!skip_past("-->")) return cut("a comment");
      continue;
    }
    if (rest.size() > 1 && (rest[1] == '!' || rest[1] == '?')) {
      if (!skip_past(">")) return cut("a declaration");
      continue;
    }
    const bool closing = rest.size() > 1 && rest[1] == '/';
    size_t at = i + 1 + closing;
    if (at >= page.size()) return cut("a tag");
    if (!std::isalpha(static_cast<unsigned char>(page[at]))) {
      ++i;  // a '<' in text
      continue;
    }
    const size_t name_start = at;
    while (at < page.size() && !is_space(page[at]) && page[at] != '/' && page[at] != '>') ++at;
    const std::string_view tag = page.substr(name_start, at - name_start);
    std::optional<std::string> href;
    while (true) {
      while (at < page.size() && (is_space(page[at]) || page[at] == '/')) ++at;
      if (at >= page.size()) return cut("a tag");
      if (page[at] == '>') break;
      const size_t attribute_start = at;
      while (at < page.size() && !is_space(page[at]) && page[at] != '=' && page[at] != '>' &&
             page[at] != '/')
        ++at;
      const std::string_view attribute = page.substr(attribute_start, at - attribute_start);
      while (at < page.size() && is_space(page[at])) ++at;
      std::string_view value;
      if (at < page.size() && page[at] == '=') {
        ++at;
        while (at < page.size() && is_space(page[at])) ++at;
        if (at >= page.size()) return cut("a tag");
        if (page[at] == '"' || page[at] == '\'') {
          const size_t close = page.find(page[at], at + 1);
          if (close == std::string_view::npos) return cut("a quoted value");
          value = page.substr(at + 1, close - at - 1);
          at = close + 1;
        } else {
          const size_t value_start = at;
          while (at < page.size() && !is_space(page[at]) && page[at] != '>') ++at;
          value = page.substr(value_start, at - value_start);
        }
      }
      if (equal_ignoring_case(tag, "a") && !closing && equal_ignoring_case(attribute, "href") &&
          !href)
        href = xml_text(value);
    }
    i = at + 1;
    if (href) links.push_back(std::move(*href));
    const bool raw_text = equal_ignoring_case(tag, "script") || equal_ignoring_case(tag, "style");
    if (!closing && raw_text) {
      // Its text runs to its end tag, '<' and all.
      size_t close = i;
      while ((close = page.find("</", close)) != std::string_view::npos &&
             !equal_ignoring_case(page.substr(close + 2, tag.size()), tag))
        close += 2;
      if (close == std::string_view::npos) return cut("a script or style");
      i = close;
    }
  }
  return links;
}

// What a link of an index page names directly in `folder`: a file's or a sub-folder's name.
struct LinkedEntry {
  std::string name;
  bool folder = false;
};

// The file or sub-folder (a link ending in '/') directly in `folder` that `link` (an href of
// its index page) names, or nullopt for any other link: a parent, a query or fragment (a sort
// order), another host or scheme, a link that is no URL of ours.
std::optional<LinkedEntry> linked_entry(std::string link, const RemoteUrl& folder) {
  const bool is_folder = !link.empty() && link.back() == '/';
  if (is_folder) link.pop_back();
  if (link.empty() || link.find_first_of("?#") != std::string::npos || link.back() == '/')
    return std::nullopt;
  const std::string scheme = folder.scheme == UrlScheme::kHttps ? "https" : "http";
  std::string absolute;
  const size_t colon = link.find(':');
  const bool has_scheme =
      colon != std::string::npos && colon > 0 && link.find_first_of("/") > colon &&
      std::all_of(link.begin(), link.begin() + static_cast<ptrdiff_t>(colon), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      });
  if (has_scheme) {
    absolute = link;
  } else if (link.rfind("//", 0) == 0) {
    absolute = scheme + ":" + link;
  } else if (link.front() == '/') {
    absolute = scheme + "://" + folder.host + link;
  } else {
    // nginx writes "./a:b.tar" for a name with a ':' (else read as a scheme).
    absolute = folder.redacted() + "/" + (link.rfind("./", 0) == 0 ? link.substr(2) : link);
  }
  Result<RemoteUrl> parsed = parse_remote_url(absolute);
  if (!parsed.is_ok()) return std::nullopt;
  const RemoteUrl& url = parsed.value();
  if (url.scheme != folder.scheme || url.host != folder.host || !url.userinfo.empty())
    return std::nullopt;
  const size_t slash = url.path.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : url.path.substr(0, slash);
  if (parent != folder.path) return std::nullopt;
  std::string name = slash == std::string::npos ? url.path : url.path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return std::nullopt;
  return LinkedEntry{std::move(name), is_folder};
}

// Whether `name` (from a JSON index) is a plain name in its folder.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         std::none_of(name.begin(), name.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// The files and folders of nginx's `autoindex_format json` page: [{"name":..., "type":"file",
// "mtime":..., "size":...}, {"name":..., "type":"directory", ...}, ...]. kCorrupt naming `where`
// for a page that is no such JSON.
Result<FolderEntries> json_index_entries(std::string_view page, const std::string& where) {
  // Values nested deeper than an entry's are dropped as they are parsed.
  const nlohmann::json::parser_callback_t shallow = [](int depth, nlohmann::json::parse_event_t,
                                                       nlohmann::json&) { return depth <= 2; };
  const nlohmann::json index = nlohmann::json::parse(page, shallow, /*allow_exceptions=*/false);
  if (!index.is_array()) return corrupt(where + ": the index page is not a JSON list; not used");
  FolderEntries entries;
  for (const nlohmann::json& entry : index) {
    if (!entry.is_object()) continue;
    const auto name = entry.find("name");
    const auto type = entry.find("type");
    if (name == entry.end() || type == entry.end() || !name->is_string() ||
        !plain_name(name->get<std::string>()))
      continue;
    if (*type == "directory") {
      entries.folders.push_back(name->get<std::string>());
    } else if (*type == "file") {
      ListedObject file;
      file.name = name->get<std::string>();
      const auto size = entry.find("size");
      if (size != entry.end() && size->is_number_unsigned()) file.size = size->get<uint64_t>();
      const auto mtime = entry.find("mtime");
      if (mtime != entry.end() && mtime->is_string()) file.mtime = mtime->get<std::string>();
      entries.files.push_back(std::move(file));
    }
  }
  return entries;
}

// `names` sorted, each once.
void sort_unique(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

}  // namespace

Result<HttpResponse> ObjectStore::get(const std::string& name, std::optional<ByteRange> range,
                                      const ByteSink& sink, const std::string& if_match,
                                      const std::function<bool()>& cancelled,
                                      const std::string& if_none_match,
                                      double total_timeout_s) const {
  HttpRequest r = request(name);
  r.total_timeout_s = total_timeout_s;
  r.if_match = if_match;
  r.if_none_match = if_none_match;
  r.cancelled = cancelled;
  return client_->get(r, range, sink);
}

Result<HttpResponse> ObjectStore::head(const std::string& name,
                                       const std::function<bool()>& cancelled) const {
  HttpRequest r = request(name);
  r.total_timeout_s = kSmallRequestSeconds;
  r.cancelled = cancelled;
  return client_->head(r);
}

Result<HttpResponse> ObjectStore::put_file(const std::string& name, const std::string& path) const {
  return client_->put_file(request(name), path);
}

Result<HttpResponse> ObjectStore::put_bytes(const std::string& name, std::string_view bytes) const {
  return client_->put_bytes(request(name), bytes);
}

Result<HttpResponse> ObjectStore::remove(const std::string& name) const {
  return client_->remove(request(name));
}

HttpStore::HttpStore(std::shared_ptr<HttpClient> client, RemoteUrl url)
    : ObjectStore(std::move(client)), url_(std::move(url)) {}

std::string HttpStore::describe(const std::string& name) const {
  return fmt::format("{}/{}", url_.redacted(), uri_encode_path(name));
}

HttpRequest HttpStore::request(const std::string& name) const {
  HttpRequest r;
  const std::string scheme = url_.scheme == UrlScheme::kHttps ? "https" : "http";
  const std::string userinfo = url_.userinfo.empty() ? "" : url_.userinfo + "@";
  r.url = fmt::format("{}://{}{}/{}", scheme, userinfo, url_.host,
                      uri_encode_path(url_.object_key(name)));
  if (!url_.query.empty()) r.url += "?" + url_.query;
  r.redacted_url = describe(name);
  return r;
}

Status HttpStore::read_only(const std::string& name) const {
  return unsupported(describe(name) + ": an HTTP dataset is read-only (push to s3:// instead)");
}

Result<HttpResponse> HttpStore::put_file(const std::string& name, const std::string&) const {
  return read_only(name);
}

Result<HttpResponse> HttpStore::put_bytes(const std::string& name, std::string_view) const {
  return read_only(name);
}

Result<HttpResponse> HttpStore::remove(const std::string& name) const { return read_only(name); }

Result<std::vector<std::string>> ObjectStore::list(const std::string& folder) const {
  STOKER_ASSIGN_OR_RETURN(FolderEntries entries, list_entries(folder));
  std::vector<std::string> names;
  for (ListedObject& file : entries.files) names.push_back(std::move(file.name));
  return names;
}

Result<FolderEntries> HttpStore::list_entries(const std::string& folder,
                                              const std::function<bool()>& cancelled) const {
  HttpRequest r = request(folder);
  r.total_timeout_s = kSmallRequestSeconds;
  r.cancelled = cancelled;
  STOKER_ASSIGN_OR_RETURN(const std::string page, get_list_page(*client_, r));
  RemoteUrl listed = url_;
  if (!folder.empty()) listed.path = url_.object_key(folder.substr(0, folder.size() - 1));
  return parse_http_index_entries(page, listed, r.redacted_url);
}

S3Store::S3Store(std::shared_ptr<HttpClient> client, RemoteUrl url, AwsCredentials credentials)
    : ObjectStore(std::move(client)), url_(std::move(url)), credentials_(std::move(credentials)) {}

std::string S3Store::describe(const std::string& name) const {
  return fmt::format("s3://{}/{}", url_.host, uri_encode_path(url_.object_key(name)));
}

HttpRequest S3Store::request(const std::string& name) const {
  HttpRequest r;
  r.url =
      s3_object_url(url_.host, url_.object_key(name), credentials_.region, credentials_.endpoint);
  r.redacted_url = describe(name);
  r.sigv4 = &credentials_;
  r.denied_hint = "AWS keys: " + credentials_.keys_from;
  return r;
}

Result<FolderEntries> S3Store::list_entries(const std::string& folder,
                                            const std::function<bool()>& cancelled) const {
  const std::string prefix = url_.object_key(folder);
  // The query in SigV4's canonical form (libcurl signs it as given: REMOTE-DESIGN.md, section
  // 4): parameters sorted by name, values encoded with '/' too.
  const auto encoded = [](const std::string& value) {
    std::string out;
    for (const char c : uri_encode_path(value))
      out += c == '/' ? std::string("%2F") : std::string(1, c);
    return out;
  };
  FolderEntries entries;
  std::string token;
  std::set<std::string> tokens;  // a token seen twice would loop for ever
  const auto started = std::chrono::steady_clock::now();
  do {
    if (tokens.size() >= kMaxListPages ||
        std::chrono::steady_clock::now() - started > std::chrono::seconds(kMaxListSeconds))
      return io_error(fmt::format("{}: the listing goes on past {} pages or {} s; not used",
                                  describe(folder), kMaxListPages, kMaxListSeconds));
    HttpRequest r = request("");
    r.url = s3_object_url(url_.host, "", credentials_.region, credentials_.endpoint) + "?" +
            (token.empty() ? "" : "continuation-token=" + encoded(token) + "&") +
            "delimiter=%2F&list-type=2&prefix=" + encoded(prefix);
    r.redacted_url = describe(folder);
    r.total_timeout_s = kSmallRequestSeconds;
    r.cancelled = cancelled;
    STOKER_ASSIGN_OR_RETURN(const std::string body, get_list_page(*client_, r));
    STOKER_ASSIGN_OR_RETURN(S3ListPage page, parse_s3_list_page(body, r.redacted_url));
    for (ListedObject& object : page.objects) {
      const std::string& key = object.name;
      if (key == prefix) continue;  // a folder's own marker object
      // Delimited by '/', a listing names only objects directly in the folder: another key
      // (a server that ignores the delimiter, "prefix/../other") is refused, never used.
      const std::string name =
          key.compare(0, prefix.size(), prefix) == 0 ? key.substr(prefix.size()) : std::string();
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        return corrupt(
            fmt::format("{}: the listing names '{}', not an object directly in the "
                        "folder (does the server ignore the delimiter?); not used",
                        r.redacted_url, printable(key)));
      object.name = name;
      entries.files.push_back(std::move(object));
    }
    for (const std::string& common : page.prefixes) {
      // A sub-folder: the prefix, a name, then the delimiter.
      const std::string name = common.size() > prefix.size() + 1 &&
                                       common.compare(0, prefix.size(), prefix) == 0 &&
                                       common.back() == '/'
                                   ? common.substr(prefix.size(), common.size() - prefix.size() - 1)
                                   : std::string();
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        return corrupt(
            fmt::format("{}: the listing names the folder '{}', not one directly in "
                        "the folder; not used",
                        r.redacted_url, printable(common)));
      entries.folders.push_back(name);
    }
    if (page.next_token.size() > kMaxListTokenBytes || tokens.count(page.next_token) > 0)
      return corrupt(fmt::format("{}: a continuation token too long or given twice; not used",
                                 r.redacted_url));
    token = std::move(page.next_token);
    tokens.insert(token);
  } while (!token.empty());
  std::sort(entries.files.begin(), entries.files.end(),
            [](const ListedObject& a, const ListedObject& b) { return a.name < b.name; });
  sort_unique(entries.folders);
  return entries;
}

Result<S3ListPage> parse_s3_list_page(const std::string& xml, const std::string& where) {
  if (xml.find("<ListBucketResult") == std::string::npos)
    return corrupt(where + ": the listing is not an S3 ListBucketResult");
  S3ListPage page;
  for (const std::string_view contents : elements(xml, "Contents")) {
    const std::vector<std::string_view> key = elements(contents, "Key");
    if (key.size() != 1) return corrupt(where + ": a listed object without one <Key>");
    page.keys.push_back(xml_text(key[0]));
    ListedObject object;
    object.name = page.keys.back();
    const std::vector<std::string_view> size = elements(contents, "Size");
    if (size.size() == 1) {
      char* end = nullptr;
      const std::string digits(size[0]);
      const unsigned long long value = std::strtoull(digits.c_str(), &end, 10);
      if (digits.empty() || *end != '\0' || digits[0] == '-')
        return corrupt(where + ": a listed object's <Size> is not a number");
      object.size = value;
    }
    const std::vector<std::string_view> etag = elements(contents, "ETag");
    if (etag.size() == 1) object.etag = xml_text(etag[0]);
    page.objects.push_back(std::move(object));
  }
  for (const std::string_view common : elements(xml, "CommonPrefixes")) {
    const std::vector<std::string_view> prefix = elements(common, "Prefix");
    if (prefix.size() != 1) return corrupt(where + ": a common prefix without one <Prefix>");
    page.prefixes.push_back(xml_text(prefix[0]));
  }
  const std::vector<std::string_view> truncated = elements(xml, "IsTruncated");
  if (!truncated.empty() && truncated[0] == "true") {
    const std::vector<std::string_view> token = elements(xml, "NextContinuationToken");
    if (token.empty() || token[0].empty())
      return corrupt(where + ": a truncated listing without a continuation token");
    page.next_token = xml_text(token[0]);
  }
  return page;
}

Result<FolderEntries> parse_http_index_entries(std::string_view page, const RemoteUrl& folder,
                                               const std::string& where) {
  const size_t first = page.find_first_not_of(" \t\r\n");
  FolderEntries entries;
  if (first != std::string_view::npos && page[first] == '[') {
    STOKER_ASSIGN_OR_RETURN(entries, json_index_entries(page, where));
  } else {
    STOKER_ASSIGN_OR_RETURN(const std::vector<std::string> links, html_links(page, where));
    for (const std::string& link : links) {
      std::optional<LinkedEntry> entry = linked_entry(link, folder);
      if (!entry) continue;
      if (entry->folder) {
        entries.folders.push_back(std::move(entry->name));
      } else {
        entries.files.push_back({std::move(entry->name), std::nullopt, "", ""});
      }
    }
  }
  std::stable_sort(entries.files.begin(), entries.files.end(),
                   [](const ListedObject& a, const ListedObject& b) { return a.name < b.name; });
  entries.files.erase(
      std::unique(entries.files.begin(), entries.files.end(),
                  [](const ListedObject& a, const ListedObject& b) { return a.name == b.name; }),
      entries.files.end());
  sort_unique(entries.folders);
  return entries;
}

Result<std::vector<std::string>> parse_http_index_page(std::string_view page,
                                                       const RemoteUrl& folder,
                                                       const std::string& where) {
  STOKER_ASSIGN_OR_RETURN(FolderEntries entries, parse_http_index_entries(page, folder, where));
  std::vector<std::string> names;
  for (ListedObject& file : entries.files) names.push_back(std::move(file.name));
  return names;
}

Status S3Store::check_bucket() const {
  HttpRequest r = request("");
  r.url = s3_object_url(url_.host, "", credentials_.region, credentials_.endpoint);
  r.redacted_url = "s3://" + url_.host;
  r.total_timeout_s = kSmallRequestSeconds;
  const Status status = client_->head(r).status();
  if (status.code() == StatusCode::kNotFound)
    return not_found(r.redacted_url + ": no such bucket (create it first)");
  return status;
}

std::string s3_object_url(const std::string& bucket, const std::string& key,
                          const std::string& region, const std::string& endpoint) {
  const std::string path = uri_encode_path(key);
  if (!endpoint.empty()) return fmt::format("{}/{}/{}", endpoint, bucket, path);
  if (bucket.find('.') != std::string::npos) {
    return fmt::format("https://s3.{}.amazonaws.com/{}/{}", region, bucket, path);
  }
  return fmt::format("https://{}.s3.{}.amazonaws.com/{}", bucket, region, path);
}

Result<std::unique_ptr<ObjectStore>> open_object_store(const RemoteUrl& url,
                                                       std::shared_ptr<HttpClient> client,
                                                       const Environment& env) {
  if (url.scheme != UrlScheme::kS3) {
    return std::unique_ptr<ObjectStore>(new HttpStore(std::move(client), url));
  }
  STOKER_ASSIGN_OR_RETURN(AwsCredentials credentials, load_aws_credentials(env));
  return std::unique_ptr<ObjectStore>(new S3Store(std::move(client), url, std::move(credentials)));
}

}  // namespace stoker::remote

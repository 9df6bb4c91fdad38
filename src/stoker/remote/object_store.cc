#include "stoker/remote/object_store.h"

#include <fmt/format.h>

namespace stoker::remote {

Result<HttpResponse> ObjectStore::get(const std::string& name, std::optional<ByteRange> range,
                                      const ByteSink& sink, const std::string& if_match,
                                      const std::atomic<bool>* cancel,
                                      const std::string& if_none_match) const {
  HttpRequest r = request(name);
  r.if_match = if_match;
  r.if_none_match = if_none_match;
  r.cancel = cancel;
  return client_->get(r, range, sink);
}

Result<HttpResponse> ObjectStore::head(const std::string& name,
                                       const std::atomic<bool>* cancel) const {
  HttpRequest r = request(name);
  r.total_timeout_s = 60;
  r.cancel = cancel;
  return client_->head(r);
}

Result<HttpResponse> ObjectStore::put_file(const std::string& name, const std::string& path) const {
  return client_->put_file(request(name), path);
}

Result<HttpResponse> ObjectStore::put_bytes(const std::string& name, std::string_view bytes) const {
  return client_->put_bytes(request(name), bytes);
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

Result<HttpResponse> HttpStore::put_file(const std::string& name, const std::string&) const {
  return unsupported(describe(name) + ": an HTTP dataset is read-only (push to s3:// instead)");
}

Result<HttpResponse> HttpStore::put_bytes(const std::string& name, std::string_view) const {
  return put_file(name, "");
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

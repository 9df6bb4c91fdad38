#include "stoker/net/object_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::remote {
namespace {

constexpr const char* kSentinel = "SENTINEL-7f3a9c";

std::string random_bytes(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

ByteSink into(std::string* bytes, uint64_t base = 0) {
  return [bytes, base](uint64_t offset, const char* data, size_t size) {
    if (offset - base + size > bytes->size()) bytes->resize(offset - base + size);
    bytes->replace(offset - base, size, data, size);
    return Status::ok();
  };
}

Environment environment(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::shared_ptr<HttpClient> client() {
  HttpClientOptions options;
  options.retry = {3, 0.01, 0.02, 30};
  return HttpClient::create(options).value_or_throw();
}

void expect_one_line_without_secrets(const Status& status, const std::string& words) {
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(words), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find(kSentinel), std::string::npos) << status.message();
}

TEST(S3ObjectUrl, PathStyleOnEndpointsVirtualHostOnAws) {
  EXPECT_EQ(s3_object_url("b", "ds/shard 1.stk", "eu-west-1", "http://127.0.0.1:8333"),
            "http://127.0.0.1:8333/b/ds/shard%201.stk");
  EXPECT_EQ(s3_object_url("bucket", "ds/x", "eu-west-1", ""),
            "https://bucket.s3.eu-west-1.amazonaws.com/ds/x");
  EXPECT_EQ(s3_object_url("my.bucket", "x", "us-east-1", ""),
            "https://s3.us-east-1.amazonaws.com/my.bucket/x");
}

// weed's S3 gateway, shared by the suite (it takes seconds to start).
class S3StoreTest : public testing::ServerSuite<S3StoreTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    server_ =
        std::make_unique<testing::LoopbackServer>(testing::LoopbackServer::s3(*dir_ / "weed"));
  }
  // The store for s3://BUCKET/`prefix` with the server's keys, `secret` if given.
  static std::unique_ptr<ObjectStore> store(const std::string& prefix,
                                            std::map<std::string, std::string> vars = {}) {
    vars.emplace("AWS_ACCESS_KEY_ID", server_->get("access_key"));
    vars.emplace("AWS_SECRET_ACCESS_KEY", server_->get("secret_key"));
    vars["AWS_ENDPOINT_URL_S3"] = server_->url();
    vars["AWS_REGION"] = server_->get("region");
    const RemoteUrl url =
        parse_remote_url("s3://" + server_->get("bucket") + "/" + prefix).value_or_throw();
    return open_object_store(url, client(), environment(vars)).value_or_throw();
  }
};

TEST_F(S3StoreTest, PutThenGetWholeRangedAndHead) {
  const auto s3 = store("datasets/put get");
  const std::string body = random_bytes(200 * 1024 + 3, 2);
  Result<HttpResponse> put = s3->put_bytes("shard-00000.stk", body);
  ASSERT_TRUE(put.is_ok()) << put.status().message();
  std::string got;
  Result<HttpResponse> get = s3->get("shard-00000.stk", {}, into(&got));
  ASSERT_TRUE(get.is_ok()) << get.status().message();
  EXPECT_EQ(got, body);
  std::string part;
  ASSERT_TRUE(s3->get("shard-00000.stk", ByteRange{1000, 5000}, into(&part, 1000)).is_ok());
  EXPECT_EQ(part, body.substr(1000, 5000));
  Result<HttpResponse> head = s3->head("shard-00000.stk");
  ASSERT_TRUE(head.is_ok()) << head.status().message();
  EXPECT_EQ(head.value().size, body.size());
  EXPECT_FALSE(head.value().etag.empty());
  EXPECT_EQ(head.value().etag, get.value().etag);

  const std::string file = *dir_ / "upload.bin";
  std::ofstream(file, std::ios::binary) << body.substr(7);
  ASSERT_TRUE(s3->put_file("from-file.stk", file).is_ok());
  got.clear();
  ASSERT_TRUE(s3->get("from-file.stk", {}, into(&got)).is_ok());
  EXPECT_EQ(got, body.substr(7));
}

TEST_F(S3StoreTest, MissingObjectIsNotFoundNamingIt) {
  std::string got;
  Result<HttpResponse> get = store("ds")->get("missing.stk", {}, into(&got));
  ASSERT_FALSE(get.is_ok());
  EXPECT_EQ(get.status().code(), StatusCode::kNotFound);
  expect_one_line_without_secrets(get.status(), "s3://" + server_->get("bucket") +
                                                    "/ds/missing.stk: HTTP 404 (NoSuchKey) "
                                                    "after 1 attempt");
}

// Signatures are checked: a wrong secret is refused at once, and no message holds the secret
// or the session token.
TEST_F(S3StoreTest, AWrongSecretIsOneLine403WithoutTheSecret) {
  const Result<HttpResponse> put = store("ds")->put_bytes("present.stk", "abc");
  ASSERT_TRUE(put.is_ok()) << put.status().message();
  const auto forged = store("ds", {{"AWS_SECRET_ACCESS_KEY", kSentinel}});
  std::string got;
  Result<HttpResponse> get = forged->get("present.stk", {}, into(&got));
  ASSERT_FALSE(get.is_ok());
  expect_one_line_without_secrets(
      get.status(), "/ds/present.stk: HTTP 403 (SignatureDoesNotMatch) after 1 attempt");
  expect_one_line_without_secrets(get.status(), "AWS keys: the environment");
  EXPECT_TRUE(got.empty());
  for (const Status& status :
       {forged->head("present.stk").status(), forged->put_bytes("new.stk", "x").status()}) {
    expect_one_line_without_secrets(status, "HTTP 403");
  }
  const auto token = store("ds", {{"AWS_SESSION_TOKEN", kSentinel}});
  expect_one_line_without_secrets(token->get("present.stk", {}, into(&got)).status(),
                                  "HTTP 403 (InvalidAccessKeyId)");
}

TEST_F(S3StoreTest, UnsignedRequestsAreRefusedNamingTheSourcesRead) {
  const RemoteUrl url = parse_remote_url("s3://" + server_->get("bucket") + "/ds").value_or_throw();
  const auto anonymous =
      open_object_store(url, client(),
                        environment({{"AWS_ENDPOINT_URL", server_->url()},
                                     {"AWS_CONFIG_FILE", "/dev/null"},
                                     {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"}}))
          .value_or_throw();
  std::string got;
  expect_one_line_without_secrets(anonymous->get("present.stk", {}, into(&got)).status(),
                                  "HTTP 403 (AccessDenied) after 1 attempt over");
  expect_one_line_without_secrets(anonymous->head("present.stk").status(),
                                  "AWS keys: none found (read the environment, /dev/null");
}

// nginx serving a folder through HttpStore; the URL's userinfo and query (sent, never shown).
class HttpStoreTest : public testing::ServerSuite<HttpStoreTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    ::mkdir((*dir_ / "root").c_str(), 0755);
    ::mkdir((*dir_ / "root/ds").c_str(), 0755);
    std::ofstream(*dir_ / "root/ds/shard 1.stk", std::ios::binary) << random_bytes(5000, 4);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(*dir_ / "root", *dir_ / "nginx"));
  }
};

TEST_F(HttpStoreTest, GetsObjectsAndNeverShowsUserinfoOrQuery) {
  const std::string with_secrets = "http://user:" + std::string(kSentinel) + "@" +
                                   server_->url().substr(7) + "/ds?token=" + kSentinel;
  const auto http = open_object_store(parse_remote_url(with_secrets).value_or_throw(), client(), {})
                        .value_or_throw();
  std::string got;
  ASSERT_TRUE(http->get("shard 1.stk", {}, into(&got)).is_ok());
  EXPECT_EQ(got, random_bytes(5000, 4));
  EXPECT_EQ(http->describe("shard 1.stk"), server_->url() + "/ds/shard%201.stk");
  expect_one_line_without_secrets(http->get("missing.stk", {}, into(&got)).status(),
                                  server_->url() + "/ds/missing.stk: HTTP 404 after 1 attempt");
  const Status put = http->put_bytes("new.stk", "x").status();
  EXPECT_EQ(put.code(), StatusCode::kUnsupported);
  expect_one_line_without_secrets(put, "/ds/new.stk: an HTTP dataset is read-only");
}

// A ListBucketResult naming `keys`, truncated with `token` when it is not empty.
std::string list_page(const std::vector<std::string>& keys, const std::string& token = "") {
  std::string xml = "<?xml version=\"1.0\"?><ListBucketResult>";
  for (const std::string& key : keys) xml += "<Contents><Key>" + key + "</Key></Contents>";
  if (!token.empty())
    xml += "<IsTruncated>true</IsTruncated><NextContinuationToken>" + token +
           "</NextContinuationToken>";
  return xml + "</ListBucketResult>";
}

// A store of s3://bucket/data on `server`, unsigned.
std::unique_ptr<ObjectStore> hostile_store(const testing::HostileHttpServer& server) {
  return open_object_store(
             parse_remote_url("s3://bucket/data").value_or_throw(), client(),
             environment({{"AWS_ENDPOINT_URL_S3", server.url()}, {"AWS_REGION", "us-east-1"}}))
      .value_or_throw();
}

// A hostile server's listings are checked, not trusted: keys that are not directly in the
// folder (the delimiter ignored, "..", another prefix), a continuation token given again (a
// loop), an oversized page or a 206 far past any size are one-line errors naming the URL, never
// a name to delete, a hang or "out of memory".
TEST(S3StoreListing, HostileListingsAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {list_page({"data/a.stk", "data/../other/shard.stk"}), "'data/../other/shard.stk'"},
      {list_page({"data/nested/shard.stk"}), "'data/nested/shard.stk'"},
      {list_page({"other/shard.stk"}), "'other/shard.stk'"},
      {list_page({"data/.."}), "'data/..'"},
      {list_page({"data/a.stk"}, "SAME"), "a continuation token too long or given twice"},
      {list_page({"data/a.stk"}, std::string(5000, 't')), "too long or given twice"},
      {list_page({}) + std::string(9 << 20, ' '), "a listing page over 8388608 bytes"},
  };
  for (const auto& [body, words] : cases) {
    testing::HostileHttpServer server([&body = body](const testing::HostileRequest&) {
      return testing::HostileResponse{testing::http_response("200 OK", "", body)};
    });
    Result<std::vector<std::string>> listed = hostile_store(server)->list("");
    ASSERT_FALSE(listed.is_ok()) << words;
    EXPECT_EQ(listed.status().message().find('\n'), std::string::npos) << listed.status().message();
    EXPECT_NE(listed.status().message().find("s3://bucket/data"), std::string::npos)
        << listed.status().message();
    EXPECT_NE(listed.status().message().find(words), std::string::npos)
        << listed.status().message();
  }
  testing::HostileHttpServer far([](const testing::HostileRequest&) {
    return testing::HostileResponse{testing::http_response(
        "206 Partial Content",
        "Content-Range: bytes 18446744073709550000-18446744073709550009/18446744073709551615\r\n",
        "0123456789")};
  });
  const Status status = hostile_store(far)->list("").status();
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("s3://bucket/data"), std::string::npos) << status.message();
}

// An S3 listing's page: its objects with their sizes and ETags, and its common prefixes (the
// sub-folders).
TEST(S3ListPage, GivesSizesETagsAndCommonPrefixes) {
  const std::string xml =
      "<?xml version=\"1.0\"?><ListBucketResult><Prefix>train/</Prefix>"
      "<Contents><Key>train/a.jpg</Key><Size>123</Size><ETag>&quot;e1&quot;</ETag></Contents>"
      "<Contents><Key>train/b.jpg</Key></Contents>"
      "<CommonPrefixes><Prefix>train/cat/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>train/dog/</Prefix></CommonPrefixes></ListBucketResult>";
  const S3ListPage page = parse_s3_list_page(xml, "where").value_or_throw();
  EXPECT_EQ(page.keys, (std::vector<std::string>{"train/a.jpg", "train/b.jpg"}));
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0], (ListedObject{"train/a.jpg", 123, "\"e1\"", ""}));
  EXPECT_FALSE(page.objects[1].size);
  EXPECT_EQ(page.prefixes, (std::vector<std::string>{"train/cat/", "train/dog/"}));
  EXPECT_EQ(parse_s3_list_page("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size>"
                               "</Contents></ListBucketResult>",
                               "where")
                .status()
                .code(),
            StatusCode::kCorrupt);
}

// An http(s):// folder's index page as web servers write it: the files directly in the folder,
// percent-decoded and sorted; never a sub-folder, a parent, a sort link, another host's file.
// Its entries (parse_http_index_entries): the sub-folders too, and a JSON index's sizes.
TEST(HttpIndexPage, ListsTheFilesDirectlyInTheFolder) {
  const RemoteUrl folder = parse_remote_url("http://127.0.0.1:8080/data/tars").value_or_throw();
  // nginx's autoindex (with a name holding ':' written as "./a:b.tar"), Apache's (sort links,
  // a parent), Python's http.server (quoted names), and links a page may hold besides.
  const std::string page =
      "<!DOCTYPE html><html><head><title>Index of /data/tars/</title>"
      "<style>a[href$=\"/\"] { x: '<a href=\"style.tar\">' }</style></head><body>"
      "<!-- <a href=\"commented.tar\"> -->"
      "<h1>Index of /data/tars/</h1><hr><pre><a href=\"../\">../</a>\n"
      "<a href=\"sub/\">sub/</a>   26-Nov-2026 07:00   -\n"
      "<a href=\"d-1.tar\">d-1.tar</a>   26-Nov-2026 07:00   10240\n"
      "<A HREF='d-0.tar'>d-0.tar</A>\n"
      "<a href=\"./a:b.tar\">a:b.tar</a>\n"
      "<a href=\"with%20space%25.tar\">with space%.tar</a>\n"
      "<a href=d-2.tar>unquoted</a>\n"
      "<a class=\"x\" href=\"/data/tars/absolute.tar\">absolute path</a>\n"
      "<a href=\"http://127.0.0.1:8080/data/tars/full.tar\">full URL</a>\n"
      "<a href=\"http://127.0.0.1:8080/data/tars/d-1.tar\">d-1.tar again</a>\n"
      "<a href=\"amp&amp;.tar\">entity</a>\n"
      "</pre><table><tr><th><a href=\"?C=N;O=D\">Name</a></th></tr>"
      "<tr><td><a href=\"../other/x.tar\">parent's</a></td></tr>"
      "<tr><td><a href=\"sub/inner.tar\">sub-folder's</a></td></tr>"
      "<tr><td><a href=\"sub%2Finner.tar\">an escaped slash</a></td></tr>"
      "<tr><td><a href=\"/other/y.tar\">another folder</a></td></tr>"
      "<tr><td><a href=\"http://elsewhere.example/data/tars/z.tar\">another host</a></td></tr>"
      "<tr><td><a href=\"//elsewhere.example/data/tars/z.tar\">another host</a></td></tr>"
      "<tr><td><a href=\"https://127.0.0.1:8080/data/tars/s.tar\">another scheme</a></td></tr>"
      "<tr><td><a href=\"http://u:p@127.0.0.1:8080/data/tars/u.tar\">userinfo</a></td></tr>"
      "<tr><td><a href=\"q.tar?x=1\">a query</a><a href=\"#top\">top</a></td></tr>"
      "<tr><td><a href=\"mailto:x@y\">mail</a><a href=\"bad%zz.tar\">bad escape</a></td></tr>"
      "<tr><td><a href=\"ctl%01.tar\">control</a><a name=\"x\">no href</a></td></tr>"
      "</table><script>if (a<b) document.write('<a href=\"script.tar\">');</script>"
      "<p>1 < 2</p></body></html>";
  const std::vector<std::string> expected = {"a:b.tar",  "absolute.tar",   "amp&.tar",
                                             "d-0.tar",  "d-1.tar",        "d-2.tar",
                                             "full.tar", "with space%.tar"};
  EXPECT_EQ(parse_http_index_page(page, folder, "where").value_or_throw(), expected);
  // At the server's root.
  const RemoteUrl root = parse_remote_url("http://127.0.0.1:8080/").value_or_throw();
  const std::vector<std::string> at_root = {"r.tar", "s.tar"};
  EXPECT_EQ(parse_http_index_page("<a href=\"s.tar\"></a><a href=\"/r.tar\"></a><a href=\"/d/"
                                  "x.tar\"></a>",
                                  root, "where")
                .value_or_throw(),
            at_root);
  // nginx's autoindex_format json.
  const std::string json =
      "[\n{ \"name\":\"d-1.tar\", \"type\":\"file\", \"size\":10240 },\n"
      "{ \"name\":\"sub\", \"type\":\"directory\" },\n{ \"name\":\"..\", \"type\":\"file\" },\n"
      "{ \"name\":\"a/b.tar\", \"type\":\"file\" },{ \"name\":\"with space%.tar\", "
      "\"type\":\"file\" },{\"name\":[[[[1]]]],\"type\":\"file\"},{ \"type\":\"file\" },7]";
  const std::vector<std::string> from_json = {"d-1.tar", "with space%.tar"};
  EXPECT_EQ(parse_http_index_page(json, folder, "where").value_or_throw(), from_json);
  // The entries: the sub-folders too, and what a JSON index says of each file.
  const FolderEntries html = parse_http_index_entries(page, folder, "where").value_or_throw();
  EXPECT_EQ(html.folders, std::vector<std::string>{"sub"});
  EXPECT_EQ(html.files.size(), expected.size());
  EXPECT_FALSE(html.files[0].size);
  const FolderEntries listed = parse_http_index_entries(json, folder, "where").value_or_throw();
  EXPECT_EQ(listed.folders, std::vector<std::string>{"sub"});
  ASSERT_EQ(listed.files.size(), 2u);
  EXPECT_EQ(listed.files[0].size, std::optional<uint64_t>(10240));
  EXPECT_FALSE(listed.files[1].size);
  // A page of no links lists nothing (the caller says the folder has no such files).
  EXPECT_TRUE(parse_http_index_page("<html><body>It works!</body></html>", folder, "where")
                  .value_or_throw()
                  .empty());
}

// A page cut short (its links would be some of the folder's) or JSON that is no list is a
// one-line kCorrupt naming the URL, never a partial listing; so is a page too deep or too odd.
TEST(HttpIndexPage, APageCutShortIsOneLineNamingTheUrl) {
  const RemoteUrl folder = parse_remote_url("http://h/data").value_or_throw();
  const std::string where = "http://h/data/";
  const std::string page = "<html><a href=\"a.tar\">a</a><a href=\"b.tar\">b</a></html>";
  for (const std::string& cut :
       {page.substr(0, page.find("b.tar")), page.substr(0, page.find("href=\"b")),
        page.substr(0, page.find("<a href=\"b") + 1), std::string("<a href=\"a.tar\"><!-- x"),
        std::string("<script>x"), std::string("<!DOCTYPE"), std::string("[{\"name\":\"a.tar\""),
        std::string("[1,2") + std::string(100000, '['), std::string("<a href='a.tar>")}) {
    const Result<std::vector<std::string>> parsed = parse_http_index_page(cut, folder, where);
    ASSERT_FALSE(parsed.is_ok()) << cut.substr(0, 80);
    EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt) << parsed.status().message();
    EXPECT_EQ(parsed.status().message().rfind(where + ": ", 0), 0u) << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find('\n'), std::string::npos);
  }
}

// Pages within the bound that a careless parser would take quadratic time or deep recursion
// over (a run of "&#" in a link, links by the hundred thousand, deep JSON) are read whole:
// every link listed once, the run no name, the deep JSON refused without recursing (a stack
// overflow would end the test). No time is asserted (load makes any bound flaky): how the
// parse's time grows with the page is bench/index_page_bench.cc's.
TEST(HttpIndexPage, PathologicalPagesAreReadWhole) {
  const RemoteUrl folder = parse_remote_url("http://h/data").value_or_throw();
  std::string links;
  std::vector<std::string> names;
  for (int i = 0; i < 200000; ++i) {
    names.push_back("f" + std::to_string(i) + ".tar");
    links += "<a href=\"" + names.back() + "\">";
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(parse_http_index_page(links, folder, "w").value_or_throw(), names);
  std::string ampersands;
  for (int i = 0; i < (4 << 20); ++i) ampersands += "&#";
  EXPECT_EQ(parse_http_index_page("<a href=\"" + ampersands + ".tar\">", folder, "w")
                .value_or_throw()
                .size(),
            0u);
  const Status deep = parse_http_index_page(std::string(8 << 20, '['), folder, "w").status();
  EXPECT_EQ(deep.code(), StatusCode::kCorrupt) << deep.message();
  EXPECT_EQ(deep.message().rfind("w: ", 0), 0u) << deep.message();
}

// A web server's page over the bound (100 MB) stops the listing at 8 MiB, naming the folder's
// URL without its secrets.
TEST(HttpStoreListing, AHugePageIsOneLineNamingTheUrl) {
  const std::string huge = "<html>" + std::string(100 << 20, ' ') + "<a href=\"a.tar\"></a>";
  testing::HostileHttpServer server([&](const testing::HostileRequest&) {
    return testing::HostileResponse{testing::http_response("200 OK", "", huge)};
  });
  const auto http =
      open_object_store(
          parse_remote_url(server.url() + "/data?token=" + kSentinel).value_or_throw(), client(),
          {})
          .value_or_throw();
  const Status status = http->list("").status();
  EXPECT_EQ(status.code(), StatusCode::kCorrupt) << status.message();
  expect_one_line_without_secrets(status, server.url() + "/data/: a listing page over 8388608");
}

}  // namespace
}  // namespace stoker::remote

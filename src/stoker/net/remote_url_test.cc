#include "stoker/net/remote_url.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace stoker::remote {
namespace {

RemoteUrl parsed(const std::string& text) {
  Result<RemoteUrl> url = parse_remote_url(text);
  EXPECT_TRUE(url.is_ok()) << text << ": " << url.status().message();
  return url.is_ok() ? url.value() : RemoteUrl{};
}

TEST(RemoteUrl, ParsesS3BucketAndPrefix) {
  const RemoteUrl url = parsed("s3://my-bucket/datasets/photos/train/");
  EXPECT_EQ(url.scheme, UrlScheme::kS3);
  EXPECT_EQ(url.host, "my-bucket");
  EXPECT_EQ(url.path, "datasets/photos/train");
  EXPECT_EQ(url.object_key("manifest.json"), "datasets/photos/train/manifest.json");
  EXPECT_EQ(url.normal(), "s3://my-bucket/datasets/photos/train");
  EXPECT_EQ(parsed("s3://my-bucket").object_key("manifest.json"), "manifest.json");
}

TEST(RemoteUrl, ParsesHttpHostPortPathAndQuery) {
  const RemoteUrl url = parsed("HTTP://User:Pw@Data.Example.COM:8080/a%20b/ds?token=x&y=1");
  EXPECT_EQ(url.scheme, UrlScheme::kHttp);
  EXPECT_EQ(url.host, "data.example.com:8080");
  EXPECT_EQ(url.path, "a b/ds");
  EXPECT_EQ(url.userinfo, "User:Pw");
  EXPECT_EQ(url.query, "token=x&y=1");
  EXPECT_EQ(url.normal(), "http://data.example.com:8080/a%20b/ds?token=x&y=1");
  EXPECT_EQ(url.redacted(), "http://data.example.com:8080/a%20b/ds");
  EXPECT_EQ(parsed("https://[::1]:8443/x").host, "[::1]:8443");
  EXPECT_EQ(parsed("https://host").path, "");
}

TEST(RemoteUrl, EquivalentSpellingsShareTheNormalFormAndCacheKey) {
  const std::vector<std::string> same = {"http://host/data/set", "HTTP://HOST:80/data/set/",
                                         "http://host/data/%73et", "http://u:p@host/data/set",
                                         "http://host//data/set//"};
  const RemoteUrl first = parsed(same[0]);
  for (const std::string& text : same) {
    EXPECT_EQ(parsed(text).normal(), first.normal()) << text;
    EXPECT_EQ(parsed(text).cache_key(), first.cache_key()) << text;
  }
  EXPECT_EQ(parsed("https://h:443/x").normal(), "https://h/x");
  EXPECT_EQ(parsed("https://h:80/x").normal(), "https://h:80/x");
  EXPECT_EQ(first.cache_key().size(), 16u);
  EXPECT_EQ(first.cache_key().find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(RemoteUrl, DifferentDatasetsHaveDifferentCacheKeys) {
  const std::vector<std::string> different = {"http://host/data/set",     "https://host/data/set",
                                              "http://host:81/data/set",  "http://host/data/set2",
                                              "http://host/data/set?v=2", "s3://host/data/set",
                                              "s3://other/data/set"};
  for (size_t i = 0; i < different.size(); ++i) {
    for (size_t j = i + 1; j < different.size(); ++j) {
      EXPECT_NE(parsed(different[i]).cache_key(), parsed(different[j]).cache_key())
          << different[i] << " vs " << different[j];
    }
  }
}

TEST(RemoteUrl, TellsRemoteUrlsFromPaths) {
  for (const char* text : {"s3://b/x", "http://h", "HTTPS://h/x"}) EXPECT_TRUE(is_remote_url(text));
  for (const char* text : {"/data/s3://x", "data", "ftp://h/x", "s3:/b", "", "http:"}) {
    EXPECT_FALSE(is_remote_url(text)) << text;
  }
}

TEST(RemoteUrl, BadInputIsOneLineNamingTheRedactedUrl) {
  const std::vector<std::string> bad = {
      "ftp://host/x",
      "s3://",
      "s3://ab/x",
      "s3://Upper/x",
      "s3://-bucket/x",
      "s3://bucket-/x",
      "s3://bu cket/x",
      "s3://key:secret@bucket/x",
      "s3://bucket/x?versionId=1",
      "s3://bucket/a/../b",
      "s3://bucket/a/./b",
      "s3://bucket/a%2",
      "s3://bucket/a%zzb",
      "s3://bucket/a%00b",
      "http://",
      "http://host:/x",
      "http://host:0/x",
      "http://host:65536/x",
      "http://host:8o/x",
      "http://ho st/x",
      "http://[::1/x",
      "http://[zz]/x",
      "http://host/x#frag",
      std::string("http://host/a\nb"),
      "http://user:pw@/x",
      "s3://" + std::string(64, 'a') + "/x",
  };
  for (const std::string& text : bad) {
    Result<RemoteUrl> url = parse_remote_url(text);
    ASSERT_FALSE(url.is_ok()) << text;
    EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument);
    const std::string& message = url.status().message();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("not a valid dataset URL"), std::string::npos) << message;
    EXPECT_EQ(message.find("key:secret"), std::string::npos) << message;
  }
}

TEST(RemoteUrl, MessagesNeverHoldUserinfoOrQuery) {
  for (const char* text :
       {"http://user:SENTINEL@host:bad/x", "https://SENTINEL@[zz]/x?a=SENTINEL",
        "s3://key:SENTINEL@bucket/x", "s3://bucket/x?sig=SENTINEL", "ftp://u:SENTINEL@h/x"}) {
    Result<RemoteUrl> url = parse_remote_url(text);
    ASSERT_FALSE(url.is_ok()) << text;
    EXPECT_EQ(url.status().message().find("SENTINEL"), std::string::npos) << url.status().message();
  }
  const RemoteUrl url = parsed("https://u:SENTINEL@host/x?sig=SENTINEL");
  EXPECT_EQ(url.redacted().find("SENTINEL"), std::string::npos);
  EXPECT_EQ(url.normal().find("u:"), std::string::npos);
  // Up to the last '@': where the password ends cannot be told in a malformed URL.
  EXPECT_EQ(redact_url_text("http://a:b@c@host/p@q?x@y"), "http://y");
  EXPECT_EQ(redact_url_text("no-scheme@host/p"), "host/p");
}

// A password holding '/', '?', '#' or '@' (not percent-encoded) is never shown, in part either:
// not by parse errors, not by a URL that parses (its host or path would hold part of it), not
// by shown_location() or shown_argument().
TEST(RemoteUrl, MalformedPasswordsNeverShow) {
  for (const std::string password :
       {"PWA/PWB", "PWA?PWB", "1234?PWB", "80/PWB", "PWA#PWB", "PWA@PWB", "PWA/PWB?PWC@PWD"}) {
    for (const std::string tail : {"/ds", "/ds?X-Amz-Signature=SIG", ""}) {
      const std::string text = "http://user:" + password + "@host" + tail;
      Result<RemoteUrl> url = parse_remote_url(text);
      const std::string shown[] = {url.is_ok() ? url.value().redacted() : url.status().message(),
                                   shown_location(text), shown_argument("--data=" + text),
                                   shown_argument(text), redact_url_text(text)};
      for (const std::string& s : shown) {
        for (const char* secret : {"PW", "SIG", "1234", "user"}) {
          EXPECT_EQ(s.find(secret), std::string::npos) << text << " shown as " << s;
        }
      }
    }
  }
  EXPECT_EQ(shown_location("http://u:p@host/ds?sig=1"), "http://host/ds");
  EXPECT_EQ(shown_location("/data/a@b?c"), "/data/a@b?c");  // a path is not a URL
  EXPECT_EQ(shown_argument("--data=HTTPS://u:p@host/ds?s=1"), "--data=https://host/ds");
  EXPECT_EQ(shown_argument("ftp://u:p@host/x?y"), "ftp://host/x");
  EXPECT_EQ(shown_argument("--epochs"), "--epochs");
  EXPECT_FALSE(parse_remote_url("http://host/a@b").is_ok());
  EXPECT_EQ(parsed("http://u:p%2Fq%40r@host/a%40b").path, "a@b");
}

TEST(RemoteUrl, PathEncodingKeepsOnlyUnreservedBytesAndSlashes) {
  EXPECT_EQ(uri_encode_path("a b/c+d=e~f.g_h-i/é"), "a%20b/c%2Bd%3De~f.g_h-i/%C3%A9");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::string path(rng() % 20, '\0');
    for (char& c : path) c = static_cast<char>(rng() % 256);
    const std::string encoded = uri_encode_path(path);
    EXPECT_EQ(encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789-._~/%"),
              std::string::npos);
    // The encoding decodes back: as the path of an http URL it parses to itself (when the
    // path is one a URL may hold).
    Result<RemoteUrl> url = parse_remote_url("http://h/" + encoded);
    if (url.is_ok()) {
      const size_t begin = path.find_first_not_of('/');
      const size_t end = path.find_last_not_of('/');
      EXPECT_EQ(url.value().path,
                begin == std::string::npos ? "" : path.substr(begin, end + 1 - begin));
    }
  }
}

// Random edits of valid URLs: never a crash; a parse that succeeds is a fixed point of
// normal(), and a failure is one line without the userinfo's or the query's secret.
TEST(RemoteUrl, RandomEditsParseToFixedPointsOrFailInOneLine) {
  const std::vector<std::string> seeds = {
      "s3://bucket.name/a/b/c", "http://u:SENTINEL@host:8080/p/q?k=SENTINEL",
      "https://[::1]:9000/x%20y/z", "HTTPS://Host.Example/%7Euser/"};
  const std::string alphabet = "/:@?#%[].-_~aZ09 \x01\x7f\xc3";
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text = seeds[rng() % seeds.size()];
    for (int edits = 1 + rng() % 3; edits > 0; --edits) {
      const size_t at = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = alphabet[rng() % alphabet.size()];
      }
    }
    Result<RemoteUrl> url = parse_remote_url(text);
    if (url.is_ok()) {
      Result<RemoteUrl> again = parse_remote_url(url.value().normal());
      ASSERT_TRUE(again.is_ok()) << text << " -> " << url.value().normal() << ": "
                                 << again.status().message();
      EXPECT_EQ(again.value().normal(), url.value().normal()) << text;
      EXPECT_EQ(url.value().redacted().find_first_of("@?"), std::string::npos) << text;
    } else {
      const std::string& message = url.status().message();
      EXPECT_EQ(message.find('\n'), std::string::npos) << text;
      // No query, and no userinfo when the text's authority holds one.
      EXPECT_EQ(message.find('?'), std::string::npos) << text << ": " << message;
      const size_t authority = text.find("://") + 3;
      const size_t at = text.find('@', authority);
      if (is_remote_url(text) && at < text.find_first_of("/?#", authority)) {
        EXPECT_EQ(message.find("u:SENTINEL"), std::string::npos) << text << ": " << message;
      }
    }
  }
}

}  // namespace
}  // namespace stoker::remote

#include "stoker/net/ca_bundle.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace stoker::remote {
namespace {

// choose_ca_bundle over a made-up environment and set of readable files.
std::string chosen(const std::map<std::string, std::string>& environment,
                   const std::set<std::string>& files, const char* built_in) {
  return choose_ca_bundle(
      [&](const char* name) {
        const auto found = environment.find(name);
        return found == environment.end() ? nullptr : found->second.c_str();
      },
      [&](const std::string& path) { return files.count(path) > 0; }, built_in);
}

constexpr const char* kDebian = "/etc/ssl/certs/ca-certificates.crt";
constexpr const char* kRhel = "/etc/pki/tls/certs/ca-bundle.crt";

TEST(CaBundle, TheUsersVariablesComeFirstAsGiven) {
  EXPECT_EQ(chosen({{"CURL_CA_BUNDLE", "/mine.pem"}, {"SSL_CERT_FILE", "/other.pem"}}, {kDebian},
                   kDebian),
            "/mine.pem");
  EXPECT_EQ(chosen({{"SSL_CERT_FILE", "/other.pem"}}, {kDebian}, kDebian), "/other.pem");
  EXPECT_EQ(chosen({{"CURL_CA_BUNDLE", ""}}, {kDebian}, kDebian), kDebian);  // empty: unset
}

TEST(CaBundle, LibcurlsOwnFileWhereItIsReadable) {
  EXPECT_EQ(chosen({}, {kDebian, kRhel}, kDebian), kDebian);
}

TEST(CaBundle, ASystemThatKeepsItElsewhereIsFound) {
  // A wheel built on Debian, on RHEL: libcurl's file is not there, RHEL's is.
  EXPECT_EQ(chosen({}, {kRhel}, kDebian), kRhel);
  EXPECT_EQ(chosen({}, {"/etc/ssl/cert.pem"}, nullptr), "/etc/ssl/cert.pem");
}

TEST(CaBundle, NoneFoundLeavesLibcurlsDefault) { EXPECT_EQ(chosen({}, {}, kDebian), ""); }

}  // namespace
}  // namespace stoker::remote

#include "stoker/net/ca_bundle.h"

#include <curl/curl.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

namespace stoker::remote {

std::string choose_ca_bundle(const std::function<const char*(const char*)>& environment,
                             const std::function<bool(const std::string&)>& readable,
                             const char* built_in) {
  for (const char* name : {"CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
    const char* given = environment(name);
    if (given != nullptr && given[0] != '\0') return given;
  }
  if (built_in != nullptr && built_in[0] != '\0' && readable(built_in)) return built_in;
  static constexpr std::array<const char*, 5> kSystemBundles = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Alpine
      "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Fedora, CentOS
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL's extracted trust
      "/etc/ssl/ca-bundle.pem",                             // openSUSE
      "/etc/ssl/cert.pem",                                  // Alpine, the BSDs
  };
  for (const char* path : kSystemBundles) {
    if (readable(path)) return path;
  }
  return {};
}

const std::string& ca_bundle() {
  static const std::string bundle =
      choose_ca_bundle([](const char* name) { return std::getenv(name); },
                       [](const std::string& path) { return ::access(path.c_str(), R_OK) == 0; },
                       curl_version_info(CURLVERSION_NOW)->cainfo);
  return bundle;
}

}  // namespace stoker::remote

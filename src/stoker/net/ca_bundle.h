#pragma once
// The file of trusted certificate authorities HTTPS requests verify servers against. libcurl
// carries the path of the system it was built on (Debian's /etc/ssl/certs/ca-certificates.crt),
// which a wheel takes to systems that keep theirs elsewhere (RHEL's /etc/pki/tls/certs/
// ca-bundle.crt), and it reads no environment variable. So, in order:
//   1. $CURL_CA_BUNDLE, then $SSL_CERT_FILE, as given (the user's choice; curl reports a file
//      it cannot read);
//   2. libcurl's built-in file, where it is readable;
//   3. the first readable of the well-known system files (Debian and Ubuntu, RHEL and Fedora,
//      openSUSE, Alpine);
//   4. none: libcurl's own default stands.

#include <functional>
#include <string>

namespace stoker::remote {

// The bundle by the rules above: `environment(name)` a variable's value or nullptr, `readable`
// whether a file can be read, `built_in` libcurl's path (nullptr: none). Empty: none found.
std::string choose_ca_bundle(const std::function<const char*(const char*)>& environment,
                             const std::function<bool(const std::string&)>& readable,
                             const char* built_in);

// choose_ca_bundle on this process's environment, files and libcurl, found once.
const std::string& ca_bundle();

}  // namespace stoker::remote

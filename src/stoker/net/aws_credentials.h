#pragma once
// AwsCredentials: the keys, region and endpoint an S3 dataset is read with, found the way the
// AWS tools find them (docs/REMOTE-DESIGN.md, section 4):
// - keys: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the profile
//   (AWS_PROFILE, else "default") of the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
//   ~/.aws/credentials), else of the config file (AWS_CONFIG_FILE, else ~/.aws/config, section
//   "[profile NAME]", "[default]"), else none: unsigned requests;
// - region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1;
// - endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`, else AWS's.
// Not read: instance metadata, SSO, credential_process. Secrets stay in Secret; no message
// holds one (a malformed line is named by file and line number, never quoted). Thread-safe.

#include <functional>
#include <optional>
#include <string>

#include "stoker/net/secret.h"
#include "stoker/util/environment_lookup.h"
#include "stoker/util/status.h"

namespace stoker::remote {

struct AwsCredentials {
  std::string access_key_id;  // "" when none was found: requests go unsigned
  Secret secret_access_key;
  Secret session_token;  // empty unless temporary credentials
  std::string region = "us-east-1";
  std::string endpoint;   // "scheme://host[:port]" of an S3-compatible service; "" = AWS
  std::string keys_from;  // where the keys came from, or which sources were read: for a 403

  bool anonymous() const { return access_key_id.empty(); }
};

// The environment credentials are read from (util/environment_lookup.h).
using Environment = EnvironmentLookup;

// The process's environment (getenv).
Environment process_environment();

// The credentials `env` and the files it names give. kInvalidArgument, one line naming the
// variable or the file (and line), for: only one of the key variables set; a file named by a
// variable that cannot be read; a profile named by AWS_PROFILE in neither file; a profile with
// a key id and no secret or the reverse; a line that is neither a section, a comment nor
// `key = value`; an endpoint that is not http(s)://host[:port].
Result<AwsCredentials> load_aws_credentials(const Environment& env);

}  // namespace stoker::remote

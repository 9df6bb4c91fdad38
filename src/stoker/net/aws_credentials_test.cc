#include "stoker/net/aws_credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

#include "stoker/testing/temp_dir.h"

namespace stoker::remote {
namespace {

// An environment of the test's own: HOME is a fresh folder, nothing else is set.
class AwsCredentialsTest : public ::testing::Test {
 protected:
  AwsCredentialsTest() { vars_["HOME"] = dir_.path(); }

  Environment env() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      const auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    };
  }
  std::string write(const std::string& relative, const std::string& text) {
    const std::string path = dir_ / relative;
    ::mkdir((dir_ / ".aws").c_str(), 0700);
    std::ofstream(path) << text;
    return path;
  }
  AwsCredentials load() {
    Result<AwsCredentials> credentials = load_aws_credentials(env());
    EXPECT_TRUE(credentials.is_ok()) << credentials.status().message();
    return credentials.is_ok() ? std::move(credentials).value() : AwsCredentials{};
  }
  std::string error() {
    Result<AwsCredentials> credentials = load_aws_credentials(env());
    EXPECT_FALSE(credentials.is_ok());
    if (credentials.is_ok()) return "";
    EXPECT_EQ(credentials.status().code(), StatusCode::kInvalidArgument);
    const std::string message = credentials.status().message();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find("SENTINEL"), std::string::npos) << message;
    return message;
  }

  testing::TempDir dir_;
  std::map<std::string, std::string> vars_;
};

TEST_F(AwsCredentialsTest, NothingFoundIsAnonymousInUsEast1) {
  const AwsCredentials credentials = load();
  EXPECT_TRUE(credentials.anonymous());
  EXPECT_EQ(credentials.region, "us-east-1");
  EXPECT_EQ(credentials.endpoint, "");
  EXPECT_NE(credentials.keys_from.find("none found"), std::string::npos);
}

TEST_F(AwsCredentialsTest, EnvironmentKeysComeFirst) {
  write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = f\n");
  vars_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  vars_["AWS_SECRET_ACCESS_KEY"] = "env-secret";
  vars_["AWS_SESSION_TOKEN"] = "env-token";
  const AwsCredentials credentials = load();
  EXPECT_EQ(credentials.access_key_id, "ENVKEY");
  EXPECT_EQ(credentials.secret_access_key.reveal(), "env-secret");
  EXPECT_EQ(credentials.session_token.reveal(), "env-token");
  EXPECT_NE(credentials.keys_from.find("environment"), std::string::npos);
}

TEST_F(AwsCredentialsTest, ProfileFromTheCredentialsFileThenTheConfigFile) {
  const std::string credentials_file =
      write(".aws/credentials",
            "# comment\n[default]\naws_access_key_id=DEFAULTKEY\naws_secret_access_key=d=s\n\n"
            "; another\n[work]\naws_access_key_id = WORKKEY \naws_secret_access_key = w\n"
            "aws_session_token = t\n");
  write(".aws/config",
        "[default]\nregion = eu-west-1\n[profile work]\nregion = ap-south-1\n"
        "endpoint_url = http://127.0.0.1:8333/\ns3 =\n  addressing_style = path\n"
        "[profile cfg]\naws_access_key_id = CFGKEY\naws_secret_access_key = c\n");
  AwsCredentials credentials = load();
  EXPECT_EQ(credentials.access_key_id, "DEFAULTKEY");
  EXPECT_EQ(credentials.secret_access_key.reveal(), "d=s");
  EXPECT_EQ(credentials.region, "eu-west-1");
  EXPECT_EQ(credentials.keys_from, "profile 'default' of " + credentials_file);

  vars_["AWS_PROFILE"] = "work";
  credentials = load();
  EXPECT_EQ(credentials.access_key_id, "WORKKEY");
  EXPECT_EQ(credentials.session_token.reveal(), "t");
  EXPECT_EQ(credentials.region, "ap-south-1");
  EXPECT_EQ(credentials.endpoint, "http://127.0.0.1:8333");  // the nested s3 block is skipped
  vars_["AWS_PROFILE"] = "cfg";
  credentials = load();
  EXPECT_EQ(credentials.access_key_id, "CFGKEY");
  EXPECT_EQ(credentials.secret_access_key.reveal(), "c");
  EXPECT_EQ(credentials.region, "us-east-1");
}

TEST_F(AwsCredentialsTest, RegionAndEndpointPrecedence) {
  write(".aws/config", "[default]\nregion = eu-west-1\nendpoint_url = https://minio.local:9000\n");
  EXPECT_EQ(load().endpoint, "https://minio.local:9000");
  vars_["AWS_DEFAULT_REGION"] = "eu-central-1";
  EXPECT_EQ(load().region, "eu-central-1");
  vars_["AWS_REGION"] = "us-west-2";
  EXPECT_EQ(load().region, "us-west-2");
  vars_["AWS_ENDPOINT_URL"] = "http://HOST:80/";
  EXPECT_EQ(load().endpoint, "http://host");
  vars_["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:8333";
  EXPECT_EQ(load().endpoint, "http://127.0.0.1:8333");
  vars_["AWS_ENDPOINT_URL_S3"] = "";  // empty counts as unset
  EXPECT_EQ(load().endpoint, "http://host");
}

TEST_F(AwsCredentialsTest, FilesNamedByVariablesWithoutHome) {
  vars_.erase("HOME");
  const std::string credentials_file =
      write("creds", "[p]\naws_access_key_id = K\naws_secret_access_key = S\n");
  const std::string config_file = write("conf", "[profile p]\nregion = sa-east-1\n");
  vars_["AWS_SHARED_CREDENTIALS_FILE"] = credentials_file;
  vars_["AWS_CONFIG_FILE"] = config_file;
  vars_["AWS_PROFILE"] = "p";
  const AwsCredentials credentials = load();
  EXPECT_EQ(credentials.access_key_id, "K");
  EXPECT_EQ(credentials.region, "sa-east-1");
}

TEST_F(AwsCredentialsTest, BadInputIsOneLineNamingTheSourceWithoutTheSecret) {
  vars_["AWS_ACCESS_KEY_ID"] = "K";
  EXPECT_NE(error().find("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY"),
            std::string::npos);
  vars_.erase("AWS_ACCESS_KEY_ID");
  vars_["AWS_SECRET_ACCESS_KEY"] = "SENTINEL";
  EXPECT_NE(error().find("AWS_SECRET_ACCESS_KEY is set without"), std::string::npos);
  vars_.erase("AWS_SECRET_ACCESS_KEY");

  vars_["AWS_SHARED_CREDENTIALS_FILE"] = dir_ / "missing";
  EXPECT_NE(error().find(dir_ / "missing"), std::string::npos);
  vars_.erase("AWS_SHARED_CREDENTIALS_FILE");

  const std::string file = write(".aws/credentials", "[default]\naws_secret_access_key SENTINEL\n");
  EXPECT_NE(error().find(file + ":2: expected"), std::string::npos);
  write(".aws/credentials", "[default\naws_secret_access_key = SENTINEL\n");
  EXPECT_NE(error().find(file + ":1: a section without"), std::string::npos);
  write(".aws/credentials", "aws_secret_access_key = SENTINEL\n");
  EXPECT_NE(error().find(file + ":1: expected"), std::string::npos);
  write(".aws/credentials", "[default]\naws_secret_access_key = SENTINEL\n");
  EXPECT_NE(error().find(file + ": profile 'default' has a secret key without a key id"),
            std::string::npos);
  write(".aws/credentials", "");

  vars_["AWS_PROFILE"] = "nowhere";
  EXPECT_NE(error().find("AWS_PROFILE: no profile 'nowhere' in " + file), std::string::npos);
  vars_.erase("AWS_PROFILE");

  for (const char* endpoint : {"s3://bucket", "http://h/path", "ftp://h", "http://u:SENTINEL@h",
                               "http://h?SENTINEL", "nonsense"}) {
    vars_["AWS_ENDPOINT_URL"] = endpoint;
    EXPECT_NE(error().find("AWS_ENDPOINT_URL: the S3 endpoint"), std::string::npos) << endpoint;
  }
  vars_.erase("AWS_ENDPOINT_URL");
  vars_["AWS_REGION"] = "us-east-1:evil";
  EXPECT_NE(error().find("AWS_REGION: the region"), std::string::npos);
}

// Property: any bytes in the credentials file give credentials or a one-line error; never the
// secret sentinel in a message.
TEST_F(AwsCredentialsTest, ArbitraryFilesNeverLeakTheSecret) {
  const std::string base =
      "[default]\naws_access_key_id = K\naws_secret_access_key = SENTINEL\n[x]\na=b\n";
  const std::string alphabet = "[]=#; \t\nab";
  unsigned state = 3;
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = base;
    for (int edits = 0; edits < 3; ++edits) {
      state = state * 1103515245 + 12345;
      const size_t at = (state >> 8) % (text.size() + 1);
      text.insert(at, 1, alphabet[(state >> 20) % alphabet.size()]);
    }
    write(".aws/credentials", text);
    Result<AwsCredentials> credentials = load_aws_credentials(env());
    if (!credentials.is_ok()) {
      EXPECT_EQ(credentials.status().message().find('\n'), std::string::npos);
      EXPECT_EQ(credentials.status().message().find("SENTINEL"), std::string::npos)
          << credentials.status().message();
    }
  }
}

}  // namespace
}  // namespace stoker::remote

#include "stoker/net/aws_credentials.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>

#include "stoker/net/remote_url.h"
#include "stoker/util/utf8.h"

namespace stoker::remote {
namespace {

using Section = std::map<std::string, std::string>;

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
}

// One of the AWS files: profiles by name ("[profile NAME]" in the config file is NAME).
struct ProfileFile {
  std::string path;
  bool present = false;
  std::map<std::string, Section> profiles;
};

Result<ProfileFile> read_profile_file(const std::string& path, bool named_by_variable,
                                      bool config_file) {
  ProfileFile file;
  file.path = path;
  std::ifstream in(path);
  if (!in) {
    if (named_by_variable) return invalid_argument(path + ": cannot read this AWS file");
    return file;
  }
  file.present = true;
  Section* section = nullptr;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trim(line);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    // An indented line continues a nested setting ("s3 =" then "  addressing_style = path").
    if (line[0] == ' ' || line[0] == '\t') continue;
    if (text.front() == '[') {
      if (text.back() != ']') {
        return invalid_argument(fmt::format("{}:{}: a section without its ']'", path, number));
      }
      std::string name = trim(text.substr(1, text.size() - 2));
      if (config_file && name.rfind("profile ", 0) == 0) name = trim(name.substr(8));
      section = &file.profiles[name];
      continue;
    }
    const size_t equals = text.find('=');
    if (equals == std::string::npos || section == nullptr) {
      return invalid_argument(fmt::format(
          "{}:{}: expected '[profile]', a comment or 'key = value' in a profile", path, number));
    }
    (*section)[trim(text.substr(0, equals))] = trim(text.substr(equals + 1));
  }
  return file;
}

std::optional<std::string> setting(const Environment& env, const std::string& name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

const Section* find_profile(const ProfileFile& file, const std::string& profile) {
  const auto it = file.profiles.find(profile);
  return it == file.profiles.end() ? nullptr : &it->second;
}

std::string value_in(const Section* section, const std::string& key) {
  if (section == nullptr) return "";
  const auto it = section->find(key);
  return it == section->end() ? "" : it->second;
}

// "scheme://host[:port]" of `text`, or an error naming `where`.
Result<std::string> endpoint_of(const std::string& text, const std::string& where) {
  Result<RemoteUrl> url = parse_remote_url(text);
  if (!url.is_ok() || url.value().scheme == UrlScheme::kS3 || !url.value().path.empty() ||
      !url.value().query.empty() || !url.value().userinfo.empty()) {
    return invalid_argument(fmt::format("{}: the S3 endpoint '{}' is not http(s)://host[:port]",
                                        where, printable(redact_url_text(text))));
  }
  return url.value().normal();
}

bool valid_region(const std::string& region) {
  return !region.empty() && region.size() <= 64 &&
         std::all_of(region.begin(), region.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

}  // namespace

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = ::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<AwsCredentials> load_aws_credentials(const Environment& env) {
  AwsCredentials credentials;
  const std::optional<std::string> home = setting(env, "HOME");
  const std::optional<std::string> credentials_path = setting(env, "AWS_SHARED_CREDENTIALS_FILE");
  const std::optional<std::string> config_path = setting(env, "AWS_CONFIG_FILE");
  const std::optional<std::string> profile_variable = setting(env, "AWS_PROFILE");
  const std::string profile = profile_variable.value_or("default");

  // The credentials file, then the config file; each named by its variable, else under ~/.aws.
  ProfileFile files[2];
  const Section* sections[2] = {nullptr, nullptr};
  std::vector<std::string> read;
  for (int i = 0; i < 2; ++i) {
    const std::optional<std::string>& path = i == 0 ? credentials_path : config_path;
    if (!path && !home) continue;
    const std::string file = path ? *path : *home + (i == 0 ? "/.aws/credentials" : "/.aws/config");
    STOKER_ASSIGN_OR_RETURN(files[i], read_profile_file(file, path.has_value(), i == 1));
    if (files[i].present) read.push_back(files[i].path);
    sections[i] = find_profile(files[i], profile);
  }
  if (profile_variable && sections[0] == nullptr && sections[1] == nullptr) {
    const std::string where =
        read.empty() ? "any AWS file" : fmt::format("{}", fmt::join(read, " or "));
    return invalid_argument(
        fmt::format("AWS_PROFILE: no profile '{}' in {}", printable(profile), where));
  }
  const Section* config_section = sections[1];

  const std::optional<std::string> id = setting(env, "AWS_ACCESS_KEY_ID");
  const std::optional<std::string> secret = setting(env, "AWS_SECRET_ACCESS_KEY");
  if (id.has_value() != secret.has_value()) {
    return invalid_argument(fmt::format("{} is set without {}",
                                        id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                        id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID"));
  }
  if (id) {
    credentials.access_key_id = *id;
    credentials.secret_access_key = Secret(*secret);
    credentials.session_token = Secret(setting(env, "AWS_SESSION_TOKEN").value_or(""));
    credentials.keys_from = "the environment (AWS_ACCESS_KEY_ID)";
  } else {
    for (int i = 0; i < 2 && credentials.anonymous(); ++i) {
      const std::string file_id = value_in(sections[i], "aws_access_key_id");
      const std::string file_secret = value_in(sections[i], "aws_secret_access_key");
      if (file_id.empty() != file_secret.empty()) {
        return invalid_argument(fmt::format("{}: profile '{}' has {} without {}", files[i].path,
                                            profile, file_id.empty() ? "a secret key" : "a key id",
                                            file_id.empty() ? "a key id" : "a secret key"));
      }
      if (file_id.empty()) continue;
      credentials.access_key_id = file_id;
      credentials.secret_access_key = Secret(file_secret);
      credentials.session_token = Secret(value_in(sections[i], "aws_session_token"));
      credentials.keys_from = fmt::format("profile '{}' of {}", profile, files[i].path);
    }
    if (credentials.anonymous()) {
      read.insert(read.begin(), "the environment");
      credentials.keys_from = fmt::format("none found (read {})", fmt::join(read, ", "));
    }
  }

  std::string region_from = "the default";
  if (auto region = setting(env, "AWS_REGION")) {
    credentials.region = *region;
    region_from = "AWS_REGION";
  } else if (auto default_region = setting(env, "AWS_DEFAULT_REGION")) {
    credentials.region = *default_region;
    region_from = "AWS_DEFAULT_REGION";
  } else if (!value_in(config_section, "region").empty()) {
    credentials.region = value_in(config_section, "region");
    region_from = files[1].path;
  }
  if (!valid_region(credentials.region)) {
    return invalid_argument(fmt::format("{}: the region '{}' is not of a-z 0-9 -", region_from,
                                        printable(credentials.region)));
  }

  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (auto endpoint = setting(env, variable)) {
      STOKER_ASSIGN_OR_RETURN(credentials.endpoint, endpoint_of(*endpoint, variable));
      return credentials;
    }
  }
  if (const std::string endpoint = value_in(config_section, "endpoint_url"); !endpoint.empty()) {
    STOKER_ASSIGN_OR_RETURN(credentials.endpoint, endpoint_of(endpoint, files[1].path));
  }
  return credentials;
}

}  // namespace stoker::remote

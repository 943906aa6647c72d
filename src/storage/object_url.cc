#include "storage/object_url.h"

#include <cctype>
#include <map>
#include <sstream>

#include "tokpack/files.h"

namespace tokpack {
namespace {

std::string Trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The key/value pairs of section `[section]` of an AWS-style INI file; none
// when there is no such file (the settings' defaults name one whether it
// exists or not). `what` names the file in errors.
StatusOr<std::map<std::string, std::string>> IniSection(const std::string& path,
                                                        const std::string& section,
                                                        std::string_view what) {
  std::map<std::string, std::string> out;
  StatusOr<std::string> text = ReadSmallFile(path, kMaxAwsFileBytes, what);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return out;
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = Trim(line.substr(1, line.size() - 2)) == section;
      continue;
    }
    const auto eq = line.find('=');
    if (inside && eq != std::string::npos) {
      out[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
    }
  }
  return out;
}

Status AwsCredentials(const StorageOptions& o, ObjectLocation* loc) {
  loc->access_key = o.aws_access_key_id;
  loc->secret_key = o.aws_secret_access_key;
  loc->session_token = o.aws_session_token;
  const std::string profile = o.aws_profile.empty() ? "default" : o.aws_profile;
  if (loc->access_key.empty() && !o.aws_shared_credentials_file.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(auto creds, IniSection(o.aws_shared_credentials_file, profile,
                                                    "an AWS shared credentials file"));
    loc->access_key = creds["aws_access_key_id"];
    loc->secret_key = creds["aws_secret_access_key"];
    loc->session_token = creds["aws_session_token"];
  }
  loc->region = o.aws_region;
  if (loc->region.empty() && !o.aws_config_file.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(
        auto config,
        IniSection(o.aws_config_file, profile == "default" ? "default" : "profile " + profile,
                   "an AWS config file"));
    loc->region = config["region"];
  }
  if (loc->region.empty()) loc->region = "us-east-1";
  return Status::Ok();
}

std::string WithSlash(std::string s) {
  if (s.empty() || s.back() != '/') s += '/';
  return s;
}

}  // namespace

std::string PercentEncode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool IsRemoteUrl(std::string_view path) { return path.find("://") != std::string_view::npos; }

bool HasObjectStoreScheme(std::string_view path) {
  for (std::string_view scheme : {"s3://", "gs://", "http://", "https://"}) {
    if (path.substr(0, scheme.size()) == scheme) return true;
  }
  return false;
}

std::string ObjectLocation::UrlOf(std::string_view name) const {
  return base + PercentEncode(name, true);
}

StatusOr<ObjectLocation> ResolveObjectUrl(std::string_view url, const StorageOptions& options) {
  ObjectLocation loc;
  loc.url = std::string(url);
  while (!loc.url.empty() && loc.url.back() == '/') loc.url.pop_back();
  const auto colon = loc.url.find("://");
  if (colon == std::string::npos) return InvalidArgumentError("'" + loc.url + "' is not a URL");
  const std::string scheme = loc.url.substr(0, colon);
  const std::string rest = loc.url.substr(colon + 3);
  if (scheme == "http" || scheme == "https") {
    loc.kind = ObjectLocation::Kind::kHttp;
    loc.base = WithSlash(loc.url);
    return loc;
  }
  if (scheme != "s3" && scheme != "gs") {
    return InvalidArgumentError("unsupported URL scheme '" + scheme + "' in '" + loc.url +
                                "' (s3://, gs://, http:// and https:// are)");
  }
  const auto slash = rest.find('/');
  loc.bucket = rest.substr(0, slash);
  const std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (loc.bucket.empty()) return InvalidArgumentError("'" + loc.url + "' names no bucket");
  const std::string key_base = PercentEncode(prefix.empty() ? "" : WithSlash(prefix), true);
  if (scheme == "s3") {
    loc.kind = ObjectLocation::Kind::kS3;
    TOKPACK_RETURN_IF_ERROR(AwsCredentials(options, &loc));
    const std::string& endpoint = options.s3_endpoint;
    if (!endpoint.empty()) {
      loc.base = WithSlash(endpoint) + PercentEncode(loc.bucket, false) + "/" + key_base;
    } else {
      loc.base = "https://" + loc.bucket + ".s3." + loc.region + ".amazonaws.com/" + key_base;
    }
    return loc;
  }
  loc.kind = ObjectLocation::Kind::kGcs;
  loc.access_key = options.gs_access_key_id;
  loc.secret_key = options.gs_secret_access_key;
  loc.region = "auto";
  const std::string endpoint =
      options.gcs_endpoint.empty() ? "https://storage.googleapis.com" : options.gcs_endpoint;
  loc.base = WithSlash(endpoint) + PercentEncode(loc.bucket, false) + "/" + key_base;
  return loc;
}

}  // namespace tokpack

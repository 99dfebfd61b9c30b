#include "tools/rest_client.hpp"

#include "messages/json.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <string_view>
#include <thread>

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <unistd.h>

#include "auth/tls_files.hpp"
#include "messages/api.pb.h"
#include "tools/auth_store.hpp"

namespace det::tools {

namespace {

// httplib names its errors with single words; the user gets a phrase.
std::string describe(httplib::Error err) {
  switch (err) {
    case httplib::Error::Connection:
      return "the connection was refused or the host is unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connecting timed out";
    case httplib::Error::Read:
      return "the connection broke or timed out while reading the reply";
    case httplib::Error::Write:
      return "the connection broke while sending the request";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed: does the master serve HTTPS at this URL?";
    case httplib::Error::SSLLoadingCerts:
      return "the CA certificates in DET_MASTER_CERT_FILE cannot be loaded";
    case httplib::Error::SSLServerVerification:
      return "the master's certificate is not one to trust: set DET_MASTER_CERT_FILE to the CA certificate that "
             "signed it, and use the host name or address its certificate names";
    default:
      return "the request failed (" + httplib::to_string(err) + ")";
  }
}

// (https?://)?HOST(:PORT)?, HOST a bracketed IPv6 address or a name without :/?#[], PORT 1-5
// digits; scanned by hand, as det reads no user input with std::regex.
bool is_master_url(std::string_view url) {
  for (std::string_view scheme : {"http://", "https://"})
    if (url.substr(0, scheme.size()) == scheme) {
      url.remove_prefix(scheme.size());
      break;
    }
  size_t host_end = 0;
  if (!url.empty() && url[0] == '[') {
    host_end = url.find(']');
    if (host_end == std::string_view::npos || host_end == 1) return false;
    for (char c : url.substr(1, host_end - 1))
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':') return false;
    ++host_end;
  } else {
    host_end = url.find_first_of(":/?#[]");
    if (host_end == std::string_view::npos) host_end = url.size();
    if (host_end == 0) return false;
  }
  auto port = url.substr(host_end);
  if (port.empty()) return true;
  if (port[0] != ':' || port.size() < 2 || port.size() > 6) return false;
  return std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// httplib takes any string it cannot parse for a host name, so a typo would
// surface later as a baffling connection error: check the form up front.
std::string checked_url(std::string url) {
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  if (!is_master_url(url))
    throw rest_error(rest_error::kind::unreachable, 0,
                     "the master URL '" + url + "' is not of the form http(s)://HOST:PORT.");
  return url;
}

} // namespace

std::string url_encoded(const std::string& text) {
  return httplib::detail::encode_query_param(text);
}

rest_error::rest_error(kind which, int status, const std::string& what)
    : std::runtime_error(what), which_(which), status_(status) {}

struct rest_client::impl {
  std::string url;
  httplib::Client http;
  std::string token;
  std::chrono::seconds retry_window{0};

  explicit impl(std::string master_url)
      : url(checked_url(std::move(master_url))), http(url) {
    http.set_tcp_nodelay(true); // else each keep-alive poll waits ~26 ms on Nagle + delayed ACK
    http.set_keep_alive(true);
    http.set_connection_timeout(std::chrono::seconds(5));
    http.set_read_timeout(std::chrono::seconds(30));
    // An https:// master is checked against DET_MASTER_CERT_FILE (Determined's variable), else
    // against the system's CAs.
    if (const char* ca = std::getenv(auth::master_ca_variable); ca && *ca && url.rfind("https://", 0) == 0)
      http.set_ca_cert_path(ca);
    http.enable_server_certificate_verification(true);
    if (auto login = login_for(url)) {
      token = login->token;
      http.set_bearer_token_auth(token.c_str());
    }
  }

  rest_error unreachable(httplib::Error err) const {
    std::string hint;
    if (err == httplib::Error::Connection || err == httplib::Error::ConnectionTimeout)
      hint = "; is det-node --role=master running?";
    else if (err == httplib::Error::Read && url.rfind("https://", 0) != 0)
      hint = "; a master that serves HTTPS hangs up on http:// requests";  // as it answers nothing
    return rest_error(rest_error::kind::unreachable, 0, "cannot reach the det master at " + url + ": " + describe(err) + hint);
  }

  void parse_reply(const std::string& method, const std::string& path,
                   const httplib::Response& res, google::protobuf::Message& reply) const {
    std::string parse_error;
    if (res.status >= 400) {
      pb::ErrorResponse error;
      if (from_json(res.body, error, parse_error) && !error.error().empty())
        throw rest_error(rest_error::kind::http, res.status, error.error());
      throw rest_error(rest_error::kind::http, res.status,
                       "the master answered " + method + " " + path + " with HTTP " +
                           std::to_string(res.status) +
                           (res.body.empty() ? std::string(".") : ": " + res.body));
    }
    // Unknown fields are ignored: a newer master may add some.
    if (!from_json(res.body.empty() ? "{}" : res.body, reply, parse_error))
      throw rest_error(rest_error::kind::bad_reply, 0,
                       "the master's reply to " + method + " " + path + " is not valid: " +
                           parse_error);
  }
};

rest_client::rest_client(std::string master_url)
    : impl_(std::make_unique<impl>(std::move(master_url))) {}

rest_client::~rest_client() = default;

void rest_client::use_token(const std::string& token) {
  impl_->token = token;
  impl_->http.set_bearer_token_auth(token.c_str());
}

const std::string& rest_client::token() const noexcept { return impl_->token; }

const std::string& rest_client::master_url() const noexcept { return impl_->url; }

void rest_client::retry_unreachable_for(std::chrono::seconds window) {
  impl_->retry_window = window;
}

void rest_client::get(const std::string& path, google::protobuf::Message& reply) {
  auto deadline = std::chrono::steady_clock::time_point::max();
  for (;;) {
    auto res = impl_->http.Get(path.c_str());
    if (res) {
      impl_->parse_reply("GET", path, *res, reply);
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (impl_->retry_window.count() == 0 || now >= deadline)
      throw impl_->unreachable(res.error());
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      deadline = now + impl_->retry_window;
      // On a terminal a --follow progress line may be open; start below it.
      std::cerr << (isatty(STDOUT_FILENO) == 1 ? "\n" : "") << "Lost the det master at " << impl_->url << " (" << describe(res.error())
                << "); retrying for up to " << impl_->retry_window.count() << " s.\n";
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

namespace {

std::string body_json(const std::string& path, const google::protobuf::Message& body) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(body, &json, opts);
  if (!st.ok())
    throw rest_error(rest_error::kind::bad_reply, 0,
                     "cannot encode the request to " + path + " as JSON: " + st.ToString());
  return json;
}

}  // namespace

void rest_client::post(const std::string& path, const google::protobuf::Message& body,
                       google::protobuf::Message& reply) {
  auto res = impl_->http.Post(path.c_str(), body_json(path, body), "application/json");
  if (!res)
    throw impl_->unreachable(res.error());
  impl_->parse_reply("POST", path, *res, reply);
}

void rest_client::patch(const std::string& path, const google::protobuf::Message& body,
                        google::protobuf::Message& reply) {
  auto res = impl_->http.Patch(path.c_str(), body_json(path, body), "application/json");
  if (!res)
    throw impl_->unreachable(res.error());
  impl_->parse_reply("PATCH", path, *res, reply);
}

void rest_client::del(const std::string& path, google::protobuf::Message& reply) {
  auto res = impl_->http.Delete(path.c_str());
  if (!res)
    throw impl_->unreachable(res.error());
  impl_->parse_reply("DELETE", path, *res, reply);
}

std::string rest_client::get_bytes(const std::string& path) {
  auto res = impl_->http.Get(path.c_str());
  if (!res)
    throw impl_->unreachable(res.error());
  if (res->status >= 400) {
    pb::ErrorResponse ignored;  // parse_reply raises the master's error sentence
    impl_->parse_reply("GET", path, *res, ignored);
  }
  return std::move(res->body);
}

} // namespace det::tools

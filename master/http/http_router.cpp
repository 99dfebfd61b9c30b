#include "master/http/http_types.hpp"

#include <strings.h>

#include <chrono>

#include "observability/measurements.hpp"
#include "master/http/http_replies.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

bool case_insensitive_less::operator()(const std::string& a, const std::string& b) const {
  return ::strcasecmp(a.c_str(), b.c_str()) < 0;
}

std::string http_request::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string{} : it->second;
}

bool http_request::has_param(const std::string& name) const { return params.count(name) > 0; }

std::string http_request::get_param_value(const std::string& name, std::size_t index) const {
  auto [first, last] = params.equal_range(name);
  for (; first != last; ++first, --index)
    if (index == 0) return first->second;
  return {};
}

std::size_t http_request::get_param_value_count(const std::string& name) const { return params.count(name); }

std::string http_request::cookie(const std::string& name) const {
  auto [first, last] = headers.equal_range("Cookie");
  for (; first != last; ++first) {
    const auto& text = first->second;
    for (std::size_t start = 0; start < text.size();) {
      auto end = text.find(';', start);
      if (end == std::string::npos) end = text.size();
      auto pair = text.substr(start, end - start);
      pair.erase(0, pair.find_first_not_of(' '));
      auto eq = pair.find('=');
      if (eq != std::string::npos && pair.compare(0, eq, name) == 0 && eq == name.size()) return pair.substr(eq + 1);
      start = end + 1;
    }
  }
  return {};
}

std::string percent_decoded(const std::string& text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += plus_is_space && text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

void http_router::add(std::string method, const std::string& pattern, http_handler handler) {
  routes_.push_back({std::move(method), pattern, route_pattern(pattern), std::move(handler)});
}

void http_router::dispatch(http_request& req, http_response& res) const {
  const auto began = std::chrono::steady_clock::now();
  for (const auto& r : routes_) {
    if (r.method != req.method || !r.pattern.match(req.path, req.matches)) continue;
    try {
      r.handler(req, res);
    } catch (const std::exception& e) {
      http_response failed;
      reply_error(failed, errc::internal, std::string("the master failed to answer: ") + e.what());
      if (res.deferred)
        res.deferred->finish(std::move(failed));
      else
        res = std::move(failed);
    }
    // By pattern, not path: one histogram per route, however many ids the paths name. A deferred
    // answer is measured when it is made.
    auto observe = [name = r.method + " " + r.pattern_text, began] {
      observability::measurements().http_request_seconds.with(name).observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    };
    if (res.deferred)
      res.deferred->when_finished([observe](const http_response&) { observe(); });
    else
      observe();
    return;
  }
  reply_error(res, errc::not_found, "no such route: " + req.method + " " + req.path);
}

} // namespace det::runtime

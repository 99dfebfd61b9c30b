#include "master/webui_routes.hpp"

#include <filesystem>
#include <map>

#include "master/http/http_replies.hpp"
#include "node/node.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

namespace {

const std::map<std::string, std::string> content_types = {
    {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
    {".png", "image/png"},                 {".txt", "text/plain; charset=utf-8"}};

// The pages index.html draws (js/router.js knows the same paths).
constexpr const char* page_paths = R"(/|/login|/experiments|/experiments/[^/]+|/trials/[^/]+|/cluster|/tasks|/models|/models/[^/]+)";

void reply_file(http_response& res, const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return reply_error(res, errc::not_found, "the web UI has no file " + path.string());
  auto type = content_types.find(path.extension().string());
  res.content_type = type == content_types.end() ? "application/octet-stream" : type->second;
  // Not hashed names: a browser asks again (a cheap 200 of a small file) rather than run stale code.
  res.set_header("Cache-Control", "no-cache");
  res.file_path = path.string();
}

}  // namespace

void webui_routes::add_to(http_router& server) {
  server.Get(page_paths, [this](const http_request&, http_response& res) {
    reply_file(res, std::filesystem::path(directory) / "index.html");
  });
  server.Get(R"(/assets/([A-Za-z0-9_./-]+))", [this](const http_request& req, http_response& res) {
    // Only a plain relative path below assets/: no "..", no leading or doubled "/" (an absolute
    // right-hand side would replace the whole path when joined).
    const std::string relative = req.matches[1].str();
    if (relative.front() == '/' || relative.find("..") != std::string::npos || relative.find("//") != std::string::npos)
      return reply_error(res, errc::not_found, "no such file: " + relative);
    const auto assets = std::filesystem::weakly_canonical(std::filesystem::path(directory) / "assets");
    const auto file = std::filesystem::weakly_canonical(assets / relative);
    if (file.string().rfind(assets.string() + "/", 0) != 0) return reply_error(res, errc::not_found, "no such file: " + relative);
    reply_file(res, file);
  });
}

std::string default_webui_directory() {
  const auto binary = std::filesystem::path(worker_executable()).parent_path();
  return (binary.parent_path() / "share" / "det" / "webui").lexically_normal().string();
}

} // namespace det::runtime

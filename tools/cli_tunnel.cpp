// Built as C++20 (tools/CMakeLists.txt), like the master's HTTP server: one Asio coroutine per
// direction, on one thread.

#include "tools/cli_tunnel.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <google/protobuf/empty.pb.h>

#include "auth/tls_files.hpp"
#include "messages/api.pb.h"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;
using namespace net::experimental::awaitable_operators;

struct proxy_url {
  bool tls = false;
  std::string host;
  std::string port;
  std::string target;  // path and query
};

proxy_url parse(const std::string& url) {
  proxy_url m;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    m.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw std::runtime_error("the proxy's URL must start with http:// or https://, not " + url);
  }
  const auto slash = rest.find('/');
  m.target = slash == std::string::npos ? "/" : rest.substr(slash);
  rest = rest.substr(0, slash);
  const auto colon = rest.rfind(':');
  m.host = rest.substr(0, colon);
  m.port = colon == std::string::npos ? (m.tls ? "443" : "80") : rest.substr(colon + 1);
  return m;
}

template <class Ws>
awaitable<void> stdin_to_socket(Ws& ws) {
  net::posix::stream_descriptor in(co_await net::this_coro::executor, ::dup(STDIN_FILENO));
  std::vector<char> chunk(64 * 1024);
  for (;;) {
    auto [ec, n] = co_await in.async_read_some(net::buffer(chunk), net::as_tuple(use_awaitable));
    if (ec) break;
    co_await ws.async_write(net::buffer(chunk.data(), n), use_awaitable);
  }
  beast::error_code ignored;
  co_await ws.async_close(websocket::close_code::normal, net::redirect_error(use_awaitable, ignored));
}

template <class Ws>
awaitable<void> socket_to_stdout(Ws& ws) {
  net::posix::stream_descriptor out(co_await net::this_coro::executor, ::dup(STDOUT_FILENO));
  beast::flat_buffer buffer;
  for (;;) {
    auto [ec, n] = co_await ws.async_read(buffer, net::as_tuple(use_awaitable));
    if (ec) break;
    co_await net::async_write(out, buffer.data(), use_awaitable);
    buffer.consume(buffer.size());
  }
}

template <class Ws>
awaitable<void> carry(Ws& ws, const proxy_url& m, const std::string& task_id) {
  websocket::response_type answer;
  beast::error_code ec;
  co_await ws.async_handshake(answer, m.host + ":" + m.port, m.target, net::redirect_error(use_awaitable, ec));
  if (ec) {
    const auto status = answer.result_int();
    throw std::runtime_error(status != 0 ? "the master's proxy refused the tunnel to " + task_id + " (HTTP " +
                                               std::to_string(status) + "): " + answer.body()
                                         : "the tunnel to " + task_id + " failed: " + ec.message());
  }
  ws.binary(true);
  co_await (stdin_to_socket(ws) || socket_to_stdout(ws));
}

awaitable<void> tunnel(const proxy_url& m, const std::string& task_id) {
  auto exec = co_await net::this_coro::executor;
  tcp::resolver resolver(exec);
  auto endpoints = co_await resolver.async_resolve(m.host, m.port, use_awaitable);
  beast::tcp_stream stream(exec);
  co_await stream.async_connect(endpoints, use_awaitable);
  stream.socket().set_option(tcp::no_delay(true));
  if (!m.tls) {
    websocket::stream<beast::tcp_stream> ws(std::move(stream));
    co_await carry(ws, m, task_id);
    co_return;
  }
  ssl::context context(ssl::context::tls_client);
  if (const char* ca = std::getenv(auth::master_ca_variable); ca && *ca)
    context.load_verify_file(ca);
  else
    context.set_default_verify_paths();
  context.set_verify_mode(ssl::verify_peer);
  websocket::stream<ssl::stream<beast::tcp_stream>> ws(std::move(stream), context);
  ws.next_layer().set_verify_callback(ssl::host_name_verification(m.host));
  SSL_set_tlsext_host_name(ws.next_layer().native_handle(), m.host.c_str());
  co_await ws.next_layer().async_handshake(ssl::stream_base::client, use_awaitable);
  co_await carry(ws, m, task_id);
}

}  // namespace

int run_tunnel(rest_client& master, const std::string& task_id) {
  try {
    pb::ProxyTicketResponse ticket;
    master.post("/api/v1/tasks/" + task_id + "/proxy_ticket", google::protobuf::Empty{}, ticket);
    const auto m = parse(ticket.url());
    net::io_context io;
    std::exception_ptr failure;
    net::co_spawn(io, tunnel(m, task_id), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "det tunnel: " << e.what() << std::endl;
    return 1;
  }
}

} // namespace det::tools

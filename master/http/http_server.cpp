// Built as C++20 (master/http/CMakeLists.txt): each connection is one Asio coroutine, which reads like
// the protocol it speaks. Nothing C++20 leaks into the header.

#include "master/http/http_server.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "master/http/body_budget.hpp"
#include "master/http/http_replies.hpp"
#include "messages/errc.hpp"

namespace det::runtime {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;
using namespace net::experimental::awaitable_operators;
constexpr auto as_tuple_awaitable = net::as_tuple(use_awaitable);

// How long a request's body may take to arrive, and its header (a connection waiting for its
// next request included): a client that trickles a header ties up a connection for no longer.
constexpr auto idle_timeout = std::chrono::seconds(120);
constexpr auto header_timeout = std::chrono::seconds(30);
// Connections one address may hold at once: enough for a benchmark's 200 clients on one host.
constexpr std::size_t max_connections_per_address = 512;
constexpr auto handshake_timeout = std::chrono::seconds(30);
// Threads for routes: those that still wait on actors, and the making of large answers. Routes
// that defer their answers (http_response::defer) hold none while an actor works.
constexpr std::size_t handler_threads = 32;
// How long stop() waits for the answers of deferred responses (route_timeout, and a margin).
constexpr auto deferred_answers_wait = std::chrono::seconds(35);
// How long a streamed response waits for a client to take one piece.
constexpr auto stream_write_timeout = std::chrono::seconds(30);
constexpr std::size_t io_threads = 2;
constexpr std::size_t relay_chunk = 256 * 1024;
constexpr std::size_t relay_pipe_bytes = 1 << 20;

using string_request = http::request<http::string_body>;

bool is_proxy_path(beast::string_view target) { return target.starts_with("/proxy/"); }

// The request as routes see it, but for its body, which the caller moves in when a route needs it.
http_request to_request(const string_request& req, const std::string& remote) {
  http_request r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  auto query = r.target.find('?');
  r.path = percent_decoded(r.target.substr(0, query), false);
  if (query != std::string::npos) {
    const auto q = r.target.substr(query + 1);
    for (std::size_t start = 0; start <= q.size();) {
      auto end = q.find('&', start);
      if (end == std::string::npos) end = q.size();
      auto pair = q.substr(start, end - start);
      if (!pair.empty()) {
        auto eq = pair.find('=');
        r.params.emplace(percent_decoded(pair.substr(0, eq), true),
                         eq == std::string::npos ? "" : percent_decoded(pair.substr(eq + 1), true));
      }
      start = end + 1;
    }
  }
  for (const auto& field : req) r.headers.emplace(std::string(field.name_string()), std::string(field.value()));
  r.remote_addr = remote;
  return r;
}

template <class Stream>
tcp::socket::lowest_layer_type& socket_of(Stream& s) {
  return beast::get_lowest_layer(s).socket().lowest_layer();
}

// The status line and headers of `res`, whatever its body.
template <class Message>
void fill_head(Message& msg, const http_response& res, unsigned version, bool keep_alive) {
  msg.version(version);
  msg.result(static_cast<http::status>(res.status));
  if (!res.content_type.empty()) msg.set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) msg.set(name, value);
  msg.keep_alive(keep_alive);
}

template <class Stream>
awaitable<void> write_response(Stream& stream, http_response& res, unsigned version, bool keep_alive) {
  auto fill = [&](auto& msg) { fill_head(msg, res, version, keep_alive); };
  if (!res.file_path.empty() || res.file) {
    http::response<http::file_body> msg;
    beast::error_code ec;
    if (res.file) {
      beast::file opened;
      opened.native_handle(res.file->release());
      msg.body().reset(std::move(opened), ec);
    } else {
      msg.body().open(res.file_path.c_str(), beast::file_mode::scan, ec);
    }
    if (!ec) {
      fill(msg);
      msg.prepare_payload();
      co_await http::async_write(stream, msg, use_awaitable);
      co_return;
    }
    reply_error(res, errc::internal, "cannot read " + (res.file_path.empty() ? std::string("the file") : res.file_path) + ": " +
                              ec.message());
  }
  http::response<http::string_body> msg;
  fill(msg);
  msg.body() = std::move(res.body);
  msg.prepare_payload();
  co_await http::async_write(stream, msg, use_awaitable);
}

// A connection's failure (a peer that vanished mid-relay) ends that connection only.
void connection_ended(const std::exception_ptr&) {}

http_response error_response(errc code, const std::string& sentence) {
  http_response res;
  reply_error(res, code, sentence);
  return res;
}

} // namespace

/// How many connections each address holds; admit() hands out a ticket that counts one until
/// it is dropped.
class connection_counts {
 public:
  std::shared_ptr<void> admit(const std::string& address) {
    std::lock_guard lock(mutex_);
    auto& count = counts_[address];
    if (count >= max_connections_per_address) return nullptr;
    ++count;
    // Points at this (never deleted through it): a ticket made from nullptr would test false.
    return std::shared_ptr<void>(this, [this, address](void*) {
      std::lock_guard lock(mutex_);
      if (--counts_[address] == 0) counts_.erase(address);
    });
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> counts_;
};

struct http_server::impl {
  std::string purpose;
  const http_router& router;
  proxy_resolver proxy;
  request_check may_send_large_body;
  connection_counts connections;
  std::size_t max_body_bytes;
  body_budget bodies{3 * max_body_bytes};
  std::optional<ssl::context> tls;
  net::io_context io{static_cast<int>(io_threads)};
  net::thread_pool handlers{handler_threads};
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  std::atomic<int> deferred_in_flight{0};  // connections waiting for a deferred response

  impl(std::string what, const http_router& r, proxy_resolver p, request_check large_body, std::size_t max_body)
      : purpose(std::move(what)), router(r), proxy(std::move(p)), may_send_large_body(std::move(large_body)),
        max_body_bytes(max_body) {}

  /// Runs `f` on a handler thread and resumes on the connection's own executor when it is done.
  template <class F>
  awaitable<void> on_handler_thread(F f) {
    co_await net::co_spawn(handlers, [&]() -> awaitable<void> { f(); co_return; }, use_awaitable);
  }

  /// The answer of a deferred response, on the connection's executor; the connection holds no
  /// thread while it waits. Only the route's continuation keeps `later` alive meanwhile, so a
  /// continuation that is dropped unmade answers 500 rather than leave the client waiting.
  awaitable<http_response> finished(std::shared_ptr<deferred_response> later) {
    // The answer arrives on another thread: it is posted to this connection's strand, which
    // stores it and wakes the coroutine from a wait on a timer that never expires by itself.
    struct waiting {
      explicit waiting(const net::any_io_executor& ex) : wake(ex, net::steady_timer::time_point::max()) {}
      net::steady_timer wake;
      std::optional<http_response> answer;
    };
    auto ex = co_await net::this_coro::executor;
    auto w = std::make_shared<waiting>(ex);
    ++deferred_in_flight;  // stop() waits for these: their answers are posted to `io`
    later->when_finished([this, w, ex](const http_response& res) {
      net::post(ex, [w, res] {
        w->answer = res;
        w->wake.cancel();
      });
      --deferred_in_flight;
    });
    later.reset();
    while (!w->answer) co_await w->wake.async_wait(as_tuple_awaitable);
    co_return std::move(*w->answer);
  }

  /// What a hook hands its `done` (from any thread), on the connection's executor; nullopt when
  /// the hook dropped `done` uncalled. The connection holds no thread while it waits.
  template <class T, class Hook>
  awaitable<std::optional<T>> answer_of(Hook hook) {
    auto later = std::make_shared<deferred_response>(offload_function{});
    auto value = std::make_shared<std::optional<T>>();
    hook([later, value](T answer) {
      *value = std::move(answer);  // before finish(), whose post to the connection publishes it
      later->finish(http_response{});
    });
    co_await finished(std::move(later));
    co_return std::move(*value);
  }

  /// A streamed body, chunked, for as long as its producer goes on and the client stays. Pieces
  /// are made on a handler thread, which a piece may spend a database read on; between empty
  /// pieces the connection waits on a timer and holds no thread.
  template <class Stream>
  awaitable<void> write_stream(Stream& stream, http_response& res, unsigned version) {
    http::response<http::empty_body> msg;
    fill_head(msg, res, version, false);  // the stream holds the connection until one side ends it
    msg.chunked(true);
    msg.set(http::field::cache_control, "no-store");
    http::response_serializer<http::empty_body> head{msg};
    beast::get_lowest_layer(stream).expires_never();
    co_await http::async_write_header(stream, head, use_awaitable);
    net::steady_timer pause(co_await net::this_coro::executor);
    for (;;) {
      std::optional<std::string> piece;
      co_await on_handler_thread([&] { piece = res.stream->next(); });
      if (!piece) break;
      if (piece->empty()) {
        pause.expires_after(std::chrono::milliseconds(response_stream::poll_interval_ms));
        co_await pause.async_wait(use_awaitable);
        continue;
      }
      // A client that stops reading is dropped rather than held forever.
      beast::get_lowest_layer(stream).expires_after(stream_write_timeout);
      co_await net::async_write(stream, http::make_chunk(net::buffer(*piece)), use_awaitable);
      beast::get_lowest_layer(stream).expires_never();
    }
    co_await net::async_write(stream, http::make_chunk_last(), use_awaitable);
  }

  awaitable<void> accept_loop() {
    for (;;) {
      // Each connection on a strand of its own: a relay reads and writes at once, on two threads.
      auto [ec, socket] = co_await acceptor.async_accept(net::make_strand(io), as_tuple_awaitable);
      if (ec) {
        if (stopped) co_return;
        continue;  // a connection that failed before we took it: the next one
      }
      socket.set_option(tcp::no_delay(true));
      auto remote = socket.remote_endpoint(ec).address().to_string();
      auto ticket = connections.admit(remote);
      if (!ticket) {
        socket.close(ec);  // this address holds as many connections as one may
        continue;
      }
      auto exec = socket.get_executor();
      if (tls) {
        net::co_spawn(exec, serve_tls(ssl::stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *tls), remote,
                                      std::move(ticket)),
                      connection_ended);
      } else {
        net::co_spawn(exec, serve(beast::tcp_stream(std::move(socket)), remote, std::move(ticket)), connection_ended);
      }
    }
  }

  awaitable<void> serve_tls(ssl::stream<beast::tcp_stream> stream, std::string remote, std::shared_ptr<void> ticket) {
    beast::get_lowest_layer(stream).expires_after(handshake_timeout);
    auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, as_tuple_awaitable);
    if (ec) co_return;  // a plain-text client, or one that does not trust us: no HTTP answer is possible
    co_await serve(std::move(stream), std::move(remote), std::move(ticket));
  }

  /// The body limit of a request whose header has arrived: max_body_bytes for a caller the
  /// gateway authenticates, unauthenticated_body_bytes for anyone else, so that nobody can make
  /// the master buffer a large body before it knows who sends it.
  template <class Parser>
  awaitable<std::size_t> body_limit_of(Parser& parser, const std::string& remote) {
    // Without a declared length and not chunked (a GET), there is no body: no one need be asked.
    if (!parser.chunked() && parser.content_length().value_or(0) <= unauthenticated_body_bytes)
      co_return unauthenticated_body_bytes;
    const auto& header = parser.get();
    auto request = to_request(header, remote);
    auto allowed = co_await answer_of<bool>([&](auto done) { may_send_large_body(request, std::move(done)); });
    co_return allowed.value_or(false) ? max_body_bytes : unauthenticated_body_bytes;
  }

  /// One connection: requests in turn while the client keeps it alive. `ticket` counts it
  /// against its address's connections until it ends.
  template <class Stream>
  awaitable<void> serve(Stream stream, std::string remote, std::shared_ptr<void> ticket) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(header_bytes);
      parser.body_limit(max_body_bytes);
      beast::get_lowest_layer(stream).expires_after(header_timeout);
      auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, as_tuple_awaitable);
      if (ec) co_return;
      // Beast checks a declared length against the limit as it parses the header (hence the
      // largest one above) and a chunked body as it arrives: the caller's own limit is checked
      // here for the first and set for the second.
      const auto limit = co_await body_limit_of(parser, remote);
      parser.body_limit(limit);
      const auto declared = parser.content_length();
      // A large body is counted against the total from before it is read until it is answered;
      // a chunked one as the largest it may grow to.
      std::unique_ptr<body_budget::reservation> held;
      if (limit > unauthenticated_body_bytes && !(declared && *declared > limit) &&
          (parser.chunked() || declared.value_or(0) > unauthenticated_body_bytes)) {
        held = bodies.reserve(declared.value_or(limit));
        if (!held) {
          auto res = error_response(errc::unavailable, "the master is reading " + std::to_string(bodies.total() >> 20) +
                                             " MiB of request bodies already: send this one again shortly");
          co_await write_response(stream, res, parser.get().version(), false);
          co_return;
        }
      }
      if (!(declared && *declared > limit)) {
        beast::get_lowest_layer(stream).expires_after(idle_timeout);
        if (parser.get()[http::field::expect] == "100-continue") {
          http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
          co_await http::async_write(stream, go_on, use_awaitable);
        }
        std::tie(ec, n) = co_await http::async_read(stream, buffer, parser, as_tuple_awaitable);
      }
      if ((declared && *declared > limit) || ec == http::error::body_limit) {
        auto res = error_response(errc::too_large, limit == max_body_bytes
                                           ? "the request body is larger than the " + std::to_string(max_body_bytes >> 20) +
                                                 " MiB the master reads (security.max_upload_size in master.toml)"
                                           : "the request body is larger than the " +
                                                 std::to_string(unauthenticated_body_bytes >> 10) +
                                                 " KiB the master reads from a caller it has not authenticated");
        co_await write_response(stream, res, parser.get().version(), false);
        co_return;
      }
      if (ec) co_return;
      auto req = parser.release();
      if (proxy && is_proxy_path(req.target())) {
        if (!co_await relay(stream, std::move(req), remote)) co_return;
        continue;
      }
      const bool keep_alive = req.keep_alive();
      auto r = to_request(req, remote);
      r.body = std::move(req.body());
      http_response res;
      res.offload = [this](std::function<void()> work) { net::post(handlers, std::move(work)); };
      co_await on_handler_thread([&] { router.dispatch(r, res); });
      if (res.deferred) res = co_await finished(std::move(res.deferred));
      if (res.stream) {
        co_await write_stream(stream, res, req.version());  // a client that left ends it with an exception
        break;
      }
      co_await write_response(stream, res, req.version(), keep_alive);
      if (!keep_alive) break;
    }
    beast::error_code ignored;
    socket_of(stream).shutdown(tcp::socket::shutdown_send, ignored);
  }

  /// A request under /proxy/: relayed where the gateway says, or refused. Returns whether the
  /// client's connection can take another request.
  template <class Stream>
  awaitable<bool> relay(Stream& client, string_request req, const std::string& remote) {
    auto r = to_request(req, remote);
    auto resolved = co_await answer_of<proxy_target>([&](auto done) { proxy(r, std::move(done)); });
    proxy_target target;
    if (!resolved) target.answer = answer_failed("no one said where this request to a task goes");
    else target = std::move(*resolved);
    const bool keep_alive = req.keep_alive();
    if (target.answer) {
      co_await write_response(client, *target.answer, req.version(), keep_alive);
      co_return keep_alive;
    }
    // The service gets its own credentials, never det's (a session cookie, a bearer token).
    req.erase(http::field::cookie);
    req.erase(http::field::authorization);
    if (!target.forwarded_cookie.empty()) req.set(http::field::cookie, target.forwarded_cookie);
    if (!target.forwarded_authorization.empty()) req.set(http::field::authorization, target.forwarded_authorization);
    beast::tcp_stream backend(co_await net::this_coro::executor);
    tcp::resolver resolver(co_await net::this_coro::executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(target.host, std::to_string(target.port), as_tuple_awaitable);
    beast::error_code ec = rec;
    if (!ec) {
      beast::get_lowest_layer(backend).expires_after(handshake_timeout);
      std::tie(ec, std::ignore) = co_await backend.async_connect(endpoints, as_tuple_awaitable);
    }
    if (ec) {
      auto res = error_response(errc::upstream_failed, "the task's service at " + target.host + ":" + std::to_string(target.port) +
                                         " does not answer: " + ec.message());
      co_await write_response(client, res, req.version(), keep_alive);
      co_return keep_alive;
    }
    backend.expires_never();
    beast::get_lowest_layer(client).expires_never();
    if (websocket::is_upgrade(req)) {
      websocket::stream<Stream&> outside(client);
      if (target.raw_tcp)
        co_await carry_tcp(outside, std::move(req), std::move(backend));
      else
        co_await carry_websocket(outside, std::move(req), std::move(backend), target);
      co_return false;
    }
    co_return co_await relay_http(client, std::move(req), backend, target, remote);
  }

  /// A plain HTTP exchange: the request as it came, the response streamed back as it arrives.
  template <class Stream>
  awaitable<bool> relay_http(Stream& client, string_request req, beast::tcp_stream& backend,
                             const proxy_target& target, const std::string& remote) {
    const bool client_keep_alive = req.keep_alive();
    req.set(http::field::host, target.host + ":" + std::to_string(target.port));
    req.set("X-Forwarded-For", remote);
    req.set("X-Real-IP", remote);
    req.set("X-Forwarded-Proto", tls ? "https" : "http");
    req.keep_alive(false);  // one backend connection per request: nothing to pool across tasks
    co_await http::async_write(backend, req, use_awaitable);
    // Beast reads as much as the buffer has room for: a small one would relay a body in crumbs.
    beast::flat_buffer backend_buffer;
    backend_buffer.reserve(relay_chunk);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    co_await http::async_read_header(backend, backend_buffer, parser, use_awaitable);
    auto& msg = parser.get();
    // A body that ends when the backend hangs up can only end ours the same way.
    const bool keep_alive = client_keep_alive && (msg.has_content_length() || msg.chunked() ||
                                                  parser.is_done());
    msg.keep_alive(keep_alive);
    msg.version(req.version());
    if (!target.set_cookie.empty()) msg.insert(http::field::set_cookie, target.set_cookie);
    http::serializer<false, http::buffer_body> serializer{msg};
    co_await http::async_write_header(client, serializer, use_awaitable);
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      // A plain-text body of known length moves from socket to socket in the kernel (splice),
      // never copied through this process: what a large download through the proxy needs.
      if (msg.has_content_length() && !parser.is_done()) {
        const auto length = std::stoull(std::string(msg[http::field::content_length]));
        const auto buffered = backend_buffer.size();  // body bytes that came with the header
        co_await net::async_write(client.socket(), backend_buffer.data(), use_awaitable);
        co_await splice_between(backend.socket(), client.socket(), length - buffered);
        co_return keep_alive;
      }
    }
    std::vector<char> chunk(relay_chunk);
    while (!parser.is_done()) {
      msg.body().data = chunk.data();
      msg.body().size = chunk.size();
      auto [ec, n] = co_await http::async_read(backend, backend_buffer, parser, as_tuple_awaitable);
      if (ec && ec != http::error::need_buffer) throw beast::system_error(ec);
      msg.body().size = chunk.size() - msg.body().size;
      msg.body().data = chunk.data();
      msg.body().more = !parser.is_done();
      std::tie(ec, n) = co_await http::async_write(client, serializer, as_tuple_awaitable);
      if (ec && ec != http::error::need_buffer) throw beast::system_error(ec);
    }
    if (!serializer.is_done()) {  // the last, empty chunk of a chunked body
      msg.body().data = nullptr;
      msg.body().size = 0;
      msg.body().more = false;
      auto [ec, n] = co_await http::async_write(client, serializer, as_tuple_awaitable);
      if (ec && ec != http::error::need_buffer) throw beast::system_error(ec);
    }
    co_return keep_alive;
  }

  /// Moves `count` bytes from `in` to `out` through a pipe with splice(2).
  static awaitable<void> splice_between(tcp::socket& in, tcp::socket& out, std::uint64_t count) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) throw beast::system_error(beast::error_code(errno, beast::system_category()));
    struct pipe_closer {
      int* fds;
      ~pipe_closer() {
        ::close(fds[0]);
        ::close(fds[1]);
      }
    } closer{pipe_fds};
    ::fcntl(pipe_fds[1], F_SETPIPE_SZ, static_cast<int>(relay_pipe_bytes));
    auto fail = [](const char* what) {
      throw beast::system_error(beast::error_code(errno, beast::system_category()), what);
    };
    std::uint64_t in_pipe = 0;
    while (count > 0 || in_pipe > 0) {
      bool moved = false;
      if (count > 0) {
        const auto n = ::splice(in.native_handle(), nullptr, pipe_fds[1], nullptr,
                                static_cast<std::size_t>(std::min<std::uint64_t>(count, relay_pipe_bytes)),
                                SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
          count -= static_cast<std::uint64_t>(n);
          in_pipe += static_cast<std::uint64_t>(n);
          moved = true;
        } else if (n == 0) {
          throw std::runtime_error("the task's service closed the connection before the end of the body");
        } else if (errno != EAGAIN) {
          fail("splice from the task's service");
        }
      }
      if (in_pipe > 0) {
        const auto n = ::splice(pipe_fds[0], nullptr, out.native_handle(), nullptr, static_cast<std::size_t>(in_pipe),
                                SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
          in_pipe -= static_cast<std::uint64_t>(n);
          moved = true;
        } else if (n < 0 && errno != EAGAIN) {
          fail("splice to the client");
        }
      }
      if (moved) continue;
      // Nothing moved: wait for the side that holds us up.
      if (in_pipe > 0)
        co_await out.async_wait(tcp::socket::wait_write, use_awaitable);
      else
        co_await in.async_wait(tcp::socket::wait_read, use_awaitable);
    }
  }

  /// A WebSocket to a WebSocket: frames pass through with their kind (a notebook's kernel channel).
  template <class Outside>
  awaitable<void> carry_websocket(Outside& outside, string_request req, beast::tcp_stream backend,
                                  const proxy_target& target) {
    websocket::stream<beast::tcp_stream> inside(std::move(backend));
    inside.set_option(websocket::stream_base::decorator([&req](websocket::request_type& out) {
      for (auto field : {http::field::cookie, http::field::authorization, http::field::origin,
                         http::field::sec_websocket_protocol, http::field::user_agent})
        if (req.count(field)) out.set(field, req[field]);
    }));
    websocket::response_type answer;
    auto [ec] = co_await inside.async_handshake(answer, target.host + ":" + std::to_string(target.port),
                                                req.target(), as_tuple_awaitable);
    if (ec) co_return;  // the client sees its connection close, as a refused upgrade looks
    const auto protocol = std::string(answer[http::field::sec_websocket_protocol]);
    outside.set_option(websocket::stream_base::decorator([protocol](websocket::response_type& out) {
      if (!protocol.empty()) out.set(http::field::sec_websocket_protocol, protocol);
    }));
    std::tie(ec) = co_await outside.async_accept(req, as_tuple_awaitable);
    if (ec) co_return;
    co_await (pass_frames(outside, inside) || pass_frames(inside, outside));
  }

  template <class From, class To>
  static awaitable<void> pass_frames(From& from, To& to) {
    beast::flat_buffer buffer;
    for (;;) {
      auto [ec, n] = co_await from.async_read(buffer, as_tuple_awaitable);
      if (ec) break;
      to.binary(from.got_binary());
      std::tie(ec, n) = co_await to.async_write(buffer.data(), as_tuple_awaitable);
      if (ec) break;
      buffer.consume(buffer.size());
    }
    beast::error_code ignored;
    co_await to.async_close(websocket::close_code::normal, net::redirect_error(use_awaitable, ignored));
  }

  /// A WebSocket whose binary frames carry a TCP stream (det tunnel to a shell's sshd).
  template <class Outside>
  awaitable<void> carry_tcp(Outside& outside, string_request req, beast::tcp_stream backend) {
    auto [ec] = co_await outside.async_accept(req, as_tuple_awaitable);
    if (ec) co_return;
    outside.binary(true);
    co_await (frames_to_tcp(outside, backend) || tcp_to_frames(backend, outside));
  }

  template <class Outside>
  static awaitable<void> frames_to_tcp(Outside& outside, beast::tcp_stream& backend) {
    beast::flat_buffer buffer;
    for (;;) {
      auto [ec, n] = co_await outside.async_read(buffer, as_tuple_awaitable);
      if (ec) break;
      std::tie(ec, n) = co_await net::async_write(backend, buffer.data(), as_tuple_awaitable);
      if (ec) break;
      buffer.consume(buffer.size());
    }
    beast::error_code ignored;
    backend.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  template <class Outside>
  static awaitable<void> tcp_to_frames(beast::tcp_stream& backend, Outside& outside) {
    std::vector<char> chunk(relay_chunk);
    for (;;) {
      auto [ec, n] = co_await backend.async_read_some(net::buffer(chunk), as_tuple_awaitable);
      if (ec) break;
      std::tie(ec, n) = co_await outside.async_write(net::buffer(chunk.data(), n), as_tuple_awaitable);
      if (ec) break;
    }
    beast::error_code ignored;
    co_await outside.async_close(websocket::close_code::normal, net::redirect_error(use_awaitable, ignored));
  }
};

http_server::http_server(std::string purpose, const http_router& router, proxy_resolver proxy,
                         request_check may_send_large_body, std::size_t max_body_bytes,
                         const std::optional<auth::tls_files>& tls)
    : impl_(std::make_unique<impl>(std::move(purpose), router, std::move(proxy), std::move(may_send_large_body),
                                   max_body_bytes)) {
  if (!tls) return;
  auto& context = impl_->tls.emplace(ssl::context::tls_server);
  try {
    context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                        ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    context.use_certificate_chain_file(tls->cert);
    context.use_private_key_file(tls->key, ssl::context::pem);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve HTTPS with security.tls.cert " + tls->cert + " and security.tls.key " +
                             tls->key + ": " + e.what());
  }
}

http_server::~http_server() { stop(); }

int http_server::start(const std::string& address, int port) {
  auto& s = *impl_;
  beast::error_code ec;
  const auto ip = net::ip::make_address(address, ec);
  tcp::endpoint endpoint{ip, static_cast<unsigned short>(port)};
  if (!ec) s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot serve " + s.purpose + " on " + address + ":" + std::to_string(port) + ": " +
                             ec.message() + " (is the port in use?)");
  const int bound = s.acceptor.local_endpoint().port();
  net::co_spawn(s.io, s.accept_loop(), net::detached);
  for (std::size_t i = 0; i < io_threads; ++i)
    s.threads.emplace_back([&s] { s.io.run(); });
  return bound;
}

void http_server::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  // Deferred answers come from actors (each within route_timeout) and are posted to `io` and
  // made on `handlers`: both must outlive them.
  const auto deadline = std::chrono::steady_clock::now() + deferred_answers_wait;
  while (impl_->deferred_in_flight > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  impl_->io.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->handlers.join();
}

} // namespace det::runtime

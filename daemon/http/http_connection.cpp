#include "daemon/http/http_connection.h"

#include <event2/buffer.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

#include "common/json_envelope.h"
#include "daemon/io/eager_write.h"

namespace mcpd {

namespace {

// A body buffer up to this is kept for the connection's next request.
constexpr std::size_t kKeptBodyBytes = 16 * 1024;

}  // namespace

HttpConnection::HttpConnection(std::uint64_t id, event_base* base, BufferEvent bev,
                               HttpConnectionLimits limits, Handler handler)
    : id_(id),
      limits_(limits),
      handler_(std::move(handler)),
      bev_(std::move(bev)),
      deadline_(base, [this] {
          // While a request is answered its time is not limited (a long call, a stream): the
          // deadline, left armed when the request came, is set again by answered().
          if (answering_) return;
          // A request that never completes, or a kept-alive connection left idle.
          if (received_.empty()) {
              close();
          } else {
              refuse(408, "the request did not arrive within http_request_timeout");
          }
      }),
      // Not from inside the answer just given: its caller may still be at work.
      next_(base, [this] {
          if (next_close_) close();
          else take_request();
      }) {
    // The bufferevent writes; reading is the connection's own (on_readable).
    bufferevent_setcb(bev_.get(), nullptr, &HttpConnection::on_write, &HttpConnection::on_event,
                      this);
    bufferevent_disable(bev_.get(), EV_READ);
    bufferevent_enable(bev_.get(), EV_WRITE);
    reader_ = FdWatcher(base, bev_.fd(), EV_READ | EV_PERSIST, [this] { on_readable(); });
    deadline_.postpone(limits_.request_timeout);
}

HttpConnection::~HttpConnection() = default;

// Read straight from the socket: a bufferevent would ask the kernel how much is there before
// each read (one more system call per request) and copy what it read once more.
void HttpConnection::on_readable() {
    const std::size_t most = limits_.max_head_bytes + limits_.max_body_bytes + 1;
    if (received_.size() >= most) {
        // More than a request could hold: the rest waits in the socket until this one is answered.
        reader_.disable();
        return;
    }
    char chunk[16 * 1024];
    const ssize_t n =
        ::recv(bev_.fd(), chunk, std::min(sizeof chunk, most - received_.size()), MSG_DONTWAIT);
    if (n == 0) {
        close();  // the client went
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close();
        return;
    }
    received_.append(chunk, static_cast<std::size_t>(n));
    if (!answering_) take_request();
}

void HttpConnection::take_request() {
    if (closed_ || answering_ || received_.empty()) return;
    const std::size_t end = request_head_end(received_, head_searched_);
    if (end == std::string::npos) {
        head_searched_ = head_search_from(received_);
        if (received_.size() > limits_.max_head_bytes)
            refuse(431, "the request head is over " + std::to_string(limits_.max_head_bytes) + " bytes");
        return;
    }
    if (end > limits_.max_head_bytes) {
        refuse(431, "the request head is over " + std::to_string(limits_.max_head_bytes) + " bytes");
        return;
    }
    HttpRequest& request = request_;
    const std::string_view head = std::string_view(received_).substr(0, end);
    if (Result<Done> read = read_request_head(head, request.head); !read) {
        refuse(400, read.error());
        return;
    }
    if (request.head.chunked) {
        refuse(411, "send the body with a Content-Length, not chunked");
        return;
    }
    const std::size_t body_length = request.head.content_length.value_or(0);
    if (body_length > limits_.max_body_bytes) {
        refuse(413, "the body is over " + std::to_string(limits_.max_body_bytes) +
                        " bytes (max_message_bytes in [daemon])");
        return;
    }
    if (received_.size() - end < body_length) return;  // the rest of the body is on its way
    // With room for the scanner's padding: the usual body is scanned where it lies.
    request.body.reserve(body_length + wire::kScanPadding);
    request.body.assign(received_, end, body_length);
    received_.erase(0, end + body_length);
    head_searched_ = 0;
    keep_alive_ = request.head.keep_alive;
    answering_ = true;  // the deadline now waits for answered() (see its callback)
    // Reading goes on, so a client that leaves is seen; its next request waits (above).
    if (!held_) reader_.enable();
    handler_.on_request(*this, request);
    // The handler is done with it (it may have taken the body); a large one is not kept idle.
    if (request_.body.capacity() > kKeptBodyBytes) std::string().swap(request_.body);
}

bool HttpConnection::write(std::span<const std::string_view> pieces) {
    if (closed_) return false;
    std::size_t size = 0;
    for (const std::string_view piece : pieces) size += piece.size();
    if (evbuffer_get_length(bev_.output()) + size > limits_.max_queued_bytes &&
        evbuffer_get_length(bev_.output()) > 0) {
        // A client that stopped reading its stream is let go; what it missed can be resumed.
        close();
        return false;
    }
    // At once when nothing is queued: no EPOLLOUT round and loop turn per response. While an
    // upgrade holds output (writing disabled, hold_output), queued, as the state expects.
    if ((bufferevent_get_enabled(bev_.get()) & EV_WRITE) == 0) {
        for (const std::string_view piece : pieces)
            bufferevent_write(bev_.get(), piece.data(), piece.size());
    } else {
        write_or_queue_bytes(bev_.get(), pieces);
    }
    return true;
}

void HttpConnection::respond(int status, const HttpHeaders& headers, std::string_view body) {
    if (closed_ || streaming_) return;
    respond_with_head(status, http_response_head(status, headers), body);
}

void HttpConnection::respond_with_head(int status, std::string_view head, std::string_view body) {
    if (closed_ || streaming_) return;
    if (!http_status_has_body(status)) body = {};
    HttpFramingBuffer buffer;
    const std::array<std::string_view, 3> pieces = {
        head, http_response_framing(status, body.size(), keep_alive_, buffer), body};
    write(pieces);
    answered();
}

void HttpConnection::open_stream(int status, const HttpHeaders& headers) {
    if (closed_ || streaming_) return;
    streaming_ = true;
    write(http_stream_head(status, headers, keep_alive_));
}

bool HttpConnection::stream(std::string_view bytes) {
    if (closed_ || !streaming_) return false;
    if (bytes.empty()) return true;
    return write(http_chunk(bytes));
}

void HttpConnection::end_stream() {
    if (closed_ || !streaming_) return;
    streaming_ = false;
    write(http_last_chunk());
    answered();
}

void HttpConnection::answered() {
    if (closed_) return;
    answering_ = false;
    if (!keep_alive_) {
        close_after_write_ = true;
        if (evbuffer_get_length(bev_.output()) == 0) close();
        return;
    }
    deadline_.postpone(limits_.request_timeout);
    if (!held_) reader_.enable();
    // A request that came while this one was answered.
    if (!received_.empty()) next_.arm(Duration::zero());
}

void HttpConnection::refuse(int status, const std::string& why) {
    if (closed_) return;
    keep_alive_ = false;
    received_.clear();
    head_searched_ = 0;
    reader_.disable();
    if (!write(http_response(status, {{"Content-Type", "text/plain; charset=utf-8"}}, why + "\n", false)))
        return;  // closed already
    close_after_write_ = true;
    answering_ = false;
    if (evbuffer_get_length(bev_.output()) == 0) close();
}

void HttpConnection::on_write(bufferevent*, void* self) {
    auto* c = static_cast<HttpConnection*>(self);
    if (c->close_after_write_ && evbuffer_get_length(c->bev_.output()) == 0) c->close();
}

void HttpConnection::on_event(bufferevent*, short what, void* self) {
    auto* c = static_cast<HttpConnection*>(self);
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0) c->close();
}

void HttpConnection::hold_input(bool held) {
    if (closed_ || held == held_) return;
    held_ = held;
    // Reading stops again by itself while more than a request could hold waits (on_readable).
    if (held)
        reader_.disable();
    else
        reader_.enable();
}

void HttpConnection::hold_output(bool held) {
    if (closed_) return;
    if (held) bufferevent_disable(bev_.get(), EV_WRITE);
    else bufferevent_enable(bev_.get(), EV_WRITE);
}

CarriedHttpConnection HttpConnection::carried() const {
    CarriedHttpConnection out;
    out.id = id_;
    out.fd = fd();
    out.received = received_;
    if (bev_) {
        out.received += buffered_bytes(bev_.input());
        out.unwritten = buffered_bytes(bev_.output());
    }
    out.answering = answering_;
    out.streaming = streaming_;
    out.keep_alive = keep_alive_;
    out.close_after_write = close_after_write_;
    return out;
}

void HttpConnection::resume(const CarriedHttpConnection& carried) {
    received_ = carried.received;
    answering_ = carried.answering;
    streaming_ = carried.streaming;
    keep_alive_ = carried.keep_alive;
    close_after_write_ = carried.close_after_write;
    if (!carried.unwritten.empty())
        evbuffer_add(bev_.output(), carried.unwritten.data(), carried.unwritten.size());
    if (answering_ || close_after_write_) deadline_.cancel();
    if (close_after_write_) {
        reader_.disable();
        if (carried.unwritten.empty()) next_close_ = true;
    }
    // A request that had arrived whole, or in part, is taken on the next turn.
    if (!answering_ && !close_after_write_ && !received_.empty()) next_.arm(Duration::zero());
    if (next_close_) next_.arm(Duration::zero());
}

void HttpConnection::close() {
    if (closed_) return;
    closed_ = true;
    streaming_ = false;
    deadline_.cancel();
    next_.cancel();
    reader_.reset();  // before the descriptor goes with the bufferevent
    bev_.reset();
    if (handler_.on_closed) handler_.on_closed(*this);
}

}  // namespace mcpd

#include "daemon/control/control_connection.h"

#include <event2/buffer.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

#include "common/check.h"
#include "common/control_protocol.h"
#include "common/fd_passing.h"
#include "common/log.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxRequestBytes = 1024 * 1024;
// A client that stops reading (a stuck `logs -f`) is cut off past this much queued output.
constexpr std::size_t kMaxQueuedOutput = 8 * 1024 * 1024;

}  // namespace

ControlConnection::ControlConnection(event_base* base, UniqueFd fd, PeerCredentials peer,
                                     RequestHandler& handler, OutputBudget& budget,
                                     Duration idle_timeout,
                                     std::function<void(ControlConnection&)> on_closed)
    : bev_(BufferEvent::over(base, std::move(fd))),
      peer_(peer),
      handler_(handler),
      budget_(budget),
      account_(budget, [this](const std::string& reason) { cut_off(reason); }),
      on_closed_(std::move(on_closed)),
      reader_(kMaxRequestBytes),
      idle_timeout_(idle_timeout),
      idle_(base, [this] { on_idle(); }) {
    MCPD_CHECK(bev_ != nullptr, "libevent could not allocate a control connection's buffers");
    bufferevent_setcb(bev_.get(), &ControlConnection::on_read, &ControlConnection::on_write,
                      &ControlConnection::on_event, this);
    bufferevent_enable(bev_.get(), EV_READ | EV_WRITE);
    account_.watch(bev_.output());
    arm_idle();
}

ControlConnection::~ControlConnection() {
    account_.unwatch();  // before its buffer goes (with the members)
}

void ControlConnection::reply_ok(const json& result) {
    write_line(control::ok_reply(result));
    reply_done();
}

void ControlConnection::reply_error(std::string_view code, const std::string& message,
                                    const std::vector<std::string>& details) {
    write_error(code, message, details);
    reply_done();
}

void ControlConnection::write_error(std::string_view code, const std::string& message,
                                    const std::vector<std::string>& details) {
    write_line(control::error_reply(code, message, details));
}

void ControlConnection::defer_reply() {
    reply_pending_ = true;
    idle_.cancel();  // mcpd owes the answer: the client is not idle
}

void ControlConnection::refuse(std::string_view code, const std::string& message) {
    // Refused once is enough: the first answer is the one the client reads.
    if (closed_ || bev_ == nullptr || mode_ == Mode::refused) return;
    mode_ = Mode::refused;
    // Its requests (or announced descriptors) are never read: they go with the socket.
    bufferevent_disable(bev_.get(), EV_READ);
    fd_watch_.disable();
    write_error(code, message);
    idle_.arm(idle_timeout_);  // in case the answer cannot be written: see on_idle()
    close_after_flush();
}

void ControlConnection::arm_idle() {
    idle_since_ = Clock::now();
    idle_.arm(idle_timeout_);
}

bool ControlConnection::idle() const {
    return !closed_ && !closing_ && mode_ == Mode::requests && !reply_pending_ &&
           cleanups_.empty() && bev_ != nullptr;
}

bool ControlConnection::idle_and_silent() const {
    // An answer still queued for it would be lost, or overtaken by the closing line.
    if (!idle() || evbuffer_get_length(bev_.output()) != 0) return false;
    int waiting = 0;
    return ::ioctl(bev_.fd(), FIONREAD, &waiting) == 0 && waiting == 0;
}

void ControlConnection::close_to_make_way(const std::string& why) {
    if (!idle_and_silent()) return;
    // Its output is empty, so this line overtakes nothing; a socket with no room for it simply
    // goes without.
    const std::string text =
        control::error_reply(control::code::limit,
                             "mcpd closed this idle connection to make way for a newer one: " + why)
            .dump(-1, ' ', false, json::error_handler_t::replace) +
        "\n";
    [[maybe_unused]] const ssize_t sent =
        ::send(bev_.fd(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    close();
}

void ControlConnection::reply_done() {
    reply_pending_ = false;
    // The idle time counts again from this answer.
    if (mode_ == Mode::requests && !closed_) arm_idle();
    // A reply given later (after --wait) resumes reading; one given from inside
    // process_input() lets its loop carry on instead of recursing.
    if (!processing_) process_input();
}

void ControlConnection::send(const json& message) {
    write_line(message);
    // All clients together over the budget: the largest queues go (this one, maybe). A reply
    // leaves that to the next loop turn (OutputBudget::Hooks::enforce_soon): the request's
    // handler may still use the connection (hand it over to a session, wait for descriptors).
    if (budget_.over()) budget_.enforce();
}

void ControlConnection::write_line(const json& message) {
    if (closed_ || bev_ == nullptr) return;
    evbuffer* out = bev_.output();
    if (const std::size_t queued = evbuffer_get_length(out); queued > kMaxQueuedOutput) {
        cut_off("the client stopped reading (" + std::to_string(queued) +
                " bytes queued for it, over the " + std::to_string(kMaxQueuedOutput) +
                " a control connection may hold)");
        return;
    }
    const std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
    evbuffer_add(out, text.data(), text.size());
    evbuffer_add(out, "\n", 1);
}

void ControlConnection::on_close(std::function<void()> cleanup) {
    if (closed_) {
        cleanup();
        return;
    }
    cleanups_.push_back(std::move(cleanup));
}

void ControlConnection::cut_off(const std::string& reason) {
    if (closed_) return;
    log::warning("control client pid " + std::to_string(peer_.pid) + " uid " +
                 std::to_string(peer_.uid) + ": " + reason + "; disconnecting it");
    close();
}

void ControlConnection::close_after_flush() {
    closing_ = true;
    if (bev_ != nullptr && evbuffer_get_length(bev_.output()) == 0) close();
}

bool ControlConnection::flush_now(Duration limit) {
    if (bev_ == nullptr) return false;
    evbuffer* out = bev_.output();
    // A socket bufferevent keeps its output's start frozen outside its own write callback.
    evbuffer_unfreeze(out, 1);
    const TimePoint deadline = Clock::now() + limit;
    bool written = true;
    while (evbuffer_get_length(out) > 0) {
        if (evbuffer_write(out, bev_.fd()) >= 0) continue;
        if (errno == EINTR) continue;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if ((errno != EAGAIN && errno != EWOULDBLOCK) || left.count() <= 0) {
            written = false;
            break;
        }
        pollfd waiting{bev_.fd(), POLLOUT, 0};
        ::poll(&waiting, 1, static_cast<int>(left.count()));
    }
    evbuffer_freeze(out, 1);
    return written;
}

void ControlConnection::on_read(bufferevent*, void* self) {
    auto* connection = static_cast<ControlConnection*>(self);
    if (connection->mode_ == Mode::linked) {
        // Nothing more is expected from a linked client; only its hang-up matters.
        evbuffer* in = connection->bev_.input();
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    connection->process_input();
}

BufferEvent ControlConnection::hand_over() {
    // Cut off while its reply was written (a client that never reads): nothing to hand on.
    if (closed_) return {};
    mode_ = Mode::handed_over;
    idle_.cancel();
    account_.unwatch();  // the session counts it from now on
    BufferEvent bev = std::move(bev_);
    bev.clear_callbacks();
    // What the client sent after its last request (its first session messages) goes back in
    // front of whatever is still unread, for the new owner.
    const std::string_view unread = reader_.unread();
    if (!unread.empty()) evbuffer_prepend(bev.input(), unread.data(), unread.size());
    closed_ = true;
    cleanups_.clear();
    on_closed_(*this);
    return bev;
}

void ControlConnection::receive_fds(std::function<void(std::vector<UniqueFd>)> on_fds,
                                    std::function<void()> on_hangup) {
    if (closed_) return;  // cut off while its reply was written: no descriptors will come
    MCPD_CHECK(bev_ != nullptr, "an open control connection lost its buffers");
    mode_ = Mode::awaiting_fds;
    on_fds_ = std::move(on_fds);
    on_hangup_ = std::move(on_hangup);
    bufferevent_disable(bev_.get(), EV_READ);
    // One-shot: once they have come, the bufferevent reads again (for the hang-up).
    fd_watch_ =
        FdWatcher(bufferevent_get_base(bev_.get()), bev_.fd(), EV_READ, [this] { on_fds_ready(); });
}

std::size_t ControlConnection::queued_output() const {
    return bev_ != nullptr ? evbuffer_get_length(bev_.output()) : 0;
}

void ControlConnection::link_carried(std::function<void()> on_hangup) {
    if (closed_) return;
    mode_ = Mode::linked;
    on_hangup_ = std::move(on_hangup);
    idle_.cancel();  // a link lasts as long as its session
}

void ControlConnection::on_fds_ready() {
    Result<std::vector<UniqueFd>> fds = mcpd::receive_fds(fd_watch_.fd(), control::kPassedFds);
    if (fds.transient()) {
        fd_watch_.enable();  // spurious wake-up: wait again
        return;
    }
    if (!fds) {
        std::string message = "control client pid ";
        message += std::to_string(peer_.pid);
        message += " did not pass the two descriptors it announced (";
        message += fds.error();
        message += "); closing";
        log::warning(message);
        close();
        return;
    }
    mode_ = Mode::linked;
    idle_.cancel();  // a link lasts as long as its session
    bufferevent_enable(bev_.get(), EV_READ);
    on_fds_(std::move(fds).value());
}

void ControlConnection::on_write(bufferevent*, void* self) {
    auto* connection = static_cast<ControlConnection*>(self);
    if (connection->closing_) connection->close();
}

void ControlConnection::on_event(bufferevent*, short what, void* self) {
    auto* connection = static_cast<ControlConnection*>(self);
    if (connection->mode_ == Mode::linked || connection->mode_ == Mode::awaiting_fds) {
        if (connection->on_hangup_) connection->on_hangup_();
        connection->close();
        return;
    }
    if ((what & BEV_EVENT_EOF) != 0 && !connection->closing_) {
        // The client is done sending; answer what it asked, then hang up.
        connection->process_input();
        connection->closing_ = true;
        if (!connection->reply_pending_) connection->close_after_flush();
        return;
    }
    connection->close();
}

void ControlConnection::process_input() {
    processing_ = true;
    process_lines();
    processing_ = false;
}

void ControlConnection::process_lines() {
    while (!closed_ && !reply_pending_ && bev_ != nullptr && mode_ == Mode::requests) {
        const LineReader::Result r = reader_.next(bev_.input(), line_);
        if (r == LineReader::Result::need_more) {
            if (closing_) close_after_flush();
            return;
        }
        if (r == LineReader::Result::oversized) {
            reply_error(control::code::bad_request,
                        "request too large (over " + std::to_string(kMaxRequestBytes) + " bytes)");
            close_after_flush();
            return;
        }
        json request = json::parse(line_, nullptr, false);
        if (request.is_discarded() || !request.is_object()) {
            reply_error(control::code::bad_request,
                        "a request must be one JSON object on one line");
            continue;
        }
        if (!control::speaks_our_protocol(request)) {
            reply_error(control::code::protocol, control::protocol_mismatch(request));
            close_after_flush();
            return;
        }
        handle(request);
    }
}

void ControlConnection::handle(const json& request) {
    // A backstop: every field is read by type, so a throw here is a bug in mcpd. It costs
    // this one request an error, not the daemon and every session with it.
    try {
        handler_.handle_request(*this, request);
    } catch (const std::exception& error) {
        static std::uint64_t failures = 0;
        if (++failures == 1 || failures % 100 == 0)
            log::error(std::string("a bug in mcpd: a control request failed (") + error.what() +
                       "); it was answered with an error (" + std::to_string(failures) +
                       " so far)");
        if (!closed_ && reply_pending_ == false)
            reply_error(control::code::bad_request,
                        "mcpd could not handle this request; nothing else was affected");
    }
}

void ControlConnection::on_idle() {
    if (closed_) return;
    const std::string who =
        "pid " + std::to_string(peer_.pid) + " uid " + std::to_string(peer_.uid);
    const std::string limit = format_duration(idle_timeout_);
    switch (mode_) {
        case Mode::refused:
            // Its answer could not be written within the time: it is not reading.
            close();
            return;
        case Mode::awaiting_fds:
            log::warning("control client " + who + " did not pass its descriptors within " + limit +
                         "; closing");
            if (on_hangup_) on_hangup_();
            close();
            return;
        case Mode::linked:
        case Mode::handed_over:
            return;
        case Mode::requests:
            break;
    }
    if (reply_pending_ || !cleanups_.empty()) return;  // waiting for mcpd, or following
    if (closing_) {
        // Its last answer is still not written: it is not reading.
        close();
        return;
    }
    log::info("closing the control connection of " + who + ": no request within " + limit);
    mode_ = Mode::refused;
    bufferevent_disable(bev_.get(), EV_READ);
    write_error(control::code::timeout,
                "no complete request within " + limit +
                    " of connecting or of the last answer; mcpd closed the connection "
                    "(send each request as one line)");
    idle_.arm(idle_timeout_);
    close_after_flush();
}

void ControlConnection::close() {
    if (closed_) return;
    closed_ = true;
    idle_.cancel();
    // The descriptor goes with the buffer: its number may be reused before we are freed.
    fd_watch_.disable();
    account_.unwatch();  // what is queued goes with the buffer
    bev_.reset();
    for (auto& cleanup : cleanups_) cleanup();
    cleanups_.clear();
    on_closed_(*this);  // the owner frees us on the next loop turn
}

}  // namespace mcpd

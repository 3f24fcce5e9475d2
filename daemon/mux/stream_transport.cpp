#include "daemon/mux/stream_transport.h"

#include <event2/buffer.h>

#include "common/log.h"
#include "daemon/io/buffer_event.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/lost_message_id.h"

namespace mcpd {
namespace {

// The most a bufferevent writes in one loop turn (libevent's default is 16 KiB).

}  // namespace

bool OutputCap::admits(std::size_t queued, std::size_t size) {
    const std::size_t since_read = grown(queued);
    if (since_read + size <= limit_) return true;
    if (!spare_) return false;
    // Let past once: growth goes on counting from where it stood before this message.
    spare_ = false;
    base_ = queued + size - since_read;
    return true;
}

void OutputCap::taken(std::size_t queued) {
    base_ = queued;
    spare_ = true;
}

static_assert(LineReader::kPadding >= wire::kScanPadding);

StreamTransport::StreamTransport(SessionId id, std::string server, PeerCredentials peer,
                                 BufferEvent input, BufferEvent output, WriteCoalescer& writes,
                                 std::size_t max_message_bytes, std::size_t max_queue_bytes,
                                 OutputBudget& budget)
    : ClientTransport(id, std::move(server), std::move(peer)),
      input_(std::move(input)),
      output_(std::move(output)),
      writes_(writes),
      cap_(max_queue_bytes),
      budget_(budget),
      account_(budget, [this](const std::string& reason) { cut_off(reason); }),
      source_(bufferevent_get_base(input_.get()), input_.fd(), max_message_bytes,
              /*keep_edges=*/true, &writes,
              LineSource::Callbacks{
                  .on_line = [this](wire::PaddedText line) { callbacks_.on_line(*this, line); },
                  .on_oversized = [this] { discarded_line(); },
                  .on_eof = [this] { input_ended_by_client(); },
                  .on_error = [this](int) { close("the connection failed", true); },
              }) {
    // Reading goes around the bufferevent (daemon/io/line_source.h).
    bufferevent_disable(input_.get(), EV_READ);
    source_.reader().append(input_.input());
    bufferevent_setcb(input_.get(), nullptr, nullptr, &StreamTransport::on_input_event, this);
    if (output_) {
        bufferevent_setcb(output_.get(), nullptr, nullptr, &StreamTransport::on_output_event, this);
        bufferevent_enable(output_.get(), EV_WRITE);
    }
    // Large replies leave in few writes rather than 16 KiB per loop turn.
    bufferevent_set_max_single_write(output_bev(), kMaxSingleWrite);
    account_.watch(bufferevent_get_output(output_bev()));
    output_watch_ =
        evbuffer_add_cb(bufferevent_get_output(output_bev()), &StreamTransport::on_output_changed, this);
}

StreamTransport::~StreamTransport() {
    if (output_watch_ != nullptr)
        evbuffer_remove_cb_entry(bufferevent_get_output(output_bev()), output_watch_);
    account_.unwatch();  // before its buffer goes
    writes_.drop_held_writes(output_held_);
    // The read watcher, then the bufferevents (callbacks cleared first), go with the members.
}

void StreamTransport::start(Callbacks callbacks) {
    callbacks_ = std::move(callbacks);
    if (!output_) bufferevent_enable(input_.get(), EV_WRITE);
    // A socket session may have sent messages together with its attach request.
    source_.start();
}

void StreamTransport::send(std::span<const std::string_view> pieces) {
    const std::size_t queued = queued_bytes();
    std::size_t size = 1;
    for (std::string_view piece : pieces) size += piece.size();
    if (!make_room(queued, size)) return;
    writes_.write_or_queue_line(output_bev(), output_held_, pieces);
    sent(queued);
}

bool StreamTransport::make_room(std::size_t queued, std::size_t size) {
    if (closed_) return false;
    if (queued == 0 || cap_.admits(queued, size)) return true;
    std::string reason = "the client stopped reading (";
    reason += std::to_string(queued);
    reason += " bytes queued for it, ";
    reason += std::to_string(cap_.grown(queued));
    reason += " of them since it last read, over max_session_queue_bytes; a client must read "
              "its replies as they come, or max_session_queue_bytes be raised in [daemon])";
    cut_off(reason);
    return false;
}

void StreamTransport::sent(std::size_t queued_before) {
    // What the descriptor took at once was read; what is left is the message being read now.
    if (queued_before == 0) cap_.taken(queued_bytes());
    // All clients together over the budget: the largest queues go (this one, maybe).
    if (budget_.over()) budget_.enforce();
}

void StreamTransport::on_output_changed(evbuffer*, const evbuffer_cb_info* info, void* self) {
    if (info->n_deleted == 0) return;
    auto* session = static_cast<StreamTransport*>(self);
    session->cap_.taken(session->queued_bytes());
}

void StreamTransport::pause_input() {
    paused_ = true;
    source_.pause();
}

void StreamTransport::resume_input() {
    paused_ = false;
    if (!held_) source_.resume();
}

void StreamTransport::hold_input(bool held) {
    held_ = held;
    if (held) source_.pause();
    else if (!paused_) source_.resume();
}

void StreamTransport::hold_output(bool held) {
    if (closed_) return;
    if (held) bufferevent_disable(output_bev(), EV_WRITE);
    else bufferevent_enable(output_bev(), EV_WRITE);
}

std::string StreamTransport::why_not_carried() const {
    if (closed_ || input_ended_ || !finish_reason_.empty()) return "it is ending";
    if (source_.reader().discarding())
        return "a line of its over max_message_bytes is being discarded";
    if (output_held_.size() > 0) return "a write to it is being gathered";
    return {};
}

std::string StreamTransport::unread() const { return std::string(source_.reader().unread()); }

std::string StreamTransport::unwritten() const { return buffered_bytes(bufferevent_get_output(output_bev())); }

void StreamTransport::resume(std::string_view unread, std::string_view unwritten) {
    // Not through the input's evbuffer, whose end a socket bufferevent keeps frozen.
    source_.reader().append(unread);
    if (unwritten.empty()) return;
    evbuffer_add(bufferevent_get_output(output_bev()), unwritten.data(), unwritten.size());
    cap_.taken(queued_bytes());
}

void StreamTransport::cut_off(const std::string& reason) {
    if (closed_) return;
    // Nothing more will be written to it: what waits goes now, not when the session is
    // freed on a later turn, so its memory is free before the next message is queued.
    account_.unwatch();
    writes_.drop_held_writes(output_held_);
    evbuffer* out = bufferevent_get_output(output_bev());
    evbuffer_drain(out, evbuffer_get_length(out));
    close(reason, false);
}

void StreamTransport::close(const std::string& reason, bool by_client) {
    if (closed_) return;
    closed_ = true;
    source_.close();
    callbacks_.on_closed(*this, reason, by_client);
}

void StreamTransport::finish(const std::string& reason) {
    if (closed_ || !finish_reason_.empty()) return;
    finish_reason_ = reason;
    // Held writes (eager_write.h) are not counted: the flush callback that writes them was made
    // active when they were held, before anything this close defers (the session is freed
    // later), and they would never fire the drain callback.
    if (evbuffer_get_length(bufferevent_get_output(output_bev())) == 0) {
        close(reason, true);
        return;
    }
    // The write callback fires once the output buffer is empty (low watermark 0).
    bufferevent_setwatermark(output_bev(), EV_WRITE, 0, 0);
    bufferevent_event_cb event_cb = output_ ? &StreamTransport::on_output_event : &StreamTransport::on_input_event;
    bufferevent_setcb(output_bev(), nullptr, &StreamTransport::on_output_drained, event_cb, this);
}

void StreamTransport::on_output_drained(bufferevent*, void* self) {
    auto* session = static_cast<StreamTransport*>(self);
    session->close(session->finish_reason_, true);
}

void StreamTransport::input_ended_by_client() {
    input_ended_ = true;
    // Replies to what it sent are still owed: the owner decides when to finish.
    callbacks_.on_input_ended(*this);
}

void StreamTransport::on_input_event(bufferevent*, short what, void* self) {
    // Only writing goes through the bufferevent: a write failed or met the end.
    auto* session = static_cast<StreamTransport*>(self);
    if ((what & (BEV_EVENT_WRITING | BEV_EVENT_EOF)) != 0) {
        session->close("the client's output is gone", true);
        return;
    }
    session->close("the connection failed", true);
}

void StreamTransport::on_output_event(bufferevent*, short, void* self) {
    static_cast<StreamTransport*>(self)->close("the client's output is gone", true);
}

std::size_t StreamTransport::queued_bytes() const {
    return evbuffer_get_length(bufferevent_get_output(output_bev())) +
           output_held_.size();
}

void StreamTransport::discarded_line() {
    const LineReader& reader = source_.reader();
    const std::size_t bytes = reader.discarded_bytes();
    const std::string limit = std::to_string(reader.max_line_bytes());
    const LostMessageId edges =
        read_lost_message_id(reader.discarded_head(), reader.discarded_tail());
    log::warning(server(), "session " + std::to_string(id()) + ": discarded a message of " +
                              std::to_string(bytes) + " bytes, over max_message_bytes");
    // An answer to a request of the server's: the server is told, or it would wait forever.
    if (edges.response && !edges.request && !edges.id.empty() && callbacks_.on_reply_lost) {
        std::string why = "it was ";
        why += std::to_string(bytes);
        why += " bytes, over max_message_bytes (";
        why += limit;
        why += "); it was discarded";
        callbacks_.on_reply_lost(*this, edges.id, why);
        if (closed_) return;
    }
    // Answered with the request's own id when its edges show one, so the client can tell which
    // of its requests failed.
    send(jsonrpc::error(edges.response ? std::string_view() : edges.id, jsonrpc::kInvalidRequest,
                        "message too large: " + std::to_string(bytes) +
                            " bytes, over max_message_bytes (" + limit +
                            " bytes); it was discarded"));
}

}  // namespace mcpd

#include "daemon/session.h"

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/log.h"
#include "daemon/eager_write.h"
#include "daemon/jsonrpc.h"
#include "daemon/message_edges.h"

namespace mcpd {

Session::Session(SessionId id, std::string server, PeerCredentials peer, bufferevent* input,
                 bufferevent* output, std::size_t max_message_bytes, std::size_t max_queue_bytes,
                 Callbacks callbacks)
    : id_(id),
      server_(std::move(server)),
      peer_(peer),
      input_(input),
      output_(output),
      max_queue_(max_queue_bytes),
      callbacks_(std::move(callbacks)),
      reader_(max_message_bytes, /*keep_edges=*/true) {
    bufferevent_setcb(input_, &Session::on_read, nullptr, &Session::on_input_event, this);
    if (output_ != input_) {
        bufferevent_setcb(output_, nullptr, nullptr, &Session::on_output_event, this);
        bufferevent_enable(output_, EV_WRITE);
    }
}

Session::~Session() {
    for (bufferevent* bev : {input_, output_}) {
        if (bev == nullptr) continue;
        bufferevent_setcb(bev, nullptr, nullptr, nullptr, nullptr);
    }
    if (output_ != nullptr && output_ != input_) bufferevent_free(output_);
    if (input_ != nullptr) bufferevent_free(input_);
}

void Session::start() {
    bufferevent_enable(input_, EV_READ | (input_ == output_ ? EV_WRITE : 0));
    // A socket session may have sent messages together with its attach request.
    read_lines(false);
}

void Session::send(std::string_view line) {
    if (closed_) return;
    evbuffer* out = bufferevent_get_output(output_);
    const std::size_t queued = evbuffer_get_length(out);
    // One message larger than the cap still goes to a client that has caught up.
    if (queued > 0 && queued + line.size() > max_queue_) {
        close("the client stopped reading (" + std::to_string(queued) +
                  " bytes queued for it, over max_session_queue_bytes)",
              false);
        return;
    }
    write_or_queue_line(output_, line);
}

void Session::pause_input() {
    if (paused_ || closed_) return;
    paused_ = true;
    bufferevent_disable(input_, EV_READ);
}

void Session::resume_input() {
    if (!paused_ || closed_) return;
    paused_ = false;
    bufferevent_enable(input_, EV_READ);
    read_lines(false);  // lines may have been buffered before the pause
}

void Session::close(const std::string& reason, bool by_client) {
    if (closed_) return;
    closed_ = true;
    bufferevent_disable(input_, EV_READ);
    callbacks_.on_closed(*this, reason, by_client);
}

void Session::finish(const std::string& reason) {
    if (closed_ || !finish_reason_.empty()) return;
    finish_reason_ = reason;
    if (evbuffer_get_length(bufferevent_get_output(output_)) == 0) {
        close(reason, true);
        return;
    }
    // The write callback fires once the output buffer is empty (low watermark 0).
    bufferevent_setwatermark(output_, EV_WRITE, 0, 0);
    bufferevent_data_cb read_cb = output_ == input_ ? &Session::on_read : nullptr;
    bufferevent_event_cb event_cb =
        output_ == input_ ? &Session::on_input_event : &Session::on_output_event;
    bufferevent_setcb(output_, read_cb, &Session::on_output_drained, event_cb, this);
}

void Session::on_output_drained(bufferevent*, void* self) {
    auto* session = static_cast<Session*>(self);
    session->close(session->finish_reason_, true);
}

void Session::on_read(bufferevent*, void* self) { static_cast<Session*>(self)->read_lines(false); }

void Session::on_input_event(bufferevent*, short what, void* self) {
    auto* session = static_cast<Session*>(self);
    if ((what & BEV_EVENT_EOF) != 0) {
        if (session->input_ended_) return;
        session->read_lines(true);
        if (session->closed_) return;
        session->input_ended_ = true;
        bufferevent_disable(session->input_, EV_READ);
        // Replies to what it sent are still owed: the owner decides when to finish.
        session->callbacks_.on_input_ended(*session);
        return;
    }
    if ((what & BEV_EVENT_WRITING) != 0) {
        session->close("the client's output is gone", true);
        return;
    }
    session->close("the connection failed", true);
}

void Session::on_output_event(bufferevent*, short, void* self) {
    static_cast<Session*>(self)->close("the client's output is gone", true);
}

void Session::read_lines(bool at_eof) {
    evbuffer* in = bufferevent_get_input(input_);
    while (!closed_ && (!paused_ || at_eof)) {
        const LineReader::Result r = at_eof ? reader_.finish(in, line_) : reader_.next(in, line_);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            // Answered with the request's own id when its edges show one, so the client can
            // tell which of its requests failed.
            const MessageEdges edges =
                read_message_edges(reader_.discarded_head(), reader_.discarded_tail());
            log::warning(server_, "session " + std::to_string(id_) + ": discarded a message of " +
                                      std::to_string(reader_.discarded_bytes()) +
                                      " bytes, over max_message_bytes");
            send(jsonrpc::error(edges.response ? std::string_view() : edges.id,
                                jsonrpc::kInvalidRequest,
                                "message too large: " + std::to_string(reader_.discarded_bytes()) +
                                    " bytes, over max_message_bytes (" +
                                    std::to_string(reader_.max_line_bytes()) +
                                    " bytes); it was discarded"));
            continue;
        }
        const MoreInput more(evbuffer_get_length(in) > 0);
        callbacks_.on_line(*this, line_);
    }
}

}  // namespace mcpd

#include "common/line_reader.h"

#include <event2/buffer.h>

#include <algorithm>

namespace mcpd {
namespace {

// Offset of the first '\n' at or after `from`, or -1.
ssize_t find_newline(evbuffer* input, std::size_t from) {
    evbuffer_ptr start;
    if (evbuffer_ptr_set(input, &start, from, EVBUFFER_PTR_SET) != 0) return -1;
    const evbuffer_ptr found = evbuffer_search(input, "\n", 1, &start);
    return found.pos;
}

void take_line(evbuffer* input, std::size_t length, std::string& out) {
    out.resize(length);
    if (length > 0) evbuffer_remove(input, out.data(), length);
    if (!out.empty() && out.back() == '\r') out.pop_back();
}

}  // namespace

LineReader::Result LineReader::next(evbuffer* input, std::string& out) {
    for (;;) {
        const std::size_t buffered = evbuffer_get_length(input);
        const ssize_t newline = find_newline(input, scanned_);
        if (newline < 0) {
            if (buffered > max_line_ || discarding_) {
                // Too long to ever be a line: drop what we have and keep dropping until '\n'.
                const bool first = !discarding_;
                if (first) {
                    discarded_ = 0;
                    if (keep_edges_) keep_head(input, buffered);
                }
                if (keep_edges_) keep_tail(input, buffered);
                discarded_ += buffered;
                evbuffer_drain(input, buffered);
                discarding_ = true;
                scanned_ = 0;
                if (first && !keep_edges_) return Result::oversized;
                return Result::need_more;
            }
            scanned_ = buffered;
            return Result::need_more;
        }
        const auto length = static_cast<std::size_t>(newline);
        scanned_ = 0;
        if (discarding_) {
            if (keep_edges_) keep_tail(input, length);
            discarded_ += length + 1;
            evbuffer_drain(input, length + 1);
            discarding_ = false;
            if (keep_edges_) return Result::oversized;
            continue;
        }
        if (length > max_line_) {
            if (keep_edges_) {
                keep_head(input, length);
                keep_tail(input, length);
            }
            discarded_ = length + 1;
            evbuffer_drain(input, length + 1);
            return Result::oversized;
        }
        take_line(input, length, out);
        evbuffer_drain(input, 1);
        if (out.empty()) continue;  // blank line
        return Result::line;
    }
}

void LineReader::keep_head(evbuffer* input, std::size_t length) {
    head_.resize(std::min(length, kEdgeBytes));
    evbuffer_copyout(input, head_.data(), head_.size());
    tail_.clear();
}

void LineReader::keep_tail(evbuffer* input, std::size_t length) {
    const std::size_t n = std::min(length, kEdgeBytes);
    evbuffer_ptr from;
    if (n == 0 || evbuffer_ptr_set(input, &from, length - n, EVBUFFER_PTR_SET) != 0) return;
    const std::size_t kept = tail_.size();
    tail_.resize(kept + n);
    evbuffer_copyout_from(input, &from, tail_.data() + kept, n);
    if (tail_.size() > kEdgeBytes) tail_.erase(0, tail_.size() - kEdgeBytes);
}

LineReader::Result LineReader::finish(evbuffer* input, std::string& out) {
    const Result r = next(input, out);
    if (r != Result::need_more) return r;
    const std::size_t rest = evbuffer_get_length(input);
    scanned_ = 0;
    if (discarding_ || rest == 0) {
        // An oversized line cut off by EOF ends here.
        const bool ended = discarding_ && keep_edges_;
        if (ended) keep_tail(input, rest);
        discarded_ += discarding_ ? rest : 0;
        evbuffer_drain(input, rest);
        discarding_ = false;
        return ended ? Result::oversized : Result::need_more;
    }
    take_line(input, rest, out);
    return out.empty() ? Result::need_more : Result::line;
}

}  // namespace mcpd

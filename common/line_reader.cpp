#include "common/line_reader.h"

#include <event2/buffer.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mcpd {
namespace {

// A buffer grown past this for a long line is given back once it is empty again; smaller
// ones are kept for the next message.
constexpr std::size_t kKeptBytes = 2 * LineReader::kReadBytes;

}  // namespace

void LineReader::make_room(std::size_t bytes) {
    const std::size_t live = end_ - begin_;
    if (buffer_.capacity() >= end_ + bytes + kPadding) return;
    if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, live);
        begin_ = 0;
        end_ = live;
    }
    const std::size_t needed = live + bytes + kPadding;
    if (buffer_.capacity() >= needed) return;
    // Growing by half keeps a long line gathered in pieces linear in its size, with less
    // overshoot than doubling (a 1 MiB message does not need a 2 MiB buffer).
    buffer_.reserve(std::max(needed, buffer_.capacity() + buffer_.capacity() / 2), live);
}

ssize_t LineReader::read_from(int fd) {
    reset_if_empty();
    make_room(kReadBytes);
    // While a long line is gathered the buffer has grown: fill as much of it as the
    // descriptor has ready, in one call.
    const std::size_t room = buffer_.capacity() - end_ - kPadding;
    ssize_t n = 0;
    do {
        n = ::read(fd, buffer_.data() + end_, room);
    } while (n < 0 && errno == EINTR);
    if (n > 0) end_ += static_cast<std::size_t>(n);
    return n;
}

void LineReader::append(std::string_view bytes) {
    if (bytes.empty()) return;
    reset_if_empty();
    make_room(bytes.size());
    std::memcpy(buffer_.data() + end_, bytes.data(), bytes.size());
    end_ += bytes.size();
}

void LineReader::append(evbuffer* input) {
    const std::size_t length = evbuffer_get_length(input);
    if (length == 0) return;
    reset_if_empty();
    make_room(length);
    evbuffer_remove(input, buffer_.data() + end_, length);
    end_ += length;
}

LineReader::Result LineReader::next(std::string_view& line) {
    reset_if_empty();
    for (;;) {
        const char* start = buffer_.data() + begin_;
        const std::size_t live = end_ - begin_;
        const void* found =
            live > scanned_ ? std::memchr(start + scanned_, '\n', live - scanned_) : nullptr;
        if (found == nullptr) {
            if (live > max_line_ || (discarding_ && live > 0)) {
                // Too long to ever be a line: drop what we have and keep dropping until '\n'.
                const bool first = !discarding_;
                if (first) {
                    discarded_ = 0;
                    if (keep_edges_) {
                        head_.assign(start, std::min(live, kEdgeBytes));
                        tail_.clear();
                    }
                }
                if (keep_edges_) keep_tail(start, start + live);
                discarded_ += live;
                discarding_ = true;
                discard_buffered();
                if (first && !keep_edges_) return Result::oversized;
                return Result::need_more;
            }
            scanned_ = live;
            return Result::need_more;
        }
        const auto length = static_cast<std::size_t>(static_cast<const char*>(found) - start);
        begin_ += length + 1;
        scanned_ = 0;
        if (discarding_) {
            if (keep_edges_) keep_tail(start, start + length);
            discarded_ += length + 1;
            discarding_ = false;
            if (keep_edges_) return Result::oversized;
            continue;
        }
        if (length > max_line_) {
            if (keep_edges_) {
                head_.assign(start, std::min(length, kEdgeBytes));
                tail_.clear();
                keep_tail(start, start + length);
            }
            discarded_ = length + 1;
            return Result::oversized;
        }
        std::size_t size = length;
        if (size > 0 && start[size - 1] == '\r') --size;
        if (size == 0) continue;  // blank line
        line = std::string_view(start, size);
        return Result::line;
    }
}

LineReader::Result LineReader::finish(std::string_view& line) {
    const Result r = next(line);
    if (r != Result::need_more) return r;
    const char* start = buffer_.data() + begin_;
    const std::size_t live = end_ - begin_;
    if (discarding_ || live == 0) {
        // An oversized line cut off by EOF ends here.
        const bool ended = discarding_ && keep_edges_;
        if (ended) keep_tail(start, start + live);
        discarded_ += discarding_ ? live : 0;
        discarding_ = false;
        discard_buffered();
        return ended ? Result::oversized : Result::need_more;
    }
    begin_ = end_;
    scanned_ = 0;
    std::size_t size = live;
    if (start[size - 1] == '\r') --size;
    if (size == 0) return Result::need_more;
    line = std::string_view(start, size);
    return Result::line;
}

LineReader::Result LineReader::next(evbuffer* input, std::string& out) {
    append(input);
    std::string_view line;
    const Result r = next(line);
    if (r == Result::line) out.assign(line);
    return r;
}

LineReader::Result LineReader::finish(evbuffer* input, std::string& out) {
    append(input);
    std::string_view line;
    const Result r = finish(line);
    if (r == Result::line) out.assign(line);
    return r;
}

ByteBuffer LineReader::give_buffer() {
    const std::size_t live = end_ - begin_;
    // The new buffer first: if it cannot be had, nothing has moved.
    ByteBuffer rest(live + kReadBytes + kPadding);
    if (live > 0) std::memcpy(rest.data(), buffer_.data() + begin_, live);
    ByteBuffer given = std::exchange(buffer_, std::move(rest));
    begin_ = 0;  // scanned_ counts from begin_, and stays right
    end_ = live;
    return given;
}

void LineReader::discard_buffered() {
    begin_ = end_ = scanned_ = 0;
    reset_if_empty();
}

void LineReader::keep_tail(const char* from, const char* to) {
    const auto n = std::min(static_cast<std::size_t>(to - from), kEdgeBytes);
    if (n == 0) return;
    tail_.append(to - n, n);
    if (tail_.size() > kEdgeBytes) tail_.erase(0, tail_.size() - kEdgeBytes);
}

void LineReader::reset_if_empty() {
    if (begin_ != end_) return;
    begin_ = end_ = scanned_ = 0;
    if (buffer_.capacity() > kKeptBytes + kPadding) buffer_.release();
}

}  // namespace mcpd

#include "daemon/io/eager_write.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/byte_buffer.h"

namespace mcpd {
namespace {

// The most held for one destination: a held message never waits behind a large one, and what
// is held alone never reaches a child's stdin high-water mark (which waits for a drain).
constexpr std::size_t kMaxHeldBytes = 256 * 1024;

// What is left of a message from this size up is queued by reference, in a block of its own.
constexpr std::size_t kOwnBlockBytes = 1024 * 1024;

void free_block(const void*, std::size_t, void* block) {
    delete static_cast<ByteBuffer*>(block);
}

// Queue the `size` bytes of `parts` after the first `skip`, copied into one ByteBuffer.
bool queue_in_own_block(evbuffer* out, const std::vector<iovec>& parts, std::size_t skip,
                        std::size_t size) {
    auto block = std::make_unique<ByteBuffer>(size);
    char* to = block->data();
    for (const iovec& part : parts) {
        if (skip >= part.iov_len) {
            skip -= part.iov_len;
            continue;
        }
        std::memcpy(to, static_cast<const char*>(part.iov_base) + skip, part.iov_len - skip);
        to += part.iov_len - skip;
        skip = 0;
    }
    if (evbuffer_add_reference(out, block->data(), size, &free_block, block.get()) != 0)
        return false;
    block.release();
    return true;
}

// Write `parts` (`total` bytes) to `bev`'s descriptor when nothing is queued on it, and queue
// what it does not take.
void write_or_queue(bufferevent* bev, const std::vector<iovec>& parts, std::size_t total) {
    evbuffer* out = bufferevent_get_output(bev);
    std::size_t written = 0;
    if (evbuffer_get_length(out) == 0) {
        ssize_t n = 0;
        do {
            n = ::writev(bufferevent_getfd(bev), parts.data(), static_cast<int>(parts.size()));
        } while (n < 0 && errno == EINTR);
        if (n > 0) written = static_cast<std::size_t>(n);
    }
    if (written == total) return;
    if (total - written >= kOwnBlockBytes &&
        queue_in_own_block(out, parts, written, total - written))
        return;
    for (const iovec& part : parts) {
        if (written >= part.iov_len) {
            written -= part.iov_len;
            continue;
        }
        evbuffer_add(out, static_cast<const char*>(part.iov_base) + written,
                     part.iov_len - written);
        written = 0;
    }
}

void flush_one(bufferevent* bev, std::string& bytes) {
    if (bytes.empty()) return;
    const std::vector<iovec> parts{{bytes.data(), bytes.size()}};
    write_or_queue(bev, parts, bytes.size());
    bytes.clear();
}

}  // namespace

WriteCoalescer::Held* WriteCoalescer::find_held(bufferevent* bev) {
    for (Held& h : held_) {
        if (h.bev == bev) return &h;
    }
    return nullptr;
}

void WriteCoalescer::flush_held() {
    std::vector<Held> batch;
    batch.swap(held_);
    for (Held& h : batch) flush_one(h.bev, h.bytes);
}

MoreInput::MoreInput(WriteCoalescer& writes, bool more)
    : writes_(writes), saved_(writes.more_input_) {
    writes_.more_input_ = more;
}

MoreInput::~MoreInput() {
    writes_.more_input_ = saved_;
}

WriteBurst::WriteBurst(WriteCoalescer& writes) : writes_(writes) {
    ++writes_.burst_depth_;
}

WriteBurst::~WriteBurst() {
    if (--writes_.burst_depth_ == 0 && !writes_.held_.empty()) writes_.flush_held();
}

std::size_t WriteCoalescer::held_bytes(bufferevent* bev) const {
    for (const Held& h : held_) {
        if (h.bev == bev) return h.bytes.size();
    }
    return 0;
}

void WriteCoalescer::drop_held_writes(bufferevent* bev) {
    std::erase_if(held_, [bev](const Held& h) { return h.bev == bev; });
}

std::string WriteCoalescer::take_held_writes(bufferevent* bev) {
    std::string bytes;
    for (Held& h : held_) {
        if (h.bev == bev) bytes = std::move(h.bytes);
    }
    drop_held_writes(bev);
    return bytes;
}

void WriteCoalescer::write_or_queue_line(bufferevent* bev, std::string_view line) {
    write_or_queue_line(bev, std::span<const std::string_view>(&line, 1));
}

void WriteCoalescer::write_or_queue_line(bufferevent* bev,
                                         std::span<const std::string_view> pieces) {
    std::size_t size = 1;  // the newline
    for (std::string_view piece : pieces) size += piece.size();
    Held* h = find_held(bev);
    // Held back while more input waits behind this line (its answers join it in one write),
    // and after anything already held for the same destination, to keep the order.
    if (h != nullptr || (more_input_ && burst_depth_ > 0 &&
                         evbuffer_get_length(bufferevent_get_output(bev)) == 0)) {
        if (h == nullptr) h = &held_.emplace_back(Held{bev, {}});
        if (h->bytes.size() + size <= kMaxHeldBytes) {
            for (std::string_view piece : pieces) h->bytes.append(piece);
            h->bytes.push_back('\n');
            return;
        }
        // Too much to hold (a large message, or a long burst): what is held goes first.
        flush_one(bev, h->bytes);
        drop_held_writes(bev);
    }
    parts_.clear();
    for (std::string_view piece : pieces) {
        if (!piece.empty()) parts_.push_back({const_cast<char*>(piece.data()), piece.size()});
    }
    static char newline = '\n';
    parts_.push_back({&newline, 1});
    write_or_queue(bev, parts_, size);
}

}  // namespace mcpd

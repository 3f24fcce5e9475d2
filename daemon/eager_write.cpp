#include "daemon/eager_write.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "common/byte_buffer.h"

namespace mcpd {
namespace {

bool more_input = false;  // the daemon is single-threaded

// What is left of a message from this size up is queued by reference, in a block of its own.
constexpr std::size_t kOwnBlockBytes = 1024 * 1024;

void free_block(const void*, std::size_t, void* block) { delete static_cast<ByteBuffer*>(block); }

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
    if (evbuffer_add_reference(out, block->data(), size, &free_block, block.get()) != 0) return false;
    block.release();
    return true;
}

}  // namespace

MoreInput::MoreInput(bool more) : saved_(more_input) { more_input = more; }

MoreInput::~MoreInput() { more_input = saved_; }

void write_or_queue_line(bufferevent* bev, std::string_view line) {
    write_or_queue_line(bev, std::span<const std::string_view>(&line, 1));
}

void write_or_queue_line(bufferevent* bev, std::span<const std::string_view> pieces) {
    static std::vector<iovec> parts;  // reused: the daemon is single-threaded
    parts.clear();
    std::size_t total = 0;
    for (std::string_view piece : pieces) {
        if (piece.empty()) continue;
        parts.push_back({const_cast<char*>(piece.data()), piece.size()});
        total += piece.size();
    }
    static char newline = '\n';
    parts.push_back({&newline, 1});
    total += 1;

    evbuffer* out = bufferevent_get_output(bev);
    std::size_t written = 0;
    if (!more_input && evbuffer_get_length(out) == 0) {
        ssize_t n = 0;
        do {
            n = ::writev(bufferevent_getfd(bev), parts.data(), static_cast<int>(parts.size()));
        } while (n < 0 && errno == EINTR);
        if (n > 0) written = static_cast<std::size_t>(n);
    }
    if (written == total) return;
    if (total - written >= kOwnBlockBytes && queue_in_own_block(out, parts, written, total - written)) return;
    for (const iovec& part : parts) {
        if (written >= part.iov_len) {
            written -= part.iov_len;
            continue;
        }
        evbuffer_add(out, static_cast<const char*>(part.iov_base) + written, part.iov_len - written);
        written = 0;
    }
}

}  // namespace mcpd

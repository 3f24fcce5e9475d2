#include "daemon/io/eager_write.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "common/byte_buffer.h"
#include "daemon/io/line_loan.h"

namespace mcpd {
namespace {

// The most held for one destination: a held message never waits behind a large one, and what
// is held alone never reaches a child's stdin high-water mark (which waits for a drain).
constexpr std::size_t kMaxHeldBytes = 256 * 1024;
// The most held for a destination with bytes queued already. Those bytes count against
// max_queued_output (daemon/control/output_budget.h) and held ones not yet: a client that
// stopped reading gains little uncounted memory per pass, while a child's stdin behind a
// burst of requests still gets them a few hundred at a time.
constexpr std::size_t kMaxHeldBehindQueue = 16 * 1024;

// What is left of a message from this size up is queued by reference, in a block of its own.
constexpr std::size_t kOwnBlockBytes = 1024 * 1024;

void free_block(const void*, std::size_t, void* block) {
    delete static_cast<ByteBuffer*>(block);
}

// `fn(bytes)` for what `parts` hold after their first `skip` bytes, part by part.
template <typename Fn>
void each_unwritten(std::span<const iovec> parts, std::size_t skip, Fn&& fn) {
    for (const iovec& part : parts) {
        if (skip >= part.iov_len) {
            skip -= part.iov_len;
            continue;
        }
        fn(std::string_view(static_cast<const char*>(part.iov_base) + skip, part.iov_len - skip));
        skip = 0;
    }
}

// Queue the `size` bytes of `parts` after the first `skip`, copied into one ByteBuffer.
bool queue_in_own_block(evbuffer* out, std::span<const iovec> parts, std::size_t skip,
                        std::size_t size) {
    auto block = std::make_unique<ByteBuffer>(size);
    char* to = block->data();
    each_unwritten(parts, skip, [&to](std::string_view bytes) {
        std::memcpy(to, bytes.data(), bytes.size());
        to += bytes.size();
    });
    if (evbuffer_add_reference(out, block->data(), size, &free_block, block.get()) != 0)
        return false;
    block.release();
    return true;
}

// Queue the bytes of `parts` after the first `skip`, those of a large part that lies in the
// lent line where they lie, the others copied. False (nothing queued) when no large part does.
bool queue_on_loan(evbuffer* out, std::span<const iovec> parts, std::size_t skip, LineLoan& loan) {
    bool lent = false;
    each_unwritten(parts, skip, [&](std::string_view bytes) {
        if (bytes.size() >= kOwnBlockBytes && loan.covers(bytes.data(), bytes.size())) lent = true;
    });
    if (!lent) return false;
    each_unwritten(parts, skip, [&](std::string_view bytes) {
        if (!loan.queue(out, bytes.data(), bytes.size()))
            evbuffer_add(out, bytes.data(), bytes.size());
    });
    return true;
}

// Write `parts` (`total` bytes) to `bev`'s descriptor when nothing is queued on it, and queue
// what it does not take (by reference where it lies in `loan`'s line).
void write_or_queue(bufferevent* bev, std::span<const iovec> parts, std::size_t total,
                    LineLoan* loan = nullptr) {
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
    if (total - written >= kOwnBlockBytes) {
        if (loan != nullptr && queue_on_loan(out, parts, written, *loan)) return;
        if (queue_in_own_block(out, parts, written, total - written)) return;
    }
    each_unwritten(parts, written, [out](std::string_view bytes) {
        evbuffer_add(out, bytes.data(), bytes.size());
    });
}

void flush_one(bufferevent* bev, std::string_view bytes) {
    const iovec part{const_cast<char*>(bytes.data()), bytes.size()};
    write_or_queue(bev, std::span<const iovec>(&part, 1), bytes.size());
}

// Memory a destination always keeps for holding from one pass to the next.
constexpr std::size_t kKeptHeldCapacity = 4 * 1024;

}  // namespace

void write_or_queue_bytes(bufferevent* bev, std::string_view bytes) {
    write_or_queue_bytes(bev, std::span<const std::string_view>(&bytes, 1));
}

void write_or_queue_bytes(bufferevent* bev, std::span<const std::string_view> pieces) {
    constexpr std::size_t kMostParts = 8;
    while (pieces.size() > kMostParts) {  // more than a response has: in turns, in order
        write_or_queue_bytes(bev, pieces.first(kMostParts));
        pieces = pieces.subspan(kMostParts);
    }
    std::array<iovec, kMostParts> parts{};
    std::size_t count = 0;
    std::size_t total = 0;
    for (const std::string_view piece : pieces) {
        if (piece.empty()) continue;
        parts[count++] = iovec{const_cast<char*>(piece.data()), piece.size()};
        total += piece.size();
    }
    if (total == 0) return;
    write_or_queue(bev, std::span<const iovec>(parts.data(), count), total);
}

HeldWrites::~HeldWrites() {
    if (queued_in_ != nullptr) queued_in_->drop_held_writes(*this);
}

void HeldWrites::append_line(std::span<const std::string_view> pieces, std::size_t bytes) {
    if (buffer_.capacity() - size_ < bytes) {
        // Never less than what is always kept: no run of small growths for the first lines.
        buffer_.reserve(std::max({size_ + bytes, 2 * buffer_.capacity(), kKeptHeldCapacity}),
                        size_);
    }
    char* to = buffer_.data() + size_;
    for (const std::string_view piece : pieces) {
        std::memcpy(to, piece.data(), piece.size());
        to += piece.size();
    }
    *to = '\n';
    size_ += bytes;
}

void HeldWrites::emptied(std::size_t used) {
    size_ = 0;
    // More is kept while a pass fills a quarter of it: a child's stdin under steady load (the
    // requests of every session in one pass) then holds them without growing again, copying
    // and reallocating on every pass. A pass that needs much less gives it back.
    if (buffer_.capacity() > kKeptHeldCapacity && used < buffer_.capacity() / 4)
        buffer_.release();
}

WriteCoalescer::~WriteCoalescer() {
    detach();
    for (HeldWrites* h : queued_) {
        if (h != nullptr) h->queued_in_ = nullptr;
    }
}

void WriteCoalescer::attach(event_base* base) {
    detach();
    flush_event_ = event_new(base, -1, 0, &WriteCoalescer::on_flush, this);
    if (flush_event_ != nullptr) base_ = base;
}

void WriteCoalescer::detach() {
    if (flush_event_ != nullptr) event_free(flush_event_);
    flush_event_ = nullptr;
    base_ = nullptr;
    flush_armed_ = false;
}

void WriteCoalescer::on_flush(evutil_socket_t, short, void* self) {
    auto* writes = static_cast<WriteCoalescer*>(self);
    writes->flush_armed_ = false;
    if (writes->burst_depth_ == 0) writes->flush();
}

bool WriteCoalescer::pass_goes_on() const {
    // The callback running was taken off the active list before it was called: what is
    // counted is still to run in this pass (the flush among them, when armed).
    return base_ != nullptr &&
           event_base_get_num_events(base_, EVENT_BASE_COUNT_ACTIVE) > (flush_armed_ ? 1 : 0);
}

void WriteCoalescer::hold(HeldWrites& held, bufferevent* bev) {
    held.queued_in_ = this;
    held.bev_ = bev;
    queued_.push_back(&held);
    if (flush_event_ != nullptr && !flush_armed_) {
        // Behind every callback already due in this pass: they may add to what is held.
        event_active(flush_event_, EV_TIMEOUT, 0);
        flush_armed_ = true;
    }
}

void WriteCoalescer::flush_held() {
    // By index: writing may call back into a destination that holds more (appended to its
    // entry, written when the loop reaches it) or drop one (its entry becomes null).
    for (std::size_t i = 0; i < queued_.size(); ++i) {
        HeldWrites* h = queued_[i];
        if (h == nullptr) continue;
        queued_[i] = nullptr;
        h->queued_in_ = nullptr;
        const std::size_t used = h->size_;
        if (used > 0) flush_one(h->bev_, h->held());
        h->emptied(used);
    }
    queued_.clear();
}

void WriteCoalescer::flush() {
    if (!queued_.empty()) flush_held();
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
    // Attached, an armed flush writes it once the pass's other callbacks have added theirs.
    if (--writes_.burst_depth_ == 0 && !writes_.queued_.empty() && !writes_.flush_armed_)
        writes_.flush_held();
}

void WriteCoalescer::drop_held_writes(HeldWrites& held) {
    if (held.queued_in_ == this) {
        for (HeldWrites*& h : queued_) {
            if (h == &held) h = nullptr;
        }
        held.queued_in_ = nullptr;
    }
    // Emptied, its memory kept: the bytes may be in the middle of being written.
    held.size_ = 0;
}

std::string WriteCoalescer::take_held_writes(HeldWrites& held) {
    std::string bytes(held.held());
    drop_held_writes(held);
    return bytes;
}

void WriteCoalescer::write_or_queue_line(bufferevent* bev, HeldWrites& held,
                                         std::string_view line) {
    write_or_queue_line(bev, held, std::span<const std::string_view>(&line, 1));
}

void WriteCoalescer::write_or_queue_line(bufferevent* bev, HeldWrites& held,
                                         std::span<const std::string_view> pieces) {
    std::size_t size = 1;  // the newline
    for (std::string_view piece : pieces) size += piece.size();
    const bool holding = held.queued_in_ == this;
    // Held back while more input waits behind this line (its answers join it in one write) or
    // the loop's pass goes on, and after anything already held for the same destination, to
    // keep the order. Also when the destination has bytes queued (a child's stdin that a burst
    // of requests filled): what is held then joins the queue in one piece at the flush, behind
    // what waits there, instead of one addition to the output buffer (and its callbacks) per
    // line.
    if (holding || (more_input_ && burst_depth_ > 0) || pass_goes_on()) {
        const std::size_t after = held.size_ + size;
        if (after <= kMaxHeldBehindQueue ||
            (after <= kMaxHeldBytes && evbuffer_get_length(bufferevent_get_output(bev)) == 0)) {
            if (!holding) hold(held, bev);
            held.append_line(pieces, size);
            return;
        }
        // Too much to hold (a large message, or a long burst): what is held goes first.
        if (held.size_ > 0) flush_one(bev, held.held());
        drop_held_writes(held);
    }
    parts_.clear();
    for (std::string_view piece : pieces) {
        if (!piece.empty()) parts_.push_back({const_cast<char*>(piece.data()), piece.size()});
    }
    static char newline = '\n';
    parts_.push_back({&newline, 1});
    write_or_queue(bev, parts_, size, loan_);
}

}  // namespace mcpd

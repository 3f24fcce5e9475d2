// A large line's read buffer, lent to the write path while the line is handed out.
//
// A large message (a child's result of many MiB, or a client's long request) is read whole
// into its reader's buffer, then written on; what the destination's descriptor does not take
// at once is queued. Copying that rest into a block of its own touches as much fresh memory
// again as the message, and faulting fresh pages in is most of what forwarding a large message
// costs. So while a LineSource hands out a line of at least kLendBytes it lends the line's
// buffer: an output queue about to copy a large part of the line takes the buffer instead and
// queues those bytes where they lie, and the reader goes on in a new buffer (holding what was
// read after the line). The buffer is freed once every queue holding a part of it has written
// that part and the line's handler has returned.
#pragma once

#include <cstddef>
#include <string_view>

struct evbuffer;

namespace mcpd {

class LineReader;
class WriteCoalescer;

class LineLoan {
public:
    // Lines this long are lent; a part of one this long is queued by reference.
    static constexpr std::size_t kLendBytes = 1024 * 1024;

    // Lends `line`, handed out by `reader`, to `writes` until the loan ends (a line shorter
    // than kLendBytes is not lent). Loans nest: the last one made is the one offered.
    LineLoan(WriteCoalescer& writes, LineReader& reader, std::string_view line);
    ~LineLoan();
    LineLoan(const LineLoan&) = delete;
    LineLoan& operator=(const LineLoan&) = delete;

    // True when the `size` bytes at `data` lie in the lent line.
    bool covers(const void* data, std::size_t size) const;
    // Queue those bytes on `out` where they lie, taking the reader's buffer on the first call.
    // False when they are not in the line or the queue could not take them (nothing queued).
    bool queue(evbuffer* out, const void* data, std::size_t size);
    // The buffer was taken from the reader.
    bool taken() const { return block_ != nullptr; }

private:
    struct SharedBlock;
    static void release(const void* data, std::size_t size, void* block);

    WriteCoalescer* writes_ = nullptr;  // null: not lent
    LineReader& reader_;
    std::string_view line_;
    LineLoan* outer_ = nullptr;  // the loan this one stands in front of
    SharedBlock* block_ = nullptr;
};

}  // namespace mcpd

#include "daemon/io/line_loan.h"

#include <event2/buffer.h>

#include <functional>

#include "common/byte_buffer.h"
#include "common/line_reader.h"
#include "daemon/io/eager_write.h"

namespace mcpd {

// The taken buffer, freed with its last holder: the loan, and each queued part.
struct LineLoan::SharedBlock {
    ByteBuffer buffer;
    std::size_t holders = 1;
};

LineLoan::LineLoan(WriteCoalescer& writes, LineReader& reader, std::string_view line)
    : reader_(reader), line_(line) {
    if (line.size() < kLendBytes) return;
    writes_ = &writes;
    outer_ = writes.lend(this);
}

LineLoan::~LineLoan() {
    if (writes_ != nullptr) writes_->lend(outer_);
    if (block_ != nullptr) release(nullptr, 0, block_);
}

bool LineLoan::covers(const void* data, std::size_t size) const {
    // std::less orders pointers into different objects too, where < is unspecified.
    const auto* p = static_cast<const char*>(data);
    const std::less<const char*> before;
    return writes_ != nullptr && !before(p, line_.data()) &&
           !before(line_.data() + line_.size(), p + size);
}

bool LineLoan::queue(evbuffer* out, const void* data, std::size_t size) {
    if (!covers(data, size)) return false;
    if (block_ == nullptr) block_ = new SharedBlock{reader_.give_buffer()};
    ++block_->holders;
    if (evbuffer_add_reference(out, data, size, &LineLoan::release, block_) != 0) {
        --block_->holders;
        return false;
    }
    return true;
}

void LineLoan::release(const void*, std::size_t, void* block) {
    auto* shared = static_cast<SharedBlock*>(block);
    if (--shared->holders == 0) delete shared;
}

}  // namespace mcpd

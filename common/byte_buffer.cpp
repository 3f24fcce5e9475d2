#include "common/byte_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace mcpd {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

// A mapping of `bytes` (a multiple of kHugePage) with `protection` that starts on a huge-page
// boundary (only aligned 2 MiB ranges can be huge pages); null when there is no room.
char* map_aligned(std::size_t bytes, int protection, int flags) {
    void* region =
        ::mmap(nullptr, bytes + kHugePage, protection, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (region == MAP_FAILED) return nullptr;
    char* const start = static_cast<char*>(region);
    char* const aligned = reinterpret_cast<char*>(
        round_up(reinterpret_cast<std::uintptr_t>(start), kHugePage));
    if (aligned > start) ::munmap(start, static_cast<std::size_t>(aligned - start));
    char* const end = aligned + bytes;
    const std::size_t tail = static_cast<std::size_t>(start + bytes + kHugePage - end);
    if (tail > 0) ::munmap(end, tail);
    return aligned;
}

// A block of `bytes` for a buffer, marked for huge pages.
char* map_block(std::size_t bytes) {
    char* const block = map_aligned(bytes, PROT_READ | PROT_WRITE, 0);
    if (block == nullptr) throw std::bad_alloc();
    // Advice only: without transparent huge pages the block still works, with small pages.
    ::madvise(block, bytes, MADV_HUGEPAGE);
    return block;
}

// `block` (a mapping of `bytes` on a huge-page boundary) grown to `grown` bytes at a new
// huge-page boundary by moving its page tables, not its bytes: what it holds is neither copied
// nor touched again, and its huge pages move whole (both ends aligned). Null when that cannot
// be done; `block` is then as it was.
char* remap_block(char* block, std::size_t bytes, std::size_t grown) {
    // A place for it, held with no access until the move takes it over.
    char* const place = map_aligned(grown, PROT_NONE, MAP_NORESERVE);
    if (place == nullptr) return nullptr;
    void* moved = ::mremap(block, bytes, grown, MREMAP_MAYMOVE | MREMAP_FIXED, place);
    if (moved == MAP_FAILED) {
        ::munmap(place, grown);
        return nullptr;
    }
    ::madvise(moved, grown, MADV_HUGEPAGE);
    return static_cast<char*>(moved);
}

// The mapped block kept after its release, and whom to tell (see byte_buffer.h).
struct Spare {
    ~Spare() {
        if (data != nullptr) ::munmap(data, capacity);
    }
    char* data = nullptr;
    std::size_t capacity = 0;
    std::function<void()> kept;
};
Spare& spare() {
    static Spare kept;
    return kept;
}

}  // namespace

void ByteBuffer::keep_spares(std::function<void()> kept) {
    spare().kept = std::move(kept);
    if (!spare().kept) drop_spare();
}

void ByteBuffer::drop_spare() {
    Spare& s = spare();
    if (s.data != nullptr) ::munmap(s.data, s.capacity);
    s.data = nullptr;
    s.capacity = 0;
}

std::size_t ByteBuffer::spare_bytes() {
    return spare().capacity;
}

ByteBuffer::ByteBuffer(ByteBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        capacity_ = std::exchange(other.capacity_, 0);
        mapped_ = std::exchange(other.mapped_, false);
    }
    return *this;
}

void ByteBuffer::reserve(std::size_t capacity, std::size_t keep) {
    if (capacity <= capacity_) return;
    if (capacity < kMappedBytes) {
        void* grown = std::realloc(data_, capacity);
        if (grown == nullptr) throw std::bad_alloc();
        data_ = static_cast<char*>(grown);
        capacity_ = capacity;
        return;
    }
    const std::size_t bytes = round_up(capacity, kHugePage);
    if (mapped_) {
        // A long line grows a mapped block many times: moved, not copied, each time.
        if (char* moved = remap_block(data_, capacity_, bytes)) {
            data_ = moved;
            capacity_ = bytes;
            return;
        }
    }
    // A new aligned block and one copy (from the heap, or when a move could not be made):
    // the spare when it is large enough (all of it: its pages are there already).
    std::size_t block_bytes = bytes;
    char* block = nullptr;
    if (Spare& s = spare(); s.data != nullptr && s.capacity >= bytes) {
        block = std::exchange(s.data, nullptr);
        block_bytes = std::exchange(s.capacity, 0);
    } else {
        block = map_block(bytes);
    }
    if (keep > 0) std::memcpy(block, data_, keep);
    release();
    data_ = block;
    mapped_ = true;
    capacity_ = block_bytes;
}

void ByteBuffer::release() {
    if (data_ != nullptr) {
        if (mapped_) {
            Spare& s = spare();
            if (s.kept && capacity_ > s.capacity) {
                drop_spare();
                s.data = data_;
                s.capacity = capacity_;
                s.kept();
            } else {
                ::munmap(data_, capacity_);
            }
        } else {
            std::free(data_);
        }
    }
    data_ = nullptr;
    capacity_ = 0;
    mapped_ = false;
}

}  // namespace mcpd

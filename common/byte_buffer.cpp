#include "common/byte_buffer.h"

#include <sys/mman.h>

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

char* map_block(std::size_t bytes) {
    void* block =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    // Advice only: without transparent huge pages the block still works, with small pages.
    ::madvise(block, bytes, MADV_HUGEPAGE);
    return static_cast<char*>(block);
}

}  // namespace

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
        void* moved = ::mremap(data_, capacity_, bytes, MREMAP_MAYMOVE);
        if (moved == MAP_FAILED) throw std::bad_alloc();
        data_ = static_cast<char*>(moved);
        ::madvise(data_, bytes, MADV_HUGEPAGE);
    } else {
        char* block = map_block(bytes);
        if (keep > 0) std::memcpy(block, data_, keep);
        std::free(data_);
        data_ = block;
        mapped_ = true;
    }
    capacity_ = bytes;
}

void ByteBuffer::release() {
    if (data_ != nullptr) {
        if (mapped_) {
            ::munmap(data_, capacity_);
        } else {
            std::free(data_);
        }
    }
    data_ = nullptr;
    capacity_ = 0;
    mapped_ = false;
}

}  // namespace mcpd

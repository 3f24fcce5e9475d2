// ByteBuffer: growth that keeps what it must, across the heap/mapping boundary.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/byte_buffer.h"

using mcpd::ByteBuffer;

namespace {

void fill(ByteBuffer& b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = static_cast<char>('a' + i % 26);
}

bool intact(const ByteBuffer& b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        if (b.data()[i] != static_cast<char>('a' + i % 26)) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("byte buffer grows from the heap into an aligned mapping, keeping its contents") {
    ByteBuffer b(1000);
    REQUIRE(b.capacity() >= 1000);
    fill(b, 1000);
    b.reserve(ByteBuffer::kMappedBytes - 1, 1000);
    CHECK(intact(b, 1000));
    fill(b, ByteBuffer::kMappedBytes - 1);
    b.reserve(ByteBuffer::kMappedBytes + 1, ByteBuffer::kMappedBytes - 1);
    CHECK(b.capacity() >= ByteBuffer::kMappedBytes + 1);
    CHECK(b.capacity() % ByteBuffer::kMappedBytes == 0);  // whole huge pages
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % ByteBuffer::kMappedBytes == 0);
    CHECK(intact(b, ByteBuffer::kMappedBytes - 1));
    const std::size_t big = 3 * ByteBuffer::kMappedBytes + 5;
    fill(b, b.capacity());
    const std::size_t kept = b.capacity();
    b.reserve(big, kept);
    CHECK(intact(b, kept));
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % ByteBuffer::kMappedBytes == 0);
    fill(b, big);  // all of it is writable
}

TEST_CASE("byte buffer never shrinks on reserve, gives memory back on release, and moves") {
    ByteBuffer b(4096);
    const std::size_t capacity = b.capacity();
    b.reserve(10, 0);
    CHECK(b.capacity() == capacity);
    ByteBuffer moved(std::move(b));
    CHECK(moved.capacity() == capacity);
    CHECK(b.capacity() == 0);
    CHECK(b.data() == nullptr);
    moved.release();
    CHECK(moved.capacity() == 0);
    moved.reserve(ByteBuffer::kMappedBytes * 2, 0);
    ByteBuffer other;
    other = std::move(moved);
    CHECK(other.capacity() >= ByteBuffer::kMappedBytes * 2);
    std::memset(other.data(), 1, other.capacity());
}

TEST_CASE("a mapped byte buffer grows many times, keeping every byte, on a huge-page boundary") {
    // As a long line is gathered: each reserve moves the mapping (no copy); what was written
    // stays, the new part is writable, and the block stays on a huge-page boundary.
    ByteBuffer b(ByteBuffer::kMappedBytes + 1);
    REQUIRE(b.capacity() >= ByteBuffer::kMappedBytes + 1);
    std::size_t written = b.capacity();
    fill(b, written);
    for (int i = 0; i < 6; ++i) {
        b.reserve(b.capacity() + b.capacity() / 2 + 1, written);
        INFO("growth " << i << " to " << b.capacity());
        CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % ByteBuffer::kMappedBytes == 0);
        CHECK(b.capacity() % ByteBuffer::kMappedBytes == 0);
        CHECK(intact(b, written));
        written = b.capacity();
        fill(b, written);
    }
    CHECK(intact(b, written));
    b.release();
    CHECK(b.capacity() == 0);
}

TEST_CASE("byte buffer keeps the last large block for the next one while asked to") {
    constexpr std::size_t kMapped = ByteBuffer::kMappedBytes;
    // Not asked: a mapped block is given back at once.
    {
        ByteBuffer b(4 * kMapped);
        b.release();
        CHECK(ByteBuffer::spare_bytes() == 0);
    }
    int kept = 0;
    ByteBuffer::keep_spares([&kept] { ++kept; });
    ByteBuffer first(4 * kMapped);
    ByteBuffer small(kMapped);
    const char* const block = first.data();
    const std::size_t capacity = first.capacity();
    fill(first, capacity);
    first.release();
    CHECK(kept == 1);
    CHECK(ByteBuffer::spare_bytes() == capacity);
    // A smaller block given back meanwhile does not replace it.
    small.release();
    CHECK(kept == 1);
    CHECK(ByteBuffer::spare_bytes() == capacity);
    // A buffer that outgrows the heap takes the spare whole, keeping what it held.
    ByteBuffer next(1000);
    fill(next, 1000);
    next.reserve(2 * kMapped, 1000);
    CHECK(next.data() == block);
    CHECK(next.capacity() == capacity);
    CHECK(intact(next, 1000));
    CHECK(ByteBuffer::spare_bytes() == 0);
    fill(next, next.capacity());  // all of it is writable
    // A block larger than the spare it finds maps one of its own.
    next.release();
    CHECK(ByteBuffer::spare_bytes() == capacity);
    ByteBuffer bigger(8 * kMapped);
    CHECK(bigger.data() != block);
    CHECK(ByteBuffer::spare_bytes() == capacity);
    const std::size_t bigger_capacity = bigger.capacity();
    bigger.release();  // larger: it becomes the spare, the other is given back
    CHECK(ByteBuffer::spare_bytes() == bigger_capacity);
    CHECK(kept == 3);
    ByteBuffer::drop_spare();
    CHECK(ByteBuffer::spare_bytes() == 0);
    // Asked no more: nothing is kept.
    ByteBuffer last(4 * kMapped);
    ByteBuffer::keep_spares({});
    last.release();
    CHECK(ByteBuffer::spare_bytes() == 0);
}

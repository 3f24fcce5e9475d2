// A growable block of bytes for messages of any size, without zero-filling.
//
// Small blocks come from the heap. From kMappedBytes up, the block is mapped by itself and
// marked for transparent huge pages: on the virtual machines mcpd is measured on, the first
// touch of a 4 KiB page costs about 13 µs (3.3 ms per MiB, three times what it costs a plain
// relay to forward that MiB), while 2 MiB pages cost about 0.1-0.2 ms per MiB. Mappings start
// on a 2 MiB boundary (only aligned ranges can be huge pages). A mapping grows by moving its
// page tables to a new 2 MiB boundary (mremap() to an address reserved for it), so its huge
// pages move whole and nothing is copied or faulted in again; a block from the heap grows into
// its first mapping with one copy.
//
// The kernel zeroes every page of a new mapping as it is first touched, which for a result of
// tens of MiB is a quarter of what mcpd spends forwarding it. So the last mapped block given
// back is kept as a spare while the owner of the process says so (keep_spares()): the next
// block that outgrows the heap takes it whole, its pages already there. The owner drops it
// (drop_spare()) once large messages stop coming.
#pragma once

#include <cstddef>
#include <functional>

namespace mcpd {

class ByteBuffer {
public:
    static constexpr std::size_t kMappedBytes = std::size_t{2} << 20;

    ByteBuffer() = default;
    explicit ByteBuffer(std::size_t capacity) { reserve(capacity, 0); }
    ~ByteBuffer() { release(); }
    ByteBuffer(ByteBuffer&& other) noexcept;
    ByteBuffer& operator=(ByteBuffer&& other) noexcept;
    ByteBuffer(const ByteBuffer&) = delete;
    ByteBuffer& operator=(const ByteBuffer&) = delete;

    char* data() { return data_; }
    const char* data() const { return data_; }
    std::size_t capacity() const { return capacity_; }

    // Make room for at least `capacity` bytes, keeping the first `keep` bytes. Throws
    // std::bad_alloc when the memory cannot be had.
    void reserve(std::size_t capacity, std::size_t keep);
    // Give the memory back (a mapping may be kept as the spare, see above).
    void release();

    // From now on keep the largest mapped block released as the spare, calling `kept` each
    // time one is kept (to schedule drop_spare()). An empty function stops keeping spares
    // and drops the one kept. Not thread-safe: for the process's one event loop.
    static void keep_spares(std::function<void()> kept);
    // Unmap the spare, if any.
    static void drop_spare();
    // The bytes of the spare kept now (0 when there is none).
    static std::size_t spare_bytes();

private:
    char* data_ = nullptr;
    std::size_t capacity_ = 0;
    bool mapped_ = false;
};

}  // namespace mcpd

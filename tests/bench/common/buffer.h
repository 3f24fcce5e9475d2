// A growable byte buffer for the benchmark relay: bytes are read straight into its tail and
// consumed from its head, with no zero-filling and no copy but the one from the kernel.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace bench {

class Buffer {
public:
    // Room for at least `want` more bytes at the end; write there, then commit().
    char* tail(std::size_t want) {
        if (cap_ - end_ < want) make_room(want);
        return data_.get() + end_;
    }
    void commit(std::size_t n) { end_ += n; }
    void append(std::string_view bytes) {
        std::memcpy(tail(bytes.size()), bytes.data(), bytes.size());
        commit(bytes.size());
    }
    // Drop `n` bytes from the front.
    void consume(std::size_t n) {
        begin_ += n;
        if (begin_ == end_) begin_ = end_ = 0;
    }
    std::string_view view() const { return {data_.get() + begin_, end_ - begin_}; }
    std::size_t size() const { return end_ - begin_; }
    bool empty() const { return begin_ == end_; }
    std::size_t capacity() const { return cap_; }

private:
    void make_room(std::size_t want) {
        const std::size_t used = end_ - begin_;
        if (cap_ - used >= want && begin_ >= used) {
            // Enough room once the live bytes move to the front (and the move is cheap).
            std::memmove(data_.get(), data_.get() + begin_, used);
        } else {
            std::size_t cap = cap_ == 0 ? 64 * 1024 : cap_;
            while (cap - used < want) cap *= 2;
            auto bigger = std::make_unique_for_overwrite<char[]>(cap);
            if (used > 0) std::memcpy(bigger.get(), data_.get() + begin_, used);
            data_ = std::move(bigger);
            cap_ = cap;
        }
        begin_ = 0;
        end_ = used;
    }

    std::unique_ptr<char[]> data_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    std::size_t cap_ = 0;
};

}  // namespace bench

// Reading a fuzz input as a series of small decisions, and checks that fail loudly.
//
// A target decodes its bytes with FuzzInput (a byte past the end reads as 0, so every input
// means something) and states its invariants with FUZZ_CHECK, which prints what broke and
// aborts: libFuzzer records that as a crash, the replay test as a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mcpd::fuzz {

class FuzzInput {
public:
    FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    bool empty() const { return at_ >= size_; }

    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }

    // A value in [0, n); n must be at least 1.
    std::size_t below(std::size_t n) {
        const std::size_t value =
            n <= 256 ? byte() : static_cast<std::size_t>(byte()) << 8 | byte();
        return value % n;
    }

    bool flag() { return (byte() & 1) != 0; }

    // One of a fixed set of choices.
    template <typename T, std::size_t N>
    const T& pick(const T (&choices)[N]) {
        return choices[below(N)];
    }

    // The next bytes as text: a length byte, then up to that many bytes.
    std::string_view chunk() {
        const std::size_t want = byte();
        const std::size_t take = want < size_ - at_ ? want : size_ - at_;
        const std::string_view out(reinterpret_cast<const char*>(data_ + at_), empty() ? 0 : take);
        at_ += out.size();
        return out;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
    std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, what.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace mcpd::fuzz

#define FUZZ_CHECK(condition, what)                                       \
    do {                                                                  \
        if (!(condition)) ::mcpd::fuzz::fail(__FILE__, __LINE__, (what)); \
    } while (false)

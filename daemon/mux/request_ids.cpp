#include "daemon/mux/request_ids.h"

#include <sys/random.h>
#include <unistd.h>

#include <chrono>

namespace mcpd {

namespace {

std::uint64_t draw_hash_key() {
    std::uint64_t key = 0;
    // Never waits for the kernel's pool (mcpd may start early in boot): without it, the clock
    // and the pid still make the key differ from one start to the next.
    if (::getrandom(&key, sizeof key, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof key))
        return key;
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return static_cast<std::uint64_t>(now) * 0x9e3779b97f4a7c15ULL ^
           static_cast<std::uint64_t>(::getpid());
}

}  // namespace

const std::uint64_t kRequestIdHashKey = draw_hash_key();

}  // namespace mcpd

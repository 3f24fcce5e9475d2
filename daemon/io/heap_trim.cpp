#include "daemon/io/heap_trim.h"

#include <malloc.h>

#include <string>

#include "common/clock.h"
#include "common/log.h"

#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_purge_allocator();
#endif

namespace mcpd {

namespace {

constexpr Duration kInterval = std::chrono::seconds(1);

}  // namespace

HeapTrimmer::HeapTrimmer(event_base* base) : timer_(base, [this] { trim(); }) {}

void HeapTrimmer::soon() {
    if (timer_.pending()) return;
    const auto since = std::chrono::duration_cast<Duration>(Clock::now() - last_);
    timer_.arm(since >= kInterval ? Duration(0) : kInterval - since);
}

void HeapTrimmer::trim() {
    last_ = Clock::now();
    // Under ASan (./dev sanitize) the sanitizer's allocator serves malloc, and malloc_trim()
    // does not reach it.
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_purge_allocator();
#else
    ::malloc_trim(0);
#endif
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - last_);
    log::debug("gave the memory of dropped output queues back to the system (" +
               std::to_string(took.count()) + " us)");
}

}  // namespace mcpd

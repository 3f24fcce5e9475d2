// Giving freed heap memory back to the system, at most once a second.
//
// glibc keeps the pages it frees inside its heap: the queues of clients that were cut off,
// freed in many small pieces among memory still in use, would stay in mcpd's RSS for good.
// The output budget asks for a trim once enough of them is gone (OutputBudget::Hooks).
#pragma once

#include <chrono>

#include "common/clock.h"
#include "daemon/io/event_loop.h"

namespace mcpd {

class HeapTrimmer {
public:
    explicit HeapTrimmer(event_base* base);

    // Trim on the next loop turn, or a second after the last trim.
    void soon();

private:
    void trim();

    Timer timer_;
    TimePoint last_{};
};

}  // namespace mcpd

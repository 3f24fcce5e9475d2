// Milliseconds left until a deadline, never below 0, for poll(2): shared by the test clients.
#pragma once

#include <algorithm>
#include <chrono>

#include "process.h"

namespace integration {

inline int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
    return static_cast<int>(std::max<Duration::rep>(0, left.count()));
}

}  // namespace integration

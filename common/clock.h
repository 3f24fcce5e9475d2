// The one clock mcpd's timing decisions read (the supervisor's, the router's, the log's
// counts): monotonic, so a change of the wall clock moves no deadline.
#pragma once

#include <chrono>

namespace mcpd {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

}  // namespace mcpd

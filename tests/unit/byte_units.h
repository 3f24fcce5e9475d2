// Sizes in mebibytes, as the tests write limits and message lengths.
#pragma once

#include <cstddef>

inline constexpr std::size_t kMiB = 1024 * 1024;

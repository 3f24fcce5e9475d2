// What keeps the daemon log bounded whatever a server or a peer does: a rate per source, and
// repeated events folded into a count. Plain state with the time passed in, so tests need no
// clock and the state is easy to inspect.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace mcpd::log {

// Each source (a server's name, or mcpd's own lines) may log `rate` lines a second in bursts
// of up to `burst`. What is held back is counted; the count is due a second after the last
// one was said, so a steady flood costs one more line a second.
class SourceRates {
public:
    SourceRates(double rate, double burst) : rate_(rate), burst_(burst) {}

    // Whether a line of `source` may be written at `now` (false: it is counted).
    bool admit(std::string_view source, TimePoint now);

    struct HeldBack {
        std::string source;
        std::uint64_t lines = 0;
    };
    // The counts due at `now`, each reset once taken.
    std::vector<HeldBack> take_due(TimePoint now);
    // When the next count falls due; nullopt when nothing is held back.
    std::optional<TimePoint> next_due() const;

private:
    struct Bucket {
        double tokens = 0;
        TimePoint refilled{};
        TimePoint said{};  // when its held-back count was last said
        std::uint64_t held_back = 0;
    };
    double rate_;
    double burst_;
    std::map<std::string, Bucket, std::less<>> buckets_;
    // When the first count falls due, so that asking before then costs nothing (every log
    // line asks); nullopt when nothing is held back.
    std::optional<TimePoint> earliest_;
};

// The same event again and again (stray replies, declined requests) is written once, then
// counted: the count is said when `window` has passed since the one written, and a steady
// stream costs one line a window.
class RepeatFolder {
public:
    explicit RepeatFolder(std::chrono::seconds window) : window_(window) {}

    // Whether this occurrence of `kind` from `source` is to be written in full (false: it is
    // counted). A count still due is taken first, by take_due.
    bool first(std::string_view source, std::string_view kind, TimePoint now);

    struct Folded {
        std::string source;
        std::string kind;
        std::uint64_t count = 0;
    };
    std::vector<Folded> take_due(TimePoint now);
    std::optional<TimePoint> next_due() const;
    std::chrono::seconds window() const { return window_; }

private:
    struct Entry {
        TimePoint opened{};  // when the one written, or the last count, was said
        std::uint64_t count = 0;
    };
    std::chrono::seconds window_;
    std::map<std::pair<std::string, std::string>, Entry, std::less<>> entries_;
    // As in SourceRates: when the first count falls due (or an idle entry may be forgotten).
    std::optional<TimePoint> earliest_;
};

}  // namespace mcpd::log

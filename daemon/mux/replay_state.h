// What a Router keeps so that requests in flight when its child dies can be sent again
// (router_replay.cpp, the rules in replay_policy.h): copies of the lines that could be
// replayed, under one budget; the hints the child listed for its tools; what was decided.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mux/replay_policy.h"

namespace mcpd {

// A copy of a request's line, counted against its router's budget while it lives (copies
// count again, as they hold the bytes again).
class KeptLine {
public:
    KeptLine() = default;
    ~KeptLine() { release(); }
    KeptLine(const KeptLine& other) { assign(other.text_, other.used_); }
    KeptLine& operator=(const KeptLine& other) {
        if (this != &other) {
            release();
            assign(other.text_, other.used_);
        }
        return *this;
    }
    KeptLine(KeptLine&& other) noexcept
        : text_(std::move(other.text_)), used_(std::exchange(other.used_, nullptr)) {}
    KeptLine& operator=(KeptLine&& other) noexcept {
        if (this != &other) {
            release();
            text_ = std::move(other.text_);
            used_ = std::exchange(other.used_, nullptr);
        }
        return *this;
    }

    // `line`, when `used` + its size stays within `max`; else nothing is kept.
    static KeptLine keep(std::string_view line, std::size_t& used, std::size_t max) {
        KeptLine kept;
        if (line.size() <= max && used <= max - line.size()) kept.assign(line, &used);
        return kept;
    }
    bool kept() const { return used_ != nullptr; }
    std::string_view text() const { return text_; }

private:
    void assign(std::string_view text, std::size_t* used) {
        if (used == nullptr) return;
        text_.assign(text);
        used_ = used;
        *used_ += text_.size();
    }
    void release() {
        if (used_ != nullptr) *used_ -= text_.size();
        used_ = nullptr;
        text_.clear();
    }

    std::string text_;
    std::size_t* used_ = nullptr;
};

class ReplayState {
public:
    // What the kept lines of one child's requests may hold together; a request past it is not
    // kept, and gets outcome "unknown" if its child dies.
    static constexpr std::size_t kMaxKeptBytes = 4 * 1024 * 1024;
    // Tools whose hints are kept; a name past kMaxNameBytes is not kept (its tool is not
    // replayed), as the stats keep none.
    static constexpr std::size_t kMaxTools = 4096;

    // A tools/list answer's `tools` passed: a first page replaces what was known.
    void tools_listed(const nlohmann::json& tools, bool first_page);
    std::optional<ToolHints> hints(std::string_view tool) const;

    KeptLine keep(std::string_view line) { return KeptLine::keep(line, kept_bytes_, kMaxKeptBytes); }
    std::size_t kept_bytes() const { return kept_bytes_; }

    void count(ReplayVerdict verdict) { ++counts_[static_cast<std::size_t>(verdict)]; }

    // An upgrade in place (router_carry.cpp): the hints and counts as they were.
    const std::map<std::string, ToolHints, std::less<>>& all_hints() const { return hints_; }
    void restore(const std::map<std::string, ToolHints>& hints,
                 const std::vector<std::uint64_t>& counts) {
        hints_.insert(hints.begin(), hints.end());
        for (std::size_t i = 0; i < counts.size() && i < counts_.size(); ++i) counts_[i] = counts[i];
    }
    std::uint64_t count_of(ReplayVerdict verdict) const {
        return counts_[static_cast<std::size_t>(verdict)];
    }

    // Set while a replayed line is routed again: the crashes it has been through (0 for any
    // other line). Routing sets it for its own lifetime.
    unsigned routing_crashes = 0;
    class Routing {
    public:
        Routing(ReplayState& state, unsigned crashes) : state_(state) {
            state_.routing_crashes = crashes;
        }
        ~Routing() { state_.routing_crashes = 0; }
        Routing(const Routing&) = delete;
        Routing& operator=(const Routing&) = delete;

    private:
        ReplayState& state_;
    };

private:
    std::map<std::string, ToolHints, std::less<>> hints_;
    std::size_t kept_bytes_ = 0;
    std::array<std::uint64_t, std::size(kReplayVerdicts)> counts_{};
};

}  // namespace mcpd

#include "daemon/http/sse.h"

#include <algorithm>
#include <charconv>

namespace mcpd {

std::string sse_event(std::string_view id, std::string_view data) {
    std::string out;
    out.reserve(data.size() + id.size() + 16);
    if (!id.empty()) {
        out += "id: ";
        for (const char c : id)
            if (c != '\r' && c != '\n') out += c;
        out += '\n';
    }
    std::size_t start = 0;
    while (true) {
        const std::size_t end = data.find_first_of("\r\n", start);
        out += "data: ";
        out += data.substr(start, end - start);
        out += '\n';
        if (end == std::string_view::npos) break;
        // CR LF is one line end, as readers of the stream take it.
        start = end + (data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1);
    }
    out += '\n';
    return out;
}

std::string sse_comment(std::string_view text) {
    std::string out = ": ";
    for (const char c : text) out += c == '\r' || c == '\n' ? ' ' : c;
    out += "\n\n";
    return out;
}

SseReplayBuffer::SseReplayBuffer(std::size_t max_bytes) : max_bytes_(max_bytes) {}

std::uint64_t SseReplayBuffer::append(std::string_view data, std::string_view stream) {
    const std::uint64_t id = ++last_id_;
    Event event{id, std::string(stream), sse_event(std::to_string(id), data)};
    bytes_ += event.stream.size() + event.text.size();
    events_.push_back(std::move(event));
    while (bytes_ > max_bytes_ && !events_.empty()) {
        bytes_ -= events_.front().stream.size() + events_.front().text.size();
        dropped_through_ = events_.front().id;
        events_.pop_front();
    }
    return id;
}

std::optional<std::vector<std::string>> SseReplayBuffer::since(std::uint64_t last,
                                                               std::string_view stream) const {
    // 0 is "from the start" (a stream's first GET): exact while nothing has been dropped.
    if (last > last_id_ || last < dropped_through_) return std::nullopt;
    std::vector<std::string> out;
    for (const Event& event : events_) {
        // `last` itself, when still kept, must have gone out on the stream being resumed.
        if (event.id == last && event.stream != stream) return std::nullopt;
        if (event.id > last && event.stream == stream) out.push_back(event.text);
    }
    return out;
}

CarriedSseBuffer SseReplayBuffer::carried() const {
    CarriedSseBuffer out;
    out.last_id = last_id_;
    out.dropped_through = dropped_through_;
    for (const Event& event : events_) out.events.push_back({event.id, event.stream, event.text});
    return out;
}

void SseReplayBuffer::restore(const CarriedSseBuffer& carried) {
    events_.clear();
    bytes_ = 0;
    last_id_ = carried.last_id;
    dropped_through_ = std::min(carried.dropped_through, carried.last_id);
    std::uint64_t before = dropped_through_;
    for (const CarriedSseEvent& event : carried.events) {
        if (event.id <= before || event.id > last_id_) continue;
        before = event.id;
        bytes_ += event.stream.size() + event.text.size();
        events_.push_back({event.id, event.stream, event.text});
    }
    while (bytes_ > max_bytes_ && !events_.empty()) {
        bytes_ -= events_.front().stream.size() + events_.front().text.size();
        dropped_through_ = events_.front().id;
        events_.pop_front();
    }
}

std::optional<std::uint64_t> parse_last_event_id(std::string_view value) {
    if (value.empty() || value.front() == '0') return std::nullopt;
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return number;
}

}  // namespace mcpd

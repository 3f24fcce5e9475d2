#include "flood_reader.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace integration {

void FloodReader::send_echo() {
    const std::string id = std::to_string(++echo_sent);
    session->queue(request_line(id, "tools/call",
                                {{"name", "echo"}, {"arguments", {{"text", "echo " + id}}}}));
}

void FloodReader::read() {
    char chunk[1 << 16];
    for (int chunks = 0; chunks < 16; ++chunks) {
        const ssize_t n = ::read(session->read_fd(), chunk, sizeof chunk);
        if (n > 0) {
            buffer.append(chunk, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) ended = true;
        if (n == 0 || errno != EINTR) break;
    }
    std::size_t start = 0;
    for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos; start = end + 1)
        take(std::string_view(buffer).substr(start, end - start));
    buffer.erase(0, start);
}

void FloodReader::take(std::string_view line) {
    static constexpr std::string_view kLog =
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"data":")";
    if (line.starts_with(kLog)) {
        // data is "<index> fff...": each index once, in order.
        long long index = -1;
        std::from_chars(line.data() + kLog.size(), line.data() + line.size(), index);
        flood_out_of_order += index != flood_seen;
        ++flood_seen;
        return;
    }
    McpMessage m;
    m.raw = line;
    m.json = nlohmann::json::parse(line, nullptr, false);
    if (m.is_notification()) return;
    if (m.raw_id() == "\"flood\"") {
        flood_result = m.tool_text();
        return;
    }
    if (m.is_response() && m.tool_text() == "echo " + m.raw_id()) {
        ++echo_ok;
        return;
    }
    if (problems.size() < 10) problems.push_back(m.raw.substr(0, 300));
}

}  // namespace integration

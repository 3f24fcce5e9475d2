// The writers of responses declared in http_message.h: plain, in parts for a kept head, and
// chunked.
#include "daemon/control/http_message.h"

#include <charconv>
#include <cstring>

#include "daemon/control/http_chars.h"

namespace mcpd {

namespace {

using http_chars::has_control;
using http_chars::is_control;

struct Reason {
    int status;
    std::string_view phrase;
};

constexpr Reason kReasons[] = {{200, "OK"},
                               {202, "Accepted"},
                               {204, "No Content"},
                               {400, "Bad Request"},
                               {401, "Unauthorized"},
                               {403, "Forbidden"},
                               {404, "Not Found"},
                               {405, "Method Not Allowed"},
                               {406, "Not Acceptable"},
                               {408, "Request Timeout"},
                               {409, "Conflict"},
                               {411, "Length Required"},
                               {413, "Content Too Large"},
                               {415, "Unsupported Media Type"},
                               {421, "Misdirected Request"},
                               {429, "Too Many Requests"},
                               {431, "Request Header Fields Too Large"},
                               {500, "Internal Server Error"},
                               {503, "Service Unavailable"}};

std::string_view reason_phrase(int status) {
    for (const Reason& reason : kReasons)
        if (reason.status == status) return reason.phrase;
    return "";
}

// `text` with control characters as spaces: nothing a caller passes can end a header line.
void append_clean(std::string& out, std::string_view text) {
    const std::size_t at = out.size();
    out.append(text);
    if (!has_control(text)) return;
    for (std::size_t i = at; i < out.size(); ++i)
        if (is_control(out[i])) out[i] = ' ';
}

// The status line and the caller's headers, each line ended by CR LF; room made for `more`
// bytes after them.
std::string response_start(int status,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           std::size_t more = 0) {
    std::size_t size = 64 + more;
    for (const auto& header : headers) size += header.first.size() + header.second.size() + 4;
    std::string out;
    out.reserve(size);
    out += "HTTP/1.1 ";
    char digits[12];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, status).ptr);
    out += ' ';
    out += reason_phrase(status);
    out += "\r\n";
    for (const auto& header : headers) {
        append_clean(out, header.first);
        out += ": ";
        append_clean(out, header.second);
        out += "\r\n";
    }
    return out;
}

std::string_view connection_line(bool keep_alive) {
    return keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
}

}  // namespace

std::string http_response_head(int status,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
    return response_start(status, headers);
}

std::string_view http_response_framing(int status, std::size_t body_size, bool keep_alive,
                                       HttpFramingBuffer& buffer) {
    char* out = buffer.data();
    const auto put = [&out](std::string_view text) {
        std::memcpy(out, text.data(), text.size());
        out += text.size();
    };
    if (http_status_has_body(status)) {
        put("Content-Length: ");
        // 20 digits at most: the buffer holds the longest framing with room to spare.
        out = std::to_chars(out, buffer.data() + buffer.size(), body_size).ptr;
        put("\r\n");
    }
    put(connection_line(keep_alive));
    put("\r\n");
    return std::string_view(buffer.data(), static_cast<std::size_t>(out - buffer.data()));
}

std::string http_response(int status,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view body, bool keep_alive) {
    if (!http_status_has_body(status)) body = {};
    HttpFramingBuffer buffer;
    const std::string_view framing = http_response_framing(status, body.size(), keep_alive, buffer);
    std::string out = response_start(status, headers, framing.size() + body.size());
    out += framing;
    out += body;
    return out;
}

std::string http_stream_head(int status,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             bool keep_alive) {
    std::string out = response_start(status, headers);
    out += "Transfer-Encoding: chunked\r\n";
    out += connection_line(keep_alive);
    out += "\r\n";
    return out;
}

std::string http_chunk(std::string_view bytes) {
    if (bytes.empty()) return "";
    std::array<char, 20> size{};
    const auto end = std::to_chars(size.data(), size.data() + size.size(), bytes.size(), 16).ptr;
    std::string out(size.data(), end);
    out += "\r\n";
    out += bytes;
    out += "\r\n";
    return out;
}

std::string_view http_last_chunk() {
    return "0\r\n\r\n";
}

}  // namespace mcpd

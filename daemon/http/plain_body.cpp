#include "daemon/http/plain_body.h"

namespace mcpd {

namespace {

// `body` without the blanks around it.
std::string_view without_blanks(std::string_view body) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!body.empty() && blank(body.front())) body.remove_prefix(1);
    while (!body.empty() && blank(body.back())) body.remove_suffix(1);
    return body;
}

// Whether `text` (without blanks around it) can be a plain message: an object, within
// `max_bytes`, with no line break inside (it would end the line early on the session's way to
// the router).
bool one_line_object(std::string_view text, std::size_t max_bytes) {
    return !text.empty() && text.front() == '{' && text.size() <= max_bytes &&
           text.find('\n') == std::string_view::npos && text.find('\r') == std::string_view::npos;
}

// Whether `message`, scanned, is one its session takes as it is.
bool taken_as_it_is(std::string& message, wire::EnvelopeScanner& scanner,
                     wire::Envelope& envelope) {
    return scanner.scan(message, envelope) == wire::ScanStatus::ok && !envelope.malformed &&
           !envelope.method_is("initialize");
}

}  // namespace

std::optional<std::string> plain_body_message(std::string_view body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope) {
    body = without_blanks(body);
    if (!one_line_object(body, max_bytes)) return std::nullopt;
    // With room for the scanner's padding: one allocation, not two.
    std::string message;
    message.reserve(body.size() + wire::kScanPadding);
    message.assign(body);
    if (!taken_as_it_is(message, scanner, envelope)) return std::nullopt;
    return message;
}

std::optional<std::string> plain_body_message(std::string& body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope) {
    if (without_blanks(body).size() != body.size())
        return plain_body_message(std::string_view(body), max_bytes, scanner, envelope);
    // scan() makes room for the padding if the body has none (HttpConnection leaves it room).
    if (!one_line_object(body, max_bytes) || !taken_as_it_is(body, scanner, envelope))
        return std::nullopt;
    return std::move(body);
}

}  // namespace mcpd

#include "daemon/http/plain_body.h"

namespace mcpd {

std::optional<std::string> plain_body_message(std::string_view body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!body.empty() && blank(body.front())) body.remove_prefix(1);
    while (!body.empty() && blank(body.back())) body.remove_suffix(1);
    // A line break inside would end the line early on the session's way to the router.
    if (body.empty() || body.front() != '{' || body.size() > max_bytes ||
        body.find('\n') != std::string_view::npos || body.find('\r') != std::string_view::npos)
        return std::nullopt;
    // With room for the scanner's padding: one allocation, not two.
    std::string message;
    message.reserve(body.size() + wire::kScanPadding);
    message.assign(body);
    if (scanner.scan(message, envelope) != wire::ScanStatus::ok || envelope.malformed ||
        envelope.method_is("initialize"))
        return std::nullopt;
    return message;
}

std::optional<std::string> plain_body_message(std::string& body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope) {
    if (body.empty() || body.front() != '{' || body.back() != '}')
        return plain_body_message(std::string_view(body), max_bytes, scanner, envelope);
    if (body.size() > max_bytes || body.find('\n') != std::string::npos ||
        body.find('\r') != std::string::npos)
        return std::nullopt;
    // scan() makes room for the padding if the body has none (HttpConnection leaves it room).
    if (scanner.scan(body, envelope) != wire::ScanStatus::ok || envelope.malformed ||
        envelope.method_is("initialize"))
        return std::nullopt;
    return std::move(body);
}

}  // namespace mcpd

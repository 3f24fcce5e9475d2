// The state handed across an upgrade: encoding, checking and its sealed memfd (state_file.h).
#include "common/state_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/sha256.h"

namespace mcpd::state_file {

namespace {

constexpr std::string_view kMagic = "mcpd-state";

// The next space-separated field of `header`, removed from it.
std::string_view next_field(std::string_view& header) {
    const std::size_t space = header.find(' ');
    const std::string_view field = header.substr(0, space);
    header.remove_prefix(space == std::string_view::npos ? header.size() : space + 1);
    return field;
}

template <typename Number>
bool parse_number(std::string_view text, Number& out) {
    if (text.empty() || text.size() > 12) return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string encode(const nlohmann::json& body, int version) {
    const std::string json = body.dump();
    std::string text(kMagic);
    text += ' ';
    text += std::to_string(version);
    text += ' ';
    text += std::to_string(json.size());
    text += ' ';
    text += sha256_hex(json);
    text += '\n';
    text += json;
    return text;
}

Result<Decoded> decode(std::string_view text) {
    if (text.size() > kMaxBytes)
        return permanent_failure("the state is larger than " + std::to_string(kMaxBytes) +
                                 " bytes");
    const std::size_t newline = text.find('\n');
    if (newline == std::string_view::npos || newline > 128)
        return permanent_failure("this is not an mcpd state (no header line)");
    std::string_view header = text.substr(0, newline);
    const std::string_view body = text.substr(newline + 1);
    if (next_field(header) != kMagic)
        return permanent_failure("this is not an mcpd state (it does not start with \"mcpd-state\")");
    Decoded out;
    std::size_t length = 0;
    if (!parse_number(next_field(header), out.version))
        return permanent_failure("the state's header has no version number");
    if (out.version < kOldestVersion || out.version > kVersion)
        return permanent_failure("the state is of version " + std::to_string(out.version) +
                                 "; this mcpd reads versions " + std::to_string(kOldestVersion) +
                                 " to " + std::to_string(kVersion));
    if (!parse_number(next_field(header), length))
        return permanent_failure("the state's header has no length");
    const std::string_view digest = next_field(header);
    if (!header.empty() || digest.size() != 64)
        return permanent_failure("the state's header is malformed");
    if (body.size() != length)
        return permanent_failure("the state is truncated or has bytes after its end: " +
                                 std::to_string(body.size()) + " bytes where its header says " +
                                 std::to_string(length));
    if (sha256_hex(body) != digest)
        return permanent_failure("the state is corrupt: its SHA-256 does not match its header");
    out.body = nlohmann::json::parse(body, nullptr, false);
    if (out.body.is_discarded() || !out.body.is_object())
        return permanent_failure("the state's body is not a JSON object");
    out.digest = sha256_hex(text);
    return out;
}

Result<UniqueFd> to_sealed_memfd(std::string_view text) {
    UniqueFd fd(::memfd_create("mcpd-state", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!fd) return system_failure("cannot create the state's memfd", errno);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return system_failure("cannot write the state", errno);
        written += static_cast<std::size_t>(n);
    }
    if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
        return system_failure("cannot seal the state's memfd", errno);
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) return system_failure("cannot rewind the state", errno);
    return fd;
}

Result<std::string> read_all(int fd) {
    std::string text;
    char buffer[65536];
    off_t offset = 0;
    while (text.size() <= kMaxBytes) {
        const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return system_failure("cannot read the state from descriptor " + std::to_string(fd), errno);
        if (n == 0) return text;
        text.append(buffer, static_cast<std::size_t>(n));
        offset += n;
    }
    return permanent_failure("the state is larger than " + std::to_string(kMaxBytes) + " bytes");
}

std::string acknowledgement(const Decoded& decoded) {
    return "mcpd-state ok " + std::to_string(decoded.version) + " " + decoded.digest;
}

}  // namespace mcpd::state_file

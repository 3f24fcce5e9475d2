#include "daemon/systemd/journal.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "common/log.h"

namespace mcpd {
namespace {

int priority(log::Level level) {
    switch (level) {
        case log::Level::debug: return 7;
        case log::Level::info: return 6;
        case log::Level::warning: return 4;
        case log::Level::error: return 3;
    }
    return 6;
}

void send(log::Level level, std::string_view server, std::string_view message) {
    const std::string text(message);
    if (server.empty()) {
        sd_journal_send("MESSAGE=%s", text.c_str(), "PRIORITY=%i", priority(level), nullptr);
        return;
    }
    const std::string name(server);
    sd_journal_send("MESSAGE=[%s] %s", name.c_str(), text.c_str(), "PRIORITY=%i", priority(level),
                    "SERVER=%s", name.c_str(), nullptr);
}

// The same with fields of the caller's (the request log's SERVER=, TOOL=, ...): one entry,
// written with sd_journal_sendv.
void send_fields(log::Level level, std::string_view server, std::string_view message,
                 std::span<const std::string> fields) {
    std::vector<std::string> items;
    items.reserve(fields.size() + 3);
    std::string text = "MESSAGE=";
    if (!server.empty()) {
        text += '[';
        text += server;
        text += "] ";
    }
    text += message;
    items.push_back(std::move(text));
    items.push_back("PRIORITY=" + std::to_string(priority(level)));
    bool has_server = false;
    for (const std::string& field : fields) {
        has_server = has_server || field.starts_with("SERVER=");
        items.push_back(field);
    }
    if (!has_server && !server.empty()) items.push_back("SERVER=" + std::string(server));
    std::vector<iovec> vectors;
    vectors.reserve(items.size());
    for (std::string& item : items) vectors.push_back({item.data(), item.size()});
    sd_journal_sendv(vectors.data(), static_cast<int>(vectors.size()));
}

// journald sets JOURNAL_STREAM to "device:inode" of the stream it gave us as stderr.
bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (stream == nullptr) return false;
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) != 0) return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
    return dev == st.st_dev && ino == st.st_ino;
}

}  // namespace

bool use_journal_if_connected() {
    if (!stderr_is_journal()) return false;
    log::set_journal_mode(true);  // should a line still reach stderr: <N> prefixes, no time
    log::set_sink(&send);
    log::set_field_sink(&send_fields);
    return true;
}

}  // namespace mcpd

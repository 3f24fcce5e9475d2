#include "daemon/systemd/journal.h"

#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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
    return true;
}

}  // namespace mcpd

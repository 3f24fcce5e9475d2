#include "daemon/eager_write.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/uio.h>

#include <cerrno>

namespace mcpd {
namespace {

bool more_input = false;  // the daemon is single-threaded

}  // namespace

MoreInput::MoreInput(bool more) : saved_(more_input) { more_input = more; }

MoreInput::~MoreInput() { more_input = saved_; }

void write_or_queue_line(bufferevent* bev, std::string_view line) {
    evbuffer* out = bufferevent_get_output(bev);
    std::size_t written = 0;  // of line + '\n'
    if (!more_input && evbuffer_get_length(out) == 0) {
        char newline = '\n';
        iovec parts[2] = {{const_cast<char*>(line.data()), line.size()}, {&newline, 1}};
        ssize_t n = 0;
        do {
            n = ::writev(bufferevent_getfd(bev), parts, 2);
        } while (n < 0 && errno == EINTR);
        if (n > 0) written = static_cast<std::size_t>(n);
    }
    if (written < line.size()) evbuffer_add(out, line.data() + written, line.size() - written);
    if (written <= line.size()) evbuffer_add(out, "\n", 1);
}

}  // namespace mcpd

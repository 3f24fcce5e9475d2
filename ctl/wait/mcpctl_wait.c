/* mcpctl-wait: what `mcpctl connect` turns into once mcpd holds the agent's pipes.
 *
 * From then on the bridge only waits for mcpd's {"ended": {...}} line on the control
 * connection, for as long as the agent's session lasts: hours, once per agent and server. This
 * program does that wait in a process image with only libc mapped, well under the C++ client's
 * footprint. It keeps the control connection, so mcpd still sees the bridge vanish when the
 * agent kills it, and it exits with the status `mcpctl connect --help` documents.
 *
 * The ended line is built by ended_message() in common/control_protocol.h, the reference for
 * every control message (docs/CONTROL.md); this file is C and reads it by hand, relying on the
 * bytes tests/unit/common_control_protocol_test.cpp pins: `{"ended":` first, `"reason":"`,
 * and `"status":0}` for a session the client ended.
 *
 * Usage: mcpctl-wait FD WHERE
 *   FD     the attached control connection (inherited across exec)
 *   WHERE  the socket path, for messages
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lines longer than this cannot be the "ended" line and are skipped. */
#define LINE_MAX_BYTES 65536

/* The reason string of an ended line, unescaped enough to read (\" \\ \n \t; the rest as
 * written). Empty when there is none. */
static void print_reason(const char* line) {
    const char* start = strstr(line, "\"reason\":\"");
    fputs("mcpctl: the session ended: ", stderr);
    if (start == NULL) {
        fputs("-\n", stderr);
        return;
    }
    for (const char* p = start + strlen("\"reason\":\""); *p != '\0' && *p != '"'; ++p) {
        if (*p == '\\' && p[1] != '\0') {
            ++p;
            fputc(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p, stderr);
            continue;
        }
        fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

/* What one complete line means: -1 when it is not the ended line, else the exit status. */
static int judge_line(const char* line) {
    if (strncmp(line, "{\"ended\":", strlen("{\"ended\":")) != 0) return -1;
    /* mcpd writes the object compactly; a quote inside the reason would be escaped, so this
     * pattern can only be the status field itself. */
    if (strstr(line, "\"status\":0}") != NULL) return 0;
    print_reason(line);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fputs("usage: mcpctl-wait FD WHERE (run by 'mcpctl connect', not by hand)\n", stderr);
        return 2;
    }
    const int fd = atoi(argv[1]);
    const char* where = argv[2];
    static char line[LINE_MAX_BYTES + 1];
    size_t used = 0;
    int skipping = 0; /* inside a line too long to keep */
    for (;;) {
        char chunk[4096];
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != ECONNRESET) {
            fprintf(stderr, "mcpctl: cannot read from mcpd on %s: %s\n", where, strerror(errno));
            return 1;
        }
        if (n <= 0) {
            fprintf(stderr,
                    "mcpctl: mcpd closed the connection without saying why the session ended "
                    "(%s)\n",
                    where);
            return 1;
        }
        for (ssize_t i = 0; i < n; ++i) {
            const char c = chunk[i];
            if (c == '\n') {
                if (!skipping) {
                    line[used] = '\0';
                    const int status = judge_line(line);
                    if (status >= 0) return status;
                }
                used = 0;
                skipping = 0;
            } else if (!skipping) {
                if (used == LINE_MAX_BYTES) {
                    skipping = 1;
                } else {
                    line[used++] = c;
                }
            }
        }
    }
}

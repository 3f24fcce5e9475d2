#include "daemon/control/socket_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/accounts.h"
#include "common/file_mode.h"
#include "common/log.h"

namespace mcpd {

namespace {

// mkdir -p: parents it creates are 0700 (mcpd's only), the last one `mode`.
bool make_directories(const std::string& dir, mode_t mode, std::string& error) {
    const std::size_t slash = dir.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        const std::string parent = dir.substr(0, slash);
        struct stat st {};
        if (::stat(parent.c_str(), &st) != 0 && !make_directories(parent, 0700, error))
            return false;
    }
    if (::mkdir(dir.c_str(), mode) == 0) {
        // mkdir applies the umask; the mode must be exactly what was asked.
        ::chmod(dir.c_str(), mode);
        return true;
    }
    if (errno == EEXIST) return true;  // somebody else's: the caller looks at it
    error = "cannot create directory '" + dir + "': " + std::strerror(errno);
    return false;
}

std::string advice(const std::string& dir) {
    return "remove it (as root if need be: rm -r '" + dir +
           "') and start mcpd again, or choose another socket with --socket";
}

}  // namespace

mode_t directory_mode_for(const SocketAccess& access) {
    mode_t mode = 0700;
    if ((access.mode & 0060) != 0) mode |= 0010;
    if ((access.mode & 0006) != 0) mode |= 0001;
    return mode;
}

bool prepare_socket_directory(const std::string& dir, const SocketAccess& access,
                              bool private_dir, std::string& error) {
    const mode_t wanted = directory_mode_for(access);
    const uid_t me = ::geteuid();
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT) {
            error = "cannot use socket directory '" + dir + "': " + std::strerror(errno);
            return false;
        }
        if (!make_directories(dir, wanted, error)) return false;
        private_dir = true;  // it is ours now: hold it to the strict rules
        // Check what is there now, not what was asked for: another user may have won a race.
        if (::lstat(dir.c_str(), &st) != 0) {
            error = "cannot use socket directory '" + dir + "': " + std::strerror(errno);
            return false;
        }
    }
    if (S_ISLNK(st.st_mode)) {
        error = "the socket directory '" + dir +
                "' is a symbolic link; mcpd does not follow it (another user could point it "
                "anywhere): " + advice(dir);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        error = "the socket directory '" + dir + "' is not a directory: " + advice(dir);
        return false;
    }
    const bool owner_ok = st.st_uid == me || (!private_dir && st.st_uid == 0);
    if (!owner_ok) {
        error = "the socket directory '" + dir + "' belongs to " + accounts::describe_uid(st.st_uid) +
                ", not to mcpd's user (" + accounts::describe_uid(me) +
                "); another user may have made it to take over mcpd's socket: " + advice(dir);
        return false;
    }
    const mode_t perms = st.st_mode & 07777;
    const bool others_write = (perms & 0022) != 0;
    if (!private_dir) {
        if (others_write && (perms & S_ISVTX) == 0) {
            error = "the socket directory '" + dir + "' (mode " + mode_octal(perms) +
                    ") lets other users replace the socket; make it writable only by its owner "
                    "(chmod go-w '" + dir + "') or choose another --socket";
            return false;
        }
        return true;
    }
    if (others_write) {
        error = "the socket directory '" + dir + "' is writable by other users (mode " +
                mode_octal(perms) + "), so they may have put something in it: " + advice(dir);
        return false;
    }
    if ((perms & 07777) != wanted) {
        // Ours, and nobody else could add to it: making it private again is safe.
        if (::chmod(dir.c_str(), wanted) != 0) {
            error = "cannot set the mode of the socket directory '" + dir + "' to " +
                    mode_octal(wanted) + ": " + std::strerror(errno);
            return false;
        }
        log::info("socket directory " + dir + " had mode " + mode_octal(perms) + "; set it to " +
                  mode_octal(wanted));
    }
    if (access.group && st.st_gid != *access.group && ::chown(dir.c_str(), -1, *access.group) != 0) {
        error = "cannot give the socket directory '" + dir + "' to " +
                accounts::describe_gid(*access.group) + ": " + std::strerror(errno) +
                " (mcpd's user must be a member of that group)";
        return false;
    }
    return true;
}

}  // namespace mcpd

#include "common/child_setup.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace mcpd {

void prepare_forked_child(pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died before the line above took effect: then nothing would come.
    if (::getppid() != parent) _exit(127);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace mcpd

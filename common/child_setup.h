// The child side of fork(), before exec, as mcpd (spawn) and the tests' process helpers both
// need it: the child dies with its parent, and starts from default signal dispositions and an
// empty signal mask whatever the parent had.
#pragma once

#include <sys/types.h>

namespace mcpd {

// SIGKILL when `parent` (the pid before fork) dies, and _exit(127) at once if it already has;
// then every signal to its default disposition and none blocked. Async-signal-safe.
void prepare_forked_child(pid_t parent);

}  // namespace mcpd

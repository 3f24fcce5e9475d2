#!/bin/sh
# Runs a command (an interop scenario: NODE SCRIPT ARGS...) as root in a mount and a network
# namespace of its own:
# - a tmpfs on /run holding only /run/user/UID (mode 0700, this user's), so mcpd can listen on
#   /run/user/UID/mcpd/mcpd.sock as under `systemctl --user` without touching the machine's
#   /run/user; the tmpfs goes on /run, not /run/user, because /run/user may not exist (containers)
#   and because it hides the system service's /run/mcpd/mcpd.sock, mcpctl's last fallback;
# - no network but loopback: the agent CLIs run in it can send nothing off the machine, whatever
#   their update checks and telemetry try. Unix sockets work across network namespaces.
#
#   sh user-runtime-ns.sh COMMAND [ARGS...]
set -eu

if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: ${2:-$1} needs root: it runs in its own mount and network namespaces (unshare) with a tmpfs on /run; run it (ctest) as root, as CI does"
  exit 1
fi

# No --fork: unshare execs the command, so ctest's timeout signals reach the scenario itself.
exec unshare --mount --propagation private --net -- sh -c '
  set -eu
  mount -t tmpfs -o mode=0755 tmpfs /run
  mkdir -m 0755 /run/user
  mkdir -m 0700 "/run/user/$(id -u)"
  # lo starts down in a new network namespace; nothing needs it, but a client may expect it.
  if command -v ip >/dev/null 2>&1; then ip link set lo up; fi
  # Tells the scenario which namespaces are the ones made here (it checks that it runs in them).
  MCPD_INTEROP_NAMESPACES="$(readlink /proc/self/ns/mnt) $(readlink /proc/self/ns/net)"
  export MCPD_INTEROP_NAMESPACES
  exec "$@"
' user-runtime-ns "$@"

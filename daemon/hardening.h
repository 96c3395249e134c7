// Does a systemd unit's sandboxing cut off a source the configuration enables?
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/config.h"

namespace gpufault::daemon {

/// Reads the [Service] section of a unit file (systemd.exec(5) directives; a later assignment
/// replaces an earlier one, an empty one resets a list) and returns one message per directive
/// that takes away something `cfg` needs: /dev/kmsg (ProtectKernelLogs=, PrivateDevices=,
/// DevicePolicy= without DeviceAllow=/dev/kmsg, a capability set without CAP_SYSLOG,
/// InaccessiblePaths=), the faulting processes' /proc/PID that kernel records lead to
/// (ProtectProc=invisible|noaccess|ptraceable, a capability set without CAP_SYS_PTRACE for
/// other users' maps), a log pattern's directory (PrivateTmp= for /tmp and /var/tmp,
/// ProtectHome=yes|tmpfs for /home, /root, /run/user, InaccessiblePaths=), the writable store,
/// socket and metrics directories (ProtectSystem= without ReadWritePaths=/StateDirectory=), the
/// allocation directory (PrivateTmp=, ProtectHome=, InaccessiblePaths=, a capability set
/// without CAP_DAC_READ_SEARCH for jobs' 0600 files), and AF_UNIX (RestrictAddressFamilies=).
/// An empty result means no contradiction found.
std::vector<std::string> unitContradictions(std::string_view unit, const Config& cfg);

}  // namespace gpufault::daemon

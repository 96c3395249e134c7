// Kernel-log prefixes: /dev/kmsg records, util-linux dmesg stamps, journald/syslog headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault::prefix {

/// What the kernel-log prefix of a line says; `consumed` bytes of the line are the prefix.
struct KernelPrefix {
    size_t consumed = 0;
    std::optional<double> kernel_s;
    std::optional<std::string> wall;
    std::optional<int64_t> wall_utc_s;  ///< TimeInfo::wall_utc_s: the stamp stated its zone
    /// A stamp of this form was read but gave no `wall` (TimeInfo::wall_refused).
    WallRefusal wall_refused = WallRefusal::None;
    Origin origin = Origin::Unknown;
    std::string_view ident;  ///< view into the parsed line
    std::optional<int64_t> ident_pid;
};

/// A /dev/kmsg record header `PRI,SEQ,TS_USEC,FLAGS[,caller=…];` (Documentation/ABI/testing/
/// dev-kmsg, printk.c `info_print_ext_header()`, FORMATS.md §1.9). Origin Kernel for facility 0,
/// Other for records injected by user space (facility ≠ 0). nullopt when `line` is not one.
std::optional<KernelPrefix> parseKmsgHeader(std::string_view line);

/// A /dev/kmsg dictionary continuation line ` KEY=VALUE` (` SUBSYSTEM=pci`, ` DEVICE=+pci:…`).
bool isKmsgContinuation(std::string_view line);

/// Decodes /dev/kmsg's `\xHH` escapes of `text` into `out`; false (out untouched) when `text`
/// has none.
bool unescapeKmsg(std::string_view text, std::string& out);

/// util-linux dmesg prefixes (sys-utils/dmesg.c print_record(), FORMATS.md §9.2), in this order:
/// `-x` `kern  :err   : `, `-r` `<3>`, one stamp — raw `[  123.456789] `, `-d`
/// `[  123.456789 <    0.000042>] `, `[<    0.000042>] `, `-T` ctime `[Tue Sep  9 02:30:28 2025] `
/// (localized names), `-H`/`-e` break `[Sep10 02:30] ` / `[12月25 19:09] ` and delta
/// `[  +0.000007] ` / `[  +0,000007] `, iso `2025-09-09T02:30:28,123456+02:00 ` — then the caller
/// id `[  T4242] `. Bracketed message text (`[drm:…]`, `[gfxhub0]`, `[rank3]:`) is not a stamp.
bool parseDmesgPrefix(std::string_view line, KernelPrefix& out);

/// journald `short*` modes (systemd logs-show.c output_short()) and rsyslog file formats
/// (RSYSLOG_TraditionalFileFormat / RSYSLOG_FileFormat, RFC 3164/5424 forwarding with `<PRI>`),
/// FORMATS.md §9.3: `STAMP [HOST ]IDENT[PID]: `, then after `kernel: ` an optional printk stamp
/// `[ 123.456789] `. Also a bare `kernel: ` tag at the start of a line (grep of a syslog file).
bool parseSyslogPrefix(std::string_view line, KernelPrefix& out);

/// `[  123.456789]` (spaces, seconds, `.`, 3–9 digits, `]`) at the start of `s`: the printk
/// stamp; `*len` gets its length without a following space. `allow_delta`: also journalctl
/// short-delta `[  229.550864 <    0.000035 >]`.
std::optional<double> parsePrintkStamp(std::string_view s, size_t* len, bool allow_delta = false);

}  // namespace gpufault::prefix

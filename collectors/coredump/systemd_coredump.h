// systemd-coredump's outputs, read without I/O: its journal entry (a field map), the stack trace
// text its MESSAGE carries, and the names of its files under /var/lib/systemd/coredump.
// Source: systemd src/coredump/coredump.c (fields, file name, MESSAGE), src/shared/elf-util.c
// (stack text); FORMATS.md §7.2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/stack.h"

namespace gpufault::coredump {

/// SD_MESSAGE_COREDUMP: the MESSAGE_ID of systemd-coredump's journal entry.
inline constexpr std::string_view kCoredumpMessageId = "fc2e22bc6ee647b6b90729ab34a250b1";

/// A journal entry's fields (name → value; binary values as their bytes).
using FieldMap = std::map<std::string, std::string>;

/// What one systemd-coredump journal entry states.
struct CoredumpEntry {
    int64_t pid = 0;                        ///< COREDUMP_PID (the host's pid)
    std::optional<int64_t> uid, gid;        ///< COREDUMP_UID, COREDUMP_GID
    std::optional<int> signal;              ///< COREDUMP_SIGNAL
    std::optional<uint64_t> timestamp_us;   ///< COREDUMP_TIMESTAMP: µs since the epoch, UTC
    std::optional<uint64_t> rlimit;         ///< COREDUMP_RLIMIT: RLIMIT_CORE, bytes
    std::string comm, exe, unit, hostname;  ///< COREDUMP_COMM, _EXE, _UNIT, _HOSTNAME
    std::string boot_id;                    ///< _BOOT_ID (32 hex digits)
    std::optional<std::string> filename;    ///< COREDUMP_FILENAME: only when the file was kept
    bool truncated = false;                 ///< COREDUMP_TRUNCATED=1 (ProcessSizeMax)
    bool in_journal = false;                ///< COREDUMP= present (Storage=journal)
    /// Why there is no core file ("core not kept: size limit"); nullopt when one was kept.
    std::optional<std::string> not_kept;
    std::string message;             ///< MESSAGE
    std::optional<CoreStack> stack;  ///< parsed from MESSAGE's "Stack trace of thread" (capped)
    /// attestedBySystemdCoredump() of the entry's fields; false: an entry anyone could write.
    bool attested = false;
    /// Fields that were present but impossible (a signal above 64, a time past year 9999):
    /// stored as unknown, each with a warning naming the field and its value.
    std::vector<std::string> warnings;
};

/// Reads a systemd-coredump entry. Errors: MESSAGE_ID is not kCoredumpMessageId, or
/// COREDUMP_PID is missing, not a number or not a pid (1..kMaxPid). A COREDUMP_SIGNAL
/// outside 1..64 or a COREDUMP_TIMESTAMP that is not a time up to year 9999 is left unknown,
/// with a warning; so is a stack text over the caps (StackTextLimits).
Result<CoredumpEntry> parseCoredumpEntry(const FieldMap& fields);

/// Caps on what parseStackTraceText keeps of a MESSAGE (a journal field may hold 16 MiB of
/// them), the unwinder's own (UnwindOptions): threads beyond max_threads are dropped with
/// `threads_truncated`, frames beyond max_frames with the thread's `frames_truncated`.
struct StackTextLimits {
    size_t max_threads = 1024;
    size_t max_frames = 256;  ///< per thread
};

/// Parses systemd's stack text: blocks `Stack trace of thread TID:` followed by frames
/// `#N  0xPC SYMBOL (MODULE + 0xOFF)` (systemd ≥ 249) or `#N  0xPC SYMBOL (MODULE)` (≤ 248);
/// `n/a` is an unknown symbol or module. The first thread is the crashing one. Lines
/// `Module MODULE … with build-id HEX` (newer systemd) give the frames of MODULE their
/// What a stack text states, kept or not (parseStackTraceText's caps).
struct StackTextCounts {
    size_t threads = 0;      ///< `Stack trace of thread` blocks
    size_t most_frames = 0;  ///< frames of the thread with the most
};

/// build-id. nullopt when the text holds no stack trace. Capped by `lim` (flags set when hit);
/// `counts`, when given, gets what the text states.
std::optional<CoreStack> parseStackTraceText(std::string_view message,
                                             const StackTextLimits& lim = {},
                                             StackTextCounts* counts = nullptr);

/// The warnings for the caps a parsed stack hit ("MESSAGE stack trace: 1100 threads: the
/// first 1024 kept", with `counts`; "more than 1024 threads" without); empty when none was hit.
std::vector<std::string> stackCapWarnings(const CoreStack& s,
                                          const StackTextLimits& lim = {},
                                          const StackTextCounts* counts = nullptr);

/// Whether journald attests that systemd-coredump wrote the entry: `_UID=0` and `_COMM=
/// systemd-coredum` (15 characters: TASK_COMM_LEN) or `SYSLOG_IDENTIFIER=systemd-coredump`.
/// Underscore fields are journald's, never the sender's; in a file they are only as good as
/// the file (an export or JSON file can say anything).
bool attestedBySystemdCoredump(const FieldMap& fields);

/// The fields of a file name `core.COMM.UID.BOOTID.PID.USEC[.zst|.lz4|.xz]` (COMM with
/// systemd's `\xHH` escapes undone).
struct CoredumpFileName {
    std::string comm;
    int64_t uid = 0;
    std::string boot_id;  ///< 32 hex digits
    int64_t pid = 0;
    uint64_t timestamp_us = 0;
    std::string compression;  ///< "", "zst", "lz4", "xz"
};
/// Parses a base name as systemd-coredump writes it; nullopt for any other name.
std::optional<CoredumpFileName> parseCoredumpFileName(std::string_view name);

/// The identity of one crash as systemd-coredump records it, the same for its journal entry
/// and its file: `systemd-coredump:BOOTID:PID:USEC`.
std::string coredumpKey(std::string_view boot_id, int64_t pid, uint64_t timestamp_us);

}  // namespace gpufault::coredump

// A systemd journal entry as a text line the line decoder already reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpufault {

/// The journal fields gpufault uses (systemd.journal-fields(7)).
struct JournalEntry {
    std::string message;                   ///< MESSAGE (may hold several lines)
    std::string transport;                 ///< _TRANSPORT: kernel, stdout, syslog, journal, …
    std::optional<int> priority;           ///< PRIORITY (0–7)
    std::optional<uint64_t> monotonic_us;  ///< _SOURCE_MONOTONIC_TIMESTAMP, else the entry's
    uint64_t realtime_us = 0;              ///< __REALTIME_TIMESTAMP (µs since the epoch, UTC)
    std::string hostname;                  ///< _HOSTNAME
    std::string identifier;                ///< SYSLOG_IDENTIFIER, else _COMM
    std::optional<int64_t> pid;            ///< _PID (SYSLOG_PID for forwarded syslog)
};

/// The prefix of each line of `e.message`: kernel-transport entries as /dev/kmsg records
/// (`PRI,0,USEC,-;`, so the record keeps its seconds since boot), every other entry as
/// `journalctl -o short-iso-precise` prints it (`2025-11-30T05:20:00.123456+0000 host
/// ident[pid]: `). A line of the message is appended to the prefix by the caller.
std::string journalLinePrefix(const JournalEntry& e);

}  // namespace gpufault

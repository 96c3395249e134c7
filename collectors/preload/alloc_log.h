// Parser (pure) of the records libgpufault-preload.so writes (docs/preload.md):
// "gpufault.alloc 1 KIND key=value …" lines in, allocation records out. Allocations are paired
// with their frees (same process and pointer), mappings with unmaps, reservations with
// address frees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpufault::alloclog {

/// The literal every record starts with.
inline constexpr std::string_view kPrefix = "gpufault.alloc ";

/// A line longer than this (bytes, without its newline) is not parsed: a warning kLongLine of
/// that line, by parse() and by gpufaultd's reader alike (issue 2 §7: lines over 1 MiB).
inline constexpr size_t kMaxLine = size_t{1} << 20;
inline constexpr std::string_view kLongLine = "line longer than 1 MiB: not read";

/// True when `head` (the first bytes of a file) starts with a record line.
bool looksLikeAllocLog(std::string_view head);

/// The pid a shim's file name gives: `gpufault-alloc.<pid>.log` (older shims) or
/// `gpufault-alloc.<pid>.<pidns>.<start ticks>.log` (`pidns` set then); 0 for any other name
/// (a file name, not a path). The pid is as the process saw it (its own pid namespace), as
/// the file's records carry it: a file counts only for that pid.
int64_t pidOfFileName(std::string_view name, std::optional<uint64_t>& pidns);

/// One record as written (fields the record does not carry stay unset).
struct Event {
    uint64_t line = 0;  ///< 1-based
    /// start | alloc | free | reserve | unreserve | create | release | map | unmap | dropped
    std::string kind;
    std::string api;
    std::optional<std::string> mem;  ///< device | host | managed | va
    uint64_t ptr = 0, size = 0;      ///< bytes
    std::optional<uint64_t> handle;
    std::optional<int64_t> device, rc, wall_us, mono_us, pid, ppid, tid;
    std::string stack;  ///< "module+0xoffset;…", innermost first ("" when not recorded)
    std::string exe;    ///< start records
    /// start records (absent in files of older shims): /proc/sys/kernel/random/boot_id and
    /// /proc/self/stat's starttime (clock ticks after boot): the process's identity
    std::optional<std::string> boot;
    std::optional<int64_t> start_ticks;
    /// start records of newer shims: the inode of the process's pid namespace
    /// (/proc/self/ns/pid); another namespace than the reader's means `pid` is not the
    /// reader's pid (a container's)
    std::optional<uint64_t> pidns;
    /// dropped records: how many calls the shim did not record since its last such record
    std::optional<uint64_t> count;
};

/// Parses one line (without its newline). An error names what is wrong (no file or line:
/// the caller adds them).
std::optional<Event> parseLine(std::string_view line, std::string& error);

/// One allocation (or mapping, or reservation) with its free when one was recorded. A
/// mapping's device is its handle's (from the create record).
struct Allocation {
    uint64_t line = 0;  ///< the record that made it
    int64_t pid = 0;
    std::optional<int64_t> tid, device, wall_us, mono_us;
    std::string kind;  ///< alloc | map | reserve
    std::string api;
    std::optional<std::string> mem;
    uint64_t ptr = 0, end = 0;  ///< [ptr, end), bytes
    std::optional<uint64_t> handle;
    std::string stack;
    std::optional<uint64_t> free_line;
    std::optional<std::string> free_api;
    std::optional<int64_t> freed_wall_us, freed_mono_us;
    /// the line of its process's `start` record in this file (0: none before it)
    uint64_t start_line = 0;
};

/// A free (unmap, unreserve) the parser did not pair with an allocation of the lines fed since
/// the last drain: one of an allocation handed out before the last Parser::drain()
/// (`alloc_line` > 0), or one with no open allocation in the lines fed at all (`alloc_line` 0,
/// also a warning "… with no open allocation in this file"). The store pairs either with the
/// latest allocation of `ptr` its recording made before it, whatever file stored that
/// (another copy, an earlier generation of the file: schema/store_allocations.cpp).
struct LateFree {
    uint64_t alloc_line = 0;  ///< the allocation's record in this file; 0: none open
    int64_t pid = 0;
    uint64_t start_line = 0;  ///< the line of the pid's `start` record before it (0: none)
    std::string kind;         ///< the allocation's kind: alloc | map | reserve
    uint64_t ptr = 0;
    uint64_t free_line = 0;
    std::string free_api;
    std::optional<int64_t> freed_wall_us, freed_mono_us;
};

/// A `start` record: a process that began recording.
struct Process {
    uint64_t line = 0;
    int64_t pid = 0;
    std::optional<int64_t> ppid, wall_us, mono_us;
    std::string exe;
    std::optional<std::string> boot_id;  ///< absent in files of older shims
    std::optional<int64_t> start_ticks;  ///< /proc/PID/stat starttime; absent in older files
    std::optional<uint64_t> pidns;       ///< its pid namespace's inode; absent in older files
};

struct Warning {
    uint64_t line = 0;
    std::string message;
};

/// Everything one file holds.
struct Log {
    std::vector<Allocation> allocations;  ///< in record order
    std::vector<Process> processes;
    std::vector<Warning> warnings;
    /// frees of allocations of earlier chunks (only after Parser::drain()) and frees with no
    /// open allocation in the lines fed (also warned)
    std::vector<LateFree> late_frees;
    uint64_t lines = 0, events = 0;
    uint64_t failed = 0;  ///< calls that returned an error (rc != 0): no allocation
    uint64_t unmatched_frees =
        0;  ///< frees of a pointer with no open allocation in this file
            ///< (each also a warning; frees of ptr=0 are no-ops, not counted)
    uint64_t null_allocations = 0;  ///< alloc/map/reserve records with ptr=0, rc=0 (each warned)
    uint64_t handles = 0;           ///< create/release records (physical memory handles)
    /// calls the shim did not record (`dropped` records; each also a warning): the recording
    /// is incomplete
    uint64_t dropped = 0;
};

/// Incremental parser: feed lines in order, then take the result (finish), or take what the
/// lines fed so far made and go on (drain: gpufaultd's followed files). A `start` record ends
/// the open allocations of its pid (a pid reused by a process appending to the same file).
class Parser {
  public:
    /// `line_no` is 1-based; `line` has no newline.
    void feed(uint64_t line_no, std::string_view line);
    /// A last line without its newline: a record cut short (reported, not parsed).
    void truncated(uint64_t line_no);
    /// A line not parsed (`message` says why: a warning of that line).
    void skipped(uint64_t line_no, std::string message);
    Log finish() &&;
    /// What the lines fed since the last drain made (their counts, allocations, processes,
    /// warnings; frees of allocations drained before as late_frees); the open allocations stay,
    /// so a later free still pairs with its allocation.
    Log drain();
    /// Allocations still open (memory the parser holds between drains).
    size_t openCount() const { return open_.size(); }

  private:
    struct Open {
        size_t index = 0;  ///< allocation number since the start (drained ones < base_)
        uint64_t line = 0;
    };
    Log log_;
    size_t base_ = 0;  ///< allocations drained so far
    /// open allocations by (pid, family, ptr)
    std::unordered_map<std::string, Open> open_;
    /// The last `start` record of each pid, with its process's pid namespace and start ticks
    /// (absent in files of older shims).
    struct Started {
        uint64_t line = 0;
        std::optional<uint64_t> pidns;
        std::optional<int64_t> ticks;
    };
    std::unordered_map<int64_t, Started> started_;
    /// the last `start` line of each process, by "pid/pidns/ticks" (records that name their
    /// process find theirs even when another process of the pid wrote a `start` in between)
    std::unordered_map<std::string, uint64_t> imageStart_;
    bool interleaveWarned_ = false;
    /// The `start` line of the process a record belongs to (0: none before it) and its owner key
    /// "pid/pidns" for pairing; false, with `error` set, when the record names a process that
    /// wrote no `start` record in this file before it while another process of its pid did.
    bool imageOf(const Event& e, uint64_t& start, std::string& owner, std::string& error);
    /// device of each physical handle (create records) by (pid, handle): a map names none
    std::unordered_map<std::string, int64_t> handleDevice_;
};

/// Parses a whole file's text.
Log parse(std::string_view text);

}  // namespace gpufault::alloclog

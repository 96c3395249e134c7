// Decodes the KFD snapshot of a ROCr GPU core (NT_AMDGPU_CORE_STATE). Layouts and their sources:
// rocr_core_state.h. Pure: bytes in, values out, every read bounded by the note's size.
#include "collectors/coredump/rocr_core_state.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <utility>

#include "collectors/coredump/le_field.h"

namespace gpufault::coredump {

namespace {

constexpr uint64_t kHeaderBytes = 40;  ///< u64, 2×u32, u64, 4×u32
constexpr uint64_t kAgentRowMin = 92;  ///< through gfx_target_version (offset 88)
constexpr uint64_t kQueueRowMin = 56;  ///< through queue_type (offset 52)

uint64_t align8(uint64_t v) {
    return v > UINT64_MAX - 7 ? UINT64_MAX : (v + 7) & ~uint64_t{7};
}

/// kfd_dbg_trap_exception_code (kfd_ioctl.h): code → (name, words for a reason).
struct Code {
    uint32_t code;
    std::string_view name, words;
};
constexpr std::array<Code, 23> kCodes{{
    {1, "EC_QUEUE_WAVE_ABORT", "queue wave abort"},
    {2, "EC_QUEUE_WAVE_TRAP", "queue wave trap"},
    {3, "EC_QUEUE_WAVE_MATH_ERROR", "queue math error"},
    {4, "EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION", "queue illegal instruction"},
    {5, "EC_QUEUE_WAVE_MEMORY_VIOLATION", "queue memory violation"},
    {6, "EC_QUEUE_WAVE_APERTURE_VIOLATION", "queue aperture violation"},
    {16, "EC_QUEUE_PACKET_DISPATCH_DIM_INVALID", "packet dispatch dimensions invalid"},
    {17,
     "EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID",
     "packet group segment size invalid"},
    {18, "EC_QUEUE_PACKET_DISPATCH_CODE_INVALID", "packet dispatch code invalid"},
    {19, "EC_QUEUE_PACKET_RESERVED", "packet reserved"},
    {20, "EC_QUEUE_PACKET_UNSUPPORTED", "packet unsupported"},
    {21, "EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID", "packet work-group size invalid"},
    {22, "EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID", "packet register count invalid"},
    {23, "EC_QUEUE_PACKET_VENDOR_UNSUPPORTED", "packet vendor unsupported"},
    {30, "EC_QUEUE_PREEMPTION_ERROR", "queue preemption error"},
    {31, "EC_QUEUE_NEW", "new queue"},
    {32, "EC_DEVICE_QUEUE_DELETE", "queue deleted"},
    {33, "EC_DEVICE_MEMORY_VIOLATION", "device memory violation"},
    {34, "EC_DEVICE_RAS_ERROR", "device RAS error"},
    {35, "EC_DEVICE_FATAL_HALT", "device fatal halt"},
    {36, "EC_DEVICE_NEW", "new device"},
    {48, "EC_PROCESS_RUNTIME", "runtime enabled"},
    {49, "EC_PROCESS_DEVICE_REMOVE", "device removed"},
}};

/// Most specific first. EC_QUEUE_NEW, EC_DEVICE_QUEUE_DELETE, EC_DEVICE_NEW and
/// EC_PROCESS_RUNTIME report state changes, not faults: they never name a cause.
constexpr std::array<uint32_t, 19> kSpecificity{
    5, 6, 33, 4, 3, 16, 17, 18, 19, 20, 21, 22, 23, 34, 35, 30, 2, 1, 49};

const Code* codeOf(uint32_t code) {
    if (code == 0) return nullptr;
    for (const auto& c : kCodes)
        if (c.code == code) return &c;
    return nullptr;
}

/// The rows of one table at `off`: `n` rows of `entsize` bytes, each at least `min` bytes to be
/// read (kfd_ioctl.h: the entry size strides the rows; fields are added at the end). Returns
/// the offset after the table (padded to 8), or nullopt when its end is not within the note
/// (the next table cannot be found).
template <class Row>
std::optional<uint64_t> readTable(std::string_view d,
                                  uint64_t off,
                                  uint32_t n,
                                  uint32_t entsize,
                                  uint64_t min,
                                  size_t cap,
                                  std::string_view what,
                                  uint64_t base,
                                  std::vector<std::string>& warnings,
                                  Row&& row) {
    if (n == 0) return off;
    const uint64_t avail = off <= d.size() ? d.size() - off : 0;
    const uint64_t bytes = uint64_t{n} * entsize;  // ≤ 2^64 − 2^33: no overflow
    uint64_t fit = n;
    if (entsize == 0) {
        warnings.push_back(fmt::format("{} {} rows of 0 bytes: not read", n, what));
        return off;
    }
    if (bytes > avail) {
        fit = avail / entsize;
        warnings.push_back(fmt::format(
            "the note states {} {} rows of {} bytes ({} bytes) at its offset {} (file offset {}), "
            "but holds {} bytes there: {} read{}",
            n,
            what,
            entsize,
            bytes,
            off,
            base + off,
            avail,
            entsize >= min && entsize <= kMaxRocrEntrySize ? fit : 0,
            what == "agent" ? ", queues not read" : ""));
    }
    if (entsize < min) {
        warnings.push_back(fmt::format(
            "{} rows of {} bytes, fewer than the {} read of each: not read", what, entsize, min));
    } else if (entsize > kMaxRocrEntrySize) {
        warnings.push_back(fmt::format(
            "{} rows of {} bytes, more than {}: not read", what, entsize, kMaxRocrEntrySize));
    } else {
        if (fit > cap)
            warnings.push_back(fmt::format("{} {} rows: the first {} kept", fit, what, cap));
        for (uint64_t i = 0; i < fit && i < cap; ++i) row(d.substr(off + i * entsize, entsize));
    }
    if (bytes > avail) return std::nullopt;
    return align8(off + bytes);
}

}  // namespace

std::string_view kfdExceptionName(uint32_t code) {
    const auto* c = codeOf(code);
    return c ? c->name : std::string_view{};
}

std::vector<std::string> kfdExceptionNames(uint64_t status) {
    std::vector<std::string> out;
    for (uint32_t bit = 0; bit < 64; ++bit)
        if (status & (uint64_t{1} << bit)) {
            auto name = kfdExceptionName(bit + 1);
            out.push_back(name.empty() ? fmt::format("EC_{}", bit + 1) : std::string(name));
        }
    return out;
}

std::optional<KfdCause> kfdMostSpecific(uint64_t status) {
    for (uint32_t code : kSpecificity) {
        if (!(status & (uint64_t{1} << (code - 1)))) continue;
        const auto* c = codeOf(code);
        return KfdCause{code, c->name, c->words};
    }
    return std::nullopt;
}

RocrFault rocrFault(const RocrCoreState& s) {
    RocrFault f;
    size_t best = kSpecificity.size();
    auto rank = [](const std::optional<KfdCause>& c) {
        for (size_t i = 0; c && i < kSpecificity.size(); ++i)
            if (kSpecificity[i] == c->code) return i;
        return kSpecificity.size();
    };
    auto agentOf = [&](uint32_t gpu_id) -> const RocrAgent* {
        for (const auto& a : s.agents)
            if (a.gpu_id == gpu_id) return &a;
        return nullptr;
    };
    for (const auto& q : s.queues)  // a queue before an agent with the same cause
        if (auto c = kfdMostSpecific(q.exception_status); rank(c) < best) {
            best = rank(c);
            f = {c, &q, agentOf(q.gpu_id)};
        }
    for (const auto& a : s.agents)
        if (auto c = kfdMostSpecific(a.exception_status); rank(c) < best) {
            best = rank(c);
            f = {c, nullptr, &a};
        }
    if (!f.cause && s.agents.size() == 1) f.agent = &s.agents.front();
    return f;
}

std::string gfxTargetName(uint32_t v) {
    uint32_t major = v / 10000, minor = v / 100 % 100, stepping = v % 100;
    if (major == 0 || minor > 15 || stepping > 15) return {};
    return fmt::format("gfx{}{:x}{:x}", major, minor, stepping);
}

std::string queueTypeName(uint32_t type) {
    static constexpr std::array<std::string_view, 4> kNames = {
        "compute", "sdma", "compute_aql", "sdma_xgmi"};
    return type < kNames.size() ? std::string(kNames[type]) : fmt::format("type {}", type);
}

RocrCoreState readRocrCoreState(std::string_view d, uint64_t base) {
    RocrCoreState s;
    auto& w = s.warnings;
    if (d.size() < 8) {
        w.push_back(fmt::format("NT_AMDGPU_CORE_STATE note of {} bytes: no version", d.size()));
        return s;
    }
    s.note_version = leField<uint64_t>(d, 0);
    if (s.note_version != 1) {
        w.push_back(fmt::format(
            "NT_AMDGPU_CORE_STATE note version {} is not known (1 is): not read", s.note_version));
        return s;
    }
    if (d.size() < kHeaderBytes) {
        w.push_back(fmt::format(
            "NT_AMDGPU_CORE_STATE note of {} bytes: its header needs {}", d.size(), kHeaderBytes));
        return s;
    }
    s.kfd_major = leField<uint32_t>(d, 8);
    s.kfd_minor = leField<uint32_t>(d, 12);
    const uint64_t runtime_size = leField<uint64_t>(d, 16);
    s.agents_stated = leField<uint32_t>(d, 24);
    const uint32_t agent_size = leField<uint32_t>(d, 28);
    s.queues_stated = leField<uint32_t>(d, 32);
    const uint32_t queue_size = leField<uint32_t>(d, 36);
    if (s.kfd_major != 1) {
        w.push_back(fmt::format("KFD ABI version {}.{} is not known (1.x is): rows not read",
                                s.kfd_major,
                                s.kfd_minor));
        return s;
    }
    uint64_t off = kHeaderBytes;
    if (runtime_size > d.size() - off) {
        w.push_back(fmt::format(
            "runtime info of {} bytes at the note's offset {} (file offset {}) runs past the "
            "note's {} bytes: agents and queues not read",
            runtime_size,
            off,
            base + off,
            d.size()));
        return s;
    }
    if (runtime_size >= 8) s.r_debug = leField<uint64_t>(d, off);
    if (runtime_size >= 12) s.runtime_state = leField<uint32_t>(d, off + 8);
    off = align8(off + runtime_size);

    auto next =
        readTable(d,
                  off,
                  s.agents_stated,
                  agent_size,
                  kAgentRowMin,
                  kMaxRocrAgents,
                  "agent",
                  base,
                  w,
                  [&](std::string_view r) {
                      RocrAgent a;
                      a.exception_status = leField<uint64_t>(r, 0);
                      a.gpu_id = leField<uint32_t>(r, 56);
                      a.location_id = leField<uint32_t>(r, 60);
                      a.vendor_id = leField<uint32_t>(r, 64);
                      a.device_id = leField<uint32_t>(r, 68);
                      a.gfx_target_version = leField<uint32_t>(r, 88);
                      a.target = gfxTargetName(a.gfx_target_version);
                      // 0 is a CPU node's location (and what a writer that did not fill it leaves)
                      if (uint32_t bdf = a.location_id & 0xffff)
                          a.pci = fmt::format(
                              "0000:{:02x}:{:02x}.{:x}", bdf >> 8, (bdf >> 3) & 0x1f, bdf & 7);
                      if (a.location_id >> 28) a.partition = a.location_id >> 28;
                      a.exceptions = kfdExceptionNames(a.exception_status);
                      s.agents.push_back(std::move(a));
                  });
    if (!next) return s;
    readTable(d,
              *next,
              s.queues_stated,
              queue_size,
              kQueueRowMin,
              kMaxRocrQueues,
              "queue",
              base,
              w,
              [&](std::string_view r) {
                  RocrQueue q;
                  q.exception_status = leField<uint64_t>(r, 0);
                  q.ring_base_address = leField<uint64_t>(r, 8);
                  q.queue_id = leField<uint32_t>(r, 40);
                  q.gpu_id = leField<uint32_t>(r, 44);
                  q.ring_size = leField<uint32_t>(r, 48);
                  q.queue_type = leField<uint32_t>(r, 52);
                  q.exceptions = kfdExceptionNames(q.exception_status);
                  s.queues.push_back(std::move(q));
              });
    return s;
}

}  // namespace gpufault::coredump

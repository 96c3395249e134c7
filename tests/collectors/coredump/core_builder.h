// Builds small ELF64 little-endian cores in memory for tests: notes in one PT_NOTE segment,
// optional PT_LOAD segments and section names (GPU cores). Layouts as in core_elf.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpufault::testing {

/// The descriptor of ROCr's NT_AMDGPU_CORE_STATE note (type 33, owner "AMDGPU"), byte by byte
/// as amd_core_dump.cpp writes it: a 40-byte header (u64 note version, u32 KFD major, u32
/// minor, u64 runtime info size, u32 n_agents, u32 agent entry size, u32 n_queues, u32 queue
/// entry size), then kfd_runtime_info, the kfd_dbg_device_info_entry rows and the
/// kfd_queue_snapshot_entry rows (kfd_ioctl.h), each part padded to 8 bytes. A row's fields are
/// written where they fit its entry size; the counts can be overridden to lie.
struct KfdCoreState {
    struct Agent {
        uint64_t exception_status = 0;
        uint32_t gpu_id = 0, location_id = 0, vendor_id = 0x1002, device_id = 0;
        uint32_t gfx_target_version = 0;
    };
    struct Queue {
        uint64_t exception_status = 0, ring_base = 0;
        uint32_t queue_id = 0, gpu_id = 0, ring_size = 0, queue_type = 2;  // compute_aql
    };
    uint64_t note_version = 1;
    uint32_t kfd_major = 1, kfd_minor = 13;
    uint64_t runtime_size = 16;  ///< sizeof(kfd_runtime_info)
    uint64_t r_debug = 0x7f3a10200000;
    uint32_t runtime_state = 1;  ///< DEBUG_RUNTIME_STATE_ENABLED
    std::vector<Agent> agents;
    std::vector<Queue> queues;
    uint32_t agent_size = 120, queue_size = 64;  ///< sizeof the structs at KFD 1.13–1.18
    std::optional<uint32_t> n_agents, n_queues;  ///< stated counts, when not the rows'

    static uint64_t bit(uint32_t ecode) { return uint64_t{1} << (ecode - 1); }  ///< KFD_EC_MASK

    std::string build() const {
        std::string d;
        auto put = [&](uint64_t v, int n) {
            for (int i = 0; i < n; ++i) d += static_cast<char>((v >> (8 * i)) & 0xff);
        };
        auto field = [](std::string& row, size_t off, uint64_t v, int n) {
            for (int i = 0; i < n && off + i < row.size(); ++i)
                row[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
        };
        auto pad = [&] {
            while (d.size() % 8) d += '\0';
        };
        put(note_version, 8);
        put(kfd_major, 4);
        put(kfd_minor, 4);
        put(runtime_size, 8);
        put(n_agents.value_or(static_cast<uint32_t>(agents.size())), 4);
        put(agent_size, 4);
        put(n_queues.value_or(static_cast<uint32_t>(queues.size())), 4);
        put(queue_size, 4);
        std::string rt(runtime_size < 4096 ? runtime_size : 0, '\0');
        field(rt, 0, r_debug, 8);
        field(rt, 8, runtime_state, 4);
        d += rt;
        pad();
        for (const auto& a : agents) {
            std::string row(agent_size, '\0');
            field(row, 0, a.exception_status, 8);
            field(row, 56, a.gpu_id, 4);
            field(row, 60, a.location_id, 4);
            field(row, 64, a.vendor_id, 4);
            field(row, 68, a.device_id, 4);
            field(row, 88, a.gfx_target_version, 4);
            d += row;
        }
        pad();
        for (const auto& q : queues) {
            std::string row(queue_size, '\0');
            field(row, 0, q.exception_status, 8);
            field(row, 8, q.ring_base, 8);
            field(row, 40, q.queue_id, 4);
            field(row, 44, q.gpu_id, 4);
            field(row, 48, q.ring_size, 4);
            field(row, 52, q.queue_type, 4);
            d += row;
        }
        pad();
        return d;
    }
};

class CoreBuilder {
  public:
    uint16_t type = 4;      ///< ET_CORE
    uint16_t machine = 62;  ///< EM_X86_64
    uint32_t flags = 0;
    std::vector<std::string> sections;  ///< names (a null section and .shstrtab are added)
    uint64_t load_size = 0;             ///< bytes of one PT_LOAD segment after the notes

    static void put(std::string& s, uint64_t v, int n) {
        for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    static void at(std::string& s, size_t off, uint64_t v, int n) {
        for (int i = 0; i < n; ++i) s[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    }

    void note(const std::string& owner, uint32_t type_, const std::string& desc) {
        std::string n;
        put(n, owner.size() + 1, 4);
        put(n, desc.size(), 4);
        put(n, type_, 4);
        n += owner + '\0';
        while (n.size() % 4) n += '\0';
        n += desc;
        while (n.size() % 4) n += '\0';
        notes_ += n;
    }
    void prstatus(int tid, int cursig) {
        std::string d(336, '\0');
        at(d, 12, static_cast<uint64_t>(cursig), 2);
        at(d, 32, static_cast<uint64_t>(tid), 4);
        note("CORE", 1, d);
    }
    void prpsinfo(int pid, const std::string& comm, const std::string& args) {
        std::string d(136, '\0');
        at(d, 16, 1000, 4);
        at(d, 24, static_cast<uint64_t>(pid), 4);
        at(d, 28, 1, 4);
        for (size_t i = 0; i < comm.size() && i < 16; ++i) d[40 + i] = comm[i];
        for (size_t i = 0; i < args.size() && i < 80; ++i) d[56 + i] = args[i];
        note("CORE", 3, d);
    }
    void siginfo(int signo, int code, uint64_t addr) {
        std::string d(128, '\0');
        at(d, 0, static_cast<uint64_t>(signo), 4);
        at(d, 8, static_cast<uint32_t>(code), 4);
        at(d, 16, addr, 8);
        note("CORE", 0x53494749, d);
    }
    /// ROCr's KFD snapshot note: owner "AMDGPU" (namesz 7), type NT_AMDGPU_CORE_STATE (33).
    void kfdState(const KfdCoreState& k) { note("AMDGPU", 33, k.build()); }
    /// (start, end, file offset in bytes, path)
    void files(const std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>>& f) {
        std::string d;
        put(d, f.size(), 8);
        put(d, 4096, 8);
        for (auto& [s, e, o, p] : f) {
            put(d, s, 8);
            put(d, e, 8);
            put(d, o / 4096, 8);
        }
        for (auto& x : f) d += std::get<3>(x) + '\0';
        note("CORE", 0x46494c45, d);
    }

    std::string build() const {
        int phnum = load_size ? 2 : 1;
        uint64_t phoff = 64, notesOff = phoff + 56 * phnum;
        uint64_t loadOff = notesOff + notes_.size();
        std::string strtab(sections.empty() ? 0 : 1, '\0');
        std::vector<uint32_t> names;
        std::vector<std::string> all = sections;
        if (!all.empty()) all.push_back(".shstrtab");
        for (auto& n : all) {
            names.push_back(static_cast<uint32_t>(strtab.size()));
            strtab += n + '\0';
        }
        uint64_t strOff = loadOff + load_size;
        uint64_t shoff = all.empty() ? 0 : strOff + strtab.size();
        uint16_t shnum = all.empty() ? 0 : static_cast<uint16_t>(all.size() + 1);
        std::string f = std::string(
            "\x7f"
            "ELF",
            4);
        f += '\x02';  // 64-bit
        f += '\x01';  // little-endian
        f += '\x01';
        f += std::string(9, '\0');
        put(f, type, 2);
        put(f, machine, 2);
        put(f, 1, 4);
        put(f, 0, 8);
        put(f, phoff, 8);
        put(f, shoff, 8);
        put(f, flags, 4);
        put(f, 64, 2);
        put(f, 56, 2);
        put(f, static_cast<uint64_t>(phnum), 2);
        put(f, 64, 2);
        put(f, shnum, 2);
        put(f, shnum ? shnum - 1 : 0, 2);
        auto phdr = [&](uint32_t t, uint64_t off, uint64_t size) {
            put(f, t, 4);
            put(f, 4, 4);
            put(f, off, 8);
            put(f, 0x400000, 8);
            put(f, 0, 8);
            put(f, size, 8);
            put(f, size, 8);
            put(f, 1, 8);
        };
        phdr(4, notesOff, notes_.size());
        if (load_size) phdr(1, loadOff, load_size);
        f += notes_;
        f += std::string(load_size, '\xcc');
        f += strtab;
        if (shnum) {
            f += std::string(64, '\0');  // SHN_UNDEF
            for (size_t i = 0; i < all.size(); ++i) {
                std::string sh(64, '\0');
                at(sh, 0, names[i], 4);
                at(sh, 4, i + 1 == all.size() ? 3 : 1, 4);
                at(sh, 24, i + 1 == all.size() ? strOff : 0, 8);
                at(sh, 32, i + 1 == all.size() ? strtab.size() : 0, 8);
                f += sh;
            }
        }
        return f;
    }

  private:
    std::string notes_;
};

}  // namespace gpufault::testing

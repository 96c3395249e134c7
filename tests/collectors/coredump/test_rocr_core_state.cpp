// ROCr GPU cores' KFD snapshot (NT_AMDGPU_CORE_STATE): notes built byte by byte as ROCr's
// amd_core_dump.cpp writes them (KfdCoreState in core_builder.h), read through readCoreLayout
// and gpuCoreMeta as a core on disk is; and notes that lie about their counts, row sizes and
// versions. The CLI test (tests/cli/test_cores.cpp) takes one through ingest, cores and events.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "collectors/coredump/gpu_core.h"
#include "collectors/coredump/rocr_core_state.h"
#include "tests/collectors/coredump/core_builder.h"

namespace gpufault::coredump {
namespace {

using testing::CoreBuilder;
using testing::KfdCoreState;

Result<CoreLayout> layoutOf(const std::string& f) {
    return readCoreLayout(
        [&f](uint64_t off, size_t n) { return off >= f.size() ? std::string() : f.substr(off, n); },
        f.size());
}

/// A gfx942 at 0000:c3:00.0 (gpu_id 12345) whose compute queue 3 stopped on a wave's memory
/// violation (with the wave abort KFD raises with it), its device on a memory violation, and
/// an idle SDMA queue.
KfdCoreState faultingState() {
    KfdCoreState k;
    k.agents.push_back({KfdCoreState::bit(33), 12345, 0xc300, 0x1002, 0x74a1, 90402});
    k.queues.push_back(
        {KfdCoreState::bit(5) | KfdCoreState::bit(1), 0x7f3a20000000, 3, 12345, 1 << 20, 2});
    k.queues.push_back({0, 0x7f3a30000000, 4, 12345, 4096, 1});
    return k;
}

/// A ROCr GPU core as ROCr writes it: e_flags 0, no sections, the note and a PT_LOAD.
std::string rocrCore(const KfdCoreState& k) {
    CoreBuilder b;
    b.machine = 224;
    b.kfdState(k);
    b.load_size = 4096;
    return b.build();
}

GpuCoreMeta metaOf(const std::string& core) {
    auto c = layoutOf(core);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    if (!c) return {};
    EXPECT_EQ(c->kind, CoreKind::RocrGpu);
    return gpuCoreMeta(*c, "gpucore.4242");
}

TEST(RocrCoreState, AgentsQueuesAndExceptionsFromTheNote) {
    auto m = metaOf(rocrCore(faultingState()));
    EXPECT_EQ(m.pid, 4242);
    EXPECT_EQ(m.target, "gfx942");  // from the agent: e_flags is 0
    ASSERT_TRUE(m.rocr);
    const auto& s = *m.rocr;
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
    EXPECT_EQ(s.note_version, 1u);
    EXPECT_EQ(s.kfd_major, 1u);
    EXPECT_EQ(s.kfd_minor, 13u);
    EXPECT_EQ(s.r_debug, 0x7f3a10200000u);
    EXPECT_EQ(s.runtime_state, 1u);
    ASSERT_EQ(s.agents.size(), 1u);
    const auto& a = s.agents[0];
    EXPECT_EQ(a.gpu_id, 12345u);
    EXPECT_EQ(a.pci, "0000:c3:00.0");
    EXPECT_EQ(a.partition, std::nullopt);
    EXPECT_EQ(a.device_id, 0x74a1u);
    EXPECT_EQ(a.gfx_target_version, 90402u);
    EXPECT_EQ(a.target, "gfx942");
    EXPECT_EQ(a.exceptions, std::vector<std::string>{"EC_DEVICE_MEMORY_VIOLATION"});
    ASSERT_EQ(s.queues.size(), 2u);
    EXPECT_EQ(s.queues[0].queue_id, 3u);
    EXPECT_EQ(s.queues[0].gpu_id, 12345u);
    EXPECT_EQ(s.queues[0].queue_type, 2u);
    EXPECT_EQ(s.queues[0].ring_base_address, 0x7f3a20000000u);
    EXPECT_EQ(s.queues[0].ring_size, 1u << 20);
    EXPECT_EQ(s.queues[0].exceptions,
              (std::vector<std::string>{"EC_QUEUE_WAVE_ABORT", "EC_QUEUE_WAVE_MEMORY_VIOLATION"}));
    EXPECT_EQ(s.queues[1].queue_id, 4u);
    EXPECT_EQ(queueTypeName(s.queues[1].queue_type), "sdma");
    EXPECT_TRUE(s.queues[1].exceptions.empty());
    // The cause: the queue's memory violation (more specific than the device's and the abort).
    auto f = rocrFault(s);
    ASSERT_TRUE(f.cause);
    EXPECT_EQ(f.cause->name, "EC_QUEUE_WAVE_MEMORY_VIOLATION");
    EXPECT_EQ(f.cause->words, "queue memory violation");
    ASSERT_TRUE(f.queue);
    EXPECT_EQ(f.queue->queue_id, 3u);
    ASSERT_TRUE(f.agent);
    EXPECT_EQ(f.agent->pci, "0000:c3:00.0");
    // cores --json meta
    auto j = toJson(m);
    EXPECT_EQ(j["target"], "gfx942");
    EXPECT_EQ(j["rocr"]["kfd_version"], "1.13");
    EXPECT_EQ(j["rocr"]["agents"][0]["pci"], "0000:c3:00.0");
    EXPECT_EQ(j["rocr"]["agents"][0]["exception_status"], "0x100000000");
    EXPECT_EQ(j["rocr"]["queues"][0]["type"], "compute_aql");
    EXPECT_EQ(j["rocr"]["queues"][0]["exceptions"][1], "EC_QUEUE_WAVE_MEMORY_VIOLATION");
    EXPECT_FALSE(j["rocr"].contains("warnings"));
    EXPECT_FALSE(j.contains("exceptions"));  // CUDA's key, read by `show`: not used for ROCr
}

// The entry sizes stride the rows (kfd_ioctl.h: larger than the struct when KFD added fields);
// a partition in location_id[31:28]; a device-only exception names the agent.
TEST(RocrCoreState, LargerRowsAPartitionAndADeviceException) {
    KfdCoreState k;
    k.agent_size = 136;
    k.queue_size = 80;
    k.runtime_size = 24;  // a larger kfd_runtime_info: padded to 8 before the agents
    k.agents.push_back({0, 111, 0x0a00, 0x1002, 0x740f, 90010});
    k.agents.push_back({KfdCoreState::bit(33), 222, (2u << 28) | 0x4308, 0x1002, 0x74a1, 90402});
    k.queues.push_back({0, 0x1000, 7, 111, 4096, 2});
    k.queues.push_back({KfdCoreState::bit(1), 0x2000, 8, 222, 4096, 2});
    auto m = metaOf(rocrCore(k));
    ASSERT_TRUE(m.rocr);
    const auto& s = *m.rocr;
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
    ASSERT_EQ(s.agents.size(), 2u);
    EXPECT_EQ(s.agents[0].pci, "0000:0a:00.0");
    EXPECT_EQ(s.agents[0].target, "gfx90a");
    EXPECT_EQ(s.agents[1].pci, "0000:43:01.0");
    EXPECT_EQ(s.agents[1].partition, 2u);
    ASSERT_EQ(s.queues.size(), 2u);
    EXPECT_EQ(s.queues[1].queue_id, 8u);
    EXPECT_EQ(s.queues[1].gpu_id, 222u);
    auto f = rocrFault(s);
    ASSERT_TRUE(f.cause);
    EXPECT_EQ(f.cause->name, "EC_DEVICE_MEMORY_VIOLATION");  // above the queue's wave abort
    EXPECT_EQ(f.queue, nullptr);
    ASSERT_TRUE(f.agent);
    EXPECT_EQ(f.agent->gpu_id, 222u);
    EXPECT_EQ(m.target, "gfx942");  // the faulting agent's
}

// The newest writer (rocm-systems 2d4834a4) writes exception_status 0: no cause, and with two
// agents of different targets neither names the core's; with one agent, it does.
TEST(RocrCoreState, NoExceptionNamesNoCause) {
    KfdCoreState k;
    k.kfd_minor = 18;
    k.agents.push_back({0, 1, 0x0300, 0x1002, 0, 110000});
    k.agents.push_back({0, 2, 0x0400, 0x1002, 0, 90402});
    k.queues.push_back({0, 0x1000, 1, 1, 4096, 2});
    auto m = metaOf(rocrCore(k));
    ASSERT_TRUE(m.rocr);
    EXPECT_FALSE(rocrFault(*m.rocr).cause);
    EXPECT_EQ(rocrFault(*m.rocr).agent, nullptr);
    EXPECT_EQ(m.target, std::nullopt);
    k.agents.pop_back();
    m = metaOf(rocrCore(k));
    ASSERT_TRUE(m.rocr);
    EXPECT_EQ(m.target, "gfx1100");
    ASSERT_TRUE(rocrFault(*m.rocr).agent);
    EXPECT_EQ(rocrFault(*m.rocr).agent->gpu_id, 1u);
}

TEST(RocrCoreState, Names) {
    EXPECT_EQ(gfxTargetName(90010), "gfx90a");
    EXPECT_EQ(gfxTargetName(90402), "gfx942");
    EXPECT_EQ(gfxTargetName(100300), "gfx1030");
    EXPECT_EQ(gfxTargetName(110000), "gfx1100");
    EXPECT_EQ(gfxTargetName(120001), "gfx1201");
    EXPECT_EQ(gfxTargetName(0), "");
    EXPECT_EQ(gfxTargetName(91600), "");  // minor 16: no hex digit
    EXPECT_EQ(kfdExceptionName(5), "EC_QUEUE_WAVE_MEMORY_VIOLATION");
    EXPECT_EQ(kfdExceptionName(33), "EC_DEVICE_MEMORY_VIOLATION");
    EXPECT_EQ(kfdExceptionName(0), "");
    EXPECT_EQ(kfdExceptionName(7), "");
    EXPECT_EQ(
        kfdExceptionNames(KfdCoreState::bit(16) | KfdCoreState::bit(10) | KfdCoreState::bit(64)),
        (std::vector<std::string>{"EC_10", "EC_QUEUE_PACKET_DISPATCH_DIM_INVALID", "EC_64"}));
    // informational codes name no cause
    EXPECT_FALSE(
        kfdMostSpecific(KfdCoreState::bit(31) | KfdCoreState::bit(36) | KfdCoreState::bit(48)));
    EXPECT_EQ(kfdMostSpecific(KfdCoreState::bit(6) | KfdCoreState::bit(2))->name,
              "EC_QUEUE_WAVE_APERTURE_VIOLATION");
    EXPECT_EQ(queueTypeName(3), "sdma_xgmi");
    EXPECT_EQ(queueTypeName(9), "type 9");
}

bool mentions(const RocrCoreState& s, std::string_view what) {
    for (const auto& w : s.warnings)
        if (w.find(what) != std::string::npos) return true;
    return false;
}

// Hostile notes: counts and sizes that exceed the note, zero and tiny entry sizes, a runtime
// size past the end, versions the reader does not know. What fits is read, the rest is said
// in warnings; nothing is read outside the note (the rows are views into it).
TEST(RocrCoreState, CountsBeyondTheNoteReadWhatFits) {
    auto k = faultingState();
    k.n_queues = 1000000;  // two rows written
    auto s = readRocrCoreState(k.build());
    EXPECT_EQ(s.queues_stated, 1000000u);
    EXPECT_EQ(s.agents.size(), 1u);
    EXPECT_EQ(s.queues.size(), 2u);
    EXPECT_TRUE(mentions(s, "states 1000000 queue rows of 64 bytes")) << s.warnings.front();
    k = faultingState();
    k.n_agents = 0xffffffffu;  // its queues cannot be found
    s = readRocrCoreState(k.build());
    EXPECT_LE(s.agents.size(), kMaxRocrAgents);
    EXPECT_TRUE(s.queues.empty());
    EXPECT_TRUE(mentions(s, "queues not read"));
}

// Hostile review 151, LOW 6: offsets were the note's only; a user opening the core needs the
// file's (the note's descriptor found in the built core by its bytes).
TEST(RocrCoreState, WarningsNameTheFileOffsetBesideTheNotes) {
    auto k = faultingState();
    k.n_queues = 1000000;
    CoreBuilder b;
    b.machine = 224;
    b.kfdState(k);
    const std::string core = b.build();
    const size_t desc = core.find(k.build());
    ASSERT_NE(desc, std::string::npos);
    auto m = metaOf(core);
    ASSERT_TRUE(m.rocr);
    ASSERT_FALSE(m.rocr->warnings.empty());
    const std::string& w = m.rocr->warnings.front();
    unsigned long long in_note = 0, in_file = 0;
    auto at = w.find("at its offset ");
    ASSERT_NE(at, std::string::npos) << w;
    ASSERT_EQ(
        std::sscanf(w.c_str() + at, "at its offset %llu (file offset %llu)", &in_note, &in_file), 2)
        << w;
    EXPECT_GT(in_note, 40u);  // after the header, the runtime info and the agent row
    EXPECT_EQ(in_file, desc + in_note) << w;
}

TEST(RocrCoreState, ZeroSmallAndHugeEntrySizes) {
    auto k = faultingState();
    k.agent_size = 0;
    auto s = readRocrCoreState(k.build());
    EXPECT_TRUE(s.agents.empty());
    EXPECT_TRUE(mentions(s, "agent rows of 0 bytes"));
    EXPECT_EQ(s.queues.size(), 2u);  // 0 bytes of agents: the queues follow the runtime info
    k = faultingState();
    k.queue_size = 40;  // too short for queue_id (40) and the rest
    s = readRocrCoreState(k.build());
    EXPECT_EQ(s.agents.size(), 1u);
    EXPECT_TRUE(s.queues.empty());
    EXPECT_TRUE(mentions(s, "queue rows of 40 bytes, fewer than the 56"));
    k = faultingState();
    k.agent_size = 8192;
    s = readRocrCoreState(k.build());
    EXPECT_TRUE(s.agents.empty());
    EXPECT_TRUE(mentions(s, "more than 4096"));
    EXPECT_EQ(s.queues.size(), 2u);  // their extent was within the note
}

TEST(RocrCoreState, RuntimeInfoPastTheEnd) {
    auto k = faultingState();
    k.runtime_size = uint64_t{1} << 62;
    auto s = readRocrCoreState(k.build());
    EXPECT_TRUE(s.agents.empty());
    EXPECT_TRUE(s.queues.empty());
    EXPECT_TRUE(mentions(s, "runs past the note"));
}

TEST(RocrCoreState, UnknownVersionsKeepWhatTheCoreStatesElsewhere) {
    auto k = faultingState();
    k.note_version = 2;
    CoreBuilder b;
    b.machine = 224;
    b.flags = 0x3f;  // gfx90a in e_flags: the only target then
    b.kfdState(k);
    auto m = metaOf(b.build());
    EXPECT_EQ(m.pid, 4242);
    EXPECT_EQ(m.target, "gfx90a");
    ASSERT_TRUE(m.rocr);
    EXPECT_EQ(m.rocr->note_version, 2u);
    EXPECT_TRUE(m.rocr->agents.empty());
    EXPECT_TRUE(mentions(*m.rocr, "note version 2 is not known"));
    EXPECT_EQ(toJson(m)["rocr"]["warnings"].size(), 1u);
    k = faultingState();
    k.kfd_major = 2;
    auto s = readRocrCoreState(k.build());
    EXPECT_TRUE(s.agents.empty());
    EXPECT_TRUE(mentions(s, "KFD ABI version 2.13 is not known"));
}

TEST(RocrCoreState, EveryPrefixAndRandomBytesAreSafe) {
    const auto whole = faultingState().build();
    for (size_t n = 0; n <= whole.size(); ++n) {
        auto s = readRocrCoreState(std::string_view(whole).substr(0, n));
        EXPECT_LE(s.agents.size(), 1u);
        EXPECT_LE(s.queues.size(), 2u);
        if (n < whole.size()) {
            EXPECT_FALSE(s.warnings.empty()) << n;
        }
    }
    EXPECT_TRUE(readRocrCoreState(whole).warnings.empty());
    std::mt19937 rng(4);
    for (int i = 0; i < 2000; ++i) {
        auto b = whole;
        for (int k = 0; k < 6; ++k) b[rng() % b.size()] = static_cast<char>(rng());
        if (i % 2) b[rng() % 40] = static_cast<char>(rng());  // the header
        auto s = readRocrCoreState(b);
        EXPECT_LE(s.agents.size(), kMaxRocrAgents);
        EXPECT_LE(s.queues.size(), kMaxRocrQueues);
    }
}

// A core without the note reads as before: pid from the name, target from e_flags, no `rocr`.
TEST(RocrCoreState, ACoreWithoutTheNote) {
    CoreBuilder b;
    b.machine = 224;
    b.flags = 0x3f;
    auto m = metaOf(b.build());
    EXPECT_FALSE(m.rocr);
    EXPECT_EQ(m.target, "gfx90a");
    EXPECT_FALSE(toJson(m).contains("rocr"));
}

}  // namespace
}  // namespace gpufault::coredump

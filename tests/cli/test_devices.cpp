// `gpufault devices` on real-shaped sysfs/proc trees: KFD topology (CPU and GPU nodes) and the
// NVIDIA module's information file as an H200 printed it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <tuple>
#include <nlohmann/json.hpp>

#include "collectors/device/sysfs.h"
#include "tests/support/process.h"

using namespace gpufault;
using namespace gpufault::testing;

namespace {

void put(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    writeFile(path, text);
}

}  // namespace

TEST(KfdProperties, TargetAndPciFromTopology) {
    // kfd_topology.c node_show(): "%s %llu\n" pairs.
    auto n = parseKfdProperties(
        "cpu_cores_count 0\nsimd_count 416\nmem_banks_count 1\ngfx_target_version 90010\n"
        "vendor_id 4098\ndevice_id 29711\nlocation_id 50688\ndomain 0\ndrm_render_minor 128\n"
        "garbage line here\n");
    EXPECT_TRUE(n.isGpu());
    EXPECT_EQ(n.target(), "gfx90a");
    EXPECT_EQ(n.pci(), "0000:c6:00.0");
    EXPECT_EQ(n.get("drm_render_minor"), 128u);
    EXPECT_EQ(parseKfdProperties("gfx_target_version 110501\nsimd_count 80\n").target(), "gfx1151");
    EXPECT_EQ(parseKfdProperties("gfx_target_version 90402\nsimd_count 1216\n").target(), "gfx942");
    EXPECT_EQ(parseKfdProperties("gfx_target_version 100300\nsimd_count 80\n").target(), "gfx1030");
    auto cpu = parseKfdProperties("cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n");
    EXPECT_FALSE(cpu.isGpu());
    EXPECT_FALSE(cpu.target());
    EXPECT_FALSE(cpu.pci());
}

TEST(NvidiaModels, ComputeCapabilityFromTheModelName) {
    // Model names as /proc/driver/nvidia/gpus/*/information prints them.
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA H200"), "sm_90");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA H100 80GB HBM3"), "sm_90");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA A100-SXM4-80GB"), "sm_80");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA A10G"), "sm_86");
    EXPECT_EQ(nvidiaTargetOfModel("Tesla V100-SXM2-16GB"), "sm_70");
    EXPECT_EQ(nvidiaTargetOfModel("Tesla T4"), "sm_75");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA L40S"), "sm_89");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA B200"), "sm_100");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA GeForce RTX 4090"), "sm_89");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA GeForce RTX 3090 Ti"), "sm_86");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA GeForce RTX 5090"), "sm_120");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA RTX A6000"), "sm_86");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA RTX 5000 Ada Generation"), "sm_89");
    EXPECT_EQ(nvidiaTargetOfModel("NVIDIA RTX PRO 6000 Blackwell Server Edition"), "sm_120");
    // Not guessed: a Turing Quadro whose number looks like a GeForce series, unknown names.
    EXPECT_FALSE(nvidiaTargetOfModel("Quadro RTX 5000"));
    EXPECT_FALSE(nvidiaTargetOfModel("NVIDIA Graphics Device"));
    EXPECT_FALSE(nvidiaTargetOfModel(""));
}

TEST(Devices, ListsAmdNodesAndTheH200FromFakeTrees) {
    TempDir t;
    std::string sys = t.file("sys"), proc = t.file("proc");
    std::string nodes = sys + "/class/kfd/kfd/topology/nodes";
    put(nodes + "/0/properties", "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n");
    put(nodes + "/1/properties",
        "simd_count 416\ngfx_target_version 90010\nlocation_id 50688\ndomain 0\n"
        "drm_render_minor 128\n");
    put(nodes + "/2/properties",
        "simd_count 80\ngfx_target_version 110501\nlocation_id 768\ndomain 0\n"
        "drm_render_minor 129\n");
    put(sys + "/bus/pci/devices/0000:c6:00.0/product_name", "AMD Instinct MI210\n");
    put(sys + "/bus/pci/devices/0000:c6:00.0/vbios_version", "113-D67301-063\n");
    put(sys + "/bus/pci/devices/0000:c6:00.0/mem_info_vram_total", "68702699520\n");
    std::string data = std::string(GPUFAULT_SOURCE_DIR) + "/tests/data/device/h200-proc";
    put(proc + "/driver/nvidia/gpus/0000:00:06.0/information", readFile(data + "/information"));
    put(proc + "/driver/nvidia/version", readFile(data + "/version"));

    auto r = run({GPUFAULT_BIN, "devices", "--json", "--sysfs-root", sys, "--proc-root", proc});
    ASSERT_EQ(r.status, 0) << r.err;
    std::vector<nlohmann::json> d;
    for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
        d.push_back(nlohmann::json::parse(r.out.substr(at, nl - at)));
    ASSERT_EQ(d.size(), 3u) << r.out;
    EXPECT_EQ(d[0]["node"], 1);
    EXPECT_EQ(d[0]["target"], "gfx90a");
    EXPECT_EQ(d[0]["pci"], "0000:c6:00.0");
    EXPECT_EQ(d[0]["name"], "AMD Instinct MI210");
    EXPECT_EQ(d[0]["vbios"], "113-D67301-063");
    EXPECT_EQ(d[0]["vram_total"], 68702699520u);
    EXPECT_EQ(d[0]["render_minor"], 128);
    EXPECT_EQ(d[1]["target"], "gfx1151");
    EXPECT_EQ(d[1]["pci"], "0000:03:00.0");
    EXPECT_EQ(d[2]["vendor"], "nvidia");
    EXPECT_EQ(d[2]["name"], "NVIDIA H200");
    EXPECT_EQ(d[2]["pci"], "0000:00:06.0");
    EXPECT_EQ(d[2]["uuid"], "GPU-7733b9c3-28c9-3284-25e8-a4691857ae53");
    EXPECT_EQ(d[2]["vbios"], "96.00.a5.00.1a");
    EXPECT_EQ(d[2]["driver"], "580.159.04");
    EXPECT_EQ(d[2]["target"], "sm_90");  // from the model name: /proc states no compute capability

    auto none = run({GPUFAULT_BIN, "devices", "--sysfs-root", t.file("empty"), "--proc-root",
                     t.file("empty")});
    EXPECT_EQ(none.status, 1);
    EXPECT_NE(none.err.find("no GPU found"), std::string::npos);
}

TEST(Preflight, FaultsSinceTheLastGoodResetVramAndProcessesMakeADeviceDirty) {
    TempDir t;
    std::string sys = t.file("sys"), proc = t.file("proc"), db = t.file("g.db");
    std::string nodes = sys + "/class/kfd/kfd/topology/nodes";
    for (auto [n, loc, id] : {std::tuple{1, "50688", "17183"}, std::tuple{2, "768", "29361"}}) {
        put(fmt::format("{}/{}/properties", nodes, n),
            fmt::format("simd_count 416\ngfx_target_version 90010\nlocation_id {}\ndomain 0\n", loc));
        put(fmt::format("{}/{}/gpu_id", nodes, n), std::string(id) + "\n");
    }
    put(sys + "/bus/pci/devices/0000:c6:00.0/mem_info_vram_used", "3221225472\n");  // 3 GiB
    put(sys + "/bus/pci/devices/0000:03:00.0/mem_info_vram_used", "16777216\n");    // 16 MiB
    // A training process on device 1 (gpu_id 17183) and a monitoring agent on both.
    put(sys + "/class/kfd/kfd/proc/4242/vram_17183", "0\n");
    put(proc + "/4242/comm", "python3\n");
    put(sys + "/class/kfd/kfd/proc/900/vram_17183", "0\n");
    put(sys + "/class/kfd/kfd/proc/900/vram_29361", "0\n");
    put(proc + "/900/comm", "amd-smi\n");
    // The kernel log: device c6 faulted after its last successful reset; device 03 faulted
    // before its successful reset only.
    const std::string c6 = "amdgpu 0000:c6:00.0: amdgpu: ", d3 = "amdgpu 0000:03:00.0: amdgpu: ";
    writeFile(t.file("dmesg.log"),
              "[  50.0] " + d3 + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)\n"
              "[  50.1] " + d3 + "  in page starting at address 0x00007f0000000000 from IH client 0x1b (UTCL2)\n"
              "[  60.0] " + d3 + "GPU reset begin!\n"
              "[  61.0] " + d3 + "GPU reset(1) succeeded!\n"
              "[  70.0] " + c6 + "GPU reset begin!\n"
              "[  71.0] " + c6 + "GPU reset(1) succeeded!\n"
              "[ 100.0] " + c6 + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)\n"
              "[ 100.1] " + c6 + "  in page starting at address 0x00007f6459a00000 from IH client 0x1b (UTCL2)\n"
              "[ 100.2] " + c6 + "VM_L2_PROTECTION_FAULT_STATUS:0x00301031\n");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q", t.file("dmesg.log")}).status, 0);

    auto r = run({GPUFAULT_BIN, "--db", db, "preflight", "--sysfs-root", sys, "--proc-root", proc});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_EQ(r.out,
              "0000:c6:00.0 gfx90a (node 1) DIRTY\n"
              "  - 1 fault record since its last successful GPU reset (last: amdgpu_page_fault " +
                  t.file("dmesg.log") + ":7)\n"
              "  - VRAM in use: 3,221,225,472 B (3.00 GiB) (limit 1024 MiB)\n"
              "  - KFD process 4242 (python3) holds memory on it\n"
              "0000:03:00.0 gfx90a (node 2) clean\n");
    // With the training process gone, less VRAM in use and no store: clean, history unchecked.
    std::filesystem::remove_all(sys + "/class/kfd/kfd/proc/4242");
    put(sys + "/bus/pci/devices/0000:c6:00.0/mem_info_vram_used", "1048576\n");
    auto clean = run({GPUFAULT_BIN, "--db", t.file("none.db"), "preflight", "--json",
                      "--sysfs-root", sys, "--proc-root", proc});
    EXPECT_EQ(clean.status, 0) << clean.out;
    auto first = nlohmann::json::parse(clean.out.substr(0, clean.out.find('\n')));
    EXPECT_EQ(first["verdict"], "clean");
    EXPECT_EQ(first["unchecked"][0], "fault history (no store at " + t.file("none.db") + ")");
    EXPECT_EQ(run({GPUFAULT_BIN, "preflight", "--sysfs-root", t.file("x"), "--proc-root",
                   t.file("x")}).status,
              2);
}

// The store keeps a held reset record (the ring timeout of line 3) after the page fault of
// line 4. The last fault is still line 4's (line order within a log, not the order the
// records were stored; it said `last: gpu_reset …:3`).
TEST(Preflight, TheLastFaultOfALogIsItsLastLineNotTheLastStored) {
    TempDir t;
    std::string sys = t.file("sys"), db = t.file("g.db");
    put(sys + "/class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 416\ngfx_target_version 90010\nlocation_id 50688\ndomain 0\n");
    put(sys + "/class/kfd/kfd/topology/nodes/1/gpu_id", "17183\n");
    put(sys + "/bus/pci/devices/0000:c6:00.0/mem_info_vram_used", "1048576\n");
    const std::string c6 = "amdgpu 0000:c6:00.0: amdgpu: ";
    writeFile(t.file("dmesg.log"),
              "[  70.0] " + c6 + "GPU reset begin!\n"
              "[  71.0] " + c6 + "GPU reset(1) succeeded!\n"
              "[  80.0] " + c6 + "ring gfx timeout\n"
              "[ 100.0] " + c6 + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)\n"
              "[ 100.1] " + c6 + "  in page starting at address 0x00007f6459a00000 from IH client 0x1b (UTCL2)\n");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q", t.file("dmesg.log")}).status, 0);
    // the premise: the ring timeout (line 3) was stored after the fault (line 4)
    auto q = run({GPUFAULT_BIN, "--db", db, "query", "--csv",
                  "SELECT line FROM evidence WHERE kind != 'gpu_reset' OR json_extract(attrs, "
                  "'$.trigger') = 'ring_timeout' ORDER BY id"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out, "line\n4\n3\n");

    auto r = run({GPUFAULT_BIN, "--db", db, "preflight", "--sysfs-root", sys, "--proc-root",
                  t.file("proc")});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_EQ(r.out,
              "0000:c6:00.0 gfx90a (node 1) DIRTY\n"
              "  - 2 fault records since its last successful GPU reset (last: amdgpu_page_fault " +
                  t.file("dmesg.log") + ":4)\n");
}

// A machine without a GPU: --json still prints one object saying so (exit 2, cannot tell).
TEST(Devices, PreflightJsonWithoutAGpuSaysSo) {
    TempDir t;
    std::string sys = t.file("sys");
    // sysfs with a CPU-only KFD topology and no DRM card: no GPU.
    put(sys + "/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  t.file("none.db"),
                  "preflight",
                  "--json",
                  "--sysfs-root",
                  sys,
                  "--proc-root",
                  t.file("proc")});
    EXPECT_EQ(r.status, 2) << r.err;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["verdict"], "unknown");
    EXPECT_TRUE(j["pci"].is_null());
    EXPECT_EQ(j["unchecked"], nlohmann::json::array({"no GPU found"}));
    EXPECT_EQ(j["sysfs_root"], sys);
    EXPECT_NE(r.err.find("no GPU found: cannot tell"), std::string::npos) << r.err;
}

TEST(Devices, RecordedOnceAndLinkedToRecordsByPciAndNode) {
    TempDir t;
    std::string sys = t.file("sys"), db = t.file("g.db");
    std::string nodes = sys + "/class/kfd/kfd/topology/nodes";
    put(nodes + "/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
    // The GPU of the real fixture 012: PCI 0000:0a:00.0 (location_id 0x0a00), ROCr node-1.
    put(nodes + "/1/properties",
        "simd_count 96\ngfx_target_version 110000\nlocation_id 2560\ndomain 0\n");
    for (int i = 0; i < 2; ++i) {  // recording again refreshes the row
        auto r = run({GPUFAULT_BIN, "--db", db, "devices", "--record", "--sysfs-root", sys,
                      "--proc-root", t.file("proc")});
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.err.find("1 device recorded in " + db), std::string::npos) << r.err;
    }
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q",
                   std::string(GPUFAULT_SOURCE_DIR) +
                       "/tests/data/real/012-llamabench-rocr-fault-plus-journalctl.txt"})
                  .status,
              0);
    auto q = run({GPUFAULT_BIN, "--db", db, "query", "--csv",
                  "SELECT e.kind, l.link, d.pci, d.node, d.target, (SELECT count(*) FROM devices) "
                  "FROM evidence_device l JOIN evidence e ON e.id = l.evidence_id JOIN devices d "
                  "ON d.id = l.device_id ORDER BY e.id"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out,
              "kind,link,pci,node,target,(SELECT count(*) FROM devices)\n"
              "rocr_memory_fault,node,0000:0a:00.0,1,gfx1100,1\n"
              "amdgpu_page_fault,pci,0000:0a:00.0,1,gfx1100,1\n");
}

// A tree given with --sysfs-root/--proc-root is read as files only: a FIFO is not waited on, a
// device node or a huge file is not read, forged fields are refused (hostile review, defect 3).
TEST(Devices, HostileTreesAreReadAsSmallRegularFilesOnly) {
    TempDir t;
    std::string sys = t.file("sys"), proc = t.file("proc");
    std::string nodes = sys + "/class/kfd/kfd/topology/nodes";
    put(nodes + "/1/properties",
        "simd_count 416\ngfx_target_version 90010\nlocation_id 50688\ndomain 0\n");
    std::filesystem::create_directories(nodes + "/2");
    ASSERT_EQ(::symlink("/dev/zero", (nodes + "/2/properties").c_str()), 0);
    std::filesystem::create_directories(nodes + "/3");
    ASSERT_EQ(::mkfifo((nodes + "/3/properties").c_str(), 0600), 0);
    put(sys + "/bus/pci/devices/0000:c6:00.0/product_name", std::string(200 * 1024, 'A') + "\n");
    std::string gpus = proc + "/driver/nvidia/gpus";
    put(gpus + "/0000:00:06.0/information",
        "Model: \t\t NVIDIA H200\nBus Location: \t ../../../etc\nDevice Minor: \t 99999999999999\n");
    std::filesystem::create_directories(gpus + "/0000:00:07.0");
    ASSERT_EQ(::mkfifo((gpus + "/0000:00:07.0/information").c_str(), 0600), 0);

    auto r = run({GPUFAULT_BIN, "devices", "--json", "--sysfs-root", sys, "--proc-root", proc},
                 30);  // a wait on a FIFO would end at 30 s (status 137)
    ASSERT_EQ(r.status, 0) << r.err;
    std::vector<nlohmann::json> d;
    for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
        d.push_back(nlohmann::json::parse(r.out.substr(at, nl - at)));
    ASSERT_EQ(d.size(), 2u) << r.out;  // node 1 and the H200; nodes 2 and 3 are not read
    EXPECT_EQ(d[0]["node"], 1);
    EXPECT_EQ(d[0]["name"], "");  // a 200 KiB product_name is not a name
    EXPECT_EQ(d[1]["name"], "NVIDIA H200");
    EXPECT_EQ(d[1]["pci"], "");  // `../../../etc` is no PCI address
    EXPECT_FALSE(d[1].contains("node") && d[1]["node"].is_number() &&
                 d[1]["node"].get<int64_t>() > 254)
        << d[1].dump();
}

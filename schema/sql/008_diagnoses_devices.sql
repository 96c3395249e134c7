-- Devices and diagnoses (issue 5). Numbered 008: 006 and 007 are taken by work in parallel.

-- GPUs as sysfs/proc described them (`gpufault devices --record`, collectors/device): one row per
-- (host, vendor, PCI address, node), updated when recorded again. Evidence links to them through
-- view evidence_device.
CREATE TABLE devices (
    id           INTEGER PRIMARY KEY,
    host         TEXT NOT NULL,     -- hostname when recorded
    boot_id      TEXT,
    taken_at     TEXT NOT NULL,     -- UTC, ISO 8601 (last time recorded)
    vendor       TEXT NOT NULL,     -- amd | nvidia
    node         INTEGER,           -- KFD topology node (ROCr "GPU node-N"), NVIDIA device minor
    pci          TEXT,              -- DDDD:BB:DD.F
    target       TEXT,              -- gfx90a, … (amd); "" when unknown
    name         TEXT,
    uuid         TEXT,
    vbios        TEXT,
    driver       TEXT,
    render_minor INTEGER,
    vram_total   INTEGER            -- bytes
);
CREATE UNIQUE INDEX devices_identity ON devices(host, vendor, ifnull(pci, ''), ifnull(node, -1));

-- A record names its GPU by PCI address (kernel records) or by ROCr's node-N (runtime records;
-- libhsakmt's numbering equals the KFD node only when the process saw every node: `link` says
-- which was used).
CREATE VIEW evidence_device AS
    SELECT e.id AS evidence_id, d.id AS device_id, 'pci' AS link
      FROM evidence e JOIN devices d ON d.pci = e.pci
     WHERE e.pci IS NOT NULL
    UNION ALL
    SELECT e.id, d.id, 'node'
      FROM evidence e JOIN devices d ON d.vendor = 'amd' AND d.node = e.gpu_node
     WHERE e.pci IS NULL AND e.gpu_node IS NOT NULL;

-- Diagnoses (analysis/diagnosis.h): why a crash may be a missing code object. One row per
-- finding; all rows of one diagnosis share the record that triggered it (a missing_code_object
-- record or a core's coredump record) and `inputs`, a digest of what it was computed from
-- (modules, their sizes and times, device targets): ingest recomputes it when that changes.
CREATE TABLE diagnoses (
    id            INTEGER PRIMARY KEY,
    evidence_id   INTEGER NOT NULL REFERENCES evidence(id),
    rule          TEXT NOT NULL,     -- the trigger rule (docs/code-objects.md "Diagnosis")
    why           TEXT NOT NULL,     -- the trigger, in words
    inputs        TEXT NOT NULL,
    n             INTEGER NOT NULL,  -- order of the findings
    verdict       TEXT NOT NULL,     -- device | no_code | covered | mislabeled | library_missing |
                                     -- library_present | modules | unreadable | no_device
    module        TEXT,              -- file inventoried (or the runtime's own listing)
    bundle        INTEGER,           -- 1-based, as `gpufault codeobj` numbers them
    offset        INTEGER,           -- file offset of the bundle
    has           TEXT,              -- JSON array: the targets it carries
    kernels       TEXT,              -- JSON array: its kernels (demangled)
    device_target TEXT,              -- the device's target (gfx1030, sm_90)
    device        TEXT,              -- which device (PCI address, node-N), "" when not known
    device_from   TEXT,              -- how the device was found
    detail        TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX diagnoses_by_evidence ON diagnoses(evidence_id);

# Device check of libgpufault-preload.so under PyTorch (docs/preload.md): tensors, then the
# caching allocator's segments (torch.cuda.memory_snapshot), which the shim should record.
import os
import torch

print(f"pid={os.getpid()} torch={torch.__version__} cuda={torch.version.cuda}", flush=True)
ts = {
    "x": torch.empty(1 << 20, dtype=torch.uint8, device="cuda"),
    "y": torch.empty((4096, 4096), dtype=torch.float32, device="cuda"),
    "z": torch.empty(300 << 20, dtype=torch.uint8, device="cuda"),
    "w": torch.empty(1000, dtype=torch.float16, device="cuda"),
}
for name, t in ts.items():
    print(f"tensor-{name} ptr=0x{t.data_ptr():x} size={t.numel() * t.element_size()}")
(ts["y"] @ ts["y"]).sum().item()
torch.cuda.synchronize()
for s in torch.cuda.memory_snapshot():
    print(f"segment ptr=0x{s['address']:x} size={s['total_size']} type={s['segment_type']}")
del ts["z"]
torch.cuda.empty_cache()
print("emptied", flush=True)

#!/bin/bash
# The device run behind docs/preload.md ("On a real H200"). Run from the repository root with
# the shim (and a libunwind.so.8 beside it) in $SHIM_DIR; writes into $OUT.
set -u
D=${D:-tests/data/device/preload}
SHIM=$SHIM_DIR/libgpufault-preload.so
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
nvcc --version | tail -1 >> "$OUT/device.txt"
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> "$OUT/device.txt"
nvcc -O2 -arch=sm_90 $D/alloc_probe.cu -o $W/probe_static -lcuda || exit 1
nvcc -O2 -arch=sm_90 -cudart shared $D/alloc_probe.cu -o $W/probe_shared -lcuda || exit 1
for v in static shared; do
  mkdir -p $W/$v
  GPUFAULT_ALLOC_DIR=$W/$v LD_PRELOAD=$SHIM $W/probe_$v > $W/$v/stdout.txt 2>&1; echo "rc=$?" >> $W/$v/stdout.txt
done
for v in caching expandable; do
  mkdir -p $W/torch-$v
  conf=""; [ $v = expandable ] && conf="expandable_segments:True"
  PYTORCH_CUDA_ALLOC_CONF=$conf GPUFAULT_ALLOC_DIR=$W/torch-$v LD_PRELOAD=$SHIM \
    python3 $D/torch_probe.py > $W/torch-$v/stdout.txt 2>&1; echo "rc=$?" >> $W/torch-$v/stdout.txt
done
# Cost per cudaMalloc+cudaFree pair (64 KiB), without and with the shim (stacks of 8 and 0).
for i in 1 2 3; do
  $W/probe_static bench 20000 | sed "s/^/plain /"
  GPUFAULT_ALLOC_DIR=$W LD_PRELOAD=$SHIM $W/probe_static bench 20000 | sed "s/^/shim /"
  GPUFAULT_ALLOC_FRAMES=0 GPUFAULT_ALLOC_DIR=$W LD_PRELOAD=$SHIM $W/probe_static bench 20000 | sed "s/^/shim-noframes /"
done > "$OUT/bench.txt" 2>&1
rm -f $W/gpufault-alloc.*.log
tar -C $W -czf "$OUT/preload-device.tar.gz" static shared torch-caching torch-expandable
ls -la $W/*/ > "$OUT/listing.txt"

"""What this node runs on and how fast it is (fields of the PeerRecord)."""
from __future__ import annotations

import os
import platform
import time

import psutil

from swarmnode.protocol import DeviceInfo


def detect_device() -> DeviceInfo:
    """The accelerator torch sees, else the CPU."""
    import torch

    cores = os.cpu_count() or 1
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        props = [torch.cuda.get_device_properties(i) for i in range(count)]
        return DeviceInfo(
            kind="cuda",
            name=props[0].name,
            accelerator_count=count,
            memory_bytes=sum(p.total_memory for p in props),
            cpu_cores=cores,
        )
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return DeviceInfo(kind="mps", name="Apple GPU", accelerator_count=1,
                          memory_bytes=psutil.virtual_memory().total, cpu_cores=cores)
    return cpu_device()


def cpu_device() -> DeviceInfo:
    """The CPU and the machine's memory (no torch: what a node without a model reports)."""
    return DeviceInfo(
        kind="cpu",
        name=(platform.processor() or platform.machine() or "cpu")[:128],
        accelerator_count=0,
        memory_bytes=psutil.virtual_memory().total,
        cpu_cores=os.cpu_count() or 1,
    )


def gpu_memory_in_use(device: str) -> tuple[int, int] | None:
    """(bytes in use on a CUDA device, its total bytes), or None for any other device. In use is
    total - free as the driver counts it (torch.cuda.mem_get_info): every process on the GPU,
    a generator process beside the trainer's included."""
    if not device.startswith("cuda"):
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info(torch.device(device))
    return total - free, total


def process_peak_reserved(device: str) -> int:
    """The most bytes this process's CUDA caching allocator held on `device` so far (0 on a CPU)."""
    if not device.startswith("cuda"):
        return 0
    import torch

    return int(torch.cuda.max_memory_reserved(torch.device(device))) if torch.cuda.is_available() else 0


def matmul_gflops(device_kind: str, size: int = 512, min_seconds: float = 0.3) -> float:
    """Measured dense fp32 matmul throughput: 2*n^3 flops per product, over >= min_seconds.

    Blocking (runs torch): call it from a worker thread, never on the event loop.
    """
    import torch

    device = "cuda" if device_kind == "cuda" else "cpu"
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    (a @ b).sum().item()  # warm-up
    runs, start = 0, time.perf_counter()
    while True:
        c = a @ b
        runs += 1
        if device == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            break
    del c
    return 2.0 * size**3 * runs / elapsed / 1e9


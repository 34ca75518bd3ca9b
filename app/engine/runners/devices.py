"""Which devices this machine can run models on, for the settings (asked once, on the
engine thread: it imports torch)."""

from __future__ import annotations


def available_devices() -> list[str]:
    """``["auto", "cpu"]`` plus ``cuda`` / ``cuda:N`` per visible GPU and ``mps`` on Apple
    silicon: only what ``resolve_device`` would accept here."""
    import torch

    devices = ["auto", "cpu"]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count:
        devices.append("cuda")
        if count > 1:
            devices += [f"cuda:{i}" for i in range(count)]
    if torch.backends.mps.is_available():
        devices.append("mps")
    return devices

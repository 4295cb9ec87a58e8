"""HIP on an AMD APU: the message's total is the VRAM aperture, its free memory counts GTT.

On APUs with unified memory (Strix Halo gfx1151 and its kin) ``hipMemGetInfo`` and
``hipGetDeviceProperties`` report the VRAM carve-out (the BIOS "UMA frame buffer size") as the
device's total while the free figure includes GTT, system RAM the GPU maps (ROCm/hip#3892: a
15.49 GiB total on a 128 GB Strix Halo; ROCm/legacy-rocm-build#6004: "hip mem_get_info total:
62.47 GiB / free: 120.00 GiB"; ROCm/rocm-systems#5596 proposes adding GTT to the total when the
kernel's ``apu_prefer_gtt`` redirects VRAM allocations to GTT, linux commit 759e764f7d58). So
PyTorch's HIP message there can say "a total capacity of 15.49 GiB of which 84.98 GiB is free":
the runtime's own output, not an edited paste (:func:`oomkit.diagnose.parse_torch.
_free_above_total`). Whether an allocation past the aperture succeeds depends on the kernel and
ROCm release, so a cause read from the aperture is uncertain: the diagnosis says so, caps its
confidence, and names the deciding fact (sysfs ``mem_info_vram_total`` / ``mem_info_gtt_total``)
and the setting that removes the question (a carve-out that holds the run).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, size_text

if TYPE_CHECKING:
    from oomkit.diagnose.rules import Diagnosis

__all__ = ["APU_CONFIDENCE", "note_apu_aperture"]

#: a reading of an APU message's aperture-sized total is at most this sure
APU_CONFIDENCE = 0.45


def note_apu_aperture(result: Diagnosis) -> Diagnosis:
    """``result`` with the APU reading when its HIP message states more free than total."""
    e = result.primary
    if e is None or e.kind != "hip_oom" or e.total_bytes is None or e.free_bytes is None:
        return result
    if e.free_bytes <= e.total_bytes + e.total_bytes // 100:
        return result
    t, f = e.total_bytes, e.free_bytes
    carve = Fix(
        title="Give the GPU a larger VRAM carve-out (BIOS UMA frame buffer size)",
        why=f"HIP counts only the {size_text(t)} aperture as this GPU's memory; a carve-out "
        "that holds the run's largest allocation removes the question of whether HIP may "
        "place it in GTT.",
        commands=(
            "cat /sys/class/drm/card*/device/mem_info_vram_total "
            "/sys/class/drm/card*/device/mem_info_gtt_total",
        ),
        expected_saving_bytes=None,
        generic=True,
    )
    return dataclasses.replace(
        result,
        confidence=min(result.confidence, APU_CONFIDENCE),
        explanation=result.explanation
        + f" HIP states {size_text(f)} free of a {size_text(t)} total: on an AMD APU with "
        "unified memory the total is the VRAM aperture (the BIOS carve-out) and the free "
        "memory counts GTT, system RAM the GPU maps (ROCm/hip#3892), so this reading of the "
        "total may not be the GPU's real limit. What would decide: sysfs mem_info_vram_total "
        "and mem_info_gtt_total (a small carve-out beside a large GTT is such an APU) and "
        "whether an allocation larger than the carve-out succeeds on this kernel and ROCm.",
        fixes=(*result.fixes, carve),
    )

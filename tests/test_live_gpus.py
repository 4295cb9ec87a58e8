"""Live GPU view: parsers replayed on captured outputs, the fake backend, stragglers, the CLI.

Captured outputs live in tests/fixtures/nvidia_smi/ (sources in PROVENANCE.md). The fake backend
below implements the same GpuBackend protocol as NVML/nvidia-smi and replays those captures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from oomkit.errors import HardwareError, NvmlUnavailableError
from oomkit.hardware import smi
from oomkit.hardware.live import (
    IDLE_AFTER_S,
    GpuBackend,
    RawDevice,
    RawProcess,
    classify_process,
    detect_gpus,
)
from oomkit.hardware.procinfo import ProcFs, ProcInfo
from oomkit.units import MiB

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia_smi"
CLK_TCK = 100
UPTIME_S = 100_000.0


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


class FakeBackend:
    """A GpuBackend that replays a captured nvidia-smi table (GPU rows + Processes block)."""

    def __init__(self, table_text: str, *, sm: dict[int, int] | None = None) -> None:
        table = smi.parse_smi_table(table_text)
        self._devices = tuple(
            RawDevice(
                index=g.index,
                name=g.name,
                uuid=None,
                memory_total_bytes=g.memory_total_bytes,
                memory_used_bytes=g.memory_used_bytes,
                memory_free_bytes=None,
                utilization_gpu_percent=g.utilization_gpu_percent,
                mig_slices=tuple(m for m in table.mig_slices if m.gpu_index == g.index),
            )
            for g in table.gpus
        )
        self._procs = table.processes
        self._sm = sm or {}

    def device_count(self) -> int:
        return len(self._devices)

    def device(self, index: int) -> RawDevice:
        return self._devices[index]

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        return tuple(
            RawProcess(
                pid=p.pid,
                used_bytes=p.used_bytes,
                name=p.name,
                sm_utilization_percent=self._sm.get(p.pid),
            )
            for p in self._procs
            if p.gpu_index == index
        )


def _proc_tree(root: Path, procs: list[tuple[int, int, str, str, str, float]]) -> ProcFs:
    """Write a /proc-shaped tree: (pid, ppid, state, comm, cmdline, age_s) per process.

    The stat lines have the exact layout of a real /proc/<pid>/stat (52 fields, comm in parens).
    """
    (root / "uptime").write_text(f"{UPTIME_S:.2f} 400.57\n")
    for pid, ppid, state, comm, cmdline, age_s in procs:
        d = root / str(pid)
        d.mkdir()
        start_ticks = int((UPTIME_S - age_s) * CLK_TCK)
        fields = (
            [str(ppid), str(pid), "2049", "0", "-1", "4194304"] + ["0"] * 12 + [str(start_ticks)]
        )
        (d / "stat").write_text(f"{pid} ({comm}) {state} " + " ".join(fields + ["0"] * 32) + "\n")
        (d / "cmdline").write_text(cmdline.replace(" ", "\x00") + ("\x00" if cmdline else ""))
        (d / "status").write_text(f"Name:\t{comm}\nState:\t{state}\nUid:\t1000\t1000\t1000\t1000\n")
    return ProcFs(root, clock_ticks_per_s=CLK_TCK, uid_names={1000: "alice", 0: "root"})


# --- parsers on captured outputs -------------------------------------------------------------


def test_table_new_layout_gpu_rows() -> None:
    # RLinf#255: driver 550 layout, two RTX 4090, memory on the second line of each row.
    t = smi.parse_smi_table(_read("table_gpus_rlinf_255.txt"))
    assert [(g.index, g.name) for g in t.gpus] == [
        (0, "NVIDIA GeForce RTX 4090"),
        (1, "NVIDIA GeForce RTX 4090"),
    ]
    assert t.gpus[0].memory_used_bytes == 507 * MiB
    assert t.gpus[0].memory_total_bytes == 24564 * MiB
    assert t.gpus[1].memory_used_bytes == 459 * MiB
    assert t.gpus[0].utilization_gpu_percent == 0


def test_table_mig_mode_gpu_rows_have_no_utilization() -> None:
    # go-nvml#57: in MIG mode the GPU-Util column reads N/A and the name is truncated.
    t = smi.parse_smi_table(_read("table_gpus_go_nvml_57.txt"))
    assert [g.name for g in t.gpus] == ["NVIDIA A100 80G...", "NVIDIA A100 80G..."]
    assert all(g.utilization_gpu_percent is None for g in t.gpus)
    assert t.gpus[1].memory_total_bytes == 81920 * MiB


def test_table_mig_devices_block() -> None:
    # nvitop#8: three MIG slices of GPU 1; the BAR1 line under each row must not be read.
    t = smi.parse_smi_table(_read("table_mig_devices_nvitop_pr8.txt"))
    assert [
        (m.gpu_index, m.gpu_instance_id, m.compute_instance_id, m.mig_index) for m in t.mig_slices
    ] == [
        (1, 3, 0, 0),
        (1, 5, 0, 1),
        (1, 6, 0, 2),
    ]
    assert t.mig_slices[0].memory_used_bytes == 14366 * MiB
    assert t.mig_slices[2].memory_total_bytes == 19968 * MiB
    assert t.gpus == ()


def test_table_processes_with_gi_ci() -> None:
    # nvitop#8: GI/CI ids are N/A on the non-MIG GPU 0 and numbers on the MIG GPUs.
    t = smi.parse_smi_table(_read("table_processes_nvitop_pr8.txt"))
    assert len(t.processes) == 10
    first = t.processes[0]
    assert (first.gpu_index, first.gpu_instance_id, first.pid, first.name) == (
        0,
        None,
        55111,
        "tritonserver",
    )
    assert first.used_bytes == 20481 * MiB
    assert t.processes[2].gpu_instance_id == 3
    assert t.processes[2].used_bytes == 149 * MiB


def test_table_processes_old_layout_and_unknown_error_names() -> None:
    # mxnet#4242: pre-GI/CI layout; the zombies show "Unknown Error" as their name, and one row
    # is misaligned by the reporter's redaction -- it must still parse.
    t = smi.parse_smi_table(_read("table_processes_mxnet_4242.txt"))
    assert [p.pid for p in t.processes] == [31794, 7653, 13386, 27707, 18049, 11827]
    assert t.processes[0].name == "Unknown Error"
    assert t.processes[2].name == "/xx/xxx/caffe"
    assert t.processes[2].used_bytes == 1205 * MiB


def test_table_graphics_processes_with_dotted_names() -> None:
    # RLinf#964: graphics (G) processes with names nvidia-smi truncated from the left.
    t = smi.parse_smi_table(_read("table_processes_rlinf_964.txt"))
    assert {p.type for p in t.processes} == {"G"}
    assert t.processes[2].name == ".../sunloginclient --cmd=autorun"
    assert sum(p.used_bytes or 0 for p in t.processes) == (351 + 38 + 18 + 6 + 16 + 44 + 8) * MiB


def test_mig_list() -> None:
    # telegraf#5812: 4 MIG 1g.20gb slices on GPU 0; GPUs 1-3 not partitioned.
    gpus = smi.parse_mig_list(_read("mig_list_telegraf_5812.txt"))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert [m.profile for m in gpus[0].mig] == ["1g.20gb"] * 4
    assert gpus[0].mig[3].uuid == "MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b"
    assert gpus[1].mig == ()
    assert gpus[0].uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"


def test_compute_apps_csv_with_header() -> None:
    # dcgm-exporter#94: header row present, only gpu_uuid and process_name queried (no pid).
    apps = smi.parse_compute_apps_csv(_read("query_compute_apps_dcgm_exporter_94.csv"))
    assert len(apps) == 3
    assert [a.gpu_uuid for a in apps].count("GPU-777ead31-954e-837f-590f-6c4974d8e571") == 2
    assert all(a.name == "vgpu" and a.pid is None for a in apps)


def test_compute_apps_name_with_commas_and_na_memory() -> None:
    # Synthetic row in the documented noheader,nounits layout: a process name holding commas
    # (workload-controlled) and [N/A] memory (Windows WDDM cannot attribute memory).
    apps = smi.parse_compute_apps_csv("4242, GPU-abc, [N/A], python -c a,b,c\n")
    assert apps[0].pid == 4242
    assert apps[0].used_bytes is None
    assert apps[0].name == "python -c a,b,c"


def test_query_gpu_csv_with_header_and_units() -> None:
    # Header + units as `--format=csv` prints them; columns are mapped by the header.
    text = (
        "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n"
        "0, NVIDIA A10G, 23028 MiB, 22403 MiB, 215 MiB\n"
    )
    (dev,) = smi.parse_query_gpu_csv(text)
    assert (dev.index, dev.name, dev.memory_total_bytes, dev.memory_free_bytes) == (
        0,
        "NVIDIA A10G",
        23028 * MiB,
        215 * MiB,
    )
    assert dev.uuid is None
    assert dev.utilization_gpu_percent is None


def test_rocm_smi_json() -> None:
    # marimo#9237: RX 7900 XT, byte counts as strings.
    (dev,) = smi.parse_rocm_smi_json(_read("rocm_smi_json_marimo_9237.json"))
    assert dev.name == "Radeon RX 7900 XT"
    assert dev.memory_total_bytes == 21458059264
    assert dev.memory_used_bytes == 27856896
    assert dev.memory_free_bytes == 21458059264 - 27856896
    assert dev.utilization_gpu_percent == 0
    assert smi.parse_rocm_smi_json("not json") == ()


def test_vm_stat_and_apple_backend() -> None:
    # wazuh#22113: vm_stat with 4 KiB pages; the memsize line is sysctl's documented format.
    stats = smi.parse_vm_stat(_read("vm_stat_wazuh_22113.txt"))
    assert stats["page_size_bytes"] == 4096
    assert stats["pages_wired_down"] == 715958 * 4096
    assert stats["pages_free"] == 6127229 * 4096
    outputs = {
        "hw.memsize": "34359738368\n",
        "machdep.cpu.brand_string": "Intel(R) Core(TM) i9\n",
        "vm_stat": _read("vm_stat_wazuh_22113.txt"),
    }
    backend = smi.AppleBackend(runner=lambda argv: outputs[argv[-1]])
    dev = backend.device(0)
    assert backend.device_count() == 1
    assert dev.memory_used_bytes == (715958 + 485320 + 0) * 4096
    assert dev.memory_total_bytes == 34359738368
    assert backend.processes(0) == ()


def test_nvidia_smi_backend_replays_queries() -> None:
    # The backend runs three commands; the runner replays them (query lines in the noheader,
    # nounits layout we request; the -L output is the real container-toolkit#203 capture).
    uuid = "GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39"
    replies = {
        smi.NVIDIA_SMI_GPU_QUERY: f"0, NVIDIA A100 80GB PCIe, {uuid}, 81920, 40000, 41920, [N/A]\n",
        smi.NVIDIA_SMI_APPS_QUERY: f"12, {uuid}, 39000, python\n13, GPU-other, 5, x\n",
        ("nvidia-smi", "-L"): _read("mig_list_container_toolkit_203.txt"),
    }
    backend = smi.NvidiaSmiBackend(runner=lambda argv: replies[tuple(argv)])
    dev = backend.device(0)
    assert dev.utilization_gpu_percent is None
    assert [m.name for m in dev.mig_slices] == ["3g.40gb", "3g.40gb"]
    assert backend.processes(0) == (RawProcess(pid=12, used_bytes=39000 * MiB, name="python"),)


# --- /proc reader -------------------------------------------------------------------------


def test_procfs_reads_this_process() -> None:
    # The live /proc: this test process is alive, not a zombie, with a live parent.
    info = ProcFs().read(os.getpid())
    assert info is not None
    assert not info.zombie
    assert info.parent_alive
    assert info.command is not None
    assert "python" in info.command.lower()
    assert info.age_s is not None
    assert info.age_s >= 0
    assert ProcFs().read(2**22 + 12345) is None


def test_procfs_fixture_tree(tmp_path: Path) -> None:
    reader = _proc_tree(
        tmp_path,
        [
            (100, 1, "S", "python", "python train.py", 7200.0),
            (101, 100, "Z", "python (worker)", "", 60.0),
        ],
    )
    parent = reader.read(100)
    child = reader.read(101)
    assert parent is not None
    assert child is not None
    assert parent.user == "alice"
    assert parent.command == "python train.py"
    assert parent.age_s == pytest.approx(7200.0, abs=0.02)
    assert child.zombie
    assert child.comm == "python (worker)"
    assert child.command is None
    assert child.parent_alive


# --- straggler rules ----------------------------------------------------------------------


def _info(**kw: object) -> ProcInfo:
    base: dict[str, object] = {
        "pid": 500,
        "ppid": 400,
        "state": "S",
        "user": "alice",
        "command": "python serve.py",
        "comm": "python",
        "age_s": 60.0,
        "parent_alive": True,
    }
    base.update(kw)
    return ProcInfo(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("info", "sm", "device_util", "reason_part", "kill"),
    [
        # Zombie with a live parent: only the parent can reap it.
        (_info(state="Z"), None, 50, "zombie", "kill 400"),
        # Zombie adopted by init: nothing to kill, the reason points at a GPU reset.
        (_info(state="Z", ppid=1, parent_alive=True), None, 50, "gpu-reset", None),
        # multiprocessing child re-parented to PID 1: orphan.
        (
            _info(ppid=1, command="python -c from multiprocessing.spawn import spawn_main"),
            None,
            80,
            "orphaned worker",
            "kill 500",
        ),
        # Jupyter kernel up 2 h, GPU idle (device-level since per-process is unknown).
        (
            _info(command="python -m ipykernel_launcher -f k.json", age_s=7200.0),
            None,
            0,
            "idle Jupyter kernel",
            "kill 500",
        ),
        # Another user's process idle for longer than IDLE_AFTER_S: sudo is needed.
        (_info(user="bob", age_s=IDLE_AFTER_S + 1.0), 0, 30, "no GPU activity", "sudo kill 500"),
    ],
)
def test_stragglers_flagged(
    info: ProcInfo, sm: int | None, device_util: int, reason_part: str, kill: str | None
) -> None:
    raw = RawProcess(pid=500, used_bytes=2048 * MiB, sm_utilization_percent=sm)
    reason, cmd = classify_process(
        raw, info, device_utilization_percent=device_util, current_user="alice"
    )
    assert reason is not None
    assert reason_part in reason
    assert cmd == kill


@pytest.mark.parametrize(
    ("info", "sm", "device_util"),
    [
        (_info(), None, 0),  # young process, nothing known: fine
        (_info(age_s=IDLE_AFTER_S * 4), 35, 35),  # old but busy: fine
        (_info(command="python -m ipykernel_launcher", age_s=7200.0), 12, 12),  # busy kernel
        (_info(ppid=1, command="python serve.py"), None, 0),  # a daemon under init, not a worker
        (None, 0, 0),  # PID not visible (another PID namespace): no verdict
    ],
)
def test_healthy_processes_not_flagged(
    info: ProcInfo | None, sm: int | None, device_util: int
) -> None:
    raw = RawProcess(pid=500, used_bytes=MiB, sm_utilization_percent=sm)
    assert classify_process(
        raw, info, device_utilization_percent=device_util, current_user="alice"
    ) == (
        None,
        None,
    )


# --- detect_gpus through the fake backend ----------------------------------------------------


def _rlinf_backend() -> GpuBackend:
    # RLinf#255 GPU rows and RLinf#964 Processes block (both RTX 4090 hosts, same tracker).
    return FakeBackend(_read("table_gpus_rlinf_255.txt") + _read("table_processes_rlinf_964.txt"))


def test_detect_gpus_replays_capture(tmp_path: Path) -> None:
    procs = _proc_tree(
        tmp_path,
        [
            (1, 0, "S", "systemd", "/sbin/init", 90000.0),
            (1398, 1, "S", "Xorg", "/usr/lib/xorg/Xorg -core :0", 86000.0),
            (1805, 1700, "S", "gnome-shell", "/usr/bin/gnome-shell", 85000.0),
            (1700, 1, "S", "gnome-session-b", "/usr/libexec/gnome-session-binary", 85000.0),
            (42513, 1805, "Z", "gnome-control-c", "", 3000.0),
        ],
    )
    gpus = detect_gpus(_rlinf_backend(), procs=procs, current_user="alice")
    assert len(gpus) == 2
    g0 = gpus[0]
    assert g0.memory_total_bytes == 24564 * MiB
    assert g0.memory_free_bytes == (24564 - 507) * MiB  # derived: the table has no free column
    assert [p.pid for p in g0.processes][:2] == [1398, 4618]  # sorted by memory, largest first
    by_pid = {p.pid: p for p in g0.processes}
    assert by_pid[1398].alive
    assert by_pid[1398].user == "alice"
    assert by_pid[1398].straggler_reason is None
    assert by_pid[2104].alive is None
    assert by_pid[2104].command == ".../sunloginclient --cmd=autorun"
    zombie = by_pid[42513]
    assert zombie.zombie
    assert not zombie.alive
    assert zombie.straggler_reason is not None
    assert "zombie" in zombie.straggler_reason
    assert zombie.kill_command == "kill 1805"
    assert gpus[1].processes == ()
    assert json.loads(json.dumps(g0.to_dict()))["memory_used_bytes"] == 507 * MiB


def test_detect_gpus_mig_slices_attached() -> None:
    # go-nvml#57 GPU rows (MIG mode) with the nvitop#8 MIG block for GPU 1.
    text = _read("table_gpus_go_nvml_57.txt") + _read("table_mig_devices_nvitop_pr8.txt")
    gpus = detect_gpus(FakeBackend(text), procs=ProcFs(Path("/nonexistent")), current_user="x")
    assert gpus[0].mig_slices == ()
    assert [m.gpu_instance_id for m in gpus[1].mig_slices] == [3, 5, 6]


def test_nvml_unavailable_without_driver() -> None:
    pytest.importorskip("pynvml")
    from oomkit.hardware.nvml import NvmlBackend

    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA driver is present")
    with pytest.raises(NvmlUnavailableError, match="nvmlInit"):
        NvmlBackend()


def test_default_backend_fails_cleanly_here() -> None:
    from oomkit.hardware.live import default_backend

    if Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists():
        pytest.skip("a GPU driver is present")
    with pytest.raises(HardwareError, match="no NVIDIA, AMD or Apple GPU"):
        default_backend()


# --- CLI ----------------------------------------------------------------------------------


@pytest.fixture
def cli_backend(tmp_path: Path):  # type: ignore[no-untyped-def]
    from oomkit.cli.gpus import use_backend

    procs = _proc_tree(tmp_path, [(42513, 1805, "Z", "gnome-control-c", "", 3000.0)])
    (tmp_path / "1805").mkdir()
    (tmp_path / "1805" / "stat").write_text("1805 (gnome-shell) S 1 " + " ".join(["0"] * 50) + "\n")
    use_backend(_rlinf_backend, procs)
    yield
    use_backend(None)


ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


def test_cli_live_view_text(cli_backend: None) -> None:
    from oomkit.cli.gpus import gpus_command

    result = CliRunner().invoke(gpus_command, [], env=ENV)
    assert result.exit_code == 0, result.output
    assert "GPU 0  NVIDIA GeForce RTX 4090  used 507.00 MiB / 23.99 GiB" in result.stdout
    assert "straggler: zombie" in result.stdout
    assert "end it: kill 1805" in result.stdout
    assert "Hint: end the stragglers with: kill 1805" in result.stderr


def test_cli_live_view_json(cli_backend: None) -> None:
    from oomkit.cli.gpus import gpus_command

    result = CliRunner().invoke(gpus_command, ["--json"], env=ENV)
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert doc["gpus"][0]["memory_total_bytes"] == 24564 * MiB
    assert doc["gpus"][0]["processes"][0]["pid"] == 1398


def test_cli_watch_refreshes(cli_backend: None) -> None:
    from oomkit.cli.gpus import gpus_command

    result = CliRunner().invoke(gpus_command, ["--json", "--watch", "0.1", "--count", "3"], env=ENV)
    assert result.exit_code == 0
    docs = result.stdout.strip().split("\n}\n{")
    assert len(docs) == 3


def test_cli_no_gpu_exits_1_with_hint() -> None:
    from oomkit.cli.gpus import gpus_command, use_backend

    def none_here() -> GpuBackend:
        raise HardwareError(
            "GPU detection failed for 'this machine': no NVIDIA, AMD or Apple GPU found."
        )

    use_backend(none_here)
    try:
        result = CliRunner().invoke(gpus_command, [], env=ENV)
    finally:
        use_backend(None)
    assert result.exit_code == 1
    assert result.stderr.count("Error:") == 1
    assert "oomkit gpus --catalog" in result.stderr
    assert result.stdout == ""


def test_cli_catalog() -> None:
    from oomkit.cli.gpus import gpus_command

    result = CliRunner().invoke(gpus_command, ["--catalog", "4090", "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["gpus"]
    assert any("4090" in r["name"] for r in rows)
    missing = CliRunner().invoke(gpus_command, ["--catalog", "zzzzqqqq-nothing"], env=ENV)
    assert missing.exit_code in (0, 3)  # close matches may still list something


# --- NVML backend over a stand-in pynvml (values from the nvitop#8 capture) -----------------


class _NVMLError(Exception):
    pass


class _NotFound(_NVMLError):
    pass


class _NotSupported(_NVMLError):
    pass


def _fake_pynvml(init_error: str | None = None):  # type: ignore[no-untyped-def]
    """A pynvml stand-in answering like NVML on an A100 host with GPU 1 in MIG mode."""
    import types

    ns = types.SimpleNamespace
    slices = {0: (3, 14366, 19968), 1: (5, 9826, 19968), 2: (6, 13, 19968)}
    procs = {0: [(55111, 20481)], 1: [(34965, 14195), (56597, 149), (46505, 9807), (42859, 9865)]}

    def init() -> None:
        if init_error:
            raise _NVMLError(init_error)

    def memory(h):  # type: ignore[no-untyped-def]
        if h[0] == "mig":
            _, used, total = slices[h[2]]
            return ns(total=total * MiB, used=used * MiB, free=(total - used) * MiB)
        used = 20481 if h[1] == 0 else 34010
        return ns(total=81920 * MiB, used=used * MiB, free=(81920 - used) * MiB)

    def util(h):  # type: ignore[no-untyped-def]
        if h[1] == 1:
            raise _NotSupported("Not Supported")  # MIG mode: no device-level utilization
        return ns(gpu=97, memory=40)

    def mig_mode(h):  # type: ignore[no-untyped-def]
        return (1, 1) if h[1] == 1 else (0, 0)

    def mig_handle(h, i):  # type: ignore[no-untyped-def]
        if i not in slices:
            raise _NotFound("Not Found")
        return ("mig", h[1], i)

    def running(h):  # type: ignore[no-untyped-def]
        return [ns(pid=p, usedGpuMemory=m * MiB) for p, m in procs[h[1]]]

    def graphics(h):  # type: ignore[no-untyped-def]
        # A C+G process appears in both lists with the same charge; one without a number.
        return (
            [ns(pid=55111, usedGpuMemory=20481 * MiB), ns(pid=777, usedGpuMemory=None)]
            if h[1] == 0
            else []
        )

    def proc_util(h, since):  # type: ignore[no-untyped-def]
        if h[1] == 0:
            return [ns(pid=55111, smUtil=88, timeStamp=since + 1)]
        raise _NotFound("no samples")  # nobody on GPU 1 ran kernels in the window

    return ns(
        NVMLError=_NVMLError,
        NVMLError_NotFound=_NotFound,
        nvmlInit=init,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: ("gpu", i),
        nvmlDeviceGetName=lambda h: b"NVIDIA A100-SXM4-80GB" if h[0] == "gpu" else "MIG 1g.20gb",
        nvmlDeviceGetUUID=lambda h: f"GPU-{h[1]}" if h[0] == "gpu" else f"MIG-{h[2]}",
        nvmlDeviceGetMemoryInfo=memory,
        nvmlDeviceGetUtilizationRates=util,
        nvmlDeviceGetMigMode=mig_mode,
        nvmlDeviceGetMaxMigDeviceCount=lambda h: 7,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle,
        nvmlDeviceGetGpuInstanceId=lambda h: slices[h[2]][0],
        nvmlDeviceGetComputeInstanceId=lambda h: 0,
        nvmlDeviceGetComputeRunningProcesses=running,
        nvmlDeviceGetGraphicsRunningProcesses=graphics,
        nvmlDeviceGetProcessUtilization=proc_util,
    )


def test_nvml_backend_devices_mig_and_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from oomkit.hardware.nvml import NvmlBackend

    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    backend = NvmlBackend()
    gpus = detect_gpus(backend, procs=ProcFs(Path("/nonexistent")), current_user="x")
    assert [g.name for g in gpus] == ["NVIDIA A100-SXM4-80GB"] * 2  # bytes names decoded
    assert gpus[0].utilization_gpu_percent == 97
    assert gpus[1].utilization_gpu_percent is None
    assert [(m.gpu_instance_id, m.memory_used_bytes) for m in gpus[1].mig_slices] == [
        (3, 14366 * MiB),
        (5, 9826 * MiB),
        (6, 13 * MiB),
    ]
    p0 = {p.pid: p for p in gpus[0].processes}
    assert p0[55111].used_bytes == 20481 * MiB  # C+G listed twice, counted once
    assert p0[55111].sm_utilization_percent == 88
    assert p0[777].used_bytes is None
    assert p0[777].sm_utilization_percent == 0  # no sample in the window
    assert [p.pid for p in gpus[1].processes] == [34965, 42859, 46505, 56597]
    assert all(p.sm_utilization_percent == 0 for p in gpus[1].processes)


def test_nvml_backend_init_and_import_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from oomkit.hardware.nvml import NvmlBackend

    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(init_error="Driver Not Loaded"))
    with pytest.raises(NvmlUnavailableError, match="Driver Not Loaded"):
        NvmlBackend()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    with pytest.raises(NvmlUnavailableError, match="nvidia-ml-py is not installed"):
        NvmlBackend()

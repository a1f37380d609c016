"""Machine description into OUT/system/: nvidia-smi, PCIe/NVLink, CPU, software versions."""
import json, os, subprocess

from common import log

CMDS = {
    "topo_m.txt": "nvidia-smi topo -m",
    "smi_q.txt": "nvidia-smi -q",
    "smi_q_pcie_nvlink.txt": "nvidia-smi -q | grep -A40 -i 'PCI$\\|GPU Link Info' | head -300; "
                             "nvidia-smi -q -d CLOCK | head -80",
    "pcie.csv": "nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
                "pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,driver_version --format=csv",
    "nvlink_status.txt": "nvidia-smi nvlink --status",
    "nvlink_caps.txt": "nvidia-smi nvlink -c 2>&1 | head -60",
    "cpu.txt": "lscpu; echo; numactl -H 2>&1; echo; grep -m2 'model name' /proc/cpuinfo; nproc; free -g",
    "lspci.txt": "lspci -tv 2>&1; lspci -vv 2>/dev/null | grep -B2 -A30 -i nvidia | grep -i 'lnk\\|nvidia' | head -80",
    "uname.txt": "uname -a; cat /etc/os-release 2>/dev/null | head -4",
    "nvcc.txt": "nvcc --version 2>&1",
    "env_nccl.txt": "env | grep -i 'nccl\\|cuda\\|symm\\|nvshmem' | sort",
    # the GPUs' PCIe 10-bit tag bits: how many reads a GPU may keep outstanding (gpu.host_requests_outstanding)
    "pcie_tags.txt": "python3 " + os.path.join(os.path.dirname(os.path.abspath(__file__)), "pcie_tags.py") + " 2>&1",
}

VERSIONS_PY = r'''
import json, platform
v = {"python": platform.python_version()}
try:
    import torch
    v["torch"] = torch.__version__
    v["torch_cuda"] = torch.version.cuda
    v["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    v["gpus"] = torch.cuda.device_count()
    v["gpu_name"] = torch.cuda.get_device_name(0)
except Exception as e:
    v["torch_error"] = repr(e)
try:
    import cupy as cp
    v["cupy"] = cp.__version__
    v["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
    v["cuda_driver_api"] = cp.cuda.runtime.driverGetVersion()
except Exception as e:
    v["cupy_error"] = repr(e)
try:
    import subprocess
    v["driver"] = subprocess.run("nvidia-smi --query-gpu=driver_version --format=csv,noheader", shell=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[0]
except Exception as e:
    v["driver_error"] = repr(e)
print(json.dumps(v, indent=1))
'''


def run(out_dir):
    sd = os.path.join(out_dir, "system")
    os.makedirs(sd, exist_ok=True)
    for name, cmd in CMDS.items():
        try:
            r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60)
            txt = r.stdout + r.stderr
        except Exception as e:  # noqa: BLE001
            txt = repr(e)
        with open(os.path.join(sd, name), "w") as f:
            f.write(txt)
    try:
        r = subprocess.run(["python3", "-c", VERSIONS_PY], capture_output=True, text=True, timeout=120)
        with open(os.path.join(sd, "versions.json"), "w") as f:
            f.write(r.stdout + r.stderr)
        log("versions", r.stdout.replace("\n", " "))
    except Exception as e:  # noqa: BLE001
        log("versions failed", repr(e))

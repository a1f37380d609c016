"""native_issue: the host's issue cost of a kernel and of an NCCL call from native code, one GPU (capture.py
native-issue).

nccl-tests issues its calls from C, one thread for all its GPUs; every other capture here issues through CuPy,
ctypes or PyTorch, whose Python layers cost more than the call. This part compiles native_issue.cu with nvcc (the
machine's CUDA toolkit) and runs it against the NCCL library PyTorch ships (the one nccl_self.py loads). Records:
kinds empty_kernel and nccl_kernel, launch eager, issuer native; mode queued (host clock around N issues queued
behind a device-side spin: the issue cost alone) and back_to_back (CUDA events around N issues with no spin). Each record carries host_clock_ghz (the issuing core's
clock, measured by a chain of dependent adds just before the op's trials) and busy_threads: the binary runs once
for each count in NATIVE_ISSUE_BUSY (default "0"; e.g. "0,15"), with that many other host threads spinning, to
see whether the issue cost follows the core's clock.
"""
import os, shutil, subprocess

from common import log
from nccl_self import _load_nccl


def run(out_dir, quick=False, system_id="unknown"):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        raise RuntimeError("native_issue: nvcc not found (needs the CUDA toolkit)")
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(out_dir, "native_issue.bin")
    subprocess.run([nvcc, "-O2", "-Xcompiler", "-pthread", "-o", exe, os.path.join(here, "native_issue.cu"), "-ldl"],
                   check=True)
    _, lib = _load_nccl()
    log("native_issue: NCCL from", lib)
    out = os.path.join(out_dir, "native_issue.jsonl")
    for busy in os.environ.get("NATIVE_ISSUE_BUSY", "0").split(","):
        env = dict(os.environ, NATIVE_ISSUE_BUSY_THREADS=busy.strip())
        subprocess.run([exe, lib, out, system_id], check=True, env=env)
    os.remove(exe)

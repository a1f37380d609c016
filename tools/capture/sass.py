"""sass: the machine code the per-block kernels run (capture.py sass).

Compiles PERBLOCK_SRC (kernels.py) with the machine's nvcc for one architecture (-cubin, ptxas -v for registers
and spills) and writes cuobjdump -sass of the kernels whose names match a regular expression, each instruction as cuobjdump
prints it less its encoding. Which of a thread's loads are in flight at once is decided here, by the compiler (the order of the loads
and the first instruction that reads each one's register), not by the source: the loop twins read it from this
file. Needs the CUDA toolkit (nvcc, cuobjdump); no GPU work.
"""
import os, re, shutil, subprocess

from common import log
import kernels


def _tool(name):
    p = shutil.which(name) or os.path.join("/usr/local/cuda/bin", name)
    if not os.path.exists(p):
        raise RuntimeError(f"sass: {name} not found (needs the CUDA toolkit)")
    return p


def run(out_dir, arch="sm_90", pattern=r"pb_(copy|nccl_copy|nccl_reduce|pull_unrolled|pull_bf16|pull_f32)", name="perblock"):
    """SASS_PATTERN, SASS_NAME and SASS_SRC in the environment pick other kernels, the file's name and the source
    (system/sass_<name>_<arch>.txt)."""
    pattern = os.environ.get("SASS_PATTERN", pattern)
    name = os.environ.get("SASS_NAME", name)
    source = os.environ.get("SASS_SRC", "PERBLOCK_SRC")  # MICRO_SRC: the micro parts' kernels (NVRTC compiles them at run time)
    sysdir = os.path.join(out_dir, "system")
    os.makedirs(sysdir, exist_ok=True)
    src = os.path.join(out_dir, "perblock_src.cu")
    cubin = os.path.join(out_dir, "perblock.cubin")
    with open(src, "w") as f:
        f.write(getattr(kernels, source))
    nvcc = _tool("nvcc")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2:]
    p = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-std=c++17", "-o", cubin, src],
                       capture_output=True, text=True)
    with open(os.path.join(sysdir, f"ptxas_{name}_{arch}.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"sass: nvcc failed ({p.returncode}): {p.stderr[-2000:]}")
    dump = subprocess.run([_tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True, check=True).stdout
    want = re.compile(pattern)
    kept, n = [], 0
    for part in re.split(r"(?m)^(?=\s*Function : )", dump):
        m = re.match(r"\s*Function : (\S+)", part)
        if m and want.search(m.group(1)):
            # the instructions without their encodings (the /* 0x… */ words) or blank lines
            lines = [re.sub(r"\s*/\* 0x[0-9a-f]{16} \*/", "", ln).rstrip() for ln in part.splitlines()]
            kept.append("\n".join(ln for ln in lines if ln.strip() and not re.match(r"\s*/\* 0x", ln)) + "\n")
            n += 1
    out = os.path.join(sysdir, f"sass_{name}_{arch}.txt")
    with open(out, "w") as f:
        f.write(f"# nvcc -arch={arch} -cubin of tools/capture/kernels.py {source} ({' '.join(version)})\n")
        f.write(f"# cuobjdump -sass, the kernels matching {pattern!r}\n\n")
        f.writelines(kept)
    os.remove(cubin)
    log(f"sass: {n} kernels to {out}")
    return out

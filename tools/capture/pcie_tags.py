"""Print the PCIe 10-bit tag bits of each NVIDIA GPU's config space (sysfs; needs read access to the full config
space): Device Capabilities 2 bit 16 (10-bit tag completer supported) and 17 (requester supported), Device Control 2
bit 12 (requester enabled), and the maximum payload and read request sizes of Device Control."""
import glob
import os
import sys


def pcie_cap(cfg):
    ptr = cfg[0x34] if len(cfg) > 0x34 else 0
    seen = set()
    while ptr and ptr not in seen and ptr + 1 < len(cfg):
        seen.add(ptr)
        if cfg[ptr] == 0x10:
            return ptr
        ptr = cfg[ptr + 1]
    return None


def main():
    found = False
    for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
        try:
            vendor = open(os.path.join(dev, "vendor")).read().strip()
            cls = open(os.path.join(dev, "class")).read().strip()
            cfg = open(os.path.join(dev, "config"), "rb").read()
        except OSError:
            continue
        if vendor != "0x10de" or not cls.startswith("0x03"):
            continue
        found = True
        cap = pcie_cap(cfg)
        if cap is None or cap + 0x2c > len(cfg):
            print(f"{os.path.basename(dev)}: config space {len(cfg)} B, no PCIe capability readable")
            continue
        le = lambda o, n: int.from_bytes(cfg[cap + o:cap + o + n], "little")
        devctl, devcap2, devctl2 = le(0x08, 2), le(0x24, 4), le(0x28, 2)
        print(f"{os.path.basename(dev)}: 10-bit tag completer supported {devcap2 >> 16 & 1}, requester supported "
              f"{devcap2 >> 17 & 1}, requester enabled {devctl2 >> 12 & 1}; extended tags enabled {devctl >> 8 & 1}; "
              f"max payload {128 << (devctl >> 5 & 7)} B, max read request {128 << (devctl >> 12 & 7)} B")
    if not found:
        print("no NVIDIA display/3D controller found in sysfs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

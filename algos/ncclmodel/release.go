package ncclmodel

import (
	"fmt"
	"strconv"
	"strings"
)

// Release is an NCCL release, 2.Minor.Patch. The zero value stands for
// [Version], the release the model follows by default. Releases 2.18 to
// 2.30 are known: the rules and constants that changed between them for a
// single-node AllReduce are the methods below, each citing the tags it
// reads (tag:path:line in NVIDIA/nccl).
type Release struct {
	Minor, Patch int
}

// Oldest and newest minor releases whose rules the model knows.
const (
	OldestMinor = 18
	NewestMinor = 30
)

// defaultRelease is Version as a Release.
var defaultRelease = Release{Minor: 30, Patch: 7}

// ParseRelease reads "2.21.5", "2.21", "v2.21.5-1" or NCCL's version code
// "22105" (major·10000 + minor·100 + patch, as nccl-tests prints it).
func ParseRelease(s string) (Release, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "v"), "V")
	if i := strings.IndexByte(t, '-'); i >= 0 {
		t = t[:i]
	}
	bad := func(why string) (Release, error) {
		return Release{}, fmt.Errorf("ncclmodel: NCCL release %q: %s (forms: 2.21.5, 2.21, v2.21.5-1, 22105)", s, why)
	}
	var r Release
	if !strings.Contains(t, ".") {
		code, err := strconv.Atoi(t)
		if err != nil || code < 20000 || code > 29999 {
			return bad("not a version")
		}
		r = Release{Minor: code / 100 % 100, Patch: code % 100}
	} else {
		parts := strings.Split(t, ".")
		if len(parts) < 2 || len(parts) > 3 || parts[0] != "2" {
			return bad("arsim knows NCCL 2.x only")
		}
		var err error
		if r.Minor, err = strconv.Atoi(parts[1]); err != nil {
			return bad("the minor release is not a number")
		}
		if len(parts) == 3 {
			if r.Patch, err = strconv.Atoi(parts[2]); err != nil || r.Patch < 0 {
				return bad("the patch release is not a number")
			}
		}
	}
	if r.Minor < OldestMinor || r.Minor > NewestMinor {
		return bad(fmt.Sprintf("arsim's NCCL model knows releases 2.%d to 2.%d", OldestMinor, NewestMinor))
	}
	return r, nil
}

// orDefault is r, or [Version] for the zero value.
func (r Release) orDefault() Release {
	if r == (Release{}) {
		return defaultRelease
	}
	return r
}

// String is "2.21.5" ("2.21" when the patch is not known).
func (r Release) String() string {
	r = r.orDefault()
	if r.Patch == 0 {
		return fmt.Sprintf("2.%d", r.Minor)
	}
	return fmt.Sprintf("2.%d.%d", r.Minor, r.Patch)
}

// from reports whether r is release 2.minor or later.
func (r Release) from(minor int) bool { return r.orDefault().Minor >= minor }

// valid reports whether r is a release the model knows.
func (r Release) valid() bool {
	m := r.orDefault().Minor
	return m >= OldestMinor && m <= NewestMinor && r.Patch >= 0
}

// CompCap is ncclTopoTuneModel's compute-capability index: the Blackwell
// row exists from 2.25 (v2.25.1-1:src/graph/tuning.cc:148,215); before,
// sm ≥ 90 is Hopper (v2.18.3-1:src/graph/tuning.cc:81-83).
func (r Release) CompCap(sm int) CompCap {
	switch {
	case sm >= 100 && r.from(25):
		return Blackwell
	case sm >= 90:
		return Hopper
	case sm >= 80:
		return Ampere
	}
	return Volta
}

// baseLat is baseLatencies: Tree/Simple is 0 up to 2.22 and 8.4 from 2.23
// (v2.18.3-1:src/graph/tuning.cc:57; v2.23.4-1:src/graph/tuning.cc:57).
func (r Release) baseLat(a Algo, p Proto) float64 {
	if a == Tree && p == Simple && !r.from(23) {
		return 0
	}
	return baseLat[a][p]
}

// hwLat is hwLatencies: Tree/Simple over NVLink 4 and over PCI 6 in 2.18,
// 28 on both in 2.19–2.22, 4.0 on both from 2.23
// (v2.18.3-1:src/graph/tuning.cc:67,71; v2.19.4-1 and v2.22.3-1 same
// lines; v2.23.4-1:src/graph/tuning.cc:67,71).
func (r Release) hwLat(h HW, a Algo, p Proto) float64 {
	if a == Tree && p == Simple && h != Net {
		switch {
		case !r.from(19) && h == PCI:
			return 6
		case !r.from(19):
			return 4
		case !r.from(23):
			return 28
		}
	}
	return hwLat[h][a][p]
}

// caps are the bandwidth ceilings for compute-capability index cc and
// node index index2 (index1 the llMaxBws row). Hopper's LL ceiling is 87.7
// GB/s before 2.21 (v2.18.3-1:src/graph/tuning.cc:86-106; v2.21.5-1:
// src/graph/tuning.cc:89). Blackwell's rows (from 2.25) are Hopper's
// doubled in 2.25–2.27 (v2.25.1-1:src/graph/tuning.cc:151-175), with the
// tree rows cut in 2.28 (v2.28.9-1:src/graph/tuning.cc:169-191) and the
// ring LL128 row in 2.29 (v2.29.7-1:src/graph/tuning.cc:180).
func (r Release) caps(index1 int, cc CompCap, index2 int) bwCaps {
	b := bwCaps{
		llMax:          llMaxBws[index1][index2],
		perChTree:      perChMaxTreeBws[cc][index2],
		perChRingLL128: perChMaxRingLL128Bws[cc][index2],
		perChTreeLL128: perChMaxTreeLL128Bws[cc][index2],
	}
	if index1 == int(Hopper) && !r.from(21) {
		b.llMax = llMaxBws[Ampere][index2]
	}
	if cc == Blackwell {
		if !r.from(28) {
			b.perChTree = 2 * perChMaxTreeBws[Hopper][index2]
			b.perChTreeLL128 = 2 * perChMaxTreeLL128Bws[Hopper][index2]
		}
		switch {
		case !r.from(28):
			b.perChRingLL128 = 2 * perChMaxRingLL128Bws[Hopper][index2]
		case !r.from(29):
			b.perChRingLL128 = [3]float64{73.4, 34.6, 73.4}[index2]
		}
	}
	return b
}

// ringLLShare is the share of the bus bandwidth ncclTopoTuneModel gives
// Ring/LL: a quarter for AllReduce up to 2.20, a half from 2.21
// (v2.18.3-1:src/graph/tuning.cc:178-183; v2.21.5-1:src/graph/tuning.cc:
// 180-185).
func (r Release) ringLLShare() float64 {
	if !r.from(21) {
		return .25
	}
	return .5
}

// LL128DefaultEnabled is NCCL's default (NCCL_PROTO unset) LL128 rule for
// a single-node communicator of one compute capability sm: LL128 needs
// typeIntra ≤ PATH_NVB (NVLink, possibly through a GPU) in every release;
// up to 2.24 the architecture must be sm70, sm80 or sm90
// (v2.18.3-1:src/graph/tuning.cc:282-293; v2.24.3-1:src/graph/tuning.cc:
// 423-431), in 2.25–2.26 also sm100 and sm120 (v2.25.1-1:src/graph/
// tuning.cc:428-438), from 2.27 any sm ≥ 70 (v2.27.7-1:src/graph/
// tuning.cc:457-470). The typeInter condition holds on one node; the CUDA
// 11.8 / sm90 / two-rank ring exception is ignored.
func (r Release) LL128DefaultEnabled(intraNVLink bool, sm int) bool {
	if !intraNVLink || sm < 70 {
		return false
	}
	switch {
	case r.from(27):
		return true
	case r.from(25) && (sm == 100 || sm == 120):
		return true
	}
	return sm == 70 || sm == 80 || sm == 90
}

// TreeRunsAllThreads reports whether a Tree kernel runs NCCL_MAX_NTHREADS
// (640) whatever the size: from 2.22 (v2.22.3-1:src/enqueue.cc:1655);
// before, its block is what the size-based halving leaves.
func (r Release) TreeRunsAllThreads() bool { return r.from(22) }

// MaxChannels is MAXCHANNELS: 32 up to 2.24, 64 from 2.25
// (v2.24.3-1:src/include/device.h:62; v2.25.1-1:src/include/device.h:62).
// The ring search looks for up to half as many.
func (r Release) MaxChannels() int {
	if !r.from(25) {
		return 32
	}
	return maxChannels
}

// speeds is the intra-node speed array ncclTopoCompute searches for the
// minimum compute capability sm. sm90's gains 50 in 2.19 and 11 in 2.21
// (v2.18.3-1:src/graph/search.cc:794; v2.19.4-1:src/graph/search.cc:843;
// v2.21.5-1:src/graph/search.cc:855); sm100's exists from 2.25 (before,
// sm ≥ 90 searches sm90's) and gains 18 in 2.27 and 45 in 2.29
// (v2.25.1-1:src/graph/search.cc:1010; v2.27.7-1:src/graph/search.cc:962;
// v2.29.7-1:src/graph/search.cc:987).
func (r Release) speeds(sm int) []float64 {
	switch {
	case sm >= 100 && r.from(29):
		return sm100SpeedArrayIntra
	case sm >= 100 && r.from(27):
		return sm100SpeedArrayIntra227
	case sm >= 100 && r.from(25):
		return sm100SpeedArrayIntra225
	case sm >= 90 && r.from(21):
		return sm90SpeedArrayIntra
	case sm >= 90 && r.from(19):
		return sm90SpeedArrayIntra219
	case sm >= 90:
		return sm90SpeedArrayIntra218
	}
	return speedArrayIntra
}

// The speed arrays of earlier releases (Release.speeds cites them).
var (
	sm90SpeedArrayIntra218  = []float64{60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0}
	sm90SpeedArrayIntra219  = []float64{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0}
	sm100SpeedArrayIntra225 = []float64{90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0}
	sm100SpeedArrayIntra227 = []float64{90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0}
)

// NVLinkBw is ncclTopoNVLinkBw, GB/s per link (src/graph/topo.h): sm90
// 20.0 up to 2.19 and 20.6 from 2.20 (v2.18.3-1:src/graph/topo.h:14-18;
// v2.20.5-1:src/graph/topo.h:17); sm100 has its own 40.0 from 2.25 and
// 40.1 from 2.27 (v2.25.1-1:src/graph/topo.h:19; v2.27.7-1:src/graph/
// topo.h:21), before which it takes sm90's.
func (r Release) NVLinkBw(sm int) float64 {
	switch {
	case sm >= 100 && r.from(27):
		return 40.1
	case sm >= 100 && r.from(25):
		return 40.0
	case sm >= 90 && r.from(20):
		return 20.6
	case sm >= 90:
		return 20.0
	case sm == 86:
		return 12
	case sm >= 70:
		return 20
	}
	return 18
}

// DefaultP2PLevel is paths.cc's default P2P level, as a path class name:
// up to 2.22 "sys" on AMD (and other non-Intel x86) hosts and "pxb" on
// Intel (v2.18.3-1:src/graph/paths.cc:276-296; v2.22.3-1:src/graph/
// paths.cc:280-300); from 2.23 "pxb" everywhere except AMD hosts with at
// most two GPUs (v2.23.4-1:src/graph/paths.cc:276-282).
func (r Release) DefaultP2PLevel(cpu CPUVendor, gpus int) string {
	if cpu == CPUAMD && (!r.from(23) || gpus <= 2) {
		return "sys"
	}
	return "pxb"
}

// AMDSocketBw is NCCL's AMD inter-socket figure in GB/s: none before 2.19
// (AMD fell through to LOC_BW, 5000: no limit; v2.18.3-1:src/graph/topo.cc:
// 62-79), AMD_BW 16 from 2.19 (v2.19.4-1:src/graph/topo.h:21).
func (r Release) AMDSocketBw() float64 {
	if !r.from(19) {
		return 5000
	}
	return 16
}

// IntelSocketBw is NCCL's Intel inter-socket figure in GB/s for a host of
// Sapphire Rapids or later (spr) or an earlier Skylake-class one:
// SKL_QPI_BW 10 for both up to 2.25, SRP_QPI_BW 22 from 2.26
// (v2.26.2-1:src/graph/topo.h:24-25, src/graph/topo.cc:520-523).
func (r Release) IntelSocketBw(spr bool) float64 {
	if spr && r.from(26) {
		return 22
	}
	return 10
}

// SimpleUnroll is COLL_UNROLL, the Simple primitives' unroll
// (ncclCollUnroll): 4 below sm80, 8 from sm80, except sm120 (6) from 2.26
// and every sm12x from 2.27 (v2.25.1-1:src/include/device.h:469-472;
// v2.26.2-1:src/include/device.h:475-478; v2.27.7-1:src/include/device.h:
// 507-510).
func (r Release) SimpleUnroll(sm int) int {
	switch {
	case sm < 80:
		return 4
	case sm/10 == 12 && r.from(27), sm == 120 && r.from(26):
		return 6
	}
	return 8
}

// TreeSimpleHalves reports whether enqueue.cc halves the Tree/Simple chunk
// for mid-size messages (the TreeUpDown loops of 2.18–2.19,
// v2.18.3-1:src/enqueue.cc:1313-1321; gone from 2.20, v2.20.5-1:
// src/enqueue.cc:1683-1735).
func (r Release) TreeSimpleHalves() bool { return !r.from(20) }

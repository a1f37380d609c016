package trace

import (
	"slices"
	"strings"
)

// The names in a Kineto trace: NCCL kernel names, dtypes and collectives,
// spelled several ways across NCCL and PyTorch versions.

// kernelName is what an NCCL kernel's name says.
type kernelName struct {
	coll, op, dtype, algo, proto string
}

var (
	twoTokenAlgos = []string{"COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE"}
	protos        = []string{"LL", "LL128", "SIMPLE"}
)

// parseKernelName reads ncclDevKernel_<Coll>_<Op>_<ty>_<ALGO>_<PROTO>
// (NCCL ≥ 2.19; AllGather and Broadcast have no op or type),
// ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<type> (older) and
// ncclSymkDevKernel_<Coll>_<algo...>_<op>_<ty>. Parts it cannot read are "".
func parseKernelName(full string) kernelName {
	n := strings.TrimPrefix(full, "void ")
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = n[:i]
	}
	var k kernelName
	var prefix string
	for _, p := range ncclKernelPrefixes {
		if strings.HasPrefix(n, p) {
			prefix = p
			break
		}
	}
	toks := strings.Split(strings.TrimPrefix(n, prefix), "_")
	if len(toks) == 0 || toks[0] == "" || strings.HasPrefix(toks[0], "Generic") {
		return k
	}
	k.coll = strings.ToLower(toks[0])
	rest := toks[1:]
	algoLen := func(ts []string) int {
		if len(ts) >= 2 && slices.Contains(twoTokenAlgos, ts[0]+"_"+ts[1]) {
			return 2
		}
		return 1
	}
	switch prefix {
	case "ncclSymkDevKernel_":
		if len(rest) >= 3 {
			k.dtype = normDtype(rest[len(rest)-1])
			k.op = strings.ToLower(rest[len(rest)-2])
			k.algo = strings.ToLower(strings.Join(rest[:len(rest)-2], "_"))
		}
	case "ncclKernel_":
		if len(rest) == 0 {
			return k
		}
		al := min(algoLen(rest), len(rest))
		k.algo = strings.ToLower(strings.Join(rest[:al], "_"))
		rest = rest[al:]
		if len(rest) > 0 && slices.Contains(protos, rest[0]) {
			k.proto = strings.ToLower(rest[0])
			rest = rest[1:]
		}
		if len(rest) >= 2 {
			k.op = strings.ToLower(rest[0])
			k.dtype = normDtype(strings.Join(rest[1:], "_"))
		}
	default:
		if len(rest) > 0 && slices.Contains(protos, rest[len(rest)-1]) {
			k.proto = strings.ToLower(rest[len(rest)-1])
			rest = rest[:len(rest)-1]
		}
		if len(rest) >= 3 && slices.Contains(twoTokenAlgos, rest[len(rest)-2]+"_"+rest[len(rest)-1]) {
			k.algo = strings.ToLower(rest[len(rest)-2] + "_" + rest[len(rest)-1])
			rest = rest[:len(rest)-2]
		} else if len(rest) > 0 {
			k.algo = strings.ToLower(rest[len(rest)-1])
			rest = rest[:len(rest)-1]
		}
		if len(rest) >= 2 {
			k.op = strings.ToLower(rest[0])
			k.dtype = normDtype(strings.Join(rest[1:], "_"))
		}
	}
	return k
}

// dtypeSizes maps NCCL's short type names to their sizes in bytes.
var dtypeSizes = map[string]int64{
	"i8": 1, "u8": 1, "f8e4m3": 1, "f8e5m2": 1,
	"f16": 2, "bf16": 2, "i16": 2,
	"i32": 4, "u32": 4, "f32": 4,
	"i64": 8, "u64": 8, "f64": 8,
}

// dtypeAliases maps the spellings of NCCL's old kernel names, c10
// ScalarType names and torch dtype names (all lower case) to NCCL's short
// names.
var dtypeAliases = map[string]string{
	// NCCL ≤ 2.18 kernel names.
	"int8_t": "i8", "uint8_t": "u8", "int32_t": "i32", "uint32_t": "u32",
	"int64_t": "i64", "uint64_t": "u64", "half": "f16", "float": "f32",
	"double": "f64", "__nv_bfloat16": "bf16", "__nv_fp8_e4m3": "f8e4m3",
	"__nv_fp8_e5m2": "f8e5m2",
	// c10 ScalarType names (lower-cased) not already above.
	"char": "i8", "byte": "u8", "bool": "u8", "short": "i16", "int": "i32",
	"long": "i64",
	// torch dtype names.
	"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
	"int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64",
	"uint32": "u32", "uint64": "u64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}

// normDtype returns NCCL's short name for a type spelling; the spelling,
// lower-cased, when it is unknown.
func normDtype(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "torch."), "c10::")
	if _, ok := dtypeSizes[s]; ok {
		return s
	}
	if a, ok := dtypeAliases[s]; ok {
		return a
	}
	return s
}

// normColl returns the collective family of a record_param_comms
// "Collective name" or a kernel's collective, for matching: "allreduce",
// "allgather", "reducescatter", "broadcast", "reduce", "sendrecv".
func normColl(s string) string {
	s = strings.ReplaceAll(strings.ToLower(s), "_", "")
	for _, suf := range []string{"coalesced", "base", "intotensor", "tensor"} {
		s = strings.TrimSuffix(s, suf)
	}
	switch s {
	case "send", "recv", "alltoall", "alltoallv", "gather", "scatter":
		return "sendrecv"
	}
	return s
}

package trace

import (
	"fmt"
	"slices"
	"strings"
)

// Launch is how a record's kernels were launched (its "launch" field).
type Launch string

// The launches of JSON Lines v1.
const (
	// LaunchCUDAGraph: nodes of a replayed CUDA graph.
	LaunchCUDAGraph Launch = "cudagraph"
	// LaunchEager: launched from the host one call at a time.
	LaunchEager Launch = "eager"
)

// Launches returns every launch value, sorted.
func Launches() []Launch { return []Launch{LaunchCUDAGraph, LaunchEager} }

// String returns the value as the format writes it.
func (l Launch) String() string { return string(l) }

// ParseLaunch reads a "launch" value.
func ParseLaunch(s string) (Launch, error) { return parseValue("launch", s, Launches()) }

// Impl is the implementation an allreduce record measured (its "impl"
// field).
type Impl string

// The implementations of JSON Lines v1.
const (
	// ImplNCCL: NCCL's allreduce.
	ImplNCCL Impl = "nccl"
	// ImplTorchSymmMem: PyTorch's symmetric-memory one-shot and two-shot
	// kernels.
	ImplTorchSymmMem Impl = "torch_symm_mem"
	// ImplHostStagedOneShot: a one-shot kernel exchanging through pinned
	// host memory.
	ImplHostStagedOneShot Impl = "host_staged_one_shot"
	// ImplFlagOneShot and ImplFlagTwoShot: the project's own flag-protocol
	// kernels (tools/capture).
	ImplFlagOneShot Impl = "arsim_flag_one_shot"
	ImplFlagTwoShot Impl = "arsim_flag_two_shot"
)

// Impls returns every implementation, sorted.
func Impls() []Impl {
	return []Impl{ImplFlagOneShot, ImplFlagTwoShot, ImplHostStagedOneShot, ImplNCCL, ImplTorchSymmMem}
}

// String returns the value as the format writes it.
func (i Impl) String() string { return string(i) }

// ParseImpl reads an "impl" value.
func ParseImpl(s string) (Impl, error) { return parseValue("impl", s, Impls()) }

// Transport is how an allreduce's data moved between GPUs (its "transport"
// field).
type Transport string

// The transports of JSON Lines v1.
const (
	// TransportP2P: GPU to GPU directly (NVLink or PCIe peer access).
	TransportP2P Transport = "p2p"
	// TransportSHM: NCCL's staging through pinned host memory.
	TransportSHM Transport = "shm"
	// TransportHostMemory: a kernel exchanging through pinned host memory.
	TransportHostMemory Transport = "host_memory"
)

// Transports returns every transport, sorted.
func Transports() []Transport { return []Transport{TransportHostMemory, TransportP2P, TransportSHM} }

// String returns the value as the format writes it.
func (t Transport) String() string { return string(t) }

// ParseTransport reads a "transport" value.
func ParseTransport(s string) (Transport, error) { return parseValue("transport", s, Transports()) }

// parseValue returns s as a value of vals, or an error naming the field
// and the allowed values.
func parseValue[T ~string](field, s string, vals []T) (T, error) {
	if slices.Contains(vals, T(s)) {
		return T(s), nil
	}
	return "", fmt.Errorf("trace: %s %q is not one of %s", field, s, strings.Join(names(vals), ", "))
}

// names returns the values as strings.
func names[T ~string](vals []T) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}

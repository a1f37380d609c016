// Package scenarios builds workloads and comparisons from the machine
// (topology), the algorithms (algos) and the engine: the tensor-parallel
// verify pass of speculative decoding, size sweeps with crossovers, and the
// comparison suite that `go test ./scenarios` runs.
//
// The headline scenario is the EAGLE-3 verify pass of Kimi-K2.5 on eight
// GPUs: 61 layers, hidden size 7168, bf16, two allreduces per layer (122 per
// pass) of tokens × 7168 × 2 bytes each, with the layer compute between
// them. [Verify] simulates it for each algorithm and reports µs per
// allreduce, ms per pass and tokens per second for plain and speculative
// decoding.
package scenarios

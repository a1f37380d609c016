// Package scenarios builds workloads from the machine (topology), the
// algorithms (algos) and the engine: the tensor-parallel verify pass of
// speculative decoding, size sweeps with their crossovers, timelines of one
// run, and the comparison suite that `go test ./scenarios` runs (golden
// sweeps per algorithm and preset, and the physics each comparison
// implies). Comparing the simulator with measurements is package validate.
//
// The headline scenario is the EAGLE-3 verify pass of Kimi-K2.5 on eight
// GPUs: 61 layers, hidden size 7168, bf16, two allreduces per layer (122 per
// pass) of tokens × 7168 × 2 bytes each, with the layer compute between
// them. [Verify] simulates it for each algorithm and reports µs per
// allreduce, ms per pass and tokens per second for plain and speculative
// decoding. [Sweep] and [Point] time allreduces by size; [Timeline]
// records one run as slices per rank and per link direction.
//
// Every result is deterministic: points and algorithms run in parallel on
// machines of their own, and the same inputs give the same output.
package scenarios

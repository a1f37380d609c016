package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
	"github.com/arsim/arsim/validate"
)

// The measured traces that validate and calibrate read: JSON Lines v1,
// nccl-tests output and PyTorch profiler traces, told apart by content.

// fileList is a repeatable flag.
type fileList []string

func (f *fileList) String() string { return strings.Join(*f, ",") }
func (f *fileList) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty file name")
	}
	*f = append(*f, s)
	return nil
}

// traceFile is one trace read for validate or calibrate.
type traceFile struct {
	path   string
	format trace.Format
	recs   []trace.Record
	bad    []trace.BadLine
	// skipped are entries of the file that become no record (a profiler
	// trace's kernels of other collectives), with the reason.
	skipped []validate.Skipped
	// gpus are the GPU names the file gives (nccl-tests rank lines).
	gpus []string
	// nccl is the NCCL library the file says its run used (nccl-tests'
	// "nccl-library="), "" where it does not say; rules is the release
	// whose rules its records are simulated with (the option nccl_version
	// they carry), "" for ncclmodel.Version's; rulesWhy says where that
	// came from.
	nccl, rules, rulesWhy string
}

const tracesUsage = "measured trace: JSON Lines v1, nccl-tests output (all_reduce_perf) or a PyTorch profiler trace, told apart by content (repeat for several files)"

// readTraces reads every file, in the format its content shows; a
// malformed line is an input error unless skipBad, when it is kept in bad.
// env are NCCL variables (from --opts) the records of nccl-tests and
// profiler traces were measured under: those formats do not print them.
func readTraces(paths []string, skipBad bool, env map[string]string) ([]traceFile, error) {
	if len(paths) == 0 {
		return nil, badInputf("no trace: give --traces FILE (JSON Lines v1 such as testdata/h200x2/measurements.jsonl, nccl-tests output such as testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt, or a PyTorch profiler trace)")
	}
	var out []traceFile
	for _, p := range paths {
		f, err := readTrace(p, skipBad, env)
		if err != nil {
			if _, isParse := errors.AsType[*trace.ParseError](err); isParse && !skipBad {
				return nil, badInputf("%v (--skip-bad skips malformed lines)", err)
			}
			return nil, badInput(err)
		}
		out = append(out, f)
	}
	return out, nil
}

func readTrace(path string, skipBad bool, env map[string]string) (traceFile, error) {
	tf := traceFile{path: path}
	head, err := readHead(path, 64<<10)
	if err != nil {
		return tf, err
	}
	tf.format = trace.DetectFormat(head) // it looks at the first 64 KiB
	ro := trace.ReadOptions{SkipBad: skipBad}
	switch tf.format {
	case trace.FormatNCCLTests:
		run, bad, err := trace.ReadNCCLTestsFile(path, ro)
		if err != nil {
			return tf, err
		}
		e := ncclEnv(env)
		tf.nccl = run.NCCLLibrary
		tf.rules, tf.rulesWhy = e["nccl_version"], "--opts"
		if r, err := ncclmodel.ParseRelease(run.NCCLLibrary); err == nil && tf.rules == "" {
			// the run's own release, unless --opts names one
			e = maps.Clone(e)
			if e == nil {
				e = map[string]string{}
			}
			e["nccl_version"] = fmt.Sprintf("2.%d", r.Minor)
			tf.rules, tf.rulesWhy = e["nccl_version"], "its nccl-tests header"
		}
		recs, err := validate.NCCLTestsRecords(run, e)
		if err != nil {
			return tf, fmt.Errorf("%s: %w", path, err)
		}
		tf.recs, tf.bad = recs, bad
		for _, r := range run.Ranks {
			tf.gpus = append(tf.gpus, r.Name)
		}
	case trace.FormatKineto:
		tr, bad, err := trace.ReadKinetoFile(path, ro)
		if err != nil {
			return tf, err
		}
		tf.recs, tf.skipped = validate.KinetoRecords(tr, path, ncclEnv(env))
		tf.bad = bad
	default:
		recs, bad, err := trace.ReadJSONLFile(path, ro)
		if err != nil {
			if tf.format == trace.FormatUnknown {
				return tf, fmt.Errorf("%w (not JSON Lines v1, nccl-tests output or a PyTorch profiler trace either)", err)
			}
			return tf, err
		}
		if len(recs) == 0 && len(bad) > 0 && tf.format == trace.FormatUnknown {
			return tf, fmt.Errorf("%s: no line is a record: not JSON Lines v1, nccl-tests output or a PyTorch profiler trace", path)
		}
		tf.recs, tf.bad = recs, bad
		for _, r := range recs {
			if r.Impl == trace.ImplNCCL && r.NCCLRelease != "" {
				// validate simulates NCCL's calls with the release the
				// capture ran (trace.Record.NCCLRelease)
				if rel, err := ncclmodel.ParseRelease(r.NCCLRelease); err == nil {
					tf.nccl = r.NCCLRelease
					tf.rules, tf.rulesWhy = fmt.Sprintf("2.%d", rel.Minor), "the capture's system/versions"
				}
				break
			}
		}
	}
	return tf, nil
}

// ncclEnv turns the short NCCL options of --opts back into NCCL's
// variables, the form records carry.
func ncclEnv(o map[string]string) map[string]string {
	if len(o) == 0 {
		return nil
	}
	env := map[string]string{}
	for k, v := range o {
		switch k {
		case "p2p_level":
			env["NCCL_P2P_LEVEL"] = strings.ToUpper(v)
		case "proto":
			env["NCCL_PROTO"] = strings.ReplaceAll(v, "+", ",")
		case "algo":
			env["NCCL_ALGO"] = v
		case "min_channels":
			env["NCCL_MIN_NCHANNELS"] = v
		case "max_channels":
			env["NCCL_MAX_NCHANNELS"] = v
		case "nthreads":
			env["NCCL_NTHREADS"] = v
		case "shm":
			if v == "off" {
				env["NCCL_SHM_DISABLE"] = "1"
			}
		case "nccl_version": // no NCCL variable: records carry the option
			env[k] = v
		}
	}
	return env
}

// measuredMachine is where validate and calibrate simulate the records.
type measuredMachine struct {
	// preset names the one machine every record runs on ("" for each
	// record's own, by its system id); machine is it when imported.
	preset  string
	machine *topology.Preset
	// params are the parameters by preset name.
	params map[string]*topology.Params
}

// checkWorlds refuses files of nccl-tests or profiler traces whose world
// size the one machine named cannot hold.
func checkWorlds(files []traceFile, t *topology.Topology) error {
	for _, f := range files {
		if f.format != trace.FormatNCCLTests && f.format != trace.FormatKineto {
			continue
		}
		for _, r := range f.recs {
			if r.World > t.NumGPUs() {
				return badInputf("%s ran on %d GPUs; %s has %d: give --topology a machine with at least %d", f.path, r.World, t.Name, t.NumGPUs(), r.World)
			}
		}
	}
	return nil
}

// resolveMeasuredMachine picks the machine: --topology (a preset or a
// file), its GPU class from --gpu or else from the files (nccl-tests rank
// lines), and --params over it; without --topology each JSON Lines record
// runs on the preset its system id names. Files that name no system need
// --topology. The assumptions are printed on errOut.
func resolveMeasuredMachine(files []traceFile, topo, gpu, paramsFile string, errOut io.Writer) (*measuredMachine, error) {
	if topo == "" {
		for _, f := range files {
			if f.format == trace.FormatNCCLTests || f.format == trace.FormatKineto {
				return nil, badInputf("%s is %s, which names no machine: give --topology (a preset, or your machine's `nvidia-smi topo -m` or NCCL topology XML)", f.path, f.format)
			}
		}
		if gpu != "" {
			return nil, badInputf("--gpu needs --topology (the machine whose GPUs it sets)")
		}
		ps, err := presetParams(files, paramsFile)
		if err == nil {
			printNCCLVersions(errOut, files)
		}
		return &measuredMachine{params: ps}, err
	}
	spec := machineSpec{topo: topo, gpu: gpu, params: paramsFile}
	if gpu == "" {
		spec.gpu, spec.gpuFrom = gpuFromFiles(files, errOut)
	}
	m, err := resolveMachine(spec)
	if err != nil {
		return nil, err
	}
	if spec.gpuFrom != "" && m.imported {
		for i, n := range m.notes {
			m.notes[i] = strings.Replace(n, "GPU class "+spec.gpu+" (given;", "GPU class "+spec.gpu+" (from "+spec.gpuFrom+";", 1)
		}
	}
	t, err := m.build()
	if err != nil {
		return nil, err
	}
	if err := checkWorlds(files, t); err != nil {
		return nil, err
	}
	printAssumptions(errOut, m)
	printNCCLVersions(errOut, files)
	mm := &measuredMachine{preset: m.preset.Name, params: map[string]*topology.Params{m.preset.Name: m.params}}
	if m.imported {
		mm.machine, mm.preset = m.preset, ""
	}
	return mm, nil
}

// gpuFromFiles finds the GPU class the files' GPU names share, and says
// where it came from; "" when they name none or several.
func gpuFromFiles(files []traceFile, errOut io.Writer) (string, string) {
	var names []string
	for _, f := range files {
		for _, g := range f.gpus {
			if !slices.Contains(names, g) {
				names = append(names, g)
			}
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	var class string
	for _, n := range names {
		g, ok := topology.MatchGPUClass(n)
		if !ok {
			fmt.Fprintf(errOut, "arsim: GPU %q (rank lines) is in no class of the GPU table: the machine's GPU values are used; --gpu NAME to choose\n", n)
			return "", ""
		}
		if class != "" && class != g.Name {
			fmt.Fprintf(errOut, "arsim: the rank lines name GPUs of several classes (%s): the machine's GPU values are used; --gpu NAME to choose\n", strings.Join(names, ", "))
			return "", ""
		}
		class = g.Name
	}
	return class, fmt.Sprintf("the rank lines (%s)", strings.Join(names, ", "))
}

// presetParams returns the parameters of every preset the records use by
// their system id, with the parameter file applied when one is given.
func presetParams(files []traceFile, paramsFile string) (map[string]*topology.Params, error) {
	out := map[string]*topology.Params{}
	var ovs []topology.Override
	if paramsFile != "" {
		f, err := os.Open(paramsFile)
		if err != nil {
			return nil, badInput(err)
		}
		ovs, err = topology.ReadOverrides(f, paramsFile)
		f.Close()
		if err != nil {
			return nil, badInput(err)
		}
	}
	for _, f := range files {
		for _, r := range f.recs {
			p, ok := topology.ForSystem(r.System)
			if !ok || out[p.Name] != nil {
				continue
			}
			ps := p.DefaultParams()
			if err := ps.Apply(ovs, paramsFile); err != nil {
				return nil, badInputf("preset %s: %v", p.Name, err)
			}
			out[p.Name] = ps
		}
	}
	return out, nil
}

// loadMeasured reads the traces under the NCCL settings of optsFlag and
// resolves the machine they are simulated on: what validate and calibrate
// both start with.
func loadMeasured(traces []string, skipBad bool, optsFlag, topo, gpu, params string, errOut io.Writer) ([]traceFile, *measuredMachine, error) {
	o, err := parseOpts(optsFlag)
	if err != nil {
		return nil, nil, err
	}
	files, err := readTraces(traces, skipBad, o)
	if err != nil {
		return nil, nil, err
	}
	mm, err := resolveMeasuredMachine(files, topo, gpu, params, errOut)
	if err != nil {
		return nil, nil, err
	}
	return files, mm, nil
}

// printNCCLVersions says which NCCL each nccl-tests file ran, where it
// says, and whose rules (tuning, defaults, chunking, unroll) arsim's nccl
// simulates its rows with: the run's own release where arsim knows it
// (nccl_version), else ncclmodel.Version's.
func printNCCLVersions(errOut io.Writer, files []traceFile) {
	for _, f := range files {
		ran := ""
		if f.nccl != "" {
			ran = fmt.Sprintf(" ran NCCL %s (its nccl-tests header);", f.nccl)
			if f.format != trace.FormatNCCLTests {
				ran = fmt.Sprintf(" ran NCCL %s;", f.nccl)
			}
		}
		switch {
		case f.rules != "":
			fmt.Fprintf(errOut, "arsim: %s%s simulated with NCCL %s's rules (nccl_version from %s)\n", f.path, ran, f.rules, f.rulesWhy)
		case f.nccl != "":
			fmt.Fprintf(errOut, "arsim: %s%s arsim's nccl knows NCCL 2.%d to 2.%d: simulated with %s's rules (--opts nccl_version=2.N to choose)\n",
				f.path, ran, ncclmodel.OldestMinor, ncclmodel.NewestMinor, ncclmodel.Version)
		}
	}
}

// Package msccl reads allreduce schedules written in MSCCL's XML format (the
// output of msccl-tools, run by MSCCL and RCCL's MSCCL interpreter) and turns
// them into arsim schedules, so that a schedule written elsewhere is proved
// by the checker and timed on any machine like a built-in algorithm.
//
// The format, as msccl-tools writes it (msccl/language/ir.py, ir_to_xml) and
// the interpreter runs it (RCCL src/device/msccl_kernel_impl.h,
// mscclRunInterpreter):
//
//	<algo name="…" proto="Simple|LL|LL128" nchannels="…" nchunksperloop="C" ngpus="N" coll="allreduce" inplace="0|1">
//	  <gpu id="g" i_chunks="…" o_chunks="…" s_chunks="…">
//	    <tb id="t" send="peer|-1" recv="peer|-1" chan="c">
//	      <step s="k" type="s|r|rrc|rrs|rrcs|rcs|cpy|re|nop" srcbuf="i|o|s" srcoff="…" dstbuf="i|o|s" dstoff="…" cnt="…" depid="tb|-1" deps="step|-1" hasdep="0|1"/>
//
// A GPU's thread blocks run in parallel, each its steps in order; a step
// with depid/deps first waits for step deps of thread block depid on the
// same GPU (whose hasdep must be 1: only such steps publish their
// completion). A thread block sends to its send peer and receives from its
// recv peer over channel chan: the k-th send of GPU g on (peer p, chan c)
// meets the k-th receive of p on (g, c). The buffer is C chunks; offsets and
// counts are in chunks; the whole program repeats over slices of each chunk
// as large as one step of the protocol's buffer.
//
// In arsim a step becomes ops on the GPU's rank: a send is a posted write of
// the data into a per-connection receive area of the peer (two rotating
// copies, call k using copy k mod 2) marked by a flag (inline with the data
// for LL and LL128; after a system-scope fence for Simple); a receive waits
// for the flag and reads the area. Nothing here runs at import time or
// touches the engine; Parse only reads.
package msccl

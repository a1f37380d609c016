// Package algos holds allreduce algorithms as pluggable schedulers, the
// schedule checker, and the executor that times a schedule on a machine.
//
// An [Algorithm] turns a [Request] (machine, ranks, message bytes, element
// type, options) into a [Schedule]: for every rank an ordered program of
// [Op]s — read a byte range of some buffer, write a range into some buffer,
// copy-engine transfer, set a flag, wait for a flag, launch a kernel,
// compute for a while — with explicit dependencies ([Op.After]) inside the
// rank and flags between ranks. Algorithms never touch the engine.
//
// Before any timing, [Check] executes a schedule symbolically, back to back
// with the same buffers (twice, or for schedules with rotating buffers or
// data-carried completion as many calls as cover every phase of the
// rotation), and proves that every rank ends with the sum of all ranks'
// inputs for every element, that nothing is read before it is written or
// overwritten while another rank may still read it, that every wait is
// satisfied, and that a poll on data (a Lamport sentinel) can only end on
// the data of its own call. [Run] then executes it on a [hw.Machine].
//
// # Flags and epochs
//
// A flag is a counter in memory that ranks signal and wait on. Its values
// count within one allreduce, from 1:
//
//   - a Signal sets the flag to Value (> 0); a Wait waits until the flag
//     holds Value or more (> 0);
//   - every value a Wait waits for is signalled within the same allreduce,
//     and the first value that satisfies a Wait is set by exactly one op
//     (two ops setting it would make the wait ambiguous): Check refuses
//     either mistake by name;
//   - a larger value must not be set before a smaller one that a Wait is
//     for (the wait would end on the larger, early): from the least value
//     a Wait ends on, each value's signal must precede the next larger
//     one's (a counter raised in order); Check refuses it by name;
//   - a flag's stride is the largest value signalled to it in one
//     allreduce. In back-to-back allreduces the executor and the checker
//     add iteration × stride to every value of that flag, so allreduce k
//     waits for Value + k × stride and never mistakes an earlier
//     allreduce's signal for its own; the schedule itself never counts
//     across allreduces;
//   - a [Stream] declares each flag's stride ([StreamFlag]); a signal above
//     it, or a declared stride that no op reaches, is an error of the run.
//
// A write that a loop issues element by element as it produces them (a
// reduce that stores its result as it goes) is [Op.Fused]: the run starts
// it with its first dependency, beside its producers (its other
// dependencies); Check holds it to all of them and refuses an op that
// waits for it without naming them too.
//
// Adding an algorithm is one file with a type implementing Algorithm and
// one Register call in its init function; [Names] lists the registry in
// sorted order.
package algos

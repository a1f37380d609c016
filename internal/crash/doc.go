// Package crash turns a panic into an error that says it is a bug: an
// [*Error] carrying the panic's value and the stack where it happened.
//
// Every goroutine that runs simulations for the command line defers
// [Recover], so that a panic anywhere ends the run with that error (the
// command exits with status 3, "internal error, please report") instead
// of killing the process with Go's status 2, which means bad input to
// arsim, or being shown as if the input could not be simulated.
//
// Nothing here prints or exits.
package crash

// Package viz turns results into files for people to look at: timelines
// as Perfetto / Chrome traces (ui.perfetto.dev opens them) and as Gantt
// pictures, sweeps as latency-versus-size plots, validations as simulated
// versus measured. Pictures are .svg or .png, by the file's extension.
//
// It only draws: every figure comes from the result it is given (package
// scenarios' timelines and sweeps, the validation's records), and the same
// result gives the same file. Nothing here prints or reads the clock.
package viz

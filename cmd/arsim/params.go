package main

import (
	"os"

	"github.com/arsim/arsim/topology"
)

func applyParamsFile(ps *topology.Params, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return badInput(err)
	}
	defer f.Close()
	ovs, err := topology.ReadOverrides(f, path)
	if err != nil {
		return badInput(err)
	}
	return badInput(ps.Apply(ovs, path))
}

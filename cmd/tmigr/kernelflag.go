package main

import "github.com/tmigr/tmigr/kernel"

// parseKernelFlag reads a --kernel release given by the user and refuses
// one outside the series the model covers (kernel.Modelled), naming them:
// modelling 5.4 or 42.0 with the nearest rules in silence answers a
// question nobody asked.
func parseKernelFlag(s string) (kernel.Release, error) {
	rel, err := kernel.ParseRelease(s)
	if err != nil {
		return kernel.Release{}, err
	}
	if err := kernel.Modelled(rel.Version); err != nil {
		return kernel.Release{}, err
	}
	return rel, nil
}

// isRelease reports whether s reads as a kernel release ("6.12", "7.3.4"):
// given where a flavour or a name is wanted, the user meant a version.
func isRelease(s string) bool {
	_, err := kernel.ParseRelease(s)
	return err == nil
}

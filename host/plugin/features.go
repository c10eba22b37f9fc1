package plugin

import (
	"context"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// The features a module declares (ABI.md section 9): what it understands
// beyond version 1 as first published, read once at load from its
// optional sluice_features export. A module without the export, such as
// every module built before it existed, declares none and is served
// exactly as before: its records' flags are 0.

// loadABI instantiates mod once and returns the ABI version the module
// declares and, when it exports sluice_features (with the right
// signature: withFeatures), the features it declares. A module of another
// version is not asked for its features. A failure is a *problemError:
// its message is the problem as a LoadError lists it, and it wraps the
// engine's error. Load and Check both call it, so that they agree on a
// module whose sluice_features traps.
func loadABI(ctx context.Context, mod runtime.Module, c *call, withFeatures bool) (version, features int32, err error) {
	inst, err := instantiate(ctx, mod, c)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = inst.Close(context.WithoutCancel(ctx)) }()
	if version, err = callI32(ctx, inst, c, abi.ExportABIVersion); err != nil || version != abi.Version || !withFeatures {
		return version, 0, err
	}
	features, err = callI32(ctx, inst, c, abi.ExportFeatures)
	return version, features, err
}

// exportsFeatures reports whether s found sluice_features exported with
// its signature, () -> i32.
func (s *shape) exportsFeatures() bool {
	for _, e := range s.exports {
		if e.Name == abi.ExportFeatures {
			return e.Signature.Equal(sig(0, 1))
		}
	}
	return false
}

// ReadsInputs reports whether the module declares that it reads the input
// each record arrived on (abi.FeatureInputs). When it does, the records
// the host hands it carry their abi.Record.Input; when it does not, the
// host encodes every record with input 0, the bytes a version-1 module
// has always received, so such a module cannot tell the inputs of a
// multi-input operator apart.
func (p *Plugin) ReadsInputs() bool { return p.features&abi.FeatureInputs != 0 }

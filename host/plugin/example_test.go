package plugin

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// Load a map operator, make an instance and run a batch through it. The
// module is testdata/guests/upper, which upper-cases values.
func Example() {
	ctx := context.Background()
	wasm := env.guests["upper"] // the bytes of upper.wasm
	cacheDir := env.cacheDir    // compiled code is kept here across runs

	cfg := runtime.NewConfig().WithHostModules(HostModule()).WithCacheDir(cacheDir)
	eng, err := runtime.NewWazero(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close(ctx)
	p, err := Load(ctx, eng, "upper.wasm", wasm, KindMap)
	if err != nil {
		fmt.Println(err)
		return
	}
	inst, err := p.NewInstance(ctx, []byte(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var out Output
	in := []abi.Record{{Value: []byte("hello")}, {Value: []byte("world")}}
	if err := inst.Process(ctx, in, nil, &out); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range out.Records {
		fmt.Printf("%d %s\n", r.Origin, r.Value)
	}
	// Output:
	// 0 HELLO
	// 1 WORLD
}

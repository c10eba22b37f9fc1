// Package reconfig holds the tests of a pipeline run as several sluice
// processes over a cluster of NATS servers that is changed while it runs:
// key groups moved (sluice cluster move) and the source or the
// destination of the moves killed with SIGKILL in the middle, or the NATS
// server that leads the cluster's assignment bucket (the servers then run
// as processes of their own, natstest.StartClusterProcesses), the
// operator's plugin swapped and rolled back on every host (sluice plugin
// swap, rollback), its workers scaled on every host (sluice cluster
// scale), a host with another pipeline file refused, and the nemesis, a
// random schedule of hosts killed, stopped and started, key groups moved
// and plugins swapped (SLUICE_NEMESIS_SEED repeats a schedule,
// SLUICE_NEMESIS_STEPS sets its length). Every record is counted exactly
// once. The package has no code of its own: its tests build the binary
// and run it (see package sluicetest for why they live here and not in
// cmd/sluice). testdata/wordcountv2 is the module the swaps swap in.
package reconfig

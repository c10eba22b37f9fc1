// Package failover holds the tests of a pipeline run as several sluice
// processes over a cluster of NATS servers that loses a host (killed with
// SIGKILL) or a NATS server while records flow: the key groups of the
// host lost go to the others, which load its last checkpoints, and every
// record is counted exactly once. A transactional pipeline, whose key
// groups live on one host together, moves whole to a standby, and its
// outcomes are those of one process. Hosts lost in the middle of a migration
// are package reconfig's. The package has no code of its own: its tests
// build the binary and run it (see package sluicetest for why they live
// here and not in cmd/sluice).
package failover

// Package failover holds the tests of a pipeline run as several sluice
// processes over a cluster of NATS servers that loses a host (killed with
// SIGKILL, also in the middle of a migration, as the source or as the
// destination of its moves) or a NATS server: the key groups of the host
// lost go to the others, which load its last checkpoints, and every
// record is counted exactly once. The package has no code of its own: its
// tests build the binary and run it (see package sluicetest for why they
// live here and not in cmd/sluice).
package failover

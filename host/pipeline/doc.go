// Package pipeline reads a pipeline file (YAML) into a validated Pipeline:
// its sources, the chain of operators, its sinks, the dead-letter
// destination, state and NATS settings.
//
// Every error names the file, the line and the key at fault, for example
//
//	wordcount.yaml:14: operators[1].kind: unknown operator kind "keyd" (want map, filter, flatmap, keyed or transactional)
//
// Unknown keys are errors, not silently ignored: a misspelt key would
// otherwise change what a pipeline does without a word. So are the keys of
// another source or sink type (rate on a file source), which would be
// ignored. The keys a mapping holds are read from the yaml tags of the
// struct it decodes into (and, for sources and sinks, the types tag that
// says which types a key applies to), so the list of known keys an error
// gives, and the nearest one it suggests, cannot drift from the decoder:
//
//	p.yaml:10: operators[0].retrys: unknown key "retrys" in an operator: did you mean "retries"? (known: name, plugin, ...)
//	p.yaml:6: sources[0].rate: rate is a key of generator sources, not of a file source (its keys: ...)
//
// A value of the wrong type names its key (sources[0].count: "many" is not
// a whole number of 0 or more), and a YAML syntax error is reported at the
// line where the file stops parsing, with the mapping it is in: the YAML
// library names the line where the enclosing block starts, so the line is
// found by parsing ever longer prefixes of the file.
//
// The topology is a chain: every source feeds the first operator, each
// operator feeds the next, and every sink receives what the last operator
// emits. Relative paths (plugins, files, the data directory) are resolved
// against the directory of the pipeline file, so a pipeline can be run from
// anywhere.
//
// # Transactional operators
//
// A transactional operator (kind transactional) names its shared tables
// (with their initial contents: a JSON Lines file, a workload generator's
// table, or nothing), its punctuation, its scheduling strategy and its
// number of scheduler workers. Decisions, and why:
//
//   - The punctuation cuts the whole pipeline's batches: a batch is
//     processed by every operator and committed together, so a second,
//     independent batching for one operator would either hold back commits
//     or split transactions' state from their positions. Hence the
//     pipeline's batch key is refused beside a transactional operator, and
//     two transactional operators must share one punctuation.
//   - parallelism and state are refused rather than ignored: a
//     transactional operator's parallelism is its scheduler's workers, and
//     its tables carry initial contents, which state cannot express.
//   - A transactional operator's tables are its own: the executor applies
//     its change set when the batch commits, so another operator writing
//     the same table in the same batch would be overwritten or would read a
//     stale value.
//   - The default strategy (DefaultStrategy) is adaptive: no static
//     strategy wins on every workload, and a pipeline's workload changes
//     as it runs. The adaptive key tunes it and is refused beside a static
//     strategy, where it would do nothing.
//   - Workload names and knobs (generator source mode txn, generator table
//     init) are kept as written, with their lines: the workload package
//     checks them when the runner builds the workload, and the runner
//     reports a bad one as a pipeline *Error at that line.
//
// # Stages
//
// A pipeline spread over hosts may be cut into stages (cluster.stages):
// Stages returns one Pipeline per stage, each run by the runner as a
// pipeline of its own, so that a stage's key groups, and with them its
// operators, can be placed on a host apart from the others'. Decisions,
// and why:
//
//   - A stage is a copy of the file's pipeline with the stage's operators
//     and sinks, and links (a sink and a source of type "stage", which a
//     file cannot name) to the next and previous stages' partition
//     streams: everything the runner does for a pipeline spread over
//     hosts (leases, checkpoints, migrations, swaps) works per stage
//     unchanged. The first stage keeps the pipeline's name, so a file
//     that gains stages keeps its first stage's cluster and stream.
//   - Only a chain is cut, windowed operators stay in the first stage and
//     a transactional pipeline is not cut: a later stage reads records
//     published by the stage before it, which carry their key and time
//     but not the source's watermarks, and a transactional operator's
//     groups live on one host together anyway.
package pipeline

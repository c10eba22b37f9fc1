// Package pipeline reads a pipeline file (YAML) into a validated Pipeline:
// its sources, the chain of operators, its sinks, the dead-letter
// destination, state and NATS settings.
//
// Every error names the file, the line and the key at fault, for example
//
//	wordcount.yaml:14: operators[1].kind: unknown operator kind "keyd" (want map, filter, flatmap or keyed)
//
// Unknown keys are errors, not silently ignored: a misspelt key would
// otherwise change what a pipeline does without a word.
//
// The topology is a chain: every source feeds the first operator, each
// operator feeds the next, and every sink receives what the last operator
// emits. Relative paths (plugins, files, the data directory) are resolved
// against the directory of the pipeline file, so a pipeline can be run from
// anywhere.
package pipeline

// Package connectors defines the contract between the Sluice host and the
// places records come from and go to: Source, Sink, Message and Out. The
// implementations live in subpackages, one per kind of endpoint:
//
//   - natsconn: NATS core subjects and JetStream streams, the embedded NATS
//     server and the client connection;
//   - file: JSON Lines and plain-lines files;
//   - generator: deterministic synthetic records for examples and benchmarks.
//
// The contract is small on purpose: the executor batches, commits and
// retries; a connector moves bytes and reports positions.
//
// # Positions and delivery guarantees
//
// Every message carries a position, strictly increasing per source. The host
// commits the positions of a batch together with the state changes the batch
// caused, then calls Source.Ack. After a restart it opens the source after
// the last committed position. A resumable source (file, generator, JetStream)
// never returns a record at or before that position, so each input affects
// state once. Core NATS is not resumable: what was in flight when the host
// stopped is lost (at-most-once); its positions continue after the one the
// host passes to Open, so ids derived from them stay unique across restarts.
//
// Sinks receive an id per record, derived by the host from the input
// position. The JetStream sink publishes it as Nats-Msg-Id. Rewindable sinks
// make the replay after a crash exactly once: the host commits their offset
// with the state, and on restart a file sink cuts off what was written after
// it, a JetStream sink skips the outputs whose ids its stream holds after it.
// A core NATS sink publishes a crashed batch's outputs again (at least once).
//
// # Flushes
//
// The host flushes every sink after writing a batch and before committing
// it. A sink whose flush can run while it is written to implements
// FlushStarter: the host starts the flush and waits for it only before the
// commit, writing the next batches meanwhile. The core NATS sink does (its
// flush is a ping round trip to the server); a file or JetStream sink
// flushes in place.
//
// # Backlog
//
// A source that can tell how many records wait in it, not read yet,
// implements Backlogged, for the control plane: the JetStream sources from
// the pending count the server sends with each message (no request of
// their own), the generator from its rate's schedule. Others report none.
//
// # Records on NATS
//
// A record maps to a NATS message as follows, for core NATS and JetStream
// alike:
//
//	record value    <-> payload
//	record key      <-> header "Sluice-Key" (absent: empty key)
//	event time      <-> header "Sluice-Time", decimal nanoseconds since the
//	                    Unix epoch; when absent on input: the stream's stored
//	                    timestamp for JetStream, the time of receipt for core
//	                    NATS
//	record headers  <-> the other NATS headers, in both directions, except
//	                    those whose names begin with "Nats-" (the server's
//	                    control headers such as Nats-Msg-Id), which are
//	                    neither read into records nor published from them
//
// A NATS header cannot carry every value as it is: the client turns line
// breaks into spaces, and the server trims spaces and tabs around a value.
// A key that holds a line break or begins or ends with a space or a tab
// goes in standard base64 under "Sluice-Key-Base64" instead; such a header
// value, in standard base64 under the header's name prefixed with
// "Sluice-Base64-" (as does any header whose name begins with that
// prefix). A source decodes both, so a record comes back as it was sent.
//
// The subject a sink publishes to is fixed per sink. A sink publishes
// Sluice-Time only when configured to, and a record with no key and no
// headers goes out as a plain message without a header block, the fastest
// path NATS has. A source that cannot parse Sluice-Time returns the message
// with Err set (wrapping ErrMalformed) so the host dead-letters it.
//
// # Ownership
//
// A Message's record owns its bytes; a Sink copies what it keeps. Sources and
// sinks built on a *nats.Conn do not close it: the connection belongs to the
// caller, who usually shares one per process.
package connectors

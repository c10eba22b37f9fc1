// Package natsconn connects Sluice to NATS: the embedded server, the client
// connection, and sources and sinks for core NATS subjects and JetStream
// streams. Records map to NATS messages as the connectors package
// describes (value as payload, key in Sluice-Key, event time in
// Sluice-Time, other headers as NATS headers).
//
// # Server and connection
//
// StartEmbedded runs nats-server inside the process with JetStream stored in
// a directory, for the one-command laptop setup; the same code runs against
// a real cluster given a URL, and embedded servers can form a cluster too. Connect makes the one client connection a
// process needs: it reconnects forever with exponential backoff once
// connected, but does not retry the first connection, so that a server that
// is down at start is a clear error rather than a silent wait. Sources and
// sinks take a *nats.Conn and never close it.
//
// # Clustered embedded servers
//
// With Options.Cluster the embedded server is a member of a NATS cluster
// and JetStream is clustered: a stream or key-value bucket with replicas
// lives on that many members and keeps serving while a minority of them is
// down. Every member is given the cluster's name, its route listener and
// the routes of members to connect to (at least one; a member's own route
// is ignored, so all members can share one list); members learn the rest
// of the cluster from each other. JetStream knows a member by its server
// name, which must differ between members and stay the same across
// restarts: a member given no Name makes one up at its first start and
// keeps it in the file server-name of its directory. Needing a route at
// start is the server's rule: the first member of a new cluster, with no
// other to route to, is given its own route, on a port it must know in
// advance. RouteURL reads back the route a member listens on. JetStream
// elects a meta leader only once two members have met, so a member is
// ready for connections before the cluster can take requests; package
// natstest waits for both and starts clusters for tests.
//
// # Core NATS
//
// CoreSource subscribes (optionally in a queue group) and hands messages
// from the client's delivery goroutine to Read through a bounded ring; when
// the ring is full the delivery goroutine waits, and the client's
// (large) pending limits absorb bursts. Core NATS keeps no history: the
// source is at-most-once and not resumable. CoreSink publishes plain
// messages whenever a record has nothing but a value, which is the fastest
// path NATS has; Flush is a ping round trip.
//
// # JetStream source: at-least-once input, read exactly once per commit
//
// JetStreamSource reads through a durable pull consumer with AckPolicy
// AckAll, so the host acknowledges once per committed batch: Ack(pos)
// acknowledges the message at stream sequence pos (or the last one before
// it), and with it every earlier one. Positions are stream sequences.
//
// AckAll has a trap that the source closes: a message the server delivered
// but the client never received (lost with a dropped connection) stays
// pending on the server until AckWait, and a later acknowledgement of a
// higher sequence would acknowledge it unseen. The source therefore watches
// the consumer's delivery sequence, which has no gaps for a single reader,
// and the client's reconnections; on either sign of loss it resets the
// consumer to deliver again from just after the last sequence it returned
// (the consumer reset API of NATS 2.14 and later) and drops the deliveries
// made before the reset. Open resets the consumer the same way to the
// position the host committed, so a restarted host neither waits AckWait for
// what it had read but not committed nor reads again what it had committed.
// Redeliveries of messages already returned (after AckWait) are dropped, so
// positions strictly increase. One reader per durable consumer: sharing one
// across hosts is not supported (give each its own durable and filter).
//
// # JetStream sink: exactly-once output
//
// JetStreamSink publishes asynchronously with Nats-Msg-Id set to the id the
// host derives from the input position, keeps a bounded number of
// publications in flight, and on Flush waits for every acknowledgement. A
// publication that fails for a passing reason (disconnection, JetStream not
// answering yet, an acknowledgement that does not come) is published again
// with the same id until it is acknowledged, so a server restart loses
// nothing, and the stream's duplicate window makes a message stored twice
// appear once. At such a failure the sink stops publishing until every
// message in flight is answered, then publishes again from the first one
// not acknowledged, so that the stream keeps the order written; a lost
// connection is the exception (JetStreamSink says why).
//
// A crash is not left to the window: the sink is a connectors.Rewindable.
// The host commits, with each batch, the stream sequence of the sink's last
// acknowledged message; on restart Rewind reads, headers only, the ids of
// the sink's messages stored after it (the crashed batch's) and the sink
// does not publish them again, however long the restart took. This costs
// one request at start after a clean stop, a few after a crash, and
// nothing once the crashed batch is replayed. What it cannot cover is what
// the stream removed before the restart: retention by interest or work
// queue, a per-subject limit (the sink warns when it is created), or limits
// that discarded messages stored after the commit (Rewind warns); those
// outputs are de-duplicated only within the window.
//
// # Partitioned by key group: one subject per group
//
// Hosts that share a pipeline read its input by key group, each the groups
// it owns. A JetStreamSink with KeyGroups publishes each record to
// "<Subject>.<kg>", kg being the configured KeyGroup of its key (of the empty key
// when it has none), and a stream it creates captures "<Subject>.*".
//
// PartitionedSource is the connectors.Partitioned that reads such a
// stream: each group it reads has its own floor, the stream sequence of
// the last record of that group the host applied. It reads through an
// ordered consumer, ephemeral and without acknowledgements, from the
// lowest floor + 1, and drops each record at or below its group's floor,
// so that the committed floors are the only position and Ack does
// nothing. SetGroups starts a new consumer for the new groups and floors
// and stops the old one, while the other goroutine goes on reading. The
// ordered consumer recreates itself after the last record it delivered
// when it is lost, so a server restart loses and repeats nothing. Its
// re-creation is bounded (a few attempts under one name, then the next
// name), since a name can stay unusable while the server that held the
// consumer is down; and a watchdog replaces a consumer that receives
// nothing for StallTimeout while the server holds records for it (or
// does not answer about it) by a new one, after the last record Read
// took, within the same GroupSet.
//
// The consumer is filtered to the subjects of the groups read, or, above
// MaxFilters groups, to "<Subject>.*" with the other groups dropped by the
// source: the server delivers a consumer with several filters at a cost
// per message that grows with the subjects of the stream (about 200 µs
// with 1,024 groups against 4 µs unfiltered, on 2 cores), so a host
// reading a third of 1,024 groups reads the whole stream 20 times faster
// than its share through filters. A record on a subject of the stream that
// is not a group number is malformed and belongs to group 0, read only
// through "<Subject>.*".
package natsconn

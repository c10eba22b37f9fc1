// Package checkpoint keeps a pipeline's key group checkpoints in a
// JetStream object store, so that a host started on an empty disk can take
// over any key group: it loads the group's checkpoint and replays the
// group's input from the positions recorded with it.
//
// # Objects
//
// Each pipeline has one bucket, BucketName(pipeline):
// "sluice-<pipeline>-ckpt", with the characters NATS refuses in a bucket
// name replaced by '_' and, when any were, a hash of the pipeline's name
// appended. The bucket's metadata names its pipeline, and Open refuses a
// bucket that names another. A key group's checkpoint is the object
// ObjectName(kg), "kg-" and the group in five digits, replaced by each Put:
// the object store keeps the latest only, and a Put that fails leaves the
// previous one whole.
//
// An object is an envelope: a magic string, a format version, the key
// group, its generation in the writer's store, the writer's host name, the
// caller's metadata (the lead puts the group's source floors there; this
// package does not read it), the group's state as
// state.Store.ExportKeyGroup wrote it, and a CRC-32C of all of it
// (checkpoint.go gives the layout). The object's NATS metadata repeats the
// key group, the key group count, the generation, the host and a SHA-256
// of the metadata and export, so that List describes every checkpoint
// without downloading one. Get and Load check the envelope's checksum, that
// it holds the key group its name says, that its export is that group's,
// and that it comes from a store of the destination's key group count; a
// damaged or foreign object is refused with an ObjectError that names the
// bucket, the object and the fault (matching ErrCorrupt or ErrForeign),
// and nothing is imported.
//
// # Incremental shipping
//
// state.Store counts, per key group, the commits that changed it (its
// generation). Ship puts the groups whose generation moved since this
// Bucket put or loaded them, and skips the others without exporting them;
// a group whose generation moved but whose export and metadata are those
// the bucket already holds (a group just loaded, or written with the
// values it had) is exported and compared, not put. A restarted host
// learns what the bucket holds from List, by the content digests, so it
// does not put again what it put before it stopped. A host calls Ship on a
// period and before it hands groups over, at a batch boundary: exports
// read committed state, and a group written since the last commit is
// either not exported (its committed state was shipped) or refused.
//
// Within a group, a change is sent as a delta when it can be (see
// Deltas): a group that changed is exported whole on the host, but only
// what changed in it since its checkpoint crosses the network.
//
// # Deltas
//
// When a Bucket puts a group whole it keeps an index of the export
// (state.IndexExport: a hash of each entry's key and value, 16 bytes an
// entry). The group's next checkpoint from that Bucket, by Ship or Amend,
// while the group's object is still the one it put (by its NATS digest),
// is sent as a delta against it (state.ExportDelta: the entries added or
// changed and the hashes of the keys dropped) when the delta is at most
// half the export: the delta is put as the object ObjectName(kg) +
// ".delta.0" or ".delta.1" (the one the metadata does not name: a reader
// still downloading the other is not cut off by this write), then the
// group's object's metadata is replaced (as Amend
// replaces it) with the checkpoint's metadata, generation and host, the
// content digest of what the checkpoint restores, and the delta's NATS
// digest. That metadata update is what makes the delta part of the
// checkpoint: a Bucket that stopped between the two writes leaves the
// previous checkpoint whole, and a reader of the object reads the delta
// that its metadata names, applies it to the object's export
// (state.ApplyExportDelta, which checks the base and the result by their
// checksums) and checks the result against the content digest, so it
// gets one checkpoint or the previous one, never a mix; a delta replaced
// while it was read (a writer's next checkpoint) is read again. Each
// delta is against the export put whole, not the previous delta, so a
// reader applies one; once the delta would be more than half the export,
// the group is put whole again and becomes the new base. A Bucket keeps
// no base for a group it loaded or was handed, and after Forget: its first
// checkpoint of it is put whole.
//
// # Cuts
//
// A pipeline whose state is not partitioned by its input's key groups (a
// transactional operator's: a transaction routed by one group's key
// writes keys of others) cannot be checkpointed group by group: its
// groups agree with each other only at one batch boundary, and a writer
// that stopped between two groups' puts would leave groups from two. Its
// host puts a cut instead: every group's envelope, exported at one
// boundary, in one object, CutObject, with a magic string, a version, the
// group count and a CRC-32C of its own (cut.go gives the layout). PutCut
// replaces the previous cut atomically, so a reader gets one cut whole;
// GetCut checks the cut's checksum, each group's envelope, that it holds
// every group once and in order, and the pipeline's group count. A cut
// is sent as a delta against the cut this Bucket put whole, as a group's
// checkpoint is (see Deltas): every group's metadata, generation and host,
// and its export's delta, in the object CutObject + ".delta.0" or
// ".delta.1", named by the
// cut object's metadata, which PutCut replaces after putting the delta;
// GetCut applies it. Once the delta would be more than half the cut, the
// cut is put whole again. List does not describe it; CutInfo does.
//
// # Replicas
//
// A Replica keeps an in-memory copy of the latest checkpoint of some
// groups (Spacker's replication knob: the share of groups a destination
// holds in advance). Refresh updates the copies on request, Run as
// checkpoints are put. At a migration the destination calls Install, which
// asks the bucket for the object's digest only and imports the copy when it
// is current, so the move of a group unchanged since the last Ship fetches
// nothing, and the move of a changed group fetches its delta alone when
// the copy is of the export the delta applies to (Run fetches deltas as
// they are put, too), else the group. Stats
// counts bytes put, bytes fetched when needed and bytes prefetched by
// replicas, so that a benchmark can show the bytes a migration moves
// falling with the replicated share.
//
// # Amendments
//
// Amend is Put for a hand-over: when the bucket's checkpoint of a group
// holds the export being put already (by the SHA-256 of the export that
// Put records in the object's NATS metadata), only the metadata, the
// generation and the host are replaced, in the object's NATS metadata
// (ObjectStore.UpdateMeta), and the export is not sent again; the object's
// chunks and digest stay, so a replica's copy stays current. The object's
// content digest is replaced with them, and every reader checks the
// amended metadata against it and the export it holds (ErrCorrupt when
// they disagree). A later Put replaces the object and its amendment.
//
// A Bucket remembers what it put; a host that hands a group over calls
// Forget for it, since another host may checkpoint the group before it
// comes back.
//
// # A known leak in the NATS client
//
// nats.go's object store (v1.55.0, the newest) makes a JetStream context
// of its own for every put and cleans it up at the end; when the cleanup
// runs before that context's reconnect watcher has started, the watcher
// waits on a nil channel for ever. Measured: 3 goroutines left behind per
// 1,000 puts. A host that checkpoints every 30 seconds and changes every
// one of 128 groups leaves about one every 80 seconds (a few KiB each,
// some MiB a day). It is the library's to fix; the tests name it to their
// leak checker.
package checkpoint

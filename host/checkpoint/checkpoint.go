package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// Errors a checkpoint operation matches with errors.Is.
var (
	// ErrNotFound: the bucket holds no checkpoint of the key group.
	ErrNotFound = errors.New("no checkpoint of the key group")
	// ErrCorrupt: an object is damaged (a bad checksum, a truncated or
	// unreadable envelope or export): nothing was imported.
	ErrCorrupt = errors.New("corrupt checkpoint")
	// ErrForeign: an object or bucket is intact but not the one asked for
	// (another key group, another key group count, another pipeline):
	// nothing was imported.
	ErrForeign = errors.New("foreign checkpoint")
)

// ObjectError reports a checkpoint object that is missing or refused,
// naming its bucket and object. It matches its Kind (ErrNotFound,
// ErrCorrupt, ErrForeign) and its Cause with errors.Is.
type ObjectError struct {
	Bucket string // the object store bucket
	Object string // the object's name
	Fault  string // what is wrong, in words
	Kind   error  // ErrNotFound, ErrCorrupt or ErrForeign
	Cause  error  // the underlying error, or nil
}

// Error returns "checkpoint: bucket B, object O: fault: cause".
func (e *ObjectError) Error() string {
	msg := fmt.Sprintf("checkpoint: bucket %s, object %s: %s", e.Bucket, e.Object, e.Fault)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns the error's kind and cause.
func (e *ObjectError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// Options configure Open. The zero value is usable.
type Options struct {
	// Host names this host in the checkpoints it writes (Group.Host,
	// Info.Host); empty means the name of the machine.
	Host string
	// Replicas is the number of JetStream replicas of the bucket when Open
	// creates it, 1 to 5; 0 means 1. An existing bucket keeps its own.
	Replicas int
	// Logger receives the bucket's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// Bucket is the JetStream object store holding a pipeline's key group
// checkpoints, one object per key group (see the package documentation).
// Its methods are safe for concurrent use.
type Bucket struct {
	obs      jetstream.ObjectStore
	name     string
	pipeline string
	host     string
	log      *slog.Logger
	// readAgain: fetch's pauses before downloading again (readAgain).
	readAgain []time.Duration

	mu        sync.Mutex
	known     map[int]known // what the bucket holds, as this Bucket last saw it
	recovered bool          // known was filled from List
	cut       *cutBase      // the cut this Bucket put whole last; nil: none

	puts, putBytes            atomic.Int64
	amends, amendBytes        atomic.Int64
	deltas, deltaBytes        atomic.Int64
	gets, getBytes            atomic.Int64
	prefetches, prefetchBytes atomic.Int64
	replicaHits               atomic.Int64
}

// known is what a Bucket knows of a group's object.
type known struct {
	content  [sha256.Size]byte // contentSum of the object's meta and export
	gen      uint64            // the store generation it was exported at
	genKnown bool              // gen is this process's store's generation
	base     *base             // the export this Bucket put whole last, while the object holds it; nil: none
}

// metaPipeline is the bucket metadata key naming its pipeline.
const metaPipeline = "sluice-pipeline"

// Object metadata keys, readable by List without downloading.
const (
	metaGroup      = "sluice-key-group"
	metaGroups     = "sluice-key-groups"
	metaGeneration = "sluice-generation"
	metaHost       = "sluice-host"
	metaEpoch      = "sluice-epoch" // Group.Epoch; absent: 0
	metaContent    = "sluice-content-sha256"
	metaExport     = "sluice-export-sha256" // of the export alone, for Amend
	metaAmended    = "sluice-amended-meta"  // Amend's metadata, base64
	metaDelta      = "sluice-delta"         // the NATS digest of the object's delta object; absent: none
	metaDeltaName  = "sluice-delta-object"  // the delta object's name (see deltaObject)
	metaDeltaSize  = "sluice-delta-size"    // the delta object's size in bytes
)

// BucketName returns the name of the object store bucket of pipeline's
// checkpoints: "sluice-<pipeline>-ckpt". NATS accepts only letters,
// digits, '-' and '_' in a bucket name, so other characters become '_'
// and, when any did or the name is long, a hash of the pipeline's name is
// appended, so that two pipelines never share a bucket.
func BucketName(pipeline string) string {
	var b strings.Builder
	changed := false
	for _, r := range pipeline {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	name := b.String()
	if len(name) > 64 {
		name, changed = name[:64], true
	}
	if changed {
		sum := sha256.Sum256([]byte(pipeline))
		name += "-" + hex.EncodeToString(sum[:4])
	}
	return "sluice-" + name + "-ckpt"
}

// ObjectName returns the name of key group kg's object: "kg-" and kg in
// five digits.
func ObjectName(kg int) string { return fmt.Sprintf("kg-%05d", kg) }

// Open opens the checkpoint bucket of pipeline (BucketName), creating it
// with file storage if it does not exist. It refuses a bucket that records
// another pipeline (two names that sanitise alike and collide in their
// hash, or a bucket made by hand), with an error matching ErrForeign.
func Open(ctx context.Context, js jetstream.JetStream, pipeline string, opts Options) (*Bucket, error) {
	if pipeline == "" {
		return nil, errors.New("checkpoint: open: the pipeline name is empty")
	}
	if opts.Replicas < 0 || opts.Replicas > 5 {
		return nil, fmt.Errorf("checkpoint: open the bucket of pipeline %q: replicas %d out of range 1..5", pipeline, opts.Replicas)
	}
	host := opts.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	name := BucketName(pipeline)
	obs, err := js.ObjectStore(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      name,
			Description: "Sluice key group checkpoints of pipeline " + pipeline,
			Storage:     jetstream.FileStorage,
			Replicas:    max(opts.Replicas, 1),
			Metadata:    map[string]string{metaPipeline: pipeline},
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another host created it first.
			obs, err = js.ObjectStore(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open bucket %s of pipeline %q: %w", name, pipeline, err)
	}
	st, err := obs.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open bucket %s of pipeline %q: %w", name, pipeline, err)
	}
	if got := st.Metadata()[metaPipeline]; got != pipeline {
		return nil, fmt.Errorf("checkpoint: open bucket %s of pipeline %q: it holds the checkpoints of pipeline %q: %w",
			name, pipeline, got, ErrForeign)
	}
	return &Bucket{obs: obs, name: name, pipeline: pipeline, host: host,
		log: logger.With("component", "checkpoint", "bucket", name), known: map[int]known{}, readAgain: readAgain()}, nil
}

// Check asks the server for the bucket's status: an error says that
// what would be put in the bucket now could not be (the bucket is gone,
// or no server answers for it).
func (b *Bucket) Check(ctx context.Context) error {
	if _, err := b.obs.Status(ctx); err != nil {
		return fmt.Errorf("checkpoint: bucket %s: %w", b.name, err)
	}
	return nil
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Host returns the host name this Bucket writes into checkpoints.
func (b *Bucket) Host() string { return b.host }

// Group is one key group's checkpoint.
type Group struct {
	KeyGroup   int    // the key group
	Generation uint64 // its generation in the writer's store (state.Store.Generation)
	Host       string // the host that wrote it; empty in Put means the Bucket's
	// Epoch is the plugin versions epoch (cluster.Versions.Epoch) the
	// writer ran when it exported the group: a host refuses to install a
	// group of a later epoch than its own. 0: none recorded.
	Epoch uint64
	Meta  []byte // the caller's metadata (the group's source floors), opaque here
	Data  []byte // the group's state: state.Store.ExportKeyGroup's output
}

// Info describes a checkpoint without its content.
type Info struct {
	KeyGroup   int
	KeyGroups  int    // key group count of the store it was exported from
	Generation uint64 // the group's generation in the writer's store
	Host       string
	Size       int64     // bytes of the object, and of its delta when it has one
	Time       time.Time // when it was put
	content    [sha256.Size]byte
}

// Stats counts a Bucket's transfers since Open, for benchmarks and
// metrics. A byte count is of objects (envelope and export), not of
// NATS's framing.
type Stats struct {
	Puts, PutBytes int64 // checkpoints put
	// Amends and AmendBytes are Amend calls that replaced a checkpoint's
	// metadata only, and the bytes of that metadata.
	Amends, AmendBytes int64
	// Deltas and DeltaBytes are checkpoints sent as a delta against the
	// export the bucket held (by Amend or Ship), and the bytes of the
	// deltas and their metadata.
	Deltas, DeltaBytes int64
	// Gets and GetBytes are checkpoints fetched when they were needed:
	// by Get, Load, and Replica.Install when its copy was missing or old.
	Gets, GetBytes int64
	// Prefetches and PrefetchBytes are checkpoints fetched by replicas
	// ahead of need (Replica.Refresh, Replica.Run).
	Prefetches, PrefetchBytes int64
	// ReplicaHits counts Replica.Install calls served by the replica's
	// copy, fetching nothing.
	ReplicaHits int64
}

// Stats returns the Bucket's counters.
func (b *Bucket) Stats() Stats {
	return Stats{
		Puts: b.puts.Load(), PutBytes: b.putBytes.Load(),
		Amends: b.amends.Load(), AmendBytes: b.amendBytes.Load(),
		Deltas: b.deltas.Load(), DeltaBytes: b.deltaBytes.Load(),
		Gets: b.gets.Load(), GetBytes: b.getBytes.Load(),
		Prefetches: b.prefetches.Load(), PrefetchBytes: b.prefetchBytes.Load(),
		ReplicaHits: b.replicaHits.Load(),
	}
}

// Put writes g as key group g.KeyGroup's checkpoint, replacing the
// previous one. It checks that g.Data is an export of that key group. The
// replacement is atomic: a reader sees the previous checkpoint or this
// one, and a Put that fails leaves the previous one in place.
func (b *Bucket) Put(ctx context.Context, g Group) error {
	_, err := b.put(ctx, g)
	return err
}

// put is Put; it returns the object's size.
func (b *Bucket) put(ctx context.Context, g Group) (int64, error) {
	obj := ObjectName(g.KeyGroup)
	kg, groups, err := state.ExportedKeyGroup(g.Data)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: put %s in bucket %s: %w", obj, b.name, err)
	}
	if g.KeyGroup < 0 || kg != g.KeyGroup {
		return 0, fmt.Errorf("checkpoint: put %s in bucket %s: the data is an export of key group %d", obj, b.name, kg)
	}
	if g.Host == "" {
		g.Host = b.host
	}
	env := encode(g)
	content := contentSum(g.Meta, g.Data)
	export := sha256.Sum256(g.Data)
	info, err := b.obs.Put(ctx, jetstream.ObjectMeta{
		Name: obj,
		Metadata: map[string]string{
			metaGroup:      strconv.Itoa(kg),
			metaGroups:     strconv.Itoa(groups),
			metaGeneration: strconv.FormatUint(g.Generation, 10),
			metaHost:       g.Host,
			metaEpoch:      strconv.FormatUint(g.Epoch, 10),
			metaContent:    hex.EncodeToString(content[:]),
			metaExport:     hex.EncodeToString(export[:]),
		},
	}, bytes.NewReader(env))
	if err != nil {
		return 0, fmt.Errorf("checkpoint: put %s in bucket %s: %w", obj, b.name, err)
	}
	b.puts.Add(1)
	b.putBytes.Add(int64(len(env)))
	bs := b.newBase(g.Data, info.Digest)
	b.mu.Lock()
	b.known[kg] = known{content: content, base: bs}
	b.mu.Unlock()
	return int64(len(env)), nil
}

// Get fetches and checks key group kg's checkpoint. A missing one is an
// error matching ErrNotFound; a damaged or foreign one an error matching
// ErrCorrupt or ErrForeign, naming the bucket, the object and the fault.
func (b *Bucket) Get(ctx context.Context, kg int) (*Group, error) {
	g, _, n, err := b.fetch(ctx, kg)
	if err != nil {
		return nil, err
	}
	b.gets.Add(1)
	b.getBytes.Add(n)
	return g.Group, nil
}

// fetched is a checkpoint as downloaded.
type fetched struct {
	*Group          // Data: the export the checkpoint restores
	groups   int    // key group count of the export
	baseData []byte // the object's export, which the delta applies to
	// The delta the object's metadata named when it was read, and its
	// NATS digest; nil and "" without.
	delta       []byte
	deltaDigest string
}

// fetchStall bounds one download of an object: a download whose object is
// replaced meanwhile (its chunks purged by the Put that replaced it)
// waits for chunks that never come, so after fetchStall the object is
// looked up again and, if it was replaced, downloaded again.
const fetchStall = 10 * time.Second

// readAgain is how long fetch waits, by default, before each of its
// downloads after the first of an object that came back short (its
// chunks do not match its digest). Short reads have been seen, of the
// module store, just after a NATS server of the cluster came back (see
// package cluster's Modules.Get); a checkpoint is read the same way.
func readAgain() []time.Duration {
	return []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
}

// fetch downloads and decodes kg's object, and its delta if it has one;
// it returns the object's NATS digest and the bytes downloaded too. It
// counts nothing.
func (b *Bucket) fetch(ctx context.Context, kg int) (*fetched, string, int64, error) {
	obj := ObjectName(kg)
	var total int64
	for try := 0; ; try++ {
		env, info, err := b.download(ctx, obj)
		if err != nil {
			return nil, "", total, err
		}
		total += int64(len(env))
		f, err := decode(env)
		if err != nil {
			return nil, "", total, &ObjectError{Bucket: b.name, Object: obj, Fault: err.Error(), Kind: ErrCorrupt, Cause: errors.Unwrap(err)}
		}
		if f.KeyGroup != kg {
			return nil, "", total, &ObjectError{Bucket: b.name, Object: obj, Kind: ErrForeign,
				Fault: fmt.Sprintf("it holds key group %d", f.KeyGroup)}
		}
		out, n, err := b.withDelta(ctx, info, f)
		total += n
		if errors.Is(err, errDeltaReplaced) && try < maxDeltaRaces {
			continue // a checkpoint was written meanwhile: read it
		}
		if errors.Is(err, errDeltaReplaced) {
			return nil, "", total, &ObjectError{Bucket: b.name, Object: obj, Kind: ErrCorrupt, Fault: err.Error()}
		}
		if err != nil {
			return nil, "", total, err
		}
		return out, info.Digest, total, nil
	}
}

// maxDeltaRaces bounds the reads of an object whose delta is replaced
// while it is read (each time, a writer put a checkpoint meanwhile).
const maxDeltaRaces = 8

// download reads object obj whole and returns its bytes and its info. A
// download that came back short (its chunks do not match its digest) is
// made again after each of b.readAgain's pauses, and one whose object
// was replaced under it is made again at once. A missing object is an
// ObjectError matching ErrNotFound, one still short after the last pause
// an ObjectError matching ErrCorrupt.
func (b *Bucket) download(ctx context.Context, obj string) ([]byte, *jetstream.ObjectInfo, error) {
	short := 0 // downloads that came back short
	for {
		env, info, err := b.downloadOnce(ctx, obj)
		switch {
		case errors.Is(err, errReplaced):
			continue
		case errors.Is(err, jetstream.ErrDigestMismatch) && short < len(b.readAgain):
			pause := b.readAgain[short]
			short++
			b.log.Warn("a checkpoint's chunks did not match its digest; downloading it again", "object", obj, "in", pause)
			select {
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("%w (stopped trying: %w)", err, ctx.Err())
			case <-time.After(pause):
			}
			continue
		}
		return env, info, err
	}
}

// errReplaced is downloadOnce's error for an object replaced while it
// was being downloaded.
var errReplaced = errors.New("replaced during the download")

// downloadOnce is one download of download.
func (b *Bucket) downloadOnce(ctx context.Context, obj string) ([]byte, *jetstream.ObjectInfo, error) {
	dctx, cancel := context.WithTimeout(ctx, fetchStall)
	defer cancel()
	res, err := b.obs.Get(dctx, obj)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil, &ObjectError{Bucket: b.name, Object: obj, Fault: "not found", Kind: ErrNotFound, Cause: err}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: get %s from bucket %s: %w", obj, b.name, err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res)
	_ = res.Close()
	if err != nil && ctx.Err() == nil && (dctx.Err() != nil || timedOut(err)) {
		// Stalled: was the object replaced under the download? (The
		// client's read times out at dctx's deadline, which can come
		// before dctx reports it.)
		was, ierr := res.Info()
		now, nerr := b.obs.GetInfo(ctx, obj)
		if ierr == nil && (errors.Is(nerr, jetstream.ErrObjectNotFound) || nerr == nil && now.NUID != was.NUID) {
			return nil, nil, errReplaced
		}
	}
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return nil, nil, &ObjectError{Bucket: b.name, Object: obj, Fault: "its chunks do not match its digest", Kind: ErrCorrupt, Cause: err}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: get %s from bucket %s: %w", obj, b.name, err)
	}
	info, err := res.Info()
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: get %s from bucket %s: %w", obj, b.name, err)
	}
	return buf.Bytes(), info, nil
}

// Load imports key group kg's checkpoint into st (state.ImportKeyGroup)
// and returns the checkpoint's metadata. Like ImportKeyGroup it must run
// while no writer of st runs (at a batch boundary), and the import is made
// durable by st's next Commit. A missing, damaged or foreign checkpoint
// (one of another key group, or from a store of another key group count)
// is refused with an ObjectError, and st is left unchanged.
func (b *Bucket) Load(ctx context.Context, st *state.Store, kg int) ([]byte, error) {
	if kg < 0 || kg >= st.KeyGroups() {
		return nil, fmt.Errorf("checkpoint: load key group %d from bucket %s: out of range 0..%d", kg, b.name, st.KeyGroups()-1)
	}
	f, _, n, err := b.fetch(ctx, kg)
	if err != nil {
		return nil, err
	}
	b.gets.Add(1)
	b.getBytes.Add(n)
	if err := b.install(st, f); err != nil {
		return nil, err
	}
	return f.Meta, nil
}

// install imports f into st, and remembers what the bucket holds for it.
func (b *Bucket) install(st *state.Store, f *fetched) error {
	obj := ObjectName(f.KeyGroup)
	if f.groups != st.KeyGroups() {
		return &ObjectError{Bucket: b.name, Object: obj, Kind: ErrForeign,
			Fault: fmt.Sprintf("exported from a store of %d key groups; %s has %d", f.groups, st.Dir(), st.KeyGroups())}
	}
	if err := st.ImportKeyGroup(f.KeyGroup, f.Data); err != nil {
		kind := ErrCorrupt
		if !errors.Is(err, state.ErrBadExport) {
			return fmt.Errorf("checkpoint: load %s from bucket %s: %w", obj, b.name, err)
		}
		return &ObjectError{Bucket: b.name, Object: obj, Fault: "its export is refused", Kind: kind, Cause: err}
	}
	b.mu.Lock()
	b.known[f.KeyGroup] = known{content: contentSum(f.Meta, f.Data)}
	b.mu.Unlock()
	return nil
}

// List describes every key group's checkpoint in the bucket, in key group
// order, without downloading them (the cut, CutObject, is not one). An object it cannot describe (a name or
// metadata not of this package) is an ObjectError matching ErrForeign.
func (b *Bucket) List(ctx context.Context) ([]Info, error) {
	objs, err := b.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list bucket %s: %w", b.name, err)
	}
	out := make([]Info, 0, len(objs))
	for _, o := range objs {
		if o.Name == CutObject || isDelta(o.Name) {
			continue // the cut is described by its own metadata (see PutCut); a delta is part of its group's checkpoint
		}
		in, err := b.info(o)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.KeyGroup, b.KeyGroup) })
	return out, nil
}

// info reads an object's description.
func (b *Bucket) info(o *jetstream.ObjectInfo) (Info, error) {
	foreign := func(format string, args ...any) error {
		return &ObjectError{Bucket: b.name, Object: o.Name, Kind: ErrForeign, Fault: fmt.Sprintf(format, args...)}
	}
	md := o.Metadata
	kg, err := strconv.Atoi(md[metaGroup])
	if err != nil || ObjectName(kg) != o.Name {
		return Info{}, foreign("not a key group checkpoint (key group %q)", md[metaGroup])
	}
	groups, err := strconv.Atoi(md[metaGroups])
	if err != nil {
		return Info{}, foreign("key group count %q", md[metaGroups])
	}
	gen, err := strconv.ParseUint(md[metaGeneration], 10, 64)
	if err != nil {
		return Info{}, foreign("generation %q", md[metaGeneration])
	}
	in := Info{KeyGroup: kg, KeyGroups: groups, Generation: gen, Host: md[metaHost],
		Size: int64(o.Size) + deltaSize(md), Time: o.ModTime}
	if n, err := hex.Decode(in.content[:], []byte(md[metaContent])); err != nil || n != sha256.Size {
		return Info{}, foreign("content digest %q", md[metaContent])
	}
	return in, nil
}

// The envelope of a checkpoint object, version 1. Integers are
// big-endian; uvarint is encoding/binary's.
//
//	"SLUICECP"          magic, 8 bytes
//	u8  version (1)
//	u32 key group
//	u64 generation
//	uvarint len, host
//	uvarint len, metadata
//	uvarint len, export (state.ExportKeyGroup)
//	u32 CRC-32 (Castagnoli) of everything before
const (
	envMagic   = "SLUICECP"
	envVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns g's envelope.
func encode(g Group) []byte {
	out := make([]byte, 0, len(envMagic)+1+4+8+3*binary.MaxVarintLen64+len(g.Host)+len(g.Meta)+len(g.Data)+4)
	out = append(out, envMagic...)
	out = append(out, envVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(g.KeyGroup))
	out = binary.BigEndian.AppendUint64(out, g.Generation)
	for _, b := range [][]byte{[]byte(g.Host), g.Meta, g.Data} {
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// decode checks and decodes an envelope, and the export's header.
func decode(env []byte) (*fetched, error) {
	head := len(envMagic) + 1 + 4 + 8
	if len(env) < head+4 || string(env[:len(envMagic)]) != envMagic {
		return nil, errors.New("not a checkpoint envelope")
	}
	body, sum := env[:len(env)-4], binary.BigEndian.Uint32(env[len(env)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checksum mismatch: the envelope is damaged")
	}
	if v := body[len(envMagic)]; v != envVersion {
		return nil, fmt.Errorf("envelope version %d; this build reads version %d", v, envVersion)
	}
	g := &Group{
		KeyGroup:   int(binary.BigEndian.Uint32(body[len(envMagic)+1:])),
		Generation: binary.BigEndian.Uint64(body[len(envMagic)+5:]),
	}
	r := body[head:]
	var fields [3][]byte
	for i := range fields {
		n, w := binary.Uvarint(r)
		if w <= 0 || n > uint64(len(r)-w) {
			return nil, errors.New("truncated envelope")
		}
		fields[i] = r[w : w+int(n)]
		r = r[w+int(n):]
	}
	if len(r) != 0 {
		return nil, fmt.Errorf("%d bytes after the export", len(r))
	}
	g.Host, g.Meta, g.Data = string(fields[0]), fields[1], fields[2]
	kg, groups, err := state.ExportedKeyGroup(g.Data)
	if err != nil {
		return nil, fmt.Errorf("its export: %w", err)
	}
	if kg != g.KeyGroup {
		return nil, fmt.Errorf("its envelope says key group %d, its export holds %d", g.KeyGroup, kg)
	}
	return &fetched{Group: g, groups: groups, baseData: g.Data}, nil
}

// contentSum is the digest of what a checkpoint restores: its metadata
// and its export.
func contentSum(meta, data []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(binary.AppendUvarint(nil, uint64(len(meta))))
	h.Write(meta)
	h.Write(data)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// timedOut reports whether err is a timeout: a read past its deadline.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

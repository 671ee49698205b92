package objects

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"gocloud.dev/blob"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// Defaults of [PlannerConfig].
const (
	// DefaultPageSize is the objects per listing page.
	DefaultPageSize = 1000
	// DefaultPagesPerRun is the listing pages one planner run reads.
	DefaultPagesPerRun = 10
	// DefaultSplitBytes is the bytes a split aims at.
	DefaultSplitBytes = 64 << 20
	// DefaultMaxGroup is the most small objects one split groups.
	DefaultMaxGroup = 100
)

// gzipSpan is the end of a compressed object's range: its positions are
// decompressed offsets, whose count is unknown until it is read.
const gzipSpan = 1 << 62

// PlannerConfig says what a [Planner] lists and how it divides it. Every
// worker of a job gives the same one (its fingerprint is the job's identity).
type PlannerConfig struct {
	// Bucket is the bucket to list; the planner does not close it.
	Bucket *blob.Bucket
	// Name identifies the bucket in the job's fingerprint: its URL
	// (s3://logs?region=eu-west-1) is a good name.
	Name string
	// Prefix is the key prefix to read; "" reads the whole bucket.
	Prefix string
	// PageSize is the objects per listing page; 0 means DefaultPageSize.
	PageSize int
	// PagesPerRun is the listing pages one planner run reads before it
	// returns what it found (the leader seeds those splits and runs the
	// planner again after Config.ReplanInterval); 0 means
	// DefaultPagesPerRun.
	PagesPerRun int
	// SplitBytes is the bytes a split aims at: smaller objects are grouped
	// up to it, larger ones divided into ranges of about it; 0 means
	// DefaultSplitBytes.
	SplitBytes int64
	// MaxGroup is the most objects one split groups, which bounds a
	// split's descriptor; 0 means DefaultMaxGroup.
	MaxGroup int
}

// Planner lists a bucket prefix as an open plan: each run reads up to
// PagesPerRun listing pages from the cursor the last run stored and
// returns their splits; the run that reads the last page returns a final
// plan. A new leader resumes at the stored cursor, and re-reading a page
// whose splits were seeded before a leader's crash returns the same split
// ids, which seeding skips: every object is planned once, provided the
// listing does not change under it (a backfill reads a settled prefix).
type Planner struct {
	cfg         PlannerConfig
	fingerprint string
}

var _ coordination.Planner = (*Planner)(nil)

// NewPlanner checks cfg and returns its planner.
func NewPlanner(cfg PlannerConfig) (*Planner, error) {
	if cfg.Bucket == nil {
		return nil, errors.New("objects: PlannerConfig.Bucket is nil; open one with blob.OpenBucket")
	}
	if cfg.Name == "" {
		return nil, errors.New("objects: PlannerConfig.Name is empty; give the bucket's URL, which names the job's input")
	}
	if cfg.PageSize < 0 || cfg.PagesPerRun < 0 || cfg.SplitBytes < 0 || cfg.MaxGroup < 0 {
		return nil, fmt.Errorf("objects: PlannerConfig has a negative PageSize, PagesPerRun, SplitBytes or MaxGroup (%d, %d, %d, %d); 0 means the default",
			cfg.PageSize, cfg.PagesPerRun, cfg.SplitBytes, cfg.MaxGroup)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PagesPerRun == 0 {
		cfg.PagesPerRun = DefaultPagesPerRun
	}
	if cfg.SplitBytes == 0 {
		cfg.SplitBytes = DefaultSplitBytes
	}
	if cfg.MaxGroup == 0 {
		cfg.MaxGroup = DefaultMaxGroup
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d", cfg.Name, cfg.Prefix, cfg.PageSize, cfg.SplitBytes, cfg.MaxGroup)
	return &Planner{cfg: cfg, fingerprint: "objects:v1:" + hex.EncodeToString(h.Sum(nil)[:12])}, nil
}

// Fingerprint is a hash of the bucket's name, the prefix and the sizes that
// decide the splits (not PagesPerRun, which only paces the listing).
func (p *Planner) Fingerprint() string { return p.fingerprint }

// Plan reads the next listing pages and returns their splits, with the
// cursor past them; final once the listing ended.
func (p *Planner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	c, err := decodeCursor(pc.PlannerState)
	if err != nil {
		return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "objects: planner state: %v", err)
	}
	var plan coordination.SplitPlan
	for range p.cfg.PagesPerRun {
		if c.done {
			break
		}
		token := c.token
		if c.page == 0 {
			token = blob.FirstPageToken
		}
		objs, next, err := p.cfg.Bucket.ListPage(ctx, token, p.cfg.PageSize, &blob.ListOptions{Prefix: p.cfg.Prefix})
		if err != nil && !errors.Is(err, io.EOF) {
			return coordination.SplitPlan{}, fmt.Errorf("objects: listing %q page %d of prefix %q: %w", p.cfg.Name, c.page, p.cfg.Prefix, err)
		}
		splits, err := planPage(c.page, objs, p.cfg.SplitBytes, p.cfg.MaxGroup)
		if err != nil {
			return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "objects: %v", err)
		}
		for _, s := range splits {
			spec, err := s.Spec()
			if err != nil {
				return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "objects: %v", err)
			}
			plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: spec})
		}
		c.page++
		c.token = next
		c.done = len(next) == 0
	}
	plan.Finality = coordination.PlanOpen
	if c.done {
		plan.Finality = coordination.PlanFinal
	}
	plan.PlannerState = encodeCursor(c)
	return plan, nil
}

// planPage divides listing page number page into splits named
// p<page>-<n>: a compressed object alone, never cut; an object of at
// least splitBytes in ranges of about splitBytes; smaller ones grouped in
// listing order up to splitBytes bytes, maxGroup objects or maxGroupMeta
// bytes of pins. Empty objects
// and directories hold no records and are left out. The result depends
// only on the page's objects, so a page read again plans the same splits.
func planPage(page int, objs []*blob.ListObject, splitBytes int64, maxGroup int) ([]lanes.Split[int64], error) {
	var splits []lanes.Split[int64]
	add := func(m meta, r lanes.Range[int64], weight int64) {
		splits = append(splits, lanes.Split[int64]{
			ID:     coordination.SplitID(fmt.Sprintf("p%06d-%d", page, len(splits))),
			Range:  r,
			Weight: uint64(weight),
			Meta:   encodeMeta(m),
		})
	}
	var group []pin
	var groupBytes, groupMeta int64
	flush := func() {
		if len(group) > 0 {
			add(meta{objects: group}, lanes.Range[int64]{Start: 0, End: groupBytes}, groupBytes)
		}
		group, groupBytes, groupMeta = nil, 0, 0
	}
	for _, o := range objs {
		if o.IsDir || o.Size <= 0 {
			continue
		}
		if len(o.Key) > maxKeyBytes {
			return nil, fmt.Errorf("object key %.64q... is %d bytes long; keys of at most %d bytes are read", o.Key, len(o.Key), maxKeyBytes)
		}
		p := pin{key: o.Key, size: o.Size, modTime: o.ModTime, md5: o.MD5}
		switch {
		case strings.HasSuffix(o.Key, ".gz"):
			flush()
			add(meta{gzip: true, objects: []pin{p}}, lanes.Range[int64]{Start: 0, End: gzipSpan}, o.Size)
		case o.Size >= splitBytes:
			flush()
			n := (o.Size + splitBytes - 1) / splitBytes
			for i := range n {
				a, b := o.Size*i/n, o.Size*(i+1)/n
				add(meta{objects: []pin{p}}, lanes.Range[int64]{Start: a, End: b}, b-a)
			}
		default:
			pinBytes := int64(len(o.Key) + pinOverhead)
			if len(group) == maxGroup || groupBytes+o.Size > splitBytes || groupMeta+pinBytes > maxGroupMeta {
				flush()
			}
			group = append(group, p)
			groupBytes += o.Size
			groupMeta += pinBytes
		}
	}
	flush()
	return splits, nil
}

// maxGroupMeta bounds a group's Meta (keys and pins), so its spec stays
// well within every store's value cap (docs/protocol.md, "Size limits");
// pinOverhead bounds a pin's encoding past its key.
const (
	maxGroupMeta = 64 << 10
	pinOverhead  = 48
)

// cursor is the planner state: the next listing page's number and token,
// or done once the listing ended.
type cursor struct {
	page  int
	token []byte
	done  bool
}

// cursorVersion is the first byte of the planner state.
const cursorVersion = 1

// encodeCursor returns c as planner state: version, done, page, token.
func encodeCursor(c cursor) []byte {
	b := []byte{cursorVersion, 0}
	if c.done {
		b[1] = 1
	}
	b = binary.AppendUvarint(b, uint64(c.page))
	return append(b, c.token...)
}

// decodeCursor reads encodeCursor's state; nil is the listing's start.
func decodeCursor(b []byte) (cursor, error) {
	if b == nil {
		return cursor{}, nil
	}
	if len(b) < 3 || b[0] != cursorVersion || b[1] > 1 {
		return cursor{}, fmt.Errorf("not an objects listing cursor of version %d (was the job planned by another planner?)", cursorVersion)
	}
	page, n := binary.Uvarint(b[2:])
	if n <= 0 || page > 1<<40 {
		return cursor{}, fmt.Errorf("the listing cursor's page number is malformed")
	}
	return cursor{page: int(page), token: b[2+n:], done: b[1] == 1}, nil
}

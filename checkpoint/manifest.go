package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"
)

// Format is the value of the "format" field of the manifests this package
// writes. Manifests with any other format are rejected.
const Format = "spotcheck.checkpoint/v1"

// Limits on manifest contents. A manifest that exceeds one is rejected.
const (
	MaxManifestSize = 1 << 20 // bytes of the encoded manifest
	MaxParts        = 1024
	MaxNameLen      = 128 // part names, metric and label keys
	MaxValueLen     = 1024
	MaxEntries      = 256 // metrics, labels
)

var (
	partNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
	attemptRE  = regexp.MustCompile(`^[0-9a-f]{1,64}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Manifest is the commit record of one checkpoint, stored as
// steps/<key>/MANIFEST.json. Its encoding is canonical (compact JSON as
// encoding/json writes it) and Digest is the sha256 of that encoding with
// Digest empty, so any change of any byte is detected.
type Manifest struct {
	Format  string             `json:"format"`
	Step    int64              `json:"step"`
	Attempt string             `json:"attempt"`
	Epoch   int64              `json:"epoch"`
	Created time.Time          `json:"created"`
	Writer  WriterID           `json:"writer"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Labels  map[string]string  `json:"labels,omitempty"`
	Parts   []PartInfo         `json:"parts"`
	Digest  string             `json:"digest"`
}

// WriterID identifies the process that wrote a checkpoint.
type WriterID struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	ID   string `json:"id,omitempty"` // Options.WriterID or a random id per Store
}

// PartInfo describes one stored part.
type PartInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// validate checks every field; it does not check the digest.
func (m *Manifest) validate() error {
	if m.Format != Format {
		return fmt.Errorf("unknown format %q (want %q)", m.Format, Format)
	}
	if m.Step < 0 {
		return fmt.Errorf("negative step %d", m.Step)
	}
	if m.Epoch < 0 {
		return fmt.Errorf("negative epoch %d", m.Epoch)
	}
	if !attemptRE.MatchString(m.Attempt) {
		return fmt.Errorf("invalid attempt id %q", m.Attempt)
	}
	if m.Created.IsZero() {
		return errors.New("missing created time")
	}
	if len(m.Writer.Host) > MaxValueLen || len(m.Writer.ID) > MaxValueLen {
		return errors.New("writer identity too long")
	}
	if err := validateMeta(m.Metrics, m.Labels); err != nil {
		return err
	}
	if len(m.Parts) == 0 {
		return errors.New("no parts")
	}
	if len(m.Parts) > MaxParts {
		return fmt.Errorf("%d parts (max %d)", len(m.Parts), MaxParts)
	}
	for i, p := range m.Parts {
		if err := validPartName(p.Name); err != nil {
			return err
		}
		if i > 0 && m.Parts[i-1].Name >= p.Name {
			return fmt.Errorf("parts not sorted or duplicated at %q", p.Name)
		}
		if p.Size < 0 {
			return fmt.Errorf("part %q: negative size %d", p.Name, p.Size)
		}
		if !sha256RE.MatchString(p.SHA256) {
			return fmt.Errorf("part %q: invalid sha256 %q", p.Name, p.SHA256)
		}
	}
	return nil
}

func validateMeta(metrics map[string]float64, labels map[string]string) error {
	if len(metrics) > MaxEntries {
		return fmt.Errorf("%d metrics (max %d)", len(metrics), MaxEntries)
	}
	if len(labels) > MaxEntries {
		return fmt.Errorf("%d labels (max %d)", len(labels), MaxEntries)
	}
	for k, v := range metrics {
		if k == "" || len(k) > MaxNameLen {
			return fmt.Errorf("metric name %.40q: empty or longer than %d bytes", k, MaxNameLen)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metric %q: value %v is not finite", k, v)
		}
	}
	for k, v := range labels {
		if k == "" || len(k) > MaxNameLen {
			return fmt.Errorf("label key %.40q: empty or longer than %d bytes", k, MaxNameLen)
		}
		if len(v) > MaxValueLen {
			return fmt.Errorf("label %q: value longer than %d bytes", k, MaxValueLen)
		}
	}
	return nil
}

// validPartName reports whether name can be used as a part name: 1 to
// MaxNameLen bytes of [A-Za-z0-9._-], not starting with '.' or '-', and
// without "..".
func validPartName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen || !partNameRE.MatchString(name) || bytes.Contains([]byte(name), []byte("..")) {
		return fmt.Errorf("%w: part name %.60q (want 1-%d of [A-Za-z0-9._-], no '/' or '..')", ErrInvalid, name, MaxNameLen)
	}
	return nil
}

// digest returns the hex sha256 of the canonical encoding of m with an
// empty Digest.
func (m *Manifest) digest() (string, error) {
	c := *m
	c.Digest = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// encode sorts the parts, fills Digest and returns the canonical encoding.
func (m *Manifest) encode() ([]byte, error) {
	sort.Slice(m.Parts, func(i, j int) bool { return m.Parts[i].Name < m.Parts[j].Name })
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrInvalid, err)
	}
	d, err := m.digest()
	if err != nil {
		return nil, err
	}
	m.Digest = d
	return json.Marshal(m)
}

// DecodeManifest parses and verifies an encoded manifest. Any problem
// (garbage, unknown fields, a wrong format, invalid values, oversized
// fields, a non-canonical encoding, a digest mismatch) gives an error
// wrapping ErrCorrupt that says what was wrong.
func DecodeManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: manifest is %d bytes (max %d)", ErrCorrupt, len(data), MaxManifestSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: manifest is not valid JSON: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: manifest has trailing data", ErrCorrupt)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	canon, err := json.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if !bytes.Equal(canon, data) {
		return nil, fmt.Errorf("%w: manifest encoding is not canonical (edited or damaged)", ErrCorrupt)
	}
	d, err := m.digest()
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if d != m.Digest {
		return nil, fmt.Errorf("%w: manifest digest %q does not match its contents (%s)", ErrCorrupt, m.Digest, d)
	}
	return &m, nil
}

// ManifestDigest returns the digest a manifest must carry: the hex sha256
// of its canonical encoding with Digest empty.
func ManifestDigest(m *Manifest) (string, error) { return m.digest() }

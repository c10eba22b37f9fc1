package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// StateReader serves GET /api/v1/state; *state.Store and *state.Reader
// implement it.
type StateReader interface {
	// Read returns one page of committed entries; see state.Store.Read.
	Read(q state.Query) (state.Page, error)
}

// DefaultStateLimit is the page size of GET /api/v1/state without limit.
const DefaultStateLimit = 100

// StateEntry is one entry of GET /api/v1/state and one line of `sluice
// state dump` (schema.StateEntry).
type StateEntry = schema.StateEntry

// NewStateEntry encodes e.
func NewStateEntry(e state.Entry) StateEntry {
	s := StateEntry{Table: e.Table, KeyGroup: e.KeyGroup}
	s.Key, s.KeyBase64 = encodeField(e.Key)
	if e.Namespace != nil || e.User != nil {
		s.Namespace, s.NamespaceBase64 = encodeField(e.Namespace)
		s.User, s.UserBase64 = encodeField(e.User)
	}
	s.Value, s.ValueBase64 = encodeField(e.Value)
	if d, ok := window.Describe(window.NamespaceOf(e.Table), state.Key{Route: e.Key, Namespace: e.Namespace, User: e.User}, e.Value); ok {
		s.Window = d
	}
	return s
}

// encodeField gives b as text when it is valid UTF-8, else as base64.
func encodeField(b []byte) (*string, string) {
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

// StatePage is the answer of GET /api/v1/state (schema.StatePage).
type StatePage = schema.StatePage

// parseStateQuery reads the query of GET /api/v1/state. Its error names
// the parameter at fault.
func parseStateQuery(r *http.Request) (state.Query, error) {
	v := r.URL.Query()
	q := state.Query{Table: v.Get("table"), KeyGroup: -1, After: v.Get("after"), Limit: DefaultStateLimit}
	if p, ok := v["prefix"]; ok {
		q.Prefix = []byte(p[0])
	}
	if p := v.Get("prefix_base64"); p != "" {
		if v.Has("prefix") {
			return q, errors.New("prefix and prefix_base64 are both given: give one")
		}
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil {
			return q, fmt.Errorf("prefix_base64=%q is not standard base64", p)
		}
		q.Prefix = b
	}
	if s := v.Get("key_group"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, fmt.Errorf("key_group=%q: want a whole number at least 0", s)
		}
		q.KeyGroup = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > state.MaxQueryLimit {
			return q, fmt.Errorf("limit=%q: want a whole number from 1 to %d", s, state.MaxQueryLimit)
		}
		q.Limit = n
	}
	return q, nil
}

// serveState answers GET /api/v1/state from st.
func serveState(st StateReader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := parseStateQuery(r)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, schema.Error{Error: err.Error()})
			return
		}
		p, err := st.Read(q)
		switch {
		case errors.Is(err, state.ErrBadQuery):
			writeJSON(w, http.StatusBadRequest, schema.Error{Error: err.Error()})
			return
		case errors.Is(err, state.ErrUnknownTable):
			writeJSON(w, http.StatusNotFound, schema.Error{Error: err.Error()})
			return
		case errors.Is(err, state.ErrClosed):
			writeJSON(w, http.StatusServiceUnavailable, schema.Error{Error: err.Error()})
			return
		case err != nil:
			writeJSON(w, http.StatusInternalServerError, schema.Error{Error: err.Error()})
			return
		}
		page := StatePage{Entries: make([]StateEntry, 0, len(p.Entries)), Next: p.Next}
		for _, e := range p.Entries {
			page.Entries = append(page.Entries, NewStateEntry(e))
		}
		writeJSON(w, http.StatusOK, page)
	}
}
